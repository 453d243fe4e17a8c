package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/levers9/levers9/internal/wire"
	"github.com/levers9/levers9/storage"
)

// nodeFiles serves the server's operations on node storages (buckets on
// this node's disk) over one connection. The storage package's local
// driver does the work, so keys are checked and confined to their bucket
// exactly as on the server's own disk.
type nodeFiles struct {
	c   *conn
	log *slog.Logger

	mu     sync.Mutex
	roots  map[string]*storage.Local
	puts   map[uint64]*io.PipeWriter
	gets   map[uint64]*getStream
	closed bool
}

// getStream is a get being sent: it may send a chunk per credit.
type getStream struct {
	credit chan int
	cancel context.CancelFunc
}

func newNodeFiles(c *conn, a *Agent) *nodeFiles {
	return &nodeFiles{c: c, log: a.log, roots: map[string]*storage.Local{}, puts: map[uint64]*io.PipeWriter{}, gets: map[uint64]*getStream{}}
}

// close ends every operation in flight (the connection is gone).
func (nf *nodeFiles) close() {
	nf.mu.Lock()
	defer nf.mu.Unlock()
	nf.closed = true
	for id, pw := range nf.puts {
		pw.CloseWithError(errors.New("connection lost"))
		delete(nf.puts, id)
	}
	for id, g := range nf.gets {
		g.cancel()
		delete(nf.gets, id)
	}
}

func (nf *nodeFiles) driver(root string) (*storage.Local, error) {
	nf.mu.Lock()
	defer nf.mu.Unlock()
	if d, ok := nf.roots[root]; ok {
		return d, nil
	}
	d, err := storage.OpenLocal(root)
	if err != nil {
		return nil, err
	}
	nf.roots[root] = d
	return d, nil
}

// op starts an operation. Streams are registered before op returns, so the
// data that follows a put on the connection finds its way.
func (nf *nodeFiles) op(ctx context.Context, m wire.FileOp) {
	ctx, cancel := context.WithCancel(ctx)
	nf.mu.Lock()
	if nf.closed {
		nf.mu.Unlock()
		cancel()
		return
	}
	var pr *io.PipeReader
	var g *getStream
	switch m.Op {
	case wire.FilePut:
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		nf.puts[m.ID] = pw
	case wire.FileGet:
		g = &getStream{credit: make(chan int, 2*wire.FileWindow), cancel: cancel}
		g.credit <- wire.FileWindow
		nf.gets[m.ID] = g
	}
	nf.mu.Unlock()
	go func() {
		defer cancel()
		res, rc := nf.run(ctx, m, pr)
		if err := nf.c.send(ctx, res); err != nil {
			nf.log.Warn("answering a file operation", "op", m.Op, "err", err)
		}
		if rc != nil {
			defer rc.Close()
			if res.Code == "" {
				if err := nf.stream(ctx, m.ID, rc, g); err != nil {
					nf.log.Warn("sending a file", "key", m.Key, "err", err)
				}
			}
		}
		nf.mu.Lock()
		delete(nf.puts, m.ID)
		delete(nf.gets, m.ID)
		nf.mu.Unlock()
	}()
}

// run performs m; for a get it also returns the open file.
func (nf *nodeFiles) run(ctx context.Context, m wire.FileOp, body *io.PipeReader) (wire.FileResult, io.ReadCloser) {
	res := wire.FileResult{ID: m.ID}
	fail := func(err error) (wire.FileResult, io.ReadCloser) {
		if body != nil {
			body.CloseWithError(err) // the rest of the upload is discarded
		}
		res.Code, res.Error = wire.FileFailed, err.Error()
		switch {
		case errors.Is(err, storage.ErrNotFound):
			res.Code = wire.FileNotFound
		case errors.Is(err, storage.ErrInvalidKey), errors.Is(err, storage.ErrInvalid), errors.Is(err, storage.ErrOutside):
			// A link out of the bucket reaches the server as a refused key.
			res.Code = wire.FileInvalid
		}
		if len(res.Error) > wire.MaxReasonBytes {
			res.Error = res.Error[:wire.MaxReasonBytes]
		}
		return res, nil
	}
	d, err := nf.driver(m.Root)
	if err != nil {
		return fail(err)
	}
	obj := func(o storage.Object) wire.FileObject {
		return wire.FileObject{Key: o.Key, Size: o.Size, Modified: o.Modified}
	}
	switch m.Op {
	case wire.FileList:
		objs, err := d.List(ctx, m.Bucket, storage.ListOptions{Prefix: m.Prefix, After: m.After, Limit: m.Limit})
		if err != nil {
			return fail(err)
		}
		for _, o := range objs {
			res.Objects = append(res.Objects, obj(o))
		}
	case wire.FileStat:
		o, err := d.Stat(ctx, m.Bucket, m.Key)
		if err != nil {
			return fail(err)
		}
		res.Objects = []wire.FileObject{obj(o)}
	case wire.FileGet:
		rc, o, err := d.Get(ctx, m.Bucket, m.Key)
		if err != nil {
			return fail(err)
		}
		res.Objects = []wire.FileObject{obj(o)}
		return res, rc
	case wire.FilePut:
		o, err := d.Put(ctx, m.Bucket, m.Key, body, m.Size)
		if err != nil {
			return fail(err)
		}
		res.Objects = []wire.FileObject{obj(o)}
	case wire.FileDelete:
		if err := d.Delete(ctx, m.Bucket, m.Key); err != nil {
			return fail(err)
		}
	case wire.FileSize:
		n, err := d.Size(ctx, m.Bucket)
		if err != nil {
			return fail(err)
		}
		res.Size = n
	default:
		return fail(fmt.Errorf("unknown operation %q", m.Op))
	}
	return res, nil
}

// stream sends r as chunks, one per credit the server granted.
func (nf *nodeFiles) stream(ctx context.Context, id uint64, r io.Reader, g *getStream) error {
	buf := make([]byte, wire.MaxFileChunk)
	credit := 0
	for {
		for credit == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case n := <-g.credit:
				credit += n
			}
		}
		n, err := io.ReadFull(r, buf)
		last := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !last {
			// The server sees the stream end short and fails the download.
			_ = nf.c.send(ctx, wire.FileData{ID: id, Abort: true})
			return err
		}
		if err := nf.c.send(ctx, wire.FileData{ID: id, Data: buf[:n], Last: last}); err != nil {
			return err
		}
		credit--
		if last {
			return nil
		}
	}
}

// data takes bytes of a put, or credit or an abort for a get.
func (nf *nodeFiles) data(m wire.FileData) {
	nf.mu.Lock()
	pw := nf.puts[m.ID]
	g := nf.gets[m.ID]
	nf.mu.Unlock()
	switch {
	case pw != nil && m.Abort:
		pw.CloseWithError(errors.New("upload cancelled by the server"))
	case pw != nil:
		// Blocks while the disk takes the chunk: the connection carries
		// the back-pressure to the server.
		if len(m.Data) > 0 {
			if _, err := pw.Write(m.Data); err != nil {
				return // the put failed; its result says why
			}
		}
		if m.Last {
			pw.Close()
		}
	case g != nil && m.Abort:
		g.cancel()
	case g != nil && m.Credit > 0:
		select {
		case g.credit <- m.Credit:
		default: // more credit than the window: the server is confused; ignore
		}
	}
}
