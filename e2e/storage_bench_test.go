package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	s3creds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/objtest"
)

// The object storage benchmarks run the real server binary (SQLite) with an
// s3 storage on a private MinIO server on loopback, and compare what goes
// through levers9 (the files API over HTTP, as `levers9 cp/ls` use it) with
// minio-go talking to the same MinIO directly.
const (
	benchFileSize    = 1 << 30 // bytes moved per transfer
	benchFileRounds  = 2       // transfers per path and direction
	benchListObjects = 100_000 // objects in the listed bucket
	benchListPage    = 1000    // the page size `levers9 ls` asks for
	benchSeedWorkers = 32
)

// BenchmarkFilesThroughput uploads and downloads a 1 GiB file (generated
// on the fly, never held in memory) through levers9 and directly with
// minio-go PutObject/GetObject, alternating, and reports MB/s of each and
// the ratio levers9/direct.
func BenchmarkFilesThroughput(b *testing.B) {
	fx := newStorageFixture(b)
	ctx := context.Background()
	var up, down [2]time.Duration // [levers9, direct]
	for range benchFileRounds {
		start := time.Now()
		fx.upload(b, "big.bin", newGenReader(benchFileSize), benchFileSize)
		up[0] += time.Since(start)

		start = time.Now()
		if _, err := fx.mc.PutObject(ctx, fx.s3Bucket, "direct/big.bin", newGenReader(benchFileSize), benchFileSize, minio.PutObjectOptions{}); err != nil {
			b.Fatal(err)
		}
		up[1] += time.Since(start)

		start = time.Now()
		if n := fx.download(b, "big.bin"); n != benchFileSize {
			b.Fatalf("levers9 download: %d bytes, want %d", n, benchFileSize)
		}
		down[0] += time.Since(start)

		start = time.Now()
		obj, err := fx.mc.GetObject(ctx, fx.s3Bucket, "direct/big.bin", minio.GetObjectOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, obj)
		obj.Close()
		if err != nil || n != benchFileSize {
			b.Fatalf("direct download: %d bytes, %v", n, err)
		}
		down[1] += time.Since(start)
	}
	mbps := func(d time.Duration) float64 { return benchFileRounds * benchFileSize / 1e6 / d.Seconds() }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(mbps(up[0]), "up-levers9-MB/s")
	b.ReportMetric(mbps(up[1]), "up-direct-MB/s")
	b.ReportMetric(mbps(up[0])/mbps(up[1]), "up-ratio")
	b.ReportMetric(mbps(down[0]), "down-levers9-MB/s")
	b.ReportMetric(mbps(down[1]), "down-direct-MB/s")
	b.ReportMetric(mbps(down[0])/mbps(down[1]), "down-ratio")
	// Free the disk now rather than when MinIO's directory goes.
	for _, key := range []string{fx.prefix + "big.bin", "direct/big.bin"} {
		if err := fx.mc.RemoveObject(ctx, fx.s3Bucket, key, minio.RemoveObjectOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	fx.server.stop()
}

// BenchmarkFilesListing pages through a bucket of 100,000 objects with the
// files API, 1,000 keys a page, as `levers9 ls` does: on the s3 storage
// (objects seeded straight into MinIO by 32 concurrent PutObjects) and on
// the server's local storage (files written to its directory).
func BenchmarkFilesListing(b *testing.B) {
	fx := newStorageFixture(b)
	b.Run("s3", func(b *testing.B) {
		fx.seedS3(b)
		// One page in ten is also asked straight from MinIO, just before
		// levers9 asks for it, the way the s3 driver does: ListObjects
		// from a start key.
		fx.list(b, "bench", func(after string) time.Duration {
			t0 := time.Now()
			lo := minio.ListObjectsOptions{Prefix: fx.prefix, Recursive: true}
			if after != "" {
				lo.StartAfter = fx.prefix + after
			}
			n := 0
			for o := range fx.mc.ListObjectsIter(context.Background(), fx.s3Bucket, lo) {
				if o.Err != nil {
					b.Fatal(o.Err)
				}
				if n++; n == benchListPage {
					break
				}
			}
			return time.Since(t0)
		})
	})
	b.Run("local", func(b *testing.B) {
		dir := fx.localBucket(b)
		start := time.Now()
		for i := range benchListObjects {
			p := filepath.Join(dir, benchKey(i))
			if i%1000 == 0 {
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(p, []byte("levers9"), 0o600); err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("wrote %d files in %v", benchListObjects, time.Since(start).Round(time.Millisecond))
		fx.list(b, "bench-local", nil)
	})
	fx.server.stop()
}

// benchKey spreads objects over 100 "directories" of 1,000, like results
// of many runs.
func benchKey(i int) string { return fmt.Sprintf("run-%03d/part-%06d.json", i/1000, i) }

// storageFixture is a server with bucket "bench" on an s3 storage backed by
// a private MinIO.
type storageFixture struct {
	server   *server
	token    string
	mc       *minio.Client
	s3Bucket string
	prefix   string // of bucket "bench" inside s3Bucket
	client   *http.Client
}

func newStorageFixture(b *testing.B) *storageFixture {
	b.Helper()
	endpoint := os.Getenv(objtest.EnvEndpoint)
	if endpoint == "" {
		stop, err := objtest.Start()
		if err != nil {
			b.Fatal(err)
		}
		endpoint = os.Getenv(objtest.EnvEndpoint)
		b.Cleanup(func() { stop(); os.Unsetenv(objtest.EnvEndpoint) })
	}
	mc, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{
		Creds: s3creds.NewStaticV4(objtest.AccessKey, objtest.SecretKey, ""),
	})
	if err != nil {
		b.Fatal(err)
	}
	fx := &storageFixture{mc: mc, s3Bucket: objtest.BucketName(), client: &http.Client{}}
	if err := mc.MakeBucket(context.Background(), fx.s3Bucket, minio.MakeBucketOptions{}); err != nil {
		b.Fatal(err)
	}
	fx.server = startServer(b, b.TempDir(), dbtest.SQLiteURL(b), "LEVERS9_ALLOW_PRIVATE_S3=true")
	fx.token = fx.server.credentials().Token
	var ids struct {
		CreateStorage struct{ ID string }
	}
	gql(b, fx.server.URL, fx.token, `mutation($e: String!, $b: String!, $k: String!, $s: String!) {
		createStorage(input: {name: "minio", kind: S3, endpoint: $e, s3Bucket: $b, accessKeyID: $k, secretAccessKey: $s}) { id } }`,
		map[string]any{"e": endpoint, "b": fx.s3Bucket, "k": objtest.AccessKey, "s": objtest.SecretKey}, &ids)
	id := fx.createBucket(b, "bench", ids.CreateStorage.ID)
	fx.prefix = strings.ReplaceAll(id, "_", "-") + "/" // as buckets.dirName
	return fx
}

// createBucket makes a bucket everyone may write and returns its ID.
func (fx *storageFixture) createBucket(b *testing.B, name, storageID string) string {
	b.Helper()
	var groups struct {
		Groups struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	gql(b, fx.server.URL, fx.token, `{ groups(where: {name: "everyone"}) { edges { node { id } } } }`, nil, &groups)
	var created struct{ CreateBucket struct{ ID string } }
	gql(b, fx.server.URL, fx.token, `mutation($n: String!, $s: ID!, $g: ID!) { createBucket(input: {name: $n, storageID: $s, writeGroupIDs: [$g]}) { id } }`,
		map[string]any{"n": name, "s": storageID, "g": groups.Groups.Edges[0].Node.ID}, &created)
	return created.CreateBucket.ID
}

// localBucket makes bucket "bench-local" on the tenant's local storage and
// returns its directory.
func (fx *storageFixture) localBucket(b *testing.B) string {
	b.Helper()
	var st struct {
		Storages struct {
			Edges []struct{ Node struct{ ID, Path string } }
		}
	}
	gql(b, fx.server.URL, fx.token, `{ storages(where: {name: "local"}) { edges { node { id path } } } }`, nil, &st)
	node := st.Storages.Edges[0].Node
	id := fx.createBucket(b, "bench-local", node.ID)
	dir := node.Path
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(fx.server.cmd.Dir, dir)
	}
	return filepath.Join(dir, strings.ReplaceAll(id, "_", "-"))
}

func (fx *storageFixture) request(b *testing.B, method, path string, body io.Reader, size int64) *http.Response {
	b.Helper()
	req, err := http.NewRequest(method, fx.server.URL+"/files/"+path, body)
	if err != nil {
		b.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+fx.token)
	resp, err := fx.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, msg)
	}
	return resp
}

// upload PUTs r to bucket "bench", as `levers9 cp FILE bench:KEY` does.
func (fx *storageFixture) upload(b *testing.B, key string, r io.Reader, size int64) {
	b.Helper()
	resp := fx.request(b, http.MethodPut, "bench/"+key, r, size)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// download GETs a key of bucket "bench" and counts its bytes.
func (fx *storageFixture) download(b *testing.B, key string) int64 {
	b.Helper()
	resp := fx.request(b, http.MethodGet, "bench/"+key, nil, 0)
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// seedS3 puts benchListObjects small objects into bucket "bench".
func (fx *storageFixture) seedS3(b *testing.B) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	start := time.Now()
	for range benchSeedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= benchListObjects || ctx.Err() != nil {
					return
				}
				body := []byte("levers9")
				_, err := fx.mc.PutObject(ctx, fx.s3Bucket, fx.prefix+benchKey(i), bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	b.Logf("seeded %d objects into MinIO in %v", benchListObjects, time.Since(start).Round(time.Millisecond))
}

// list pages through a bucket with the files API and reports the total
// time and the per-page median; with direct, also the median of direct
// (given the page's after= key) over every tenth page.
func (fx *storageFixture) list(b *testing.B, bucket string, direct func(after string) time.Duration) {
	b.Helper()
	var (
		pages []time.Duration
		total int
		after string
	)
	var directPages []time.Duration
	start := time.Now()
	for {
		if direct != nil && len(pages)%10 == 0 {
			directPages = append(directPages, direct(after))
		}
		q := url.Values{"after": {after}, "limit": {fmt.Sprint(benchListPage)}}
		t0 := time.Now()
		resp := fx.request(b, http.MethodGet, bucket+"/?"+q.Encode(), nil, 0)
		var page struct {
			Objects []struct{ Key string }
			Next    string
		}
		err := json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, time.Since(t0))
		total += len(page.Objects)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	elapsed := time.Since(start)
	if total != benchListObjects {
		b.Fatalf("listed %d objects, want %d", total, benchListObjects)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(elapsed.Seconds(), "total-s")
	b.ReportMetric(ms(percentile(pages, 50)), "p50-page-ms")
	b.ReportMetric(ms(percentile(pages, 99)), "p99-page-ms")
	b.ReportMetric(float64(len(pages)), "pages")
	if direct != nil {
		b.ReportMetric(ms(percentile(directPages, 50)), "p50-page-direct-ms")
	}
}

// genReader yields n bytes of a repeated random 1 MiB block: incompressible
// enough, generated as fast as memory copies.
type genReader struct {
	block []byte
	off   int
	left  int64
}

var genBlock = sync.OnceValue(func() []byte {
	r := rand.NewChaCha8([32]byte{'l', 'e', 'v', 'e', 'r', 's', '9'})
	p := make([]byte, 1<<20)
	_, _ = r.Read(p)
	return p
})

func newGenReader(n int64) *genReader { return &genReader{block: genBlock(), left: n} }

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], g.block[g.off:])
		n += c
		g.off = (g.off + c) % len(g.block)
	}
	g.left -= int64(n)
	return n, nil
}
