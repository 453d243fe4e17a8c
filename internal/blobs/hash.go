package blobs

import (
	"github.com/levers9/levers9/internal/fault"
)

// HashLen is the length of a hex SHA-256.
const HashLen = 64

// CheckHash refuses anything but a hex SHA-256 in lower case: the hash is
// part of the object's storage key and of URLs, so it has exactly one
// spelling.
func CheckHash(h string) error {
	if len(h) != HashLen {
		return fault.Invalid("hash", "a blob's hash is the hex SHA-256 of its content: %d lower-case hex digits, not %d characters", HashLen, len(h))
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fault.Invalid("hash", "a blob's hash is the hex SHA-256 of its content, in lower-case hex digits only")
		}
	}
	return nil
}

// key is where tenant's blob hash lives in Bucket. Tenant IDs hold an
// underscore, which bucket names may not, so every tenant shares one
// bucket and has its own prefix in it.
func key(tenantID, hash string) string {
	return tenantID + "/sha256/" + hash
}
