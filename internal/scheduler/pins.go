package scheduler

import (
	"context"
	"fmt"
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/internal/scheduling"
)

// A job mounting a bucket on a node storage (a directory on one node's
// disk) runs only on that node. Pins are read in bulk: the tenant's node
// storages once per pass, then per page of jobs their specs and the
// buckets those name, and only when the tenant has node storages at all.

// nodeStorage is a storage on one node's disk.
type nodeStorage struct {
	name, node, nodeName string
}

// loadNodeStorages reads the node storages of tenant tenantID.
func (st *state) loadNodeStorages(ctx context.Context, c *ent.Client, tenantID string) error {
	sts, err := c.Storage.Query().
		Where(storage.TenantID(tenantID), storage.KindEQ(storage.KindNode)).
		WithNode(func(q *ent.NodeQuery) { q.Select(node.FieldID, node.FieldName) }).
		Select(storage.FieldID, storage.FieldName, storage.FieldNodeID).
		All(ctx)
	if err != nil {
		return fmt.Errorf("loading node storages: %w", err)
	}
	st.storages = make(map[string]nodeStorage, len(sts))
	for _, s := range sts {
		ns := nodeStorage{name: s.Name, node: s.NodeID, nodeName: s.NodeID}
		if n := s.Edges.Node; n != nil && n.Name != "" {
			ns.nodeName = n.Name
		}
		st.storages[s.ID] = ns
	}
	return nil
}

// pins returns, for those of jobIDs that mount buckets on node storages,
// the node each must run on, and in invalid why a job can run nowhere
// (buckets on two nodes' disks, or on a node storage without a node).
// Mounts of buckets that are gone are left to the start, which fails the
// job with that message.
func (st *state) pins(ctx context.Context, c *ent.Client, tenantID string, jobIDs []string) (map[string]scheduling.Pin, error) {
	if len(st.storages) == 0 || len(jobIDs) == 0 {
		return nil, nil
	}
	var jobs []*ent.Job
	var refs []string
	for part := range slices.Chunk(jobIDs, chunk) {
		js, err := c.Job.Query().Where(job.IDIn(part...)).Select(job.FieldID, job.FieldSpec).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading job mounts: %w", err)
		}
		for _, j := range js {
			if len(j.Spec.Mounts) == 0 {
				continue
			}
			jobs = append(jobs, j)
			for _, m := range j.Spec.Mounts {
				refs = append(refs, m.Bucket)
			}
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	slices.Sort(refs)
	refs = slices.Compact(refs)
	storageIDs := make([]string, 0, len(st.storages))
	for id := range st.storages {
		storageIDs = append(storageIDs, id)
	}
	// A mount names its bucket by ID or by name, as submit resolved it.
	byID, byName := map[string]*ent.Bucket{}, map[string]*ent.Bucket{}
	for part := range slices.Chunk(refs, chunk/2) {
		bs, err := c.Bucket.Query().
			Where(bucket.TenantID(tenantID), bucket.StorageIDIn(storageIDs...), bucket.Or(bucket.IDIn(part...), bucket.NameIn(part...))).
			Select(bucket.FieldID, bucket.FieldName, bucket.FieldStorageID).
			All(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading buckets on node storages: %w", err)
		}
		for _, b := range bs {
			byID[b.ID], byName[b.Name] = b, b
		}
	}
	out := map[string]scheduling.Pin{}
	for _, j := range jobs {
		var pin scheduling.Pin
		first := "" // the bucket that pinned the job
		for _, m := range j.Spec.Mounts {
			b := byID[m.Bucket]
			if b == nil {
				b = byName[m.Bucket]
			}
			if b == nil {
				continue // not on a node storage
			}
			ns := st.storages[b.StorageID]
			switch {
			case ns.node == "":
				st.invalid[j.ID] = scheduling.InvalidPrefix + fmt.Sprintf("bucket %s is on node storage %s, which has no node", b.Name, ns.name)
			case pin.Node == "":
				pin = scheduling.Pin{Node: ns.node, Name: ns.nodeName, Why: fmt.Sprintf("bucket %s is on its disk", b.Name)}
				first = b.Name
			case pin.Node != ns.node:
				st.invalid[j.ID] = scheduling.InvalidPrefix + fmt.Sprintf("bucket %s is on the disk of node %s and bucket %s on that of node %s; a job runs on one node",
					first, pin.Name, b.Name, ns.nodeName)
			}
		}
		if pin.Node != "" && st.invalid[j.ID] == "" {
			out[j.ID] = pin
		}
	}
	return out, nil
}
