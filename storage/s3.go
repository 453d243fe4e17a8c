package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config locates the S3 bucket that holds a storage's buckets, each under
// its own prefix.
type S3Config struct {
	Endpoint        string // http(s)://host:port
	Region          string
	Bucket          string
	AccessKeyID     string
	SecretAccessKey string
	// AllowPrivate lets the client connect to loopback, link-local and
	// private addresses (the operator's --allow-private-s3; tests on a
	// local MinIO). Off, such connections are refused: see CheckEndpoint.
	AllowPrivate bool
}

// S3 keeps buckets as prefixes of one bucket on MinIO or any S3-compatible
// service. This is the one place levers9 talks S3.
type S3 struct {
	client *minio.Client
	bucket string
}

// OpenS3 connects to an S3 endpoint; it does not contact it yet.
func OpenS3(cfg S3Config) (*S3, error) {
	u, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, errors.New("s3 storage needs a bucket")
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:    u.Scheme == "https",
		Region:    cfg.Region,
		Transport: s3Transport(u.Scheme == "https", cfg.AllowPrivate),
	})
	if err != nil {
		return nil, fmt.Errorf("s3 client for %s: %w", cfg.Endpoint, err)
	}
	return &S3{client: c, bucket: cfg.Bucket}, nil
}

// EnsureBucket creates the S3 bucket if it does not exist (for set-ups and
// tests; production buckets are usually made by the operator).
func (s *S3) EnsureBucket(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("checking s3 bucket %s: %w", s.bucket, err)
	}
	if ok {
		return nil
	}
	if err := s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{}); err != nil {
		return fmt.Errorf("creating s3 bucket %s: %w", s.bucket, err)
	}
	return nil
}

func (s *S3) name(bucket, key string) (string, error) {
	if err := CheckBucket(bucket); err != nil {
		return "", err
	}
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return bucket + "/" + key, nil
}

// Stat describes an object.
func (s *S3) Stat(ctx context.Context, bucket, key string) (Object, error) {
	name, err := s.name(bucket, key)
	if err != nil {
		return Object{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, s3Error(err)
	}
	return Object{Key: key, Size: info.Size, Modified: info.LastModified}, nil
}

// Get streams an object.
func (s *S3) Get(ctx context.Context, bucket, key string) (io.ReadCloser, Object, error) {
	name, err := s.name(bucket, key)
	if err != nil {
		return nil, Object{}, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, Object{}, s3Error(err)
	}
	info, err := obj.Stat() // GetObject is lazy: this is where a missing key shows
	if err != nil {
		obj.Close()
		return nil, Object{}, s3Error(err)
	}
	return obj, Object{Key: key, Size: info.Size, Modified: info.LastModified}, nil
}

// Put uploads r; large or unsized uploads go in parts, and S3 shows the
// object only once complete.
func (s *S3) Put(ctx context.Context, bucket, key string, r io.Reader, size int64) (Object, error) {
	name, err := s.name(bucket, key)
	if err != nil {
		return Object{}, err
	}
	info, err := s.client.PutObject(ctx, s.bucket, name, r, size, minio.PutObjectOptions{})
	if err != nil {
		return Object{}, fmt.Errorf("storing %s/%s: %w", bucket, key, s3Error(err))
	}
	return Object{Key: key, Size: info.Size, Modified: info.LastModified}, nil
}

// Delete removes an object; removing one that is not there is not an error.
func (s *S3) Delete(ctx context.Context, bucket, key string) error {
	name, err := s.name(bucket, key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("deleting %s/%s: %w", bucket, key, s3Error(err))
	}
	return nil
}

// List returns a page of objects in key order.
func (s *S3) List(ctx context.Context, bucket string, opts ListOptions) ([]Object, error) {
	limit, err := checkList(bucket, opts)
	if err != nil {
		return nil, err
	}
	base := bucket + "/"
	lo := minio.ListObjectsOptions{Prefix: base + opts.Prefix, Recursive: true}
	if opts.After != "" {
		lo.StartAfter = base + opts.After
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing goroutine once the page is full
	var out []Object
	for info := range s.client.ListObjects(ctx, s.bucket, lo) {
		if info.Err != nil {
			return nil, fmt.Errorf("listing bucket %s: %w", bucket, s3Error(info.Err))
		}
		out = append(out, Object{Key: strings.TrimPrefix(info.Key, base), Size: info.Size, Modified: info.LastModified})
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// Size sums the sizes of a bucket's objects.
func (s *S3) Size(ctx context.Context, bucket string) (int64, error) {
	if err := CheckBucket(bucket); err != nil {
		return 0, err
	}
	var total int64
	for info := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: bucket + "/", Recursive: true}) {
		if info.Err != nil {
			return 0, fmt.Errorf("sizing bucket %s: %w", bucket, s3Error(info.Err))
		}
		total += info.Size
	}
	return total, nil
}

func s3Error(err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey", "NoSuchObject":
		return ErrNotFound
	}
	return err
}
