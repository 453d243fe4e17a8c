package blobs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/storage"
)

func TestCheckHash(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("hello"))
	good := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, hash string
		ok         bool
	}{
		{"sha256", good, true},
		{"upper case", strings.ToUpper(good), false},
		{"short", good[:63], false},
		{"long", good + "0", false},
		{"empty", "", false},
		{"not hex", strings.Repeat("g", 64), false},
		{"traversal", "../" + good[3:], false},
		{"slash", good[:32] + "/" + good[33:], false},
		{"multi-byte rune", "é" + good[2:], false},
	} {
		if err := blobs.CheckHash(tc.hash); (err == nil) != tc.ok {
			t.Errorf("%s: CheckHash(%q) = %v, want ok %v", tc.name, tc.hash, err, tc.ok)
		}
	}
}

// A hash CheckHash lets through is one spelling of 32 bytes, and safe in a
// storage key and a URL path.
func FuzzCheckHash(f *testing.F) {
	sum := sha256.Sum256(nil)
	for _, s := range []string{hex.EncodeToString(sum[:]), strings.ToUpper(hex.EncodeToString(sum[:])), "", "..", strings.Repeat("0", 64), strings.Repeat("/", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if blobs.CheckHash(s) != nil {
			return
		}
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != sha256.Size || hex.EncodeToString(b) != s {
			t.Fatalf("CheckHash accepted %q", s)
		}
		if err := storage.CheckKey("tenant_x/sha256/" + s); err != nil {
			t.Fatalf("CheckHash accepted %q, which is no storage key: %v", s, err)
		}
	})
}
