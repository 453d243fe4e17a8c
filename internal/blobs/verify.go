package blobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	"github.com/levers9/levers9/internal/fault"
)

// verifier passes an upload to the storage driver while hashing it, and
// fails the read that completes it when the content is not what it was
// announced to be (wrong hash, too long, too short, over the limit). A
// driver stores an object only when its reader ends cleanly (storage.Driver
// puts atomically), so a wrong upload never lands under its key.
type verifier struct {
	r     io.Reader
	h     hash.Hash
	want  string
	size  int64 // declared; -1 when unknown
	limit int64
	kind  string
	n     int64
	// checked is set once the content is whole and matches: the store
	// refuses a Put that succeeded without it (a driver that stopped
	// reading early).
	checked bool
	// err is the verdict, kept so that the caller sees it whatever the
	// driver wraps it in.
	err error
}

func newVerifier(r io.Reader, want, kind string, size, limit int64) *verifier {
	return &verifier{r: r, h: sha256.New(), want: want, size: size, limit: limit, kind: kind}
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.checked {
		// Everything declared is read: only the end may follow.
		var one [1]byte
		for {
			n, err := v.r.Read(one[:])
			if n > 0 {
				return 0, v.fail(fault.Invalid("body", "the body is longer than its declared %d bytes", v.size))
			}
			if err != nil {
				return 0, io.EOF
			}
		}
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	switch {
	case v.n > v.limit:
		return n, v.fail(&TooLargeError{Kind: v.kind, Limit: v.limit})
	case v.size >= 0 && v.n > v.size:
		return n, v.fail(fault.Invalid("body", "the body is longer than its declared %d bytes", v.size))
	case v.size >= 0 && v.n == v.size, err == io.EOF:
		if v.size >= 0 && v.n < v.size {
			return n, v.fail(fault.Invalid("body", "the body ended after %d of its declared %d bytes", v.n, v.size))
		}
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
			return n, v.fail(fault.Invalid("hash", "the content's SHA-256 is %s, not %s", got, v.want))
		}
		v.checked = true
		if err == io.EOF {
			return n, io.EOF
		}
		return n, nil
	case err != nil:
		return n, v.fail(fmt.Errorf("reading the upload: %w", err))
	}
	return n, nil
}

func (v *verifier) fail(err error) error {
	v.err = err
	return err
}

// TooLargeError refuses a blob over its kind's limit; it is a
// BAD_USER_INPUT fault, which HTTP answers 413.
type TooLargeError struct {
	Kind  string
	Limit int64
}

func (e *TooLargeError) Error() string { return e.Unwrap().Error() }

// Unwrap is the fault the front doors classify.
func (e *TooLargeError) Unwrap() error {
	return fault.Invalid("body", "%s blobs are limited to %d bytes", e.Kind, e.Limit)
}
