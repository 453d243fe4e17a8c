package nodes

import (
	"net/http"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/ui/app"
)

// drain sets or clears a node's drain flag (form field drain: "true" or
// "false"). A draining node takes no new jobs; the jobs it runs finish.
func (h *handlers) drain(w http.ResponseWriter, r *http.Request) error {
	var on bool
	switch r.PostFormValue("drain") {
	case "true":
		on = true
	case "false":
	default:
		return fault.Invalid("drain", "must be true or false")
	}
	n, err := h.svc.Update(r.Context(), r.PathValue("id"), ent.UpdateComputeNodeInput{Drain: &on})
	if err != nil {
		return err
	}
	if on {
		h.rt.Flash(r, "Node "+n.Name+" is draining: it takes no new jobs; the jobs it runs finish.")
	} else {
		h.rt.Flash(r, "Node "+n.Name+" takes new jobs again.")
	}
	return app.SeeOther(w, r, "/nodes")
}
