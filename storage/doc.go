// Package storage is the bucket storage interface and its drivers (MinIO
// through minio-go, the local filesystem). It arrives with the buckets
// issue; queues already record which storages they reach.
package storage
