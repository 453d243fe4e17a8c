package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/levers9/levers9/internal/wire"
)

// imageSha256Header carries the hex SHA-256 of an exported image on
// /agent/images (the server's imagesapi.Sha256Header).
const imageSha256Header = "Levers9-Sha256"

// maxImageBytes bounds an exported image either way (the server's limit
// for image blobs): a build that grew past it fails clearly instead of
// filling the node's disk with a copy the server would refuse.
const maxImageBytes = 16 << 30

// imagesTmp holds exported images on their way to or from the server.
func (a *Agent) imagesTmp() (string, error) {
	dir := filepath.Join(a.cfg.StateDir, "images")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("images folder: %w", err)
	}
	// What an agent that died mid-transfer left (gigabytes each) goes,
	// once per process, before this process puts its own there.
	once, _ := sweptImages.LoadOrStore(dir, new(sync.Once))
	once.(*sync.Once).Do(func() {
		for _, pattern := range []string{".fetch-*", ".upload-*"} {
			left, _ := filepath.Glob(filepath.Join(dir, pattern))
			for _, p := range left {
				_ = os.Remove(p)
			}
		}
	})
	return dir, nil
}

// sweptImages is a *sync.Once per images folder.
var sweptImages sync.Map

func (a *Agent) imageURL(key string) string {
	return strings.TrimRight(a.st.Server, "/") + "/agent/images/" + key
}

// fetchImage downloads the exported image holding blueprint image ref
// (its key is the tag) for job jobID, to a temporary file first so a
// broken download is retried from the start, never loaded half. Closing
// the reader removes the file.
func (a *Agent) fetchImage(ctx context.Context, jobID, ref string) (io.ReadCloser, error) {
	key := ref[strings.LastIndexByte(ref, ':')+1:]
	if !codeHashRE.MatchString(key) {
		return nil, fmt.Errorf("blueprint image %.100q has no key for a tag", ref)
	}
	dir, err := a.imagesTmp()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".fetch-*")
	if err != nil {
		return nil, fmt.Errorf("images folder: %w", err)
	}
	tf := &tempFile{File: f}
	err = a.files(jobID).do(ctx, "fetching blueprint image "+key[:12], func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, a.imageURL(key), nil)
	}, func(resp *http.Response) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
		h := sha256.New()
		if resp.ContentLength > maxImageBytes {
			return &refusedError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("the image is %d bytes, more than %d", resp.ContentLength, int64(maxImageBytes))}
		}
		n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, maxImageBytes+1))
		if err != nil {
			return err
		}
		if n > maxImageBytes {
			return &refusedError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("the image is more than %d bytes", int64(maxImageBytes))}
		}
		if want := resp.Header.Get(imageSha256Header); want != "" && want != hex.EncodeToString(h.Sum(nil)) {
			return fmt.Errorf("the image arrived damaged (SHA-256 %x, the server says %s)", h.Sum(nil), want)
		}
		return nil
	})
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = tf.Close()
		return nil, err
	}
	return tf, nil
}

// uploadImage sends an exported image (a `docker save` tar) to the server
// as blueprint key's, for job jobID: spooled to a temporary file while
// hashed, since the server wants its length and SHA-256 up front.
func (a *Agent) uploadImage(ctx context.Context, jobID, key string, tar io.Reader, stepsBuilt int) error {
	if !codeHashRE.MatchString(key) {
		return fmt.Errorf("blueprint key %.100q is not a hex SHA-256", key)
	}
	dir, err := a.imagesTmp()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return fmt.Errorf("images folder: %w", err)
	}
	defer (&tempFile{File: f}).Close()
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(tar, maxImageBytes+1))
	if err != nil {
		return fmt.Errorf("exporting the image: %w", err)
	}
	if size > maxImageBytes {
		return fmt.Errorf("the image is more than %d bytes, the most the server keeps", int64(maxImageBytes))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	a.log.Info("uploading blueprint image", "job", jobID, "key", key, "bytes", size, "stepsBuilt", stepsBuilt)
	return a.files(jobID).do(ctx, "uploading blueprint image "+key[:12], func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, a.imageURL(key), io.NewSectionReader(f, 0, size))
		if err != nil {
			return nil, err
		}
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/x-tar")
		req.Header.Set(imageSha256Header, sum)
		req.Header.Set(wire.StepsBuiltHeader, strconv.Itoa(stepsBuilt))
		return req, nil
	}, func(*http.Response) error { return nil })
}

// tempFile is a file removed when closed.
type tempFile struct{ *os.File }

func (t *tempFile) Close() error {
	err := t.File.Close()
	if rerr := os.Remove(t.Name()); err == nil && rerr != nil && !os.IsNotExist(rerr) {
		err = rerr
	}
	return err
}
