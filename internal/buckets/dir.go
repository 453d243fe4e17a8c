package buckets

import "github.com/levers9/levers9/ent"

// Dir is the directory (or prefix) holding bucket b's objects on its
// storage. Jobs on the node of a local or node storage link it directly.
func Dir(b *ent.Bucket) string { return dirName(b) }
