package blobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"

	"github.com/levers9/levers9/internal/fault"
)

// verifier passes an upload to the storage driver while hashing it, and
// holds back its last byte until the content is whole and matches: a
// wrong upload (other hash, too long, too short, over the limit) fails
// before the driver has all of it. So no driver can store it under its key:
// one that streams (a single S3 PUT of a known size) sends a short body,
// and every driver drops an upload whose reader fails (storage.Driver puts
// atomically).
type verifier struct {
	r     io.Reader
	h     hash.Hash
	want  string
	size  int64 // declared; -1 when unknown
	limit int64
	kind  string
	n     int64 // bytes received
	// held is the last byte received and not yet passed on.
	held    byte
	holding bool
	// verified is set once the content is whole and matches.
	verified bool
	// err is the verdict, kept so that the caller sees it whatever the
	// driver wraps it in.
	err error
}

func newVerifier(r io.Reader, want, kind string, size, limit int64) *verifier {
	return &verifier{r: r, h: sha256.New(), want: want, size: size, limit: limit, kind: kind}
}

// passed reports whether the whole, verified content was passed on: the
// store refuses a Put that succeeded without it (a driver that stopped
// reading early).
func (v *verifier) passed() bool { return v.verified && !v.holding }

func (v *verifier) Read(p []byte) (int, error) {
	switch {
	case v.err != nil:
		return 0, v.err
	case len(p) == 0:
		return 0, nil
	case v.verified && v.holding:
		p[0], v.holding = v.held, false
		return 1, nil
	case v.verified:
		return 0, v.end()
	}
	// Receive after the held byte, into a byte of our own when p has room
	// for the held one only.
	off, buf := 0, p
	var one [1]byte
	if v.holding {
		p[0], off = v.held, 1
		buf = p[1:]
		if len(buf) == 0 {
			buf = one[:]
		}
	}
	own := &buf[0] == &one[0]
	n, err := v.r.Read(buf)
	v.h.Write(buf[:n])
	v.n += int64(n)
	whole := (v.size >= 0 && v.n == v.size) || err == io.EOF
	switch {
	case v.n > v.limit:
		return 0, v.fail(&TooLargeError{Kind: v.kind, Limit: v.limit})
	case v.size >= 0 && v.n > v.size:
		return 0, v.fail(fault.Invalid("body", "the body is longer than its declared %d bytes", v.size))
	case whole && v.size >= 0 && v.n < v.size:
		return 0, v.fail(fault.Invalid("body", "the body ended after %d of its declared %d bytes", v.n, v.size))
	case err != nil && err != io.EOF:
		return 0, v.fail(fmt.Errorf("reading the upload: %w", err))
	case whole:
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
			return 0, v.fail(fault.Invalid("hash", "the content's SHA-256 is %s, not %s", got, v.want))
		}
		v.verified = true
		if own && n > 0 {
			// The received byte follows the held one on the next read.
			v.held = one[0]
			return 1, nil
		}
		v.holding = false
		if err == io.EOF {
			return off + n, io.EOF
		}
		return off + n, nil
	case n == 0:
		return 0, nil // the held byte stays held
	case own:
		v.held = one[0]
		return 1, nil
	}
	// Pass on all but the newest byte.
	v.held, v.holding = buf[n-1], true
	return off + n - 1, nil
}

// end is the read after the whole content: only the end may follow it.
func (v *verifier) end() error {
	var one [1]byte
	for {
		n, err := v.r.Read(one[:])
		if n > 0 {
			return v.fail(fault.Invalid("body", "the body is longer than its declared %d bytes", v.size))
		}
		if err != nil {
			return io.EOF
		}
	}
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

// HTTPStatus is 413: the request was well formed but too large.
func (e *TooLargeError) HTTPStatus() int { return http.StatusRequestEntityTooLarge }

// Unwrap is the fault the front doors classify.
func (e *TooLargeError) Unwrap() error {
	return fault.Invalid("body", "%s blobs are limited to %d bytes", e.Kind, e.Limit)
}
