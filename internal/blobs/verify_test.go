package blobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// drain reads v the way a driver might, step bytes at a time, and returns
// what was passed on and the error that ended it (nil at a clean end).
func drain(v *verifier, step int) ([]byte, error) {
	var out []byte
	buf := make([]byte, step)
	for {
		n, err := v.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// The content passes whole when it matches, and never whole when it does
// not: the driver cannot have stored a wrong object, even one that stores
// what it got before the error.
func TestVerifier(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("levers9 "), 1000)
	sum := sha256.Sum256(data)
	good := hex.EncodeToString(sum[:])
	bad := hex.EncodeToString(make([]byte, 32))
	sources := map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(data) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
		"data+EOF": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
	}
	for name, src := range sources {
		for _, step := range []int{1, 2, 7, 4096, 1 << 16} {
			for _, size := range []int64{int64(len(data)), -1} {
				v := newVerifier(src(), good, KindCode, size, 1<<20)
				got, err := drain(v, step)
				if err != nil || !bytes.Equal(got, data) || !v.passed() {
					t.Errorf("%s, step %d, size %d: %d bytes, passed %v, %v", name, step, size, len(got), v.passed(), err)
				}
				for _, tc := range []struct {
					name       string
					hash       string
					size, lim  int64
					wantTooBig bool
				}{
					{"wrong hash", bad, size, 1 << 20, false},
					{"declared longer", good, int64(len(data)) + 1, 1 << 20, false},
					{"over the limit", good, size, int64(len(data)) - 1, true},
				} {
					v := newVerifier(src(), tc.hash, KindCode, tc.size, tc.lim)
					got, err := drain(v, step)
					var tooBig *TooLargeError
					if err == nil || len(got) >= len(data) || v.passed() || errors.As(err, &tooBig) != tc.wantTooBig {
						t.Errorf("%s, step %d, size %d, %s: passed on %d of %d bytes, %v", name, step, size, tc.name, len(got), len(data), err)
					}
				}
			}
		}
	}
	// Declared shorter: the rest is refused on the read after.
	v := newVerifier(bytes.NewReader(append(data, 'x')), good, KindCode, int64(len(data)), 1<<20)
	if _, err := drain(v, 4096); err == nil {
		t.Error("a body longer than declared passed")
	}
	// Empty content.
	empty := sha256.Sum256(nil)
	v = newVerifier(bytes.NewReader(nil), hex.EncodeToString(empty[:]), KindPayload, 0, 1)
	if got, err := drain(v, 16); err != nil || len(got) != 0 || !v.passed() {
		t.Errorf("empty: %d bytes, %v", len(got), err)
	}
}
