package buckets

import (
	"strings"

	"github.com/levers9/levers9/ent"
)

// Dir is the directory (or prefix) holding bucket b's objects on its
// storage: derived from its ID, so buckets of two tenants sharing an S3
// bucket never meet. Jobs on the node of a local or node storage link it directly.
func Dir(b *ent.Bucket) string { return strings.ReplaceAll(b.ID, "_", "-") }
