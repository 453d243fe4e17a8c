package docker

import (
	"context"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// ensureImage pulls ref unless the daemon has it, reporting progress
// ("pulling python:3.12: 45%") at most every second or every 10%. A
// blueprint image (levers9-bp/…) is never pulled: its export is fetched
// from the server for job jobID and loaded.
func (r *Runtime) ensureImage(ctx context.Context, jobID, ref string, progress func(string)) error {
	if _, err := r.cli.ImageInspect(ctx, ref); err == nil {
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("inspecting image %s: %w", ref, err)
	}
	if isBlueprint(ref) {
		progress("loading blueprint image " + ref)
		return r.loadBlueprint(ctx, jobID, ref)
	}
	r.log.Info("pulling image", "image", ref)
	progress(fmt.Sprintf("pulling %s: 0%%", ref))
	resp, err := r.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return fmt.Errorf("pulling %s: %w", ref, err)
	}
	defer resp.Close()
	p := pullProgress{layers: map[string]jsonstream.Progress{}, last: time.Now()}
	for m, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return fmt.Errorf("pulling %s: %w", ref, err)
		}
		if m.Error != nil {
			return fmt.Errorf("pulling %s: %s", ref, m.Error.Message)
		}
		if pct, ok := p.update(m); ok {
			progress(fmt.Sprintf("pulling %s: %d%%", ref, pct))
		}
	}
	if _, err := r.cli.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("pulling %s: %w", ref, err)
	}
	return nil
}

// pullProgress adds up the layers' download progress.
type pullProgress struct {
	layers  map[string]jsonstream.Progress
	lastPct int
	last    time.Time
}

// update takes one pull message and says whether the overall percentage
// is worth reporting.
func (p *pullProgress) update(m jsonstream.Message) (int, bool) {
	if m.ID == "" {
		return 0, false
	}
	switch m.Status {
	case "Downloading":
		if m.Progress != nil && m.Progress.Total > 0 {
			p.layers[m.ID] = *m.Progress
		}
	case "Download complete", "Pull complete", "Already exists":
		if l, ok := p.layers[m.ID]; ok {
			l.Current = l.Total
			p.layers[m.ID] = l
		}
	default:
		return 0, false
	}
	var cur, total int64
	for _, l := range p.layers {
		cur, total = cur+min(l.Current, l.Total), total+l.Total
	}
	if total == 0 {
		return 0, false
	}
	pct := int(cur * 100 / total)
	if pct == p.lastPct || (pct < p.lastPct+10 && time.Since(p.last) < time.Second) {
		return 0, false
	}
	p.lastPct, p.last = pct, time.Now()
	return pct, true
}
