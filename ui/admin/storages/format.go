package storages

import (
	"context"
	"strconv"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/schema/rule"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/ui/components"
)

// storageRow is one storage of the list, formatted.
type storageRow struct {
	ID, Name, Kind, Where, Price, Buckets string
}

// describeStorage formats s, whose node and buckets are loaded.
func describeStorage(ctx context.Context, s *ent.Storage) storageRow {
	return storageRow{ID: s.ID, Name: s.Name, Kind: string(s.Kind), Where: where(ctx, s),
		Price: s.PricePerTbHour.String(), Buckets: strconv.Itoa(len(s.Edges.Buckets))}
}

// bucketRow is one bucket of the list, formatted.
type bucketRow struct {
	ID, Name, Storage, Readers, Writers, Payer, Size string
}

// describeBucket formats b, whose storage, project and groups are loaded.
func describeBucket(b *ent.Bucket) bucketRow {
	return bucketRow{ID: b.ID, Name: b.Name, Storage: storageName(b), Readers: groupNames(b.Edges.ReadGroups),
		Writers: groupNames(b.Edges.WriteGroups), Payer: payer(b), Size: components.Bytes(b.SizeBytes)}
}

// where says where a storage keeps its data; host paths only to whom
// rule.HostPath shows them (the page is the admins', the rule is one).
func where(ctx context.Context, s *ent.Storage) string {
	switch s.Kind {
	case storage.KindS3:
		return s.Endpoint + " bucket " + s.S3Bucket
	case storage.KindNode:
		n := s.NodeID
		if s.Edges.Node != nil {
			n = s.Edges.Node.Name
		}
		if p := rule.HostPath(ctx, s.Path); p != nil {
			return n + ":" + *p
		}
		return "node " + n
	}
	if p := rule.HostPath(ctx, s.Path); p != nil && *p != "" {
		return "server disk " + *p
	}
	return "server disk"
}

func groupNames(gs []*ent.Group) string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Name)
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

func storageName(b *ent.Bucket) string {
	if b.Edges.Storage != nil {
		return b.Edges.Storage.Name
	}
	return b.StorageID
}

func payer(b *ent.Bucket) string {
	if b.Edges.Project != nil {
		return "project " + b.Edges.Project.Name
	}
	return "its creator"
}

func bucketNameField(f components.Field) components.Field {
	f.Required = true
	f.Hint = "3 to 63 lower-case letters, digits, '.' or '-' (S3's rules)"
	return f
}
