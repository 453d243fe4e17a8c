package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/yamux"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/wire"
	"github.com/levers9/levers9/storage"
)

// NodeDriver returns the storage driver for the files under root on node
// nodeID: every operation goes through the node's tunnel (wire.FileOp), so
// the node needs no inbound port. The node must be connected to this
// server process; otherwise operations fail as unavailable.
func (s *Server) NodeDriver(nodeID, root string) storage.Driver {
	return &nodeDriver{srv: s, nodeID: nodeID, root: root}
}

// fileCall is one operation in flight: the agent's answers for it.
type fileCall struct {
	id   uint64
	ch   chan wire.Msg // FileResult, then for a get its FileData
	gone chan struct{} // closed when the session ends
}

// registry of the sessions of this process, by node.
type registry struct {
	mu       sync.Mutex
	sessions map[string]*session
	nextID   uint64
	// streams are the stream tunnels of this process, by node.
	streams map[string]*yamux.Session
}

func (s *Server) register(sess *session) {
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	if s.reg.sessions == nil {
		s.reg.sessions = map[string]*session{}
	}
	s.reg.sessions[sess.nodeID] = sess
}

func (s *Server) unregister(sess *session) {
	s.reg.mu.Lock()
	if s.reg.sessions[sess.nodeID] == sess {
		delete(s.reg.sessions, sess.nodeID)
	}
	s.reg.mu.Unlock()
	sess.filesMu.Lock()
	defer sess.filesMu.Unlock()
	sess.filesGone = true
	for id, c := range sess.files {
		close(c.gone)
		delete(sess.files, id)
	}
}

func (s *Server) sessionOf(nodeID string) (*session, uint64, error) {
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	sess := s.reg.sessions[nodeID]
	if sess == nil {
		return nil, 0, fault.New(fault.Unavailable, "the node holding this storage is not connected to this server")
	}
	s.reg.nextID++
	return sess, s.reg.nextID, nil
}

// deliver routes an agent's file message to its call. A call's channel
// holds a result and a window of chunks; an agent that sends more than its
// credit loses the call rather than stall the connection.
func (sess *session) deliverFile(id uint64, m wire.Msg) {
	sess.filesMu.Lock()
	c := sess.files[id]
	sess.filesMu.Unlock()
	if c == nil {
		return // cancelled meanwhile
	}
	select {
	case c.ch <- m:
	default:
		sess.log.Warn("agent sent file data beyond its credit; dropping the operation", "op", id)
		sess.endCall(c)
	}
}

func (sess *session) endCall(c *fileCall) {
	sess.filesMu.Lock()
	defer sess.filesMu.Unlock()
	if sess.files[c.id] == c {
		delete(sess.files, c.id)
		close(c.gone)
	}
}

type nodeDriver struct {
	srv    *Server
	nodeID string
	root   string
}

// start sends op and registers its call.
func (d *nodeDriver) start(ctx context.Context, op wire.FileOp) (*session, *fileCall, error) {
	sess, id, err := d.srv.sessionOf(d.nodeID)
	if err != nil {
		return nil, nil, err
	}
	op.ID, op.Root = id, d.root
	c := &fileCall{id: id, ch: make(chan wire.Msg, wire.FileWindow+2), gone: make(chan struct{})}
	sess.filesMu.Lock()
	if sess.filesGone {
		sess.filesMu.Unlock()
		return nil, nil, errNodeGone
	}
	if sess.files == nil {
		sess.files = map[uint64]*fileCall{}
	}
	sess.files[id] = c
	sess.filesMu.Unlock()
	select {
	case <-sess.welcomed:
	case <-c.gone: // the session ended before its handshake did
		return nil, nil, errNodeGone
	case <-ctx.Done():
		sess.endCall(c)
		return nil, nil, ctx.Err()
	}
	if err := sess.send(ctx, op); err != nil {
		sess.endCall(c)
		return nil, nil, fmt.Errorf("asking the node: %w", err)
	}
	return sess, c, nil
}

var errNodeGone = fault.New(fault.Unavailable, "the node holding this storage disconnected")

