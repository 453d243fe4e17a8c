// Package live pushes page changes to the browser as server-sent events,
// for any dashboard page that shows state changing under it (jobs, nodes).
// No polling: the handler wakes when the notify bus signals a change,
// re-reads what the page shows as the viewer, and sends what differs.
//
// API (for page packages):
//
//	ctx, stop := rt.Deps.Auth.Hold(r.Context()) // ends with the session
//	defer stop()
//	keys, unsub := rt.Deps.Bus.SubscribeAll(notify.TopicNode)
//	defer unsub()
//	return live.Serve(ctx, w, keys.C(), func(ctx context.Context, s *live.Sender) (bool, error) {
//		keys.Take()                          // read what changed, if useful
//		rows, err := readAsViewer(ctx)       // ent privacy applies
//		...
//		return false, s.Patch(patches...)    // true ends the stream ("end")
//	})
//
// In the page, an element with data-live="/url/of/the/stream" opens the
// stream (ui/static/app.js, "live" section). Events it understands:
//
//	patch  []Patch: set the text, class or attributes of elements by id
//	stale  {"text": "..."}: show a notice with a reload link (rows added)
//	reload {}: reload the page (its structure changed)
//	end    {}: stop listening (nothing will change any more)
//
// Text is only ever set as text in the browser, never as HTML.
package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// KeepAlive is how often an idle stream sends a comment, so proxies keep it.
const KeepAlive = 15 * time.Second

// MinGap is the least time between two pushes: a burst of signals (a
// queue of jobs starting at once) becomes one re-read, not one per signal.
const MinGap = 250 * time.Millisecond

// Patch changes one element of the page, found by its id. Empty fields
// leave the element's text or class as they are; Attr sets attributes
// (only data-*, title and hidden are applied by the browser side; an
// empty value removes the attribute).
type Patch struct {
	ID    string            `json:"id"`
	Text  *string           `json:"text,omitempty"`
	Class *string           `json:"class,omitempty"`
	Attr  map[string]string `json:"attr,omitempty"`
}

// Text is a patch setting the text of element id.
func Text(id, text string) Patch { return Patch{ID: id, Text: &text} }

// TextClass is a patch setting the text and class of element id (a
// status chip: "status status-RUNNING").
func TextClass(id, text, class string) Patch { return Patch{ID: id, Text: &text, Class: &class} }

// Sender writes events on one stream. It remembers the patches sent, so a
// push sends only what changed since the last one.
type Sender struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	sent map[string]Patch
}

// Event writes one event with data as JSON.
func (s *Sender) Event(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding the %s event: %w", name, err)
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return fmt.Errorf("writing the %s event: %w", name, err)
	}
	return s.rc.Flush()
}

// Patch sends the patches that differ from what this stream last sent
// for the same element; nothing when none does.
func (s *Sender) Patch(ps ...Patch) error {
	var out []Patch
	for _, p := range ps {
		if old, ok := s.sent[p.ID]; ok && samePatch(old, p) {
			continue
		}
		s.sent[p.ID] = p
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil
	}
	return s.Event("patch", out)
}

// Stale tells the page it misses rows (new ones appeared): the browser
// shows text with a link reloading the page.
func (s *Sender) Stale(text string) error { return s.Event("stale", map[string]string{"text": text}) }

// Reload asks the browser to reload the page.
func (s *Sender) Reload() error { return s.Event("reload", struct{}{}) }

func samePatch(a, b Patch) bool {
	if (a.Text == nil) != (b.Text == nil) || (a.Text != nil && *a.Text != *b.Text) {
		return false
	}
	if (a.Class == nil) != (b.Class == nil) || (a.Class != nil && *a.Class != *b.Class) {
		return false
	}
	if len(a.Attr) != len(b.Attr) {
		return false
	}
	for k, v := range a.Attr {
		if bv, ok := b.Attr[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// Push re-reads the page's state and sends it; done ends the stream with
// an "end" event. The first push runs at once (the page may have changed
// between its rendering and the stream's start), then one after each wake.
type Push func(ctx context.Context, s *Sender) (done bool, err error)

// Serve answers w with a stream of push's events until ctx ends, the
// browser goes away, or push says done. An error of push ends the stream
// without "end": the browser's EventSource reconnects and the first push
// of the new stream sends the whole state again. Wrap ctx with
// auth.Service.Hold so the stream ends with the session.
func Serve(ctx context.Context, w http.ResponseWriter, wake <-chan struct{}, push Push) error {
	rc, err := Open(w)
	if err != nil {
		return nil // the browser went away
	}
	s := &Sender{w: w, rc: rc, sent: map[string]Patch{}}
	tick := time.NewTicker(KeepAlive)
	defer tick.Stop()
	var last time.Time
	for {
		if gap := time.Until(last.Add(MinGap)); gap > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(gap):
			}
		}
		last = time.Now()
		done, err := push(ctx, s)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err // logged by the caller; the browser reconnects
		}
		if done {
			_ = s.Event("end", struct{}{})
			return nil
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
				if err := KeepAliveComment(w, s.rc); err != nil {
					return nil
				}
			case <-wake:
				break wait
			}
		}
	}
}

// Merge is one wake channel for several (a page watching two topics of the
// notify bus); stop ends its goroutine. Like the bus's, it never blocks a
// sender and merges wakes that come before the previous one is taken.
func Merge(chs ...<-chan struct{}) (<-chan struct{}, func()) {
	out, done := make(chan struct{}, 1), make(chan struct{})
	for _, ch := range chs {
		go func() {
			for {
				select {
				case <-done:
					return
				case <-ch:
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return out, func() { close(done) }
}

// Open starts an event stream on w (the headers every dashboard stream
// sends, proxies told not to buffer) and flushes it; an error means the
// browser went away.
func Open(w http.ResponseWriter) (*http.ResponseController, error) {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return rc, rc.Flush()
}

// KeepAliveComment writes the comment an idle stream sends every
// KeepAlive, so proxies keep it open.
func KeepAliveComment(w http.ResponseWriter, rc *http.ResponseController) error {
	if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return rc.Flush()
}
