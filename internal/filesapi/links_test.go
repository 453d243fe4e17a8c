package filesapi_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	store "github.com/levers9/levers9/storage"
)

// A symbolic link in a bucket of a local storage (a job mounting the
// bucket can make one) does not serve another bucket's files: the member
// may write "outputs" and only read "inputs", yet outputs/steal ->
// ../INPUTS/secret and outputs/dir -> ../INPUTS neither read nor write
// inputs. A link within the bucket still serves its file.
func TestLinksOutOfBucketRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		s := newSite(t, url, "local")
		ctx := context.Background()
		sys := viewer.SystemContext(ctx)
		inputs := s.db.Ent.Bucket.Query().Where(bucket.Name("inputs")).WithStorage().OnlyX(sys)
		outputs := s.db.Ent.Bucket.Query().Where(bucket.Name("outputs")).OnlyX(sys)
		root := inputs.Edges.Storage.Path
		d, err := store.OpenLocal(root)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for bkt, key := range map[string]string{buckets.Dir(inputs): "secret", buckets.Dir(outputs): "real"} {
			if _, err := d.Put(ctx, bkt, key, strings.NewReader("content of "+key), -1); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(root, buckets.Dir(outputs))
		for name, target := range map[string]string{
			"steal":  filepath.Join("..", buckets.Dir(inputs), "secret"),
			"dir":    filepath.Join("..", buckets.Dir(inputs)),
			"inside": "real",
		} {
			if err := os.Symlink(target, filepath.Join(out, name)); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{"/files/outputs/steal", "/files/outputs/dir/secret"} {
			code, b := s.do(t, "GET", p, s.member, nil)
			if code != http.StatusBadRequest || !strings.Contains(string(b), "outside the bucket") {
				t.Errorf("GET %s: %d %s, want 400 saying the link leads outside the bucket", p, code, b)
			}
		}
		if code, b := s.do(t, "PUT", "/files/outputs/dir/planted", s.member, strings.NewReader("x")); code < 400 {
			t.Errorf("PUT through a link into inputs: %d %s", code, b)
		}
		if code, b := s.do(t, "DELETE", "/files/outputs/dir/secret", s.member, nil); code < 400 {
			t.Errorf("DELETE through a link into inputs: %d %s", code, b)
		}
		objs, err := d.List(ctx, buckets.Dir(inputs), store.ListOptions{})
		if err != nil || len(objs) != 1 || objs[0].Key != "secret" {
			t.Errorf("inputs holds %+v, %v after writes through links; want only secret", objs, err)
		}
		if code, b := s.do(t, "GET", "/files/outputs/", s.member, nil); code != http.StatusOK || strings.Contains(string(b), "secret") {
			t.Errorf("listing outputs: %d %s", code, b)
		}
		if code, b := s.do(t, "GET", "/files/outputs/inside", s.member, nil); code != http.StatusOK || string(b) != "content of real" {
			t.Errorf("GET a link inside the bucket: %d %q", code, b)
		}
	})
}
