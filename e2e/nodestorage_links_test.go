package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
)

// A node storage's buckets are served by the node's agent: a symbolic link
// in one bucket (a job mounting it can make one) leads nowhere outside it,
// not even to another bucket of the storage, over the files API.
func TestNodeStorageLinksStayInBucket(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), dbtest.SQLiteURL(t))
	c := s.credentials()
	var local *nodeRow
	poll(t, "the local node", func() bool { local = nodeByName(t, s.URL, c.Token, "local"); return local != nil })
	var ids struct {
		Groups struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	gql(t, s.URL, c.Token, `{ groups(where: {name: "everyone"}) { edges { node { id } } } }`, nil, &ids)
	root := t.TempDir()
	var st struct{ CreateStorage struct{ ID string } }
	gql(t, s.URL, c.Token, `mutation($n: ID!, $p: String!) { createStorage(input: {name: "scratch", kind: NODE, nodeID: $n, path: $p}) { id } }`,
		map[string]any{"n": local.ID, "p": root}, &st)
	dirs := map[string]string{}
	// "pub" is everyone's; "priv" belongs to no group, so no one reads it.
	for name, groups := range map[string][]string{"pub": {ids.Groups.Edges[0].Node.ID}, "priv": {}} {
		var b struct{ CreateBucket struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation($n: String!, $s: ID!, $g: [ID!]) { createBucket(input: {name: $n, storageID: $s, writeGroupIDs: $g}) { id } }`,
			map[string]any{"n": name, "s": st.CreateStorage.ID, "g": groups}, &b)
		dirs[name] = filepath.Join(root, strings.ReplaceAll(b.CreateBucket.ID, "_", "-")) // buckets.Dir
		if err := os.MkdirAll(dirs[name], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{filepath.Join(dirs["priv"], "secret"): "private", filepath.Join(dirs["pub"], "real"): "public"}
	for f, content := range files {
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"steal":  filepath.Join("..", filepath.Base(dirs["priv"]), "secret"),
		"abs":    filepath.Join(dirs["priv"], "secret"),
		"dir":    filepath.Join("..", filepath.Base(dirs["priv"])),
		"inside": "real",
	} {
		if err := os.Symlink(target, filepath.Join(dirs["pub"], name)); err != nil {
			t.Fatal(err)
		}
	}
	do := func(method, key, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+"/files/pub/"+key, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The node serves its storage once its session is up, a moment after
	// it shows in the API: until then the files API answers 503.
	poll(t, "the node to serve its storage", func() bool {
		code, _ := do("GET", "inside", "")
		return code != http.StatusServiceUnavailable
	})
	for _, k := range []string{"steal", "abs", "dir/secret"} {
		if code, b := do("GET", k, ""); code != http.StatusBadRequest || !strings.Contains(b, "outside the bucket") {
			t.Errorf("GET pub/%s: %d %s, want 400 saying the link leads outside the bucket", k, code, b)
		}
	}
	if code, b := do("PUT", "dir/planted", "x"); code < 400 {
		t.Errorf("PUT pub/dir/planted through a link into priv: %d %s", code, b)
	}
	if code, b := do("DELETE", "dir/secret", ""); code < 400 {
		t.Errorf("DELETE pub/dir/secret through a link into priv: %d %s", code, b)
	}
	entries, _ := os.ReadDir(dirs["priv"])
	if len(entries) != 1 || entries[0].Name() != "secret" {
		t.Errorf("priv holds %v after writes through links, want only secret", entries)
	}
	if code, b := do("GET", "", ""); code != http.StatusOK || strings.Contains(b, "secret") {
		t.Errorf("listing pub: %d %s", code, b)
	}
	if code, b := do("GET", "inside", ""); code != http.StatusOK || b != "public" {
		t.Errorf("GET a link inside the bucket: %d %q", code, b)
	}
}
