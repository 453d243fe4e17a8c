package blobsapi_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/blobsapi"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/storage"
)

// site serves the blob API on a fresh database and storage directory, with
// tenants acme and other.
type site struct {
	url         string
	dir         string
	store       *blobs.Store
	acme, other *fixture.Tenant
	member      string // token of acme's member
	outsider    string // token of other's admin
}

func newSite(t *testing.T, url string) *site {
	t.Helper()
	db := fixture.Open(t, url)
	dir := t.TempDir()
	drv, err := storage.OpenLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	store := &blobs.Store{DB: db, Driver: drv, Log: fixture.Log(),
		Limits: map[string]int64{blobs.KindCode: 1 << 20, blobs.KindPayload: 1 << 20}}
	api := blobsapi.New(blobsapi.Config{Blobs: store, Auth: auth.NewService(db.Ent, fixture.Log(), nil), Log: fixture.Log()})
	mux := http.NewServeMux()
	mux.Handle("/api/blobs/", api.SDKHandler())
	mux.Handle("/agent/code/", api.AgentHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	acme := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"})
	other := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "other"})
	return &site{url: srv.URL, dir: dir, store: store, acme: acme, other: other,
		member: acme.Token(t, acme.AddMember(t, "member")), outsider: other.Token(t, other.Admin)}
}

type reply struct {
	status int
	body   []byte
	header http.Header
}

func (s *site) do(t *testing.T, method, path string, header map[string]string, body io.Reader) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, b, resp.Header}
}

func bearer(token string) map[string]string {
	if token == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + token}
}

func random(t *testing.T, n int) ([]byte, string) {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// errorCode is the code of an error body, "" when it is none.
func errorCode(b []byte) string {
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(b, &e)
	return e.Error.Code
}

// objects counts the regular files in storage, temporary uploads included.
func (s *site) objects(t *testing.T) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(s.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSDK(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := newSite(t, url)
		data, hash := random(t, 300<<10)
		_, otherHash := random(t, 1)
		big, bigHash := random(t, 1<<20+1)
		path := "/api/blobs/" + hash
		steps := []struct {
			name, method, path, token string
			body                      []byte
			want                      int
			code                      string // of the error body
		}{
			{"not there yet", "HEAD", path, s.member, nil, http.StatusNotFound, ""},
			{"upload", "PUT", path + "?kind=code", s.member, data, http.StatusCreated, ""},
			{"upload again", "PUT", path + "?kind=code", s.member, data, http.StatusOK, ""},
			{"there", "HEAD", path, s.member, nil, http.StatusOK, ""},
			{"download", "GET", path, s.member, nil, http.StatusOK, ""},
			{"another tenant's HEAD", "HEAD", path, s.outsider, nil, http.StatusNotFound, ""},
			{"another tenant's GET", "GET", path, s.outsider, nil, http.StatusNotFound, "NOT_FOUND"},
			{"hash mismatch", "PUT", "/api/blobs/" + otherHash + "?kind=payload", s.member, data, http.StatusBadRequest, "BAD_USER_INPUT"},
			{"image kind from a client", "PUT", "/api/blobs/" + otherHash + "?kind=image", s.member, data, http.StatusBadRequest, "BAD_USER_INPUT"},
			{"bad hash", "PUT", "/api/blobs/" + strings.ToUpper(hash) + "?kind=code", s.member, data, http.StatusBadRequest, "BAD_USER_INPUT"},
			{"no kind", "PUT", "/api/blobs/" + otherHash, s.member, data, http.StatusBadRequest, "BAD_USER_INPUT"},
			{"too large", "PUT", "/api/blobs/" + bigHash + "?kind=code", s.member, big, http.StatusRequestEntityTooLarge, "BAD_USER_INPUT"},
			{"no token", "GET", path, "", nil, http.StatusUnauthorized, "UNAUTHENTICATED"},
			{"bad token", "HEAD", path, "lv9_nope", nil, http.StatusUnauthorized, ""},
			{"no token, upload", "PUT", "/api/blobs/" + otherHash + "?kind=code", "", data, http.StatusUnauthorized, "UNAUTHENTICATED"},
			{"unknown route", "DELETE", path, s.member, nil, http.StatusNotFound, "NOT_FOUND"},
		}
		for _, st := range steps {
			var body io.Reader
			if st.body != nil {
				body = bytes.NewReader(st.body)
			}
			r := s.do(t, st.method, st.path, bearer(st.token), body)
			if r.status != st.want {
				t.Fatalf("%s: %d %s, want %d", st.name, r.status, r.body, st.want)
			}
			if st.code != "" && errorCode(r.body) != st.code {
				t.Errorf("%s: body %s, want error code %s", st.name, r.body, st.code)
			}
			switch st.name {
			case "download":
				if !bytes.Equal(r.body, data) {
					t.Errorf("downloaded %d bytes, not the %d uploaded", len(r.body), len(data))
				}
			case "there":
				if r.header.Get("Content-Length") != "307200" {
					t.Errorf("HEAD Content-Length %q", r.header.Get("Content-Length"))
				}
			}
		}
		if n := s.objects(t); n != 1 {
			t.Errorf("storage holds %d files, want the one blob", n)
		}
		if n := s.store.DB.Ent.Blob.Query().CountX(fixture.Sys()); n != 1 {
			t.Errorf("%d blob rows, want 1", n)
		}
	})
}
