package apps

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/ui/app"
)

// The buttons of the app page and the task pages: they call the functions
// service as the viewer, whose rules decide who may (an app's owner or an
// admin; the buttons show only to them).

// service is the functions service, or an Unavailable fault when the
// dashboard was given none.
func (h *handlers) service() error {
	if h.fns == nil {
		return fault.New(fault.Unavailable, "the dashboard has no functions service")
	}
	return nil
}

func (h *handlers) stopVersion(w http.ResponseWriter, r *http.Request) error {
	if err := h.service(); err != nil {
		return err
	}
	id := r.PathValue("id")
	v, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || v < 1 {
		return fault.Invalid("version", "must be a version number")
	}
	if _, err := h.fns.StopVersion(r.Context(), id, v); err != nil {
		return err
	}
	h.rt.Flash(r, "Version v"+strconv.Itoa(v)+" stopped.")
	return app.SeeOther(w, r, "/apps/"+id)
}

func (h *handlers) rollback(w http.ResponseWriter, r *http.Request) error {
	if err := h.service(); err != nil {
		return err
	}
	id := r.PathValue("id")
	v, err := strconv.Atoi(r.PostFormValue("version"))
	if err != nil || v < 0 {
		return fault.Invalid("version", "must be a version number")
	}
	a, err := h.fns.Rollback(r.Context(), id, v)
	if err != nil {
		return err
	}
	h.rt.Flash(r, "The app's URLs now reach v"+strconv.Itoa(a.LiveVersion)+".")
	return app.SeeOther(w, r, "/apps/"+id)
}

func (h *handlers) requeue(w http.ResponseWriter, r *http.Request) error {
	if err := h.service(); err != nil {
		return err
	}
	id := r.PathValue("id")
	t, err := h.fns.Requeue(r.Context(), id)
	if err != nil {
		return err
	}
	h.rt.Flash(r, "Call "+t.ID+" queued again.")
	back := r.PostFormValue("back")
	// Only back to our own pages: never an open redirect.
	if !strings.HasPrefix(back, "/apps/") && !strings.HasPrefix(back, "/tasks/") || strings.Contains(back, "//") {
		back = "/tasks/" + t.ID
	}
	return app.SeeOther(w, r, back)
}
