package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// mounted is what the agent made of a job's mounts: directories for the
// runtime, and the synced ones to save back after the job.
type mounted struct {
	root  string // the job's mount directories, removed after the job
	spec  []runtime.Mount
	syncs []*syncedMount // writable mounts synced through the files API
}

// syncedMount is a bucket copied down for a job; seen is what was copied,
// so that only changes go back.
type syncedMount struct {
	wire.Mount
	dir  string
	seen map[string]stamp
}

// stamp identifies a file's content cheaply: a rewrite changes one of them.
type stamp struct {
	size int64
	mod  time.Time
}

// mountRoot is where the agent keeps job jobID's synced and copied mounts.
func (a *Agent) mountRoot(jobID string) string {
	return filepath.Join(a.cfg.StateDir, "mounts", jobID)
}

func (a *Agent) files(jobID string) *filesClient {
	return &filesClient{http: a.cfg.Client, server: a.st.Server, credential: a.st.Credential, jobID: jobID}
}

// prepareMounts materialises the mounts of job jobID: a bucket on this
// node's disk (Link) is used in place, except that a read-only one is
// copied for the process runtime, which cannot stop the job from writing
// (a container runtime binds it read-only); any other bucket is synced down
// through the files API. Synced writable mounts are recorded in the mount
// directory, so an agent that reattaches to the job after a restart still
// saves its results.
func (a *Agent) prepareMounts(ctx context.Context, jobID string, ms []wire.Mount) (*mounted, error) {
	mt := &mounted{root: a.mountRoot(jobID)}
	// Left over from an attempt the agent did not see to its end.
	if err := os.RemoveAll(mt.root); err != nil {
		return nil, fmt.Errorf("clearing old mounts: %w", err)
	}
	fc := a.files(jobID)
	enforced := a.cfg.Runtime.Name() != wire.RuntimeProcess
	for i, m := range ms {
		dir := filepath.Join(mt.root, strconv.Itoa(i))
		var err error
		switch {
		case m.Link != "" && (!m.ReadOnly || enforced):
			dir = m.Link
			err = os.MkdirAll(dir, 0o755)
		case m.Link != "":
			err = copyTree(m.Link, dir)
		default:
			var seen map[string]stamp
			seen, err = syncDown(ctx, fc, m.Bucket, dir)
			if err == nil && !m.ReadOnly {
				mt.syncs = append(mt.syncs, &syncedMount{Mount: m, dir: dir, seen: seen})
			}
		}
		if err != nil {
			return mt, fmt.Errorf("mount %s (bucket %s): %w", m.Path, m.Bucket, err)
		}
		mt.spec = append(mt.spec, runtime.Mount{Path: m.Path, Dir: dir, ReadOnly: m.ReadOnly})
	}
	if err := mt.record(); err != nil {
		return mt, err
	}
	return mt, nil
}

// mountsFile, in a job's mount directory, records its synced writable
// mounts.
const mountsFile = "mounts.json"

// recorded is the JSON form of a synced writable mount.
type recorded struct {
	Mount wire.Mount          `json:"mount"`
	Dir   string              `json:"dir"`
	Seen  map[string]recStamp `json:"seen"`
}

type recStamp struct {
	Size int64     `json:"size"`
	Mod  time.Time `json:"mod"`
}

func (mt *mounted) record() error {
	if len(mt.syncs) == 0 {
		return nil
	}
	rs := make([]recorded, len(mt.syncs))
	for i, s := range mt.syncs {
		rs[i] = recorded{Mount: s.Mount, Dir: s.dir, Seen: make(map[string]recStamp, len(s.seen))}
		for k, v := range s.seen {
			rs[i].Seen[k] = recStamp{Size: v.size, Mod: v.mod}
		}
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return fmt.Errorf("recording the mounts: %w", err)
	}
	if err := os.WriteFile(filepath.Join(mt.root, mountsFile), b, 0o600); err != nil {
		return fmt.Errorf("recording the mounts: %w", err)
	}
	return nil
}

