package buckets_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/netguard"
	"github.com/levers9/levers9/internal/objtest"
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

// newTenant is a fresh database with tenant "acme"; it returns its admin's
// context.
func newTenant(t *testing.T, url string) (*database.DB, context.Context) {
	t.Helper()
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme", LocalStorageRoot: t.TempDir()})
	return tn.DB, tn.AsAdmin()
}

func s3Input(name, endpoint string) ent.CreateStorageInput {
	bucket, key, secret := objtest.BucketName(), objtest.AccessKey, objtest.SecretKey
	return ent.CreateStorageInput{Name: name, Kind: storage.KindS3, Endpoint: &endpoint, S3Bucket: &bucket,
		AccessKeyID: &key, SecretAccessKey: &secret}
}

// A tenant admin cannot point an S3 storage at the server's own loopback,
// the metadata service or a private network (SSRF), unless the operator
// allows it; a name that resolves to loopback is refused when saved, and
// refused again when the server connects if it was saved anyway (DNS
// rebinding: the address dialled is what counts).
func TestPrivateS3Endpoints(t *testing.T) {
	t.Parallel()
	minio := objtest.Endpoint(t) // http://127.0.0.1:PORT
	port := minio[strings.LastIndexByte(minio, ':')+1:]
	dbtest.Each(t, func(t *testing.T, url string) {
		db, admin := newTenant(t, url)
		c := db.Ent
		guarded := buckets.Storages{}
		refused := []string{
			minio,
			"http://localhost:" + port,
			"http://127.1:" + port,
			"http://0x7f000001:" + port,
			"http://[::1]:" + port,
			"http://[::ffff:127.0.0.1]:" + port,
			"http://0.0.0.0:" + port,
			"http://169.254.169.254/latest/meta-data/",
			"http://10.0.0.1:9000",
			"https://172.16.5.4",
			"https://192.168.0.10",
			"https://[fd00::1]:9000",
			"https://100.64.0.1",
		}
		for i, e := range refused {
			_, err := guarded.Create(admin, c, s3Input(fmt.Sprintf("s%d", i), e))
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.BadUserInput || fe.Field != "endpoint" {
				t.Errorf("creating a storage at %s: %v, want BAD_USER_INPUT at endpoint", e, err)
			}
		}
		if n := c.Storage.Query().Where(storage.KindEQ(storage.KindS3)).CountX(admin); n != 0 {
			t.Errorf("%d s3 storages stored after refusals", n)
		}
		// A public address passes; updating it to an internal one does not.
		pub, err := guarded.Create(admin, c, s3Input("public", "https://93.184.216.34"))
		if err != nil {
			t.Fatal(err)
		}
		meta := "http://169.254.169.254"
		_, err = guarded.Update(admin, c, pub.ID, ent.UpdateStorageInput{Endpoint: &meta})
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Field != "endpoint" {
			t.Errorf("updating the endpoint to %s: %v, want refused at endpoint", meta, err)
		}
		if got := c.Storage.GetX(admin, pub.ID).Endpoint; got != "https://93.184.216.34" {
			t.Errorf("endpoint after a refused update = %s", got)
		}
		// The operator's allowance (--allow-private-s3) lets the same through.
		if _, err := (buckets.Storages{AllowPrivateS3: true}).Create(admin, c, s3Input("minio", minio)); err != nil {
			t.Errorf("with the allowance: %v", err)
		}

		// Saved behind the check's back (or resolved elsewhere when saved):
		// the connection itself is refused.
		in := s3Input("rebound", "http://localhost:"+port)
		st := c.Storage.Create().SetInput(in).SaveX(admin)
		s3, err := store.OpenS3(store.S3Config{Endpoint: minio, Bucket: *in.S3Bucket,
			AccessKeyID: objtest.AccessKey, SecretAccessKey: objtest.SecretKey, AllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s3.EnsureBucket(context.Background()); err != nil {
			t.Fatal(err)
		}
		everyone := c.Group.Query().Where(group.Name("everyone")).OnlyX(admin)
		b := c.Bucket.Create().SetName("data").SetStorage(st).AddReadGroups(everyone).AddWriteGroups(everyone).SaveX(admin)
		_, err = (&buckets.Files{Ent: c}).List(admin, b.ID, buckets.ListOptions{})
		if !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("listing a bucket of a storage at localhost: %v, want the connection refused", err)
		}
		if _, err := (&buckets.Files{Ent: c}).Upload(admin, b.ID, "x", strings.NewReader("x"), 1); !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("uploading to a storage at localhost: %v, want the connection refused", err)
		}
		allowed := &buckets.Files{Ent: c, AllowPrivateS3: true}
		if _, err := allowed.Upload(admin, b.ID, "x", strings.NewReader("x"), 1); err != nil {
			t.Errorf("uploading with the allowance: %v", err)
		}
		if page, err := allowed.List(admin, b.ID, buckets.ListOptions{}); err != nil || len(page.Objects) != 1 {
			t.Errorf("listing with the allowance: %v, %v", page.Objects, err)
		}
	})
}
