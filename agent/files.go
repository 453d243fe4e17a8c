package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/levers9/levers9/internal/wire"
)

// Retries of one files API request. Transient failures (the network, the
// server restarting, 5xx) are retried with jittered backoff; refusals are not.
const (
	fileAttempts   = 6
	fileMinBackoff = 200 * time.Millisecond
	fileMaxBackoff = 5 * time.Second
)

// filesClient moves a job's bucket files through the server's files API,
// authenticated with the node credential for that job.
type filesClient struct {
	http       *http.Client
	server     string
	credential string
	jobID      string
}

// refusedError is a final answer of the server (4xx): retrying won't help.
type refusedError struct {
	status int
	msg    string
}

func (e *refusedError) Error() string { return fmt.Sprintf("server refused (%d): %s", e.status, e.msg) }

func (c *filesClient) url(bucket, key string, q url.Values) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	u := strings.TrimRight(c.server, "/") + "/files/" + url.PathEscape(bucket) + "/" + strings.Join(segs, "/")
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// do sends a request built by build (called again for every attempt) and
// hands a successful response to use, retrying transient failures.
func (c *filesClient) do(ctx context.Context, what string, build func() (*http.Request, error), use func(*http.Response) error) error {
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		err := c.once(ctx, build, use)
		var refused *refusedError
		if errors.As(err, &refused) {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(jittered(fileMinBackoff, fileMaxBackoff)),
		backoff.WithMaxTries(fileAttempts), backoff.WithMaxElapsedTime(0))
	var refused *refusedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused) || ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: giving up after %d attempts: %w", what, fileAttempts, err)
}

func (c *filesClient) once(ctx context.Context, build func() (*http.Request, error), use func(*http.Response) error) error {
	req, err := build()
	if err != nil {
		return &refusedError{msg: err.Error()}
	}
	req = req.WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+c.credential)
	req.Header.Set(wire.JobHeader, c.jobID)
	client := c.http
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var body struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
			msg = body.Error.Message
		}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("server error (%d): %s", resp.StatusCode, msg)
		}
		return &refusedError{status: resp.StatusCode, msg: msg}
	}
	return use(resp)
}

// list returns every object of bucket.
func (c *filesClient) list(ctx context.Context, bucket string) ([]wire.FileObject, error) {
	var all []wire.FileObject
	after := ""
	for {
		var page wire.FileListing
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after", after)
		}
		err := c.do(ctx, "listing bucket "+bucket, func() (*http.Request, error) {
			return http.NewRequest(http.MethodGet, c.url(bucket, "", q), nil)
		}, func(resp *http.Response) error {
			page.Objects, page.Next = nil, ""
			return json.NewDecoder(resp.Body).Decode(&page)
		})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Objects...)
		if page.Next == "" {
			return all, nil
		}
		after = page.Next
	}
}

// download writes object key of bucket to file dst, whole or not at all:
// it is written beside dst and renamed into place once complete.
func (c *filesClient) download(ctx context.Context, bucket, key, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return c.do(ctx, "downloading "+key, func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, c.url(bucket, key, nil), nil)
	}, func(resp *http.Response) error {
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".levers9-part-*")
		if err != nil {
			return &refusedError{msg: err.Error()}
		}
		defer os.Remove(tmp.Name()) // no-op once renamed
		n, err := io.Copy(tmp, resp.Body)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if resp.ContentLength >= 0 && n != resp.ContentLength {
			return fmt.Errorf("got %d of %d bytes", n, resp.ContentLength)
		}
		return os.Rename(tmp.Name(), dst)
	})
}

// upload stores file key under directory dir as object key of bucket. The
// file is opened inside dir (see openInside), so a link the job left there
// cannot make the agent upload what lies outside it. The server commits an
// object only once its whole body arrived, so an interrupted upload leaves
// the previous version (or nothing) in place.
func (c *filesClient) upload(ctx context.Context, bucket, key, dir string) error {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	return c.do(ctx, "uploading "+key, func() (*http.Request, error) {
		if f != nil {
			f.Close()
		}
		var err error
		if f, err = openInside(dir, filepath.FromSlash(key)); err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequest(http.MethodPut, c.url(bucket, key, nil), f)
		if err != nil {
			return nil, err
		}
		req.ContentLength = fi.Size()
		req.Header.Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
		if fi.Size() == 0 {
			req.Body = http.NoBody
		}
		return req, nil
	}, func(*http.Response) error { return nil })
}

// openInside opens the regular file name under dir for reading without
// leaving dir: links are followed only while they stay inside it (as in a
// bucket), and anything but a regular file is refused (a FIFO would block
// the agent). A job's files may change under the agent (a job's own
// process, or another job writing the same node bucket), so a walk's
// "regular file" is checked again on the file actually opened.
func openInside(dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s in %s: %w", name, dir, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s in %s is not a regular file", name, dir)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// remove deletes object key of bucket; a missing object is no error.
func (c *filesClient) remove(ctx context.Context, bucket, key string) error {
	err := c.do(ctx, "deleting "+key, func() (*http.Request, error) {
		return http.NewRequest(http.MethodDelete, c.url(bucket, key, nil), nil)
	}, func(*http.Response) error { return nil })
	var refused *refusedError
	if errors.As(err, &refused) && refused.status == http.StatusNotFound {
		return nil
	}
	return err
}
