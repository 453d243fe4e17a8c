package buckets_test

import (
	"slices"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/inventory"
)

// TestPreview: an S3 storage reaches the queues that would list it and
// all their nodes; a node storage the queues holding its node, on that
// node only; another tenant's queues never show.
func TestPreview(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "other"})
		other.AddNode(t, fixture.Node{Name: "theirs", Queues: []string{other.DefaultQueue}})
		gpu := tn.AddQueue(t, "gpu")
		inv := inventory.Inventory{CPUs: 4, MemoryMiB: 1024}
		a := tn.AddNode(t, fixture.Node{Name: "a", Inventory: inv, Queues: []string{tn.DefaultQueue}})
		tn.AddNode(t, fixture.Node{Name: "b", Inventory: inv, Queues: []string{tn.DefaultQueue, gpu.ID}})
		c := tn.DB.Ent

		for _, tc := range []struct {
			name        string
			st          *ent.Storage
			listedBy    []string
			queues, nds []string
		}{
			{"s3 listed by nothing", &ent.Storage{Kind: storage.KindS3}, nil, nil, nil},
			{"s3 listed by gpu", &ent.Storage{Kind: storage.KindS3}, []string{gpu.ID}, []string{"gpu"}, []string{"b"}},
			{"s3 listed by both", &ent.Storage{Kind: storage.KindS3}, []string{gpu.ID, tn.DefaultQueue}, []string{"default", "gpu"}, []string{"a", "b"}},
			{"s3 listed by another tenant's queue", &ent.Storage{Kind: storage.KindS3}, []string{other.DefaultQueue}, nil, nil},
			{"node storage on a", &ent.Storage{Kind: storage.KindNode, NodeID: a.ID}, nil, []string{"default"}, []string{"a"}},
		} {
			got, err := buckets.Preview(tn.AsAdmin(), c, tc.st, tc.listedBy)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Queues, tc.queues) || !slices.Equal(got.Nodes, tc.nds) {
				t.Errorf("%s: queues %v on nodes %v; want %v on %v", tc.name, got.Queues, got.Nodes, tc.queues, tc.nds)
			}
		}
	})
}