// next waits for the call's next message.
func (c *fileCall) next(ctx context.Context) (wire.Msg, error) {
	select {
	case m := <-c.ch:
		return m, nil
	case <-c.gone:
		select { // a message that came before the end still counts
		case m := <-c.ch:
			return m, nil
		default:
		}
		return nil, errNodeGone
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// result waits for the call's FileResult and turns a failure into the
// storage package's errors.
func (c *fileCall) result(ctx context.Context) (wire.FileResult, error) {
	for {
		m, err := c.next(ctx)
		if err != nil {
			return wire.FileResult{}, err
		}
		res, ok := m.(wire.FileResult)
		if !ok {
			continue // data of a put the node already refused
		}
		switch res.Code {
		case "":
			return res, nil
		case wire.FileNotFound:
			return res, storage.ErrNotFound
		case wire.FileInvalid:
			return res, fmt.Errorf("%w: %s", storage.ErrInvalidKey, res.Error)
		}
		return res, fmt.Errorf("on the node: %s", res.Error)
	}
}

// do runs an operation without a body.
func (d *nodeDriver) do(ctx context.Context, op wire.FileOp) (wire.FileResult, error) {
	sess, c, err := d.start(ctx, op)
	if err != nil {
		return wire.FileResult{}, err
	}
	defer sess.endCall(c)
	return c.result(ctx)
}

func object(o wire.FileObject) storage.Object {
	return storage.Object{Key: o.Key, Size: o.Size, Modified: o.Modified}
}

func one(res wire.FileResult) (storage.Object, error) {
	if len(res.Objects) != 1 {
		return storage.Object{}, errors.New("the node answered without the object")
	}
	return object(res.Objects[0]), nil
}

func (d *nodeDriver) List(ctx context.Context, bucket string, opts storage.ListOptions) ([]storage.Object, error) {
	res, err := d.do(ctx, wire.FileOp{Op: wire.FileList, Bucket: bucket, Prefix: opts.Prefix, After: opts.After, Limit: opts.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]storage.Object, len(res.Objects))
	for i, o := range res.Objects {
		out[i] = object(o)
	}
	return out, nil
}

func (d *nodeDriver) Stat(ctx context.Context, bucket, key string) (storage.Object, error) {
	res, err := d.do(ctx, wire.FileOp{Op: wire.FileStat, Bucket: bucket, Key: key})
	if err != nil {
		return storage.Object{}, err
	}
	return one(res)
}

func (d *nodeDriver) Delete(ctx context.Context, bucket, key string) error {
	_, err := d.do(ctx, wire.FileOp{Op: wire.FileDelete, Bucket: bucket, Key: key})
	return err
}

func (d *nodeDriver) Size(ctx context.Context, bucket string) (int64, error) {
	res, err := d.do(ctx, wire.FileOp{Op: wire.FileSize, Bucket: bucket})
	return res.Size, err
}

func (d *nodeDriver) Get(ctx context.Context, bucket, key string) (io.ReadCloser, storage.Object, error) {
	if err := storage.CheckKey(key); err != nil {
		return nil, storage.Object{}, err
	}
	sess, c, err := d.start(ctx, wire.FileOp{Op: wire.FileGet, Bucket: bucket, Key: key})
	if err != nil {
		return nil, storage.Object{}, err
	}
	res, err := c.result(ctx)
	if err == nil {
		var o storage.Object
		if o, err = one(res); err == nil {
			return &nodeReader{ctx: ctx, sess: sess, c: c, size: o.Size}, o, nil
		}
	}
	sess.endCall(c)
	return nil, storage.Object{}, err
}

// nodeReader reads a file the node streams, granting credit as it goes.
type nodeReader struct {
	ctx  context.Context
	sess *session
	c    *fileCall
	size int64
	read int64
	buf  []byte
	done bool
	err  error
}

func (r *nodeReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			if r.read != r.size {
				r.err = fmt.Errorf("the node sent %d of %d bytes", r.read, r.size)
				return 0, r.err
			}
			return 0, io.EOF
		}
		m, err := r.c.next(r.ctx)
		if err != nil {
			r.err = err
			return 0, err
		}
		data, ok := m.(wire.FileData)
		switch {
		case !ok:
			continue
		case data.Abort:
			r.err = errors.New("the node could not read the file to the end")
			return 0, r.err
		}
		r.buf, r.done = data.Data, data.Last
		r.read += int64(len(data.Data))
		if !data.Last {
			if err := r.sess.send(r.ctx, wire.FileData{ID: r.c.id, Credit: 1}); err != nil {
				r.err = err
				return 0, err
			}
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *nodeReader) Close() error {
	if !r.done && r.err == nil {
		// Tell the node to stop sending; best effort.
		_ = r.sess.send(context.WithoutCancel(r.ctx), wire.FileData{ID: r.c.id, Abort: true})
	}
	r.sess.endCall(r.c)
	return nil
}

// Put streams r to the node. The node writes beside the final name and
// renames once the last chunk arrived, so an interrupted upload never
// shows; a failing reader aborts it.
func (d *nodeDriver) Put(ctx context.Context, bucket, key string, r io.Reader, size int64) (storage.Object, error) {
	if err := storage.CheckKey(key); err != nil {
		return storage.Object{}, err
	}
	sess, c, err := d.start(ctx, wire.FileOp{Op: wire.FilePut, Bucket: bucket, Key: key, Size: size})
	if err != nil {
		return storage.Object{}, err
	}
	defer sess.endCall(c)
	buf := make([]byte, wire.MaxFileChunk)
	for {
		n, rerr := io.ReadFull(r, buf)
		last := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !last {
			_ = sess.send(context.WithoutCancel(ctx), wire.FileData{ID: c.id, Abort: true})
			return storage.Object{}, rerr
		}
		if err := sess.send(ctx, wire.FileData{ID: c.id, Data: buf[:n], Last: last}); err != nil {
			return storage.Object{}, err
		}
		if last {
			break
		}
		select { // the node refused early (a bad key, a full disk)
		case m := <-c.ch:
			if res, ok := m.(wire.FileResult); ok && res.Code != "" {
				c.ch <- m
				_, err := c.result(ctx)
				return storage.Object{}, err
			}
		default:
		}
	}
	res, err := c.result(ctx)
	if err != nil {
		return storage.Object{}, err
	}
	return one(res)
}
