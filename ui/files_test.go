package ui_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/viewer"
)

// bucket creates a bucket on the tenant's local storage that the group
// everyone may write, or only read.
func (e *env) bucket(name string, writable bool) {
	e.t.Helper()
	ctx := viewer.NewContext(context.Background(), e.admin)
	st, err := e.db.Ent.Storage.Query().Where(storage.Name(tenancy.LocalStorage)).Only(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	everyone, err := e.db.Ent.Group.Query().Where(group.Name(tenancy.EveryoneGroup)).Only(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	in := ent.CreateBucketInput{Name: name, StorageID: st.ID, ReadGroupIDs: []string{everyone.ID}}
	if writable {
		in = ent.CreateBucketInput{Name: name, StorageID: st.ID, WriteGroupIDs: []string{everyone.ID}}
	}
	if _, err := e.db.Ent.Bucket.Create().SetInput(in).Save(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// upload posts a file as the Files page's form does.
func (b *browser) upload(bucketName, prefix, filename string, data []byte) int {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("prefix", prefix)
	fw, _ := mw.CreateFormFile("file", filename)
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, b.e.srv.URL+"/buckets/"+bucketName+"/upload?csrf="+url.QueryEscape(b.csrf()), &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", b.e.srv.URL)
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// Members upload, download and delete in buckets their groups may write,
// only read the ones they may read, and uploads over the limit store
// nothing.
func TestDashboardFiles(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL) // uploads limited to 1 MiB
		e.bucket("results", true)
		e.bucket("reference", false)
		b := e.browser()
		b.signIn(memberEmail)
		if code, body := b.get("/buckets"); code != http.StatusOK || !strings.Contains(body, ">results<") || !strings.Contains(body, ">reference<") {
			t.Fatalf("GET /buckets: %d; lists results and reference: %v", code, strings.Contains(body, "results"))
		}

		data := make([]byte, 300<<10)
		_, _ = rand.Read(data)
		if code := b.upload("results", "runs/1/", "model.bin", data); code != http.StatusSeeOther {
			t.Fatalf("upload: %d", code)
		}
		code, body := b.get("/buckets/results?prefix=runs/")
		if code != http.StatusOK || !strings.Contains(body, "1/") {
			t.Fatalf("browsing runs/: %d, shows the folder 1/: %v", code, strings.Contains(body, "1/"))
		}
		res, got := b.do(http.MethodGet, "/buckets/results/download?key=runs/1/model.bin", nil)
		if res.StatusCode != http.StatusOK || got != string(data) {
			t.Fatalf("download: %d, %d bytes, identical: %v", res.StatusCode, len(got), got == string(data))
		}
		if cd := res.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
			t.Errorf("Content-Disposition %q; want an attachment", cd)
		}

		for _, size := range []int{1<<20 + 1, 3 << 19, 2 << 20} { // within the form's slack, and beyond
			if code := b.upload("results", "", "big.bin", make([]byte, size)); code != http.StatusBadRequest {
				t.Errorf("upload of %d bytes over the 1 MiB limit: %d; want 400", size, code)
			}
			if _, body := b.get("/buckets/results"); strings.Contains(body, "big.bin") {
				t.Fatalf("an upload of %d bytes over the limit was stored", size)
			}
		}
		if code := b.upload("results", "", "exact.bin", make([]byte, 1<<20)); code != http.StatusSeeOther {
			t.Errorf("upload of exactly the limit: %d; want it stored", code)
		}
		if code := b.upload("reference", "", "x.txt", []byte("x")); code != http.StatusForbidden {
			t.Errorf("upload to a read-only bucket: %d; want 403", code)
		}

		res, _ = b.post("/buckets/results/delete", url.Values{"key": {"runs/1/model.bin"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("delete: %d", res.StatusCode)
		}
		if code, _ := b.get("/buckets/results/download?key=runs/1/model.bin"); code != http.StatusNotFound {
			t.Errorf("download after delete: %d; want 404", code)
		}
	})
}
