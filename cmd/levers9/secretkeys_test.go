package main

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/secrets"
)

// The server's secret keys come from LEVERS9_SECRET_KEY, --secret-key-file
// or, given neither, DATA_DIR/secret.key made at first start; bad keys
// stop it without being quoted.
func TestSecretKeys(t *testing.T) {
	t.Parallel()
	key := func() string {
		b := make([]byte, secrets.KeySize)
		_, _ = rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	k1, k2 := key(), key()
	dir := t.TempDir()

	c, err := parseServerConfig(nil, lookupIn(map[string]string{"LEVERS9_SECRET_KEY": k1 + "," + k2}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := secretKeys(c, dir)
	if err != nil || !ring.Has(mustID(t, k2)) || ring.Primary() != mustID(t, k1) {
		t.Fatalf("keys from the environment: %v", err)
	}

	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte(k2+"\n"+k1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = parseServerConfig([]string{"--secret-key-file", file}, lookupIn(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if ring, err = secretKeys(c, dir); err != nil || ring.Primary() != mustID(t, k2) {
		t.Fatalf("keys from the file: %v", err)
	}

	c, err = parseServerConfig(nil, lookupIn(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if ring, err = secretKeys(c, dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "secret.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the default key file: %v", err)
	}
	if again, err := secretKeys(c, dir); err != nil || again.Primary() != ring.Primary() {
		t.Fatalf("a second start made another key: %v", err)
	}

	for _, bad := range []struct {
		args []string
		env  map[string]string
	}{
		{nil, map[string]string{"LEVERS9_SECRET_KEY": "hunter2-not-a-key"}},
		{nil, map[string]string{"LEVERS9_SECRET_KEY": base64.StdEncoding.EncodeToString([]byte("short"))}},
		{[]string{"--secret-key-file", file}, map[string]string{"LEVERS9_SECRET_KEY": k1}},
	} {
		_, err := parseServerConfig(bad.args, lookupIn(bad.env), io.Discard)
		if err == nil {
			t.Errorf("%v %v accepted", bad.args, bad.env)
		} else if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), k1) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

func mustID(t *testing.T, b64 string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return secrets.KeyID(b)
}
