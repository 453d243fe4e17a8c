package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

// BlueprintRepository starts the repository of every blueprint image:
// such images are never pulled, they come from the server.
const BlueprintRepository = "levers9-bp/"

// imageLoadTimeout bounds fetching and loading one exported image, shared
// by every job waiting for it.
const imageLoadTimeout = 30 * time.Minute

var _ runtime.ImageSource = (*Runtime)(nil)

// SetImageFetcher implements runtime.ImageSource.
func (r *Runtime) SetImageFetcher(f runtime.ImageFetcher) {
	r.mu.Lock()
	r.cfg.FetchImage = f
	r.mu.Unlock()
}

func (r *Runtime) fetcher() runtime.ImageFetcher {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg.FetchImage
}

// isBlueprint reports whether ref names a blueprint image.
func isBlueprint(ref string) bool {
	return strings.HasPrefix(strings.ToLower(ref), BlueprintRepository)
}

// blueprintKey is the key of blueprint image ref: its tag.
func blueprintKey(ref string) string {
	if i := strings.LastIndexByte(ref, ':'); i >= 0 {
		return ref[i+1:]
	}
	return ""
}

// loadBlueprint fetches the exported image holding ref from the server
// (for job jobID) and loads it. Concurrent calls for one ref load once;
// the load outlives a caller that gives up, since others may wait for it.
func (r *Runtime) loadBlueprint(ctx context.Context, jobID, ref string) error {
	ch := r.loads.DoChan(ref, func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), imageLoadTimeout)
		defer cancel()
		if _, err := r.cli.ImageInspect(lctx, ref); err == nil {
			return nil, nil // loaded meanwhile
		}
		f := r.fetcher()
		if f == nil {
			return nil, fmt.Errorf("blueprint image %s is not on this node and the runtime has no way to fetch it", ref)
		}
		r.log.Info("loading blueprint image", "image", ref)
		body, err := f(lctx, jobID, ref)
		if err != nil {
			return nil, fmt.Errorf("fetching blueprint image %s: %w", ref, err)
		}
		defer body.Close()
		if err := r.loadImage(lctx, body); err != nil {
			return nil, fmt.Errorf("loading blueprint image %s: %w", ref, err)
		}
		if _, err := r.cli.ImageInspect(lctx, ref); err != nil {
			return nil, fmt.Errorf("blueprint image %s is missing after loading its export: %w", ref, err)
		}
		return nil, nil
	})
	select {
	case res := <-ch:
		return res.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadImage loads a `docker save` tar into the daemon.
func (r *Runtime) loadImage(ctx context.Context, tar io.Reader) error {
	res, err := r.cli.ImageLoad(ctx, tar, client.ImageLoadWithQuiet(true))
	if err != nil {
		return err
	}
	defer res.Close()
	return readJSONStream(res, nil)
}

// readJSONStream reads a daemon's progress stream (build, load, import)
// to its end, handing each piece of output text to out (nil: dropped),
// and returns the error it reports.
func readJSONStream(r io.Reader, out func(string)) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading the daemon's answer: %w", err)
		}
		if m.Error != nil {
			return errors.New(strings.TrimSpace(m.Error.Message))
		}
		if out != nil && m.Stream != "" {
			out(m.Stream)
		}
	}
}

// lineSplitter turns chunks of output into whole lines.
type lineSplitter struct {
	buf  strings.Builder
	emit func(string)
}

func (l *lineSplitter) write(s string) {
	for {
		i := strings.IndexAny(s, "\n")
		if i < 0 {
			l.buf.WriteString(s)
			if l.buf.Len() >= runtime.MaxLineBytes {
				l.flush()
			}
			return
		}
		l.buf.WriteString(s[:i])
		l.flush()
		s = s[i+1:]
	}
}

func (l *lineSplitter) flush() {
	line := strings.TrimRight(l.buf.String(), "\r")
	l.buf.Reset()
	if strings.TrimSpace(line) == "" {
		return
	}
	for len(line) > runtime.MaxLineBytes {
		n := runtime.MaxLineBytes
		for n > 0 && line[n]&0xC0 == 0x80 {
			n--
		}
		l.emit(strings.ToValidUTF8(line[:n], "\uFFFD"))
		line = line[n:]
	}
	l.emit(strings.ToValidUTF8(line, "\uFFFD"))
}
