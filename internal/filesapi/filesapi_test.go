package filesapi_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/filesapi"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/mounts"
	"github.com/levers9/levers9/internal/objtest"
	"github.com/levers9/levers9/internal/viewer"
	store "github.com/levers9/levers9/storage"
)

func TestMain(m *testing.M) {
	stop, err := objtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := dbtest.Main(m)
	stop()
	os.Exit(code)
}

// site is a files API on a fresh database with two tenants; tenant "acme"
// has buckets "inputs" (everyone reads) and "outputs" (everyone writes) on the
// storage under test.
type site struct {
	url           string
	member, other string // tokens: acme's member, another tenant's admin
	db            *database.DB
	acme          *fixture.Tenant
}

func newSite(t *testing.T, url, kind string) *site {
	t.Helper()
	ctx := context.Background()
	db := fixture.Open(t, url)
	root := t.TempDir()
	acme := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme", LocalStorageRoot: root})
	other := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "other", LocalStorageRoot: root})
	member := acme.AddMember(t, "member")
	st, err := db.Ent.Storage.Query().Where(storage.Name("local")).Only(acme.AsAdmin())
	if err != nil {
		t.Fatal(err)
	}
	if kind == "s3" {
		s3b := objtest.BucketName()
		d, err := store.OpenS3(store.S3Config{Endpoint: objtest.Endpoint(t), Bucket: s3b, AccessKeyID: objtest.AccessKey, SecretAccessKey: objtest.SecretKey, AllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.EnsureBucket(ctx); err != nil {
			t.Fatal(err)
		}
		st = acme.AddStorage(t, fixture.Storage{Name: "minio", Kind: storage.KindS3, Endpoint: objtest.Endpoint(t),
			S3Bucket: s3b, AccessKeyID: objtest.AccessKey, SecretAccessKey: objtest.SecretKey})
	}
	everyone := []*ent.Group{acme.Group(t, "everyone")}
	acme.AddBucket(t, fixture.Bucket{Name: "inputs", StorageID: st.ID, ReadGroups: everyone})
	acme.AddBucket(t, fixture.Bucket{Name: "outputs", StorageID: st.ID, WriteGroups: everyone})
	log := fixture.Log()
	api := &filesapi.API{Files: &buckets.Files{Ent: db.Ent, AllowPrivateS3: true}, Auth: auth.NewService(db.Ent, log, nil), Log: log, MaxUpload: 8 << 20,
		Mounts: &mounts.Planner{Ent: db.Ent}}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &site{url: srv.URL, member: acme.Token(t, member), other: other.Token(t, other.Admin), db: db, acme: acme}
}

func (s *site) do(t *testing.T, method, path, token string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func eachStorage(t *testing.T, fn func(t *testing.T, s *site)) {
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dbtest.Each(t, func(t *testing.T, url string) { fn(t, newSite(t, url, kind)) })
		})
	}
}

func TestUploadDownload(t *testing.T) {
	t.Parallel()
	eachStorage(t, func(t *testing.T, s *site) {
		data := make([]byte, 3<<20+17)
		_, _ = rand.Read(data)
		if code, b := s.do(t, "PUT", "/files/outputs/results/model.bin", s.member, bytes.NewReader(data)); code != http.StatusCreated {
			t.Fatalf("upload: %d %s", code, b)
		}
		code, got := s.do(t, "GET", "/files/outputs/results/model.bin", s.member, nil)
		if code != http.StatusOK || !bytes.Equal(got, data) {
			t.Fatalf("download: %d, %d bytes, identical %v", code, len(got), bytes.Equal(got, data))
		}
		if code, b := s.do(t, "GET", "/files/outputs/?prefix=results/", s.member, nil); code != http.StatusOK || !strings.Contains(string(b), `"key":"results/model.bin"`) {
			t.Fatalf("list: %d %s", code, b)
		}
		b, err := s.db.Ent.Bucket.Query().Where(bucket.Name("outputs")).Only(viewer.SystemContext(context.Background()))
		if err != nil || b.SizeBytes != int64(len(data)) {
			t.Fatalf("bucket size %d after upload of %d bytes (%v)", b.SizeBytes, len(data), err)
		}
		if code, b := s.do(t, "DELETE", "/files/outputs/results/model.bin", s.member, nil); code != http.StatusNoContent {
			t.Fatalf("delete: %d %s", code, b)
		}
		if code, _ := s.do(t, "GET", "/files/outputs/results/model.bin", s.member, nil); code != http.StatusNotFound {
			t.Fatalf("download after delete: %d", code)
		}
		// Access: read-only bucket, another tenant, no token, too large.
		for _, tc := range []struct {
			name, method, path, token string
			want                      int
		}{
			{"write to a read-only bucket", "PUT", "/files/inputs/x", s.member, http.StatusForbidden},
			{"unknown bucket", "GET", "/files/nope/x", s.member, http.StatusNotFound},
			{"another tenant's bucket", "GET", "/files/outputs/", s.other, http.StatusNotFound},
			{"another tenant writes", "PUT", "/files/outputs/x", s.other, http.StatusNotFound},
			{"no token", "GET", "/files/outputs/", "", http.StatusUnauthorized},
			{"bad token", "GET", "/files/outputs/", "lv9_nope", http.StatusUnauthorized},
		} {
			if code, b := s.do(t, tc.method, tc.path, tc.token, strings.NewReader("x")); code != tc.want {
				t.Errorf("%s: %d %s, want %d", tc.name, code, b, tc.want)
			}
		}
		if code, _ := s.do(t, "PUT", "/files/outputs/big", s.member, bytes.NewReader(make([]byte, 9<<20))); code != http.StatusBadRequest {
			t.Errorf("upload over the limit: %d", code)
		}
	})
}

// Every spelling of a way out of the bucket is refused at the endpoint and
// writes nothing.
func TestEndpointTraversal(t *testing.T) {
	t.Parallel()
	eachStorage(t, func(t *testing.T, s *site) {
		for _, p := range []string{
			"/files/outputs/../inputs/x", "/files/outputs/a/../../inputs/x", "/files/outputs/%2e%2e/inputs/x", "/files/outputs/%2E%2E%2Finputs%2Fx",
			"/files/outputs/a%2Fb", "/files/outputs/a%5c..%5cb", "/files/outputs/a%00b", "/files/outputs//etc/passwd",
			"/files/outputs/./x", "/files/outputs/x/..", "/files/outputs/%252e%252e/x",
		} {
			for _, method := range []string{"PUT", "GET", "DELETE"} {
				code := rawRequest(t, s.url, method, p, s.member)
				if code < 400 || code >= 500 {
					t.Errorf("%s %s: %d, want a 4xx refusal", method, p, code)
				}
			}
		}
		if code, b := s.do(t, "GET", "/files/outputs/", s.member, nil); code != http.StatusOK || strings.Contains(string(b), `"key"`) {
			t.Fatalf("after traversal attempts the bucket lists: %d %s", code, b)
		}
	})
}

// rawRequest sends path as written, without a client cleaning it.
func rawRequest(t *testing.T, base, method, path, token string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx", method, path, token)
	resp, err := http.ReadResponse(bufioReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }
