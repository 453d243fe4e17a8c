package wire

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode checks that Decode never panics, fails only with its
// documented errors, and that whatever it accepts encodes again and decodes
// to the same message.
func FuzzDecode(f *testing.F) {
	for i, m := range samples() {
		b, err := EncodeSeq(uint64(i), m)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 4096 { // big seeds make every mutation slow
			f.Add(b)
		}
	}
	for _, s := range []string{
		``, `{}`, `null`, `{"v":1}`, `{"v":2,"type":"hello","body":{}}`,
		`{"v":1,"type":"logs","body":{"jobId":"j","lines":[{"service":"a","stream":"stdout","seq":1,"time":"2025-01-01T00:00:00+23:59","text":"\ud800"}]}}`,
		`{"v":1,"type":"heartbeat","body":{"time":"0000-12-31T23:00:00-02:00"}}`,
		`{"V":1,"TYPE":"ack","Body":{"SEQ":5}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, m, err := DecodeSeq(b)
		if err != nil {
			for _, e := range []error{ErrTooLarge, ErrVersion, ErrUnknownType, ErrMalformed, ErrInvalid} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("undocumented error %v", err)
		}
		out, err := EncodeSeq(seq, m)
		if errors.Is(err, ErrTooLarge) {
			return // decoding replaces invalid UTF-8, which can grow the text
		}
		if err != nil {
			t.Fatalf("accepted %q but cannot encode %#v: %v", b, m, err)
		}
		seq2, m2, err := DecodeSeq(out)
		if err != nil {
			t.Fatalf("cannot decode own encoding %q: %v", out, err)
		}
		out2, err := EncodeSeq(seq2, m2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("encoding not stable:\n%q\n%q (%v)", out, out2, err)
		}
	})
}
