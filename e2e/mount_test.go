package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/objtest"
	"github.com/minio/minio-go/v7"
	s3creds "github.com/minio/minio-go/v7/pkg/credentials"
)

// mountEnv is a server with an "inputs" and an "outputs" bucket on one storage,
// reachable from the default queue, and a helper to run the CLI on it.
type mountEnv struct {
	s       *server
	token   string
	dir     string // scratch files of the test
	dataDir string // the server's data directory
	group   string
	buckets map[string]string // name → ID
}

func newMountEnv(t *testing.T, kind string) *mountEnv {
	t.Helper()
	serverDir := t.TempDir()
	s := startServer(t, serverDir, dbtest.SQLiteURL(t), "LEVERS9_ALLOW_PRIVATE_S3=true") // MinIO listens on loopback
	c := s.credentials()
	e := &mountEnv{s: s, token: c.Token, dir: t.TempDir(), dataDir: filepath.Join(serverDir, "levers9-data"), buckets: map[string]string{}}
	grant(t, s.URL, c.Token)
	var ids struct {
		Storages struct {
			Edges []struct{ Node struct{ ID string } }
		}
		Groups struct {
			Edges []struct{ Node struct{ ID string } }
		}
		Queues struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	gql(t, s.URL, c.Token, `{ storages(where: {name: "local"}) { edges { node { id } } }
		groups(where: {name: "everyone"}) { edges { node { id } } }
		queues(where: {name: "default"}) { edges { node { id } } } }`, nil, &ids)
	e.group = ids.Groups.Edges[0].Node.ID
	storageID := ids.Storages.Edges[0].Node.ID
	if kind == "s3" {
		endpoint := objtest.Endpoint(t)
		bucket := newS3Bucket(t, endpoint)
		var st struct{ CreateStorage struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation($in: CreateStorageInput!) { createStorage(input: $in) { id } }`, map[string]any{"in": map[string]any{
			"name": "minio", "kind": "S3", "endpoint": endpoint, "s3Bucket": bucket,
			"accessKeyID": objtest.AccessKey, "secretAccessKey": objtest.SecretKey,
			"queueIDs": []string{ids.Queues.Edges[0].Node.ID},
		}}, &st)
		storageID = st.CreateStorage.ID
	}
	for _, name := range []string{"inputs", "outputs"} {
		var b struct{ CreateBucket struct{ ID string } }
		gql(t, s.URL, c.Token, `mutation($n: String!, $s: ID!, $g: ID!) { createBucket(input: {name: $n, storageID: $s, writeGroupIDs: [$g]}) { id } }`,
			map[string]any{"n": name, "s": storageID, "g": e.group}, &b)
		e.buckets[name] = b.CreateBucket.ID
	}
	return e
}

// newS3Bucket makes a fresh bucket on the test's MinIO, with MinIO's own
// client: the server is only ever told about it.
func newS3Bucket(t *testing.T, endpoint string) string {
	t.Helper()
	mc, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{
		Creds: s3creds.NewStaticV4(objtest.AccessKey, objtest.SecretKey, ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	bucket := objtest.BucketName()
	if err := mc.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("making S3 bucket %s: %v", bucket, err)
	}
	return bucket
}

// cli runs the CLI against the server and wants exit code want.
func (e *mountEnv) cli(t *testing.T, want int, args ...string) string {
	t.Helper()
	return expectCLI(t, e.s, e.token, want, args...)
}

// file writes content to a local file and returns its path.
func (e *mountEnv) file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// download fetches BUCKET:KEY with levers9 cp and returns its content.
func (e *mountEnv) download(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(e.dir, "download")
	os.Remove(dst)
	e.cli(t, 0, "cp", src, dst)
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// submit runs script with "inputs" mounted read-only at /data/in and "outputs"
// writable at /data/out, and returns the job ID.
func (e *mountEnv) submit(t *testing.T, script string) string {
	t.Helper()
	var sub struct{ SubmitJob struct{ ID string } }
	gql(t, e.s.URL, e.token, `mutation($cmd: [String!]!) { submitJob(spec: {queue: "default",
		services: [{name: "main", command: $cmd, cpu: 0.1}],
		mounts: [{bucket: "inputs", path: "/data/in", readOnly: true}, {bucket: "outputs", path: "/data/out"}]}) { id } }`,
		map[string]any{"cmd": []string{"sh", "-c", script}}, &sub)
	return sub.SubmitJob.ID
}

// waitEnded waits for job id to end and returns its row.
func (e *mountEnv) waitEnded(t *testing.T, id string) jobRow {
	t.Helper()
	var row jobRow
	poll(t, "job "+id+" to end", func() bool {
		row = jobByID(t, e.s.URL, e.token, id)
		return row.Status == "COMPLETE" || row.Status == "ERROR" || row.Status == "CANCELLED"
	})
	return row
}

// A job reads its input from a read-only mount and writes results to a
// writable one; after it, the results are in the bucket, and what it wrote
// into the read-only mount is not: on object storage (synced down and
// back through the files API) and on the server's disk (linked, or copied
// when read-only).
func TestJobMountsBuckets(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"s3", "local"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newMountEnv(t, kind)
			e.cli(t, 0, "cp", e.file(t, "hello.txt", "hello from levers9\n"), "inputs:hello.txt")
			e.cli(t, 0, "cp", e.file(t, "old.txt", "stale\n"), "outputs:old.txt")
			id := e.submit(t, `set -e
				cat data/in/hello.txt
				tr a-z A-Z < data/in/hello.txt > data/out/result.txt
				mkdir -p data/out/nested && echo deep > data/out/nested/deep.txt
				rm data/out/old.txt
				ln -s /etc/passwd data/out/escape
				echo tampered > data/in/hello.txt || true
				echo new > data/in/extra.txt || true`)
			if row := e.waitEnded(t, id); row.Status != "COMPLETE" {
				t.Fatalf("job ended %s: %s", row.Status, row.StatusReason)
			}
			if got := e.download(t, "outputs:result.txt"); got != "HELLO FROM LEVERS9\n" {
				t.Fatalf("result: %q", got)
			}
			if got := e.download(t, "outputs:nested/deep.txt"); got != "deep\n" {
				t.Fatalf("nested result: %q", got)
			}
			if got := e.download(t, "inputs:hello.txt"); got != "hello from levers9\n" {
				t.Fatalf("the read-only input changed: %q", got)
			}
			ls := e.cli(t, 0, "ls", "inputs")
			if strings.Contains(ls, "extra.txt") {
				t.Fatalf("a file written to a read-only mount reached the bucket:\n%s", ls)
			}
			ls = e.cli(t, 0, "ls", "outputs")
			if strings.Contains(ls, "old.txt") {
				t.Fatalf("a file the job removed is still in the bucket:\n%s", ls)
			}
			if kind == "s3" && strings.Contains(ls, "escape") {
				t.Fatalf("a symbolic link was synced back:\n%s", ls)
			}
			// levers9 run mounts buckets too.
			if out := e.cli(t, 0, "run", "--mount", "outputs:/out:ro", "--", "cat", "out/result.txt"); !strings.Contains(out, "HELLO FROM LEVERS9") {
				t.Fatalf("levers9 run --mount:\n%s", out)
			}
			e.s.stop()
		})
	}
}

// When the results cannot be saved (here: the output bucket was deleted
// while the job ran), the job fails with a reason that says so, and the
// results stay on the node.
func TestJobMountSyncFailure(t *testing.T) {
	t.Parallel()
	e := newMountEnv(t, "s3")
	id := e.submit(t, `while [ ! -e data/in/go ]; do sleep 0.05; done
		head -c 1048576 /dev/zero > data/out/result.bin`)
	poll(t, "the job running", func() bool { return jobByID(t, e.s.URL, e.token, id).Status == "RUNNING" })
	gql(t, e.s.URL, e.token, `mutation($b: ID!) { deleteBucket(id: $b) }`, map[string]any{"b": e.buckets["outputs"]}, &map[string]any{})
	// The job waits for a file in its (copied) input; the agent's copy is
	// under its state directory, so the test drops it there.
	mounts := filepath.Join(e.dataDir, "node", "mounts", id)
	if err := os.WriteFile(filepath.Join(mounts, "0", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	row := e.waitEnded(t, id)
	if row.Status != "ERROR" || !strings.Contains(row.StatusReason, "results not saved") || !strings.Contains(row.StatusReason, "no longer exists") {
		t.Fatalf("job ended %s: %q, want ERROR with results not saved", row.Status, row.StatusReason)
	}
	if fi, err := os.Stat(filepath.Join(mounts, "1", "result.bin")); err != nil || fi.Size() != 1<<20 {
		t.Fatalf("the unsaved result is not kept on the node: %v", err)
	}
	e.s.stop()
}
