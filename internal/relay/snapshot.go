package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/wire"
)

// Snapshots records the blueprints snapshots become (blueprints.Service).
type Snapshots interface {
	// NewSnapshot records a BUILDING blueprint for a snapshot of job j.
	NewSnapshot(ctx context.Context, j *ent.Job) (*ent.Blueprint, error)
	// Fail marks a BUILDING blueprint FAILED with reason.
	Fail(ctx context.Context, id, reason string) error
	// Get is blueprint id (READY once the node uploaded its image).
	Get(ctx context.Context, id string) (*ent.Blueprint, error)
}

// snapshotTimeout bounds a snapshot: committing, exporting and uploading
// a container's file system.
const snapshotTimeout = 10 * time.Minute

// SnapshotAnswer is POST /streams/snapshot's answer.
type SnapshotAnswer struct {
	Blueprint SnapshotBlueprint `json:"blueprint"`
}

// SnapshotBlueprint is the blueprint a snapshot became.
type SnapshotBlueprint struct {
	ID    string `json:"id"`
	Key   string `json:"key"`
	Image string `json:"image"`
	State string `json:"state"`
}

// snapshot serves POST /streams/snapshot/JOB/SERVICE: the service's
// container file system (not its memory) committed to a new blueprint.
// Only the job's owner and tenant admins may, as for exec: the snapshot
// holds what the job wrote.
func (h *Handler) snapshot(w http.ResponseWriter, r *http.Request) {
	if h.Snapshots == nil {
		fail(w, fault.New(fault.Unavailable, "this server takes no snapshots"), h.Relay)
		return
	}
	t, err := h.Relay.ResolveTerminal(r.Context(), r.PathValue("job"), r.PathValue("service"))
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	if h.forward(w, r, t) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), snapshotTimeout)
	defer cancel()
	bp, err := h.Snapshots.NewSnapshot(ctx, t.Job)
	if err != nil {
		fail(w, err, h.Relay)
		return
	}
	if err := h.commit(ctx, t, bp.Image); err != nil {
		h.failSnapshot(ctx, t, bp, err)
		fail(w, err, h.Relay)
		return
	}
	// The node uploads before it answers: the blueprint is READY now.
	got, err := h.Snapshots.Get(ctx, bp.ID)
	if err == nil && got.State != blueprint.StateREADY {
		err = fault.New(fault.Unavailable, "the node committed the container, but its image did not arrive (blueprint %s is %s)", bp.ID, got.State)
	}
	if err != nil {
		h.failSnapshot(ctx, t, bp, err)
		fail(w, err, h.Relay)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(SnapshotAnswer{Blueprint: SnapshotBlueprint{ID: got.ID, Key: got.Key, Image: got.Image, State: string(got.State)}})
}

// ownOrigin refuses a request from a page of another origin: a page of
// the relay domain (a job's) is of the same site, so the dashboard's Lax
// session cookie goes along with its POST; browsers send the Origin of
// every POST.
func (h *Handler) ownOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !sameHost(o, r.Host) {
			fail(w, fault.New(fault.Forbidden, "snapshots are taken only from the server's own pages, not from %.100q", o), h.Relay)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// commit has t's node commit t's container to image and upload it. The
// agent answers the stream once the server has the image (or refuses:
// e.g. a process runtime node, which has no containers); a frame it may
// send after its answer says how it ended.
func (h *Handler) commit(ctx context.Context, t Target, image string) error {
	st, err := h.Relay.Open(ctx, t, wire.StreamOpen{Kind: wire.StreamCommit, Image: image})
	if err != nil {
		return err
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { _ = st.Close() })
	defer stop()
	if d, ok := ctx.Deadline(); ok {
		_ = st.SetReadDeadline(d)
	}
	buf := make([]byte, 4096)
	for {
		typ, p, err := wire.ReadFrame(st, buf)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case ctx.Err() != nil:
			return fault.New(fault.Unavailable, "the snapshot took longer than %s", snapshotTimeout)
		case err != nil:
			return fault.New(fault.Unavailable, "the node's answer to the snapshot was cut short: %v", err)
		case typ == wire.FrameError:
			return fault.New(fault.BadUserInput, "%s", p)
		case typ == wire.FrameExit:
			if code, err := wire.ParseExit(p); err != nil || code != 0 {
				return fault.New(fault.Unavailable, "the node could not take the snapshot (exit %d)", code)
			}
			return nil
		}
	}
}

// failSnapshot marks bp FAILED with why the snapshot did not happen.
func (h *Handler) failSnapshot(ctx context.Context, t Target, bp *ent.Blueprint, cause error) {
	reason := snapshotFailure(cause)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := h.Snapshots.Fail(ctx, bp.ID, reason); err != nil {
		h.logError("failing a snapshot's blueprint", t, fmt.Errorf("blueprint %s: %w", bp.ID, err))
	}
}

// snapshotFailure is what a blueprint's members read of why its snapshot
// failed: a fault's message, never an internal error's text (a query, a
// host), which the answer's log keeps.
func snapshotFailure(cause error) string {
	if fs := fault.Classify(cause); len(fs) > 0 {
		return fs[0].Message
	}
	return "internal error"
}
