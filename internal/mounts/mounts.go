// Package mounts is how a job's buckets reach it. Plan tells the job's node
// where each bucket is: a directory on the node it can link, or a bucket to
// sync through the files API. ForJob lets that node, and only for a job it
// runs, read the job's buckets and write the writable ones, as the job's
// owner: the owner's own access rules still apply on every request.
package mounts

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// SyncGrace is how long after a job ended its node may still sync the
// job's results back: a cancelled or failed job's outputs (checkpoints,
// partial results) are saved too.
const SyncGrace = time.Hour

// Planner plans and authorises mounts.
type Planner struct {
	Ent *ent.Client
	// LocalNode returns the ID of the server's built-in node, which shares
	// the server's disk and so links local storages; nil or "": none.
	LocalNode func() string
	Now       func() time.Time
}

// Plan returns the mounts of job j as node nodeID gets them.
func (p *Planner) Plan(ctx context.Context, j *ent.Job, nodeID string) ([]wire.Mount, error) {
	sys := viewer.SystemContext(ctx)
	var out []wire.Mount
	for _, m := range j.Spec.Mounts {
		b, err := p.Ent.Bucket.Query().
			Where(bucket.TenantID(j.TenantID), bucket.Or(bucket.ID(m.Bucket), bucket.Name(m.Bucket))).
			WithStorage().Only(sys)
		if ent.IsNotFound(err) {
			return nil, fault.New(fault.NotFound, "bucket %q of mount %s no longer exists", m.Bucket, m.Path)
		}
		if err != nil {
			return nil, fmt.Errorf("looking up bucket %q of job %s: %w", m.Bucket, j.ID, err)
		}
		wm := wire.Mount{Bucket: b.ID, Path: m.Path, ReadOnly: m.ReadOnly}
		st := b.Edges.Storage
		switch st.Kind {
		case storage.KindLocal:
			if p.LocalNode != nil && nodeID != "" && nodeID == p.LocalNode() {
				dir, err := filepath.Abs(st.Path)
				if err != nil {
					return nil, fmt.Errorf("storage %s: %w", st.Name, err)
				}
				wm.Link = filepath.Join(dir, buckets.Dir(b))
			}
		case storage.KindNode:
			if st.NodeID != nodeID {
				return nil, fault.New(fault.BadUserInput, "bucket %s is on the disk of another node than the job's", b.Name)
			}
			if !filepath.IsAbs(st.Path) {
				return nil, fault.New(fault.BadUserInput, "node storage %s has no absolute path", st.Name)
			}
			wm.Link = filepath.Join(filepath.Clean(st.Path), buckets.Dir(b))
		}
		out = append(out, wm)
	}
	return out, nil
}

// ForJob authenticates a node acting for job jobID on bucket bucketID and
// returns the viewer it acts as: the job's owner. It refuses a credential
// that is not the node's the job runs on, a bucket the job does not mount,
// a write to a read-only mount, and a job that ended over SyncGrace ago.
func (p *Planner) ForJob(ctx context.Context, credential, jobID, bucketID string, write bool) (*viewer.Viewer, error) {
	sys := viewer.SystemContext(ctx)
	n, err := p.Ent.Node.Query().Where(node.CredentialHash(auth.HashSecret(credential))).Only(sys)
	if ent.IsNotFound(err) {
		return nil, fault.New(fault.Unauthenticated, "unknown or revoked node credential")
	}
	if err != nil {
		return nil, fmt.Errorf("looking up node credential: %w", err)
	}
	j, err := p.Ent.Job.Query().
		Where(job.ID(jobID), job.HasServicesWith(service.NodeID(n.ID))).
		WithOwner().Only(sys)
	if ent.IsNotFound(err) {
		return nil, fault.New(fault.Forbidden, "job %q does not run on node %s", jobID, n.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("looking up job %s: %w", jobID, err)
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	if j.FinishedAt != nil && now().Sub(*j.FinishedAt) > SyncGrace {
		return nil, fault.New(fault.Forbidden, "job %s ended at %s: its mounts are closed", j.ID, j.FinishedAt.UTC().Format(time.RFC3339))
	}
	// Only the bucket asked for is looked up: a sync makes one request per
	// file, so this runs once per file.
	b, err := p.Ent.Bucket.Query().Where(bucket.TenantID(j.TenantID), bucket.ID(bucketID)).Only(sys)
	if ent.IsNotFound(err) {
		// Rare: say whether a mounted bucket is gone, or this one never was.
		if _, err := p.Plan(ctx, j, n.ID); err != nil {
			return nil, err
		}
		return nil, fault.New(fault.Forbidden, "job %s does not mount bucket %q", j.ID, bucketID)
	}
	if err != nil {
		return nil, fmt.Errorf("looking up bucket %q: %w", bucketID, err)
	}
	allowed, mounted := false, false
	for _, m := range j.Spec.Mounts {
		if m.Bucket == b.ID || m.Bucket == b.Name {
			mounted = true
			allowed = allowed || !write || !m.ReadOnly
		}
	}
	switch {
	case !mounted:
		return nil, fault.New(fault.Forbidden, "job %s does not mount bucket %q", j.ID, bucketID)
	case !allowed:
		return nil, fault.New(fault.Forbidden, "job %s mounts bucket %s read-only", j.ID, bucketID)
	}
	owner := j.Edges.Owner
	return &viewer.Viewer{
		UserID: owner.ID, TenantID: j.TenantID, EnvironmentID: j.EnvironmentID,
		Admin: owner.Role == user.RoleAdmin,
	}, nil
}
