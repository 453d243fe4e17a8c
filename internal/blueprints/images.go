package blueprints

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/blobs"
	"github.com/levers9/levers9/internal/blobsapi"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// NewSnapshot records a BUILDING blueprint of source SNAPSHOT for the
// sandbox job j; the node commits to its Image and uploads it
// (StoreImage).
func (s *Service) NewSnapshot(ctx context.Context, j *ent.Job) (*ent.Blueprint, error) {
	// A function's container holds its runner's token and its secrets in
	// its environment, which a commit would keep; a build has no container.
	if j.Kind == job.KindFUNCTION || j.Kind == job.KindBUILD {
		return nil, fault.New(fault.BadUserInput, "job %s is a %s job: only sandboxes and jobs are snapshotted", j.ID, strings.ToLower(string(j.Kind)))
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("drawing a snapshot key: %w", err)
	}
	sum := sha256.Sum256([]byte("snapshot\n" + j.ID + "\n" + hex.EncodeToString(nonce[:])))
	key := hex.EncodeToString(sum[:])
	owner := j.OwnerID
	if v := viewer.FromContext(ctx); v != nil && v.UserID != "" && v.TenantID == j.TenantID {
		owner = v.UserID
	}
	bp, err := s.DB.Ent.Blueprint.Create().SetTenantID(j.TenantID).SetKey(key).SetSteps([]wire.BuildStep{}).
		SetImage(Repository(j.TenantID) + ":" + key).SetSource(blueprint.SourceSNAPSHOT).SetOwnerID(owner).
		SetBuildJobID(j.ID).Save(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("recording a snapshot of job %s: %w", j.ID, err)
	}
	return bp, nil
}

// imageMissing is every refusal of a node's image request: the node
// learns nothing of other tenants' blueprints or other jobs.
func imageMissing(key, jobID string) error {
	return fault.Missing(fmt.Sprintf("image %.64s of job %.40q", key, jobID))
}

// StoreImage takes the export of blueprint key uploaded by the node with
// credential for job jobID: only that blueprint's build job (or the
// sandbox of a snapshot) on that node may, while it is BUILDING. The
// blueprint becomes READY with the node as a holder.
func (s *Service) StoreImage(ctx context.Context, credential, jobID, key string, stepsBuilt int, r io.Reader, size int64, sha256hex string) error {
	missing := imageMissing(key, jobID)
	j, nodeID, err := blobsapi.PlacedJob(ctx, s.DB.Ent, credential, jobID, missing)
	if err != nil {
		return err
	}
	sys := viewer.SystemContext(ctx)
	bp, err := s.DB.Ent.Blueprint.Query().Where(blueprint.TenantID(j.TenantID), blueprint.Key(key),
		blueprint.BuildJobID(j.ID), blueprint.StateEQ(blueprint.StateBUILDING)).Only(sys)
	if ent.IsNotFound(err) {
		return missing
	}
	if err != nil {
		return fmt.Errorf("looking up blueprint %s: %w", key, err)
	}
	// A snapshot has no steps; its one commit is its one step built.
	most := len(bp.Steps)
	if bp.Source == blueprint.SourceSNAPSHOT {
		most = 1
	}
	if stepsBuilt < 0 || stepsBuilt > most {
		return fault.Invalid(wire.StepsBuiltHeader, "between 0 and %d", most)
	}
	// The blob is the tenant's, stored as the job's owner would.
	owner := viewer.NewContext(ctx, &viewer.Viewer{UserID: j.OwnerID, TenantID: j.TenantID, EnvironmentID: j.EnvironmentID})
	if _, err := s.Blobs.Put(owner, blobs.KindImage, sha256hex, r, size); err != nil {
		return err
	}
	b, err := s.Blobs.Lookup(owner, sha256hex)
	if err != nil {
		return err
	}
	if b.Kind != blobs.KindImage {
		// Put reads nothing when the tenant has the blob already: a hash
		// of its code or payload would make that the export, unsent.
		return fault.Invalid("sha256", "blob %s is not an image", sha256hex)
	}
	now := s.now()
	var n int
	err = s.DB.InTx(sys, func(tx *database.Tx) error {
		n, err = tx.Ent.Blueprint.Update().
			Where(blueprint.ID(bp.ID), blueprint.StateEQ(blueprint.StateBUILDING), blueprint.BuildJobID(j.ID)).
			SetState(blueprint.StateREADY).SetFailure("").SetExportBlob(b.Hash).SetExportBytes(b.Size).
			SetStepsBuilt(stepsBuilt).SetNodes(withNode(bp.Nodes, nodeID)).SetReadyAt(now).
			Save(sys)
		return err
	})
	if err != nil {
		return fmt.Errorf("marking blueprint %s ready: %w", bp.ID, err)
	}
	if n == 0 {
		// Settled as failed (the job ended) while the upload ran.
		return missing
	}
	s.Log.Info("blueprint ready", "blueprint", bp.ID, "key", key, "node", nodeID, "bytes", b.Size, "stepsBuilt", stepsBuilt)
	return nil
}