// loadMounts is what an earlier agent made of job jobID's mounts: the
// directory to remove after the job and the synced mounts to save. A
// record that cannot be read keeps the directory (the results stay on the
// node) rather than losing them.
func (a *Agent) loadMounts(jobID string) *mounted {
	mt := &mounted{root: a.mountRoot(jobID)}
	b, err := os.ReadFile(filepath.Join(mt.root, mountsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return mt
	}
	var rs []recorded
	if err == nil {
		err = json.Unmarshal(b, &rs)
	}
	if err != nil {
		a.log.Warn("the mounts of a job found running cannot be saved after it", "job", jobID, "err", err, "kept", mt.root)
		return nil
	}
	for _, r := range rs {
		s := &syncedMount{Mount: r.Mount, dir: r.Dir, seen: make(map[string]stamp, len(r.Seen))}
		for k, v := range r.Seen {
			s.seen[k] = stamp{size: v.Size, mod: v.Mod}
		}
		mt.syncs = append(mt.syncs, s)
	}
	return mt
}

// syncDown copies every object of bucket into dir and returns what it wrote.
func syncDown(ctx context.Context, fc *filesClient, bucket, dir string) (map[string]stamp, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	objs, err := fc.list(ctx, bucket)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]stamp, len(objs))
	var mu sync.Mutex
	err = parallel(ctx, len(objs), func(ctx context.Context, i int) error {
		key := objs[i].Key
		name, err := localName(dir, key)
		if err != nil {
			return err
		}
		if err := fc.download(ctx, bucket, key, name); err != nil {
			return err
		}
		fi, err := os.Stat(name)
		if err != nil {
			return err
		}
		mu.Lock()
		seen[key] = stamp{fi.Size(), fi.ModTime()}
		mu.Unlock()
		return nil
	})
	return seen, err
}

// transfers is how many files of a mount move at once: many small files
// are bound by round trips, not bandwidth.
const transfers = 8

// parallel runs fn for 0..n-1 on up to transfers goroutines and returns
// the first error; after one, the others are cancelled and no more start.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(transfers)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// No call failed, but ctx may have ended before every one ran.
	return ctx.Err()
}

// localName is where key lives under dir; keys that would leave dir are
// refused (the server never sends them; the agent does not rely on it).
func localName(dir, key string) (string, error) {
	if key == "" || !filepath.IsLocal(filepath.FromSlash(key)) || path.Clean(key) != key {
		return "", fmt.Errorf("refusing object key %q", key)
	}
	return filepath.Join(dir, filepath.FromSlash(key)), nil
}

// syncBack saves the changes the job made to its synced writable mounts:
// new and rewritten files are uploaded, removed ones deleted. Only regular
// files count: a symbolic link is never followed, so a job cannot make the
// agent upload what lies outside its mount.
func (a *Agent) syncBack(ctx context.Context, jobID string, mt *mounted) error {
	fc := a.files(jobID)
	for _, s := range mt.syncs {
		if err := s.save(ctx, fc); err != nil {
			return fmt.Errorf("saving mount %s to bucket %s: %w", s.Path, s.Bucket, err)
		}
	}
	return nil
}

func (s *syncedMount) save(ctx context.Context, fc *filesClient) error {
	present := map[string]bool{}
	var changed []string
	err := filepath.WalkDir(s.dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.dir, name)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		present[key] = true
		if old, ok := s.seen[key]; !ok || old.size != fi.Size() || !old.mod.Equal(fi.ModTime()) {
			changed = append(changed, key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the mount: %w", err)
	}
	sort.Strings(changed)
	err = parallel(ctx, len(changed), func(ctx context.Context, i int) error {
		return fc.upload(ctx, s.Bucket, changed[i], s.dir)
	})
	if err != nil {
		return err
	}
	for key := range s.seen {
		if !present[key] {
			if err := fc.remove(ctx, s.Bucket, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// cleanup removes the job's copied and synced mount directories.
func (mt *mounted) cleanup() error {
	if mt == nil {
		return nil
	}
	return os.RemoveAll(mt.root)
}

// copyTree copies the regular files under src to dst (links are skipped).
func copyTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(name string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && name == src {
			return fs.SkipAll // an empty bucket has no directory yet
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, name)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(src, rel, to)
		}
		return nil
	})
}

// copyFile copies file name of directory src to dst. Other jobs may write
// src (a node bucket) meanwhile: the file is opened inside src, so a link
// put in its place cannot make the agent copy what lies outside.
func copyFile(src, name, dst string) error {
	in, err := openInside(src, name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
