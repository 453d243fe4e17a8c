package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

// An exported image goes up with its length, SHA-256, steps built, job
// and credential, and comes back down byte for byte (a transient failure
// retried); no temporary file is left.
func TestImagesUploadAndFetch(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("ab", 32)
	body := bytes.Repeat([]byte("layer "), 100_000)
	var stored []byte
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer cred" || r.Header.Get(wire.JobHeader) != "job-1" || r.URL.Path != "/agent/images/"+key {
			http.NotFound(w, r)
			return
		}
		switch r.Method {
		case http.MethodPost:
			b, _ := io.ReadAll(r.Body)
			sum := sha256.Sum256(b)
			if r.ContentLength != int64(len(b)) || r.Header.Get(imageSha256Header) != hex.EncodeToString(sum[:]) || r.Header.Get(wire.StepsBuiltHeader) != "3" {
				http.Error(w, "bad upload headers", http.StatusBadRequest)
				return
			}
			stored = b
			w.WriteHeader(http.StatusNoContent)
		case http.MethodGet:
			if gets.Add(1) == 1 {
				http.Error(w, "restarting", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write(stored)
		}
	}))
	defer srv.Close()
	a := testAgent(t, srv.URL)
	ctx := context.Background()
	if err := a.uploadImage(ctx, "job-1", key, bytes.NewReader(body), 3); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, body) {
		t.Fatalf("stored %d bytes, want %d", len(stored), len(body))
	}
	rc, err := a.fetchImage(ctx, "job-1", "levers9-bp/tenant:"+key)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Errorf("fetched %d bytes, want %d", len(got), len(body))
	}
	if _, err := a.fetchImage(ctx, "job-2", "levers9-bp/tenant:"+key); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a refused fetch: %v", err)
	}
	if _, err := a.fetchImage(ctx, "job-1", "levers9-bp/tenant:latest"); err == nil {
		t.Error("a reference without a key was fetched")
	}
	left, _ := os.ReadDir(filepath.Join(a.cfg.StateDir, "images"))
	if len(left) != 0 {
		t.Errorf("left %d temporary files", len(left))
	}
}

// Transfers an earlier agent left half done are removed the first time
// this one uses the folder; other files stay.
func TestImagesSweepLeftovers(t *testing.T) {
	t.Parallel()
	a := testAgent(t, "http://127.0.0.1:1")
	dir := filepath.Join(a.cfg.StateDir, "images")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".fetch-1", ".upload-2", "keep"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.imagesTmp(); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "keep" {
		t.Errorf("left %v", left)
	}
}