// OpenImage opens the export of blueprint key for the node with
// credential, which needs it for job jobID (a service of the job runs the
// image, or the build's Cached names it), and records the node as a
// holder.
func (s *Service) OpenImage(ctx context.Context, credential, jobID, key string) (io.ReadCloser, int64, error) {
	missing := imageMissing(key, jobID)
	j, nodeID, err := blobsapi.PlacedJob(ctx, s.DB.Ent, credential, jobID, missing)
	if err != nil {
		return nil, 0, err
	}
	sys := viewer.SystemContext(ctx)
	bp, err := s.DB.Ent.Blueprint.Query().Where(blueprint.TenantID(j.TenantID), blueprint.Key(key),
		blueprint.StateEQ(blueprint.StateREADY), blueprint.ExportBlobNEQ("")).Only(sys)
	if ent.IsNotFound(err) {
		return nil, 0, missing
	}
	if err != nil {
		return nil, 0, fmt.Errorf("looking up blueprint %s: %w", key, err)
	}
	if !needsImage(j, bp) {
		return nil, 0, missing
	}
	rc, size, err := s.Blobs.OpenForTenant(ctx, j.TenantID, bp.ExportBlob)
	if err != nil {
		return nil, 0, err
	}
	if err := s.addHolder(sys, bp.ID, nodeID); err != nil {
		// Placement only prefers holders: a lost record costs a fetch.
		s.Log.Warn("recording an image holder", "blueprint", bp.ID, "node", nodeID, "err", err)
	}
	return rc, size, nil
}

// needsImage reports whether job j runs bp's image or builds from it.
func needsImage(j *ent.Job, bp *ent.Blueprint) bool {
	if b := j.Spec.Build; b != nil && b.Cached == bp.Key {
		return true
	}
	for _, svc := range j.Spec.Services {
		if svc.Image == bp.Image {
			return true
		}
	}
	return false
}

// addHolder adds nodeID to blueprint id's holders.
func (s *Service) addHolder(sys context.Context, id, nodeID string) error {
	return s.DB.InTx(sys, func(tx *database.Tx) error {
		bp, err := tx.Ent.Blueprint.Get(sys, id)
		if err != nil {
			return err
		}
		if slices.Contains(bp.Nodes, nodeID) {
			return nil
		}
		return tx.Ent.Blueprint.UpdateOneID(id).SetNodes(withNode(bp.Nodes, nodeID)).Exec(sys)
	})
}

func withNode(nodes []string, nodeID string) []string {
	if slices.Contains(nodes, nodeID) {
		return nodes
	}
	return append(slices.Clone(nodes), nodeID)
}

// Holders maps each of images (blueprint images; others are ignored) to
// the nodes known to hold it, for placement.
func (s *Service) Holders(ctx context.Context, images []string) (map[string][]string, error) {
	var want []string
	for _, im := range images {
		if Reserved(im) && !slices.Contains(want, im) {
			want = append(want, im)
		}
	}
	out := map[string][]string{}
	if len(want) == 0 {
		return out, nil
	}
	bps, err := s.DB.Ent.Blueprint.Query().Where(blueprint.ImageIn(want...), blueprint.StateEQ(blueprint.StateREADY)).
		All(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("looking up holders of %d images: %w", len(want), err)
	}
	for _, bp := range bps {
		if len(bp.Nodes) > 0 {
			out[bp.Image] = append(out[bp.Image], bp.Nodes...)
		}
	}
	return out, nil
}
