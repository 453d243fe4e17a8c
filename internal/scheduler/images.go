package scheduler

import (
	"context"
	"fmt"
	"slices"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/blueprint"
	"github.com/levers9/levers9/internal/jobspec"
)

// loadImages tells the nodes which blueprint images of the current page's
// jobs they hold (Blueprint.nodes), so placement prefers them and a node
// fetches an image through the server as rarely as can be. Only images not
// looked up earlier in the pass are read: no query at all while no pending
// job runs a blueprint image, and one for a pass of one page.
func (st *state) loadImages(ctx context.Context, c *ent.Client, tenantID string) error {
	var want []string
	for _, j := range st.jobs {
		for _, s := range j.Services {
			if jobspec.ReservedImage(s.Image) && !st.imagesRead[s.Image] {
				if st.imagesRead == nil {
					st.imagesRead = map[string]bool{}
				}
				st.imagesRead[s.Image] = true
				want = append(want, s.Image)
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	held := map[string][]string{} // node ID → images
	for part := range slices.Chunk(want, chunk) {
		// The tenant too: images name it, but a row of another tenant must
		// never steer this one's jobs.
		rows, err := c.Blueprint.Query().
			Where(blueprint.TenantID(tenantID), blueprint.ImageIn(part...)).
			Select(blueprint.FieldImage, blueprint.FieldNodes).
			All(ctx)
		if err != nil {
			return fmt.Errorf("loading the nodes holding blueprint images: %w", err)
		}
		for _, r := range rows {
			for _, id := range r.Nodes {
				held[id] = append(held[id], r.Image)
			}
		}
	}
	if len(held) == 0 {
		return nil
	}
	for i := range st.nodes {
		if imgs := held[st.nodes[i].ID]; len(imgs) > 0 {
			st.nodes[i].Images = append(st.nodes[i].Images, imgs...)
		}
	}
	return nil
}
