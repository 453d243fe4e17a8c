package schema

import "regexp"

var (
	slugPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	// namePattern is for names people type and scripts reference: queues,
	// groups, projects, storages, environments.
	namePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)
	// bucketPattern follows S3's rules so a bucket name works on every storage.
	bucketPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{1,61}[a-z0-9])$`)
)
