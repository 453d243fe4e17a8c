package auth

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// ErrTokenEnded is why a held stream ended: its token was revoked (or its
// session signed out), expired, or was moved to another tenant.
var ErrTokenEnded = fault.New(fault.Unauthenticated, "the token this stream was opened with was revoked, expired or left its tenant")

// checkTimeout bounds the one token read a signal costs.
const checkTimeout = 10 * time.Second

// streams is the registry of this process's open streams by token ID. A
// request is authenticated once, when it starts; a stream lives on, so it
// is registered here and ended when its token does. Each token with open
// streams has one watcher, which re-reads the token (by the rules of
// viewerOf) when the bus signals it or its expiry comes: nothing polls.
type streams struct {
	mu     sync.Mutex
	tokens map[string]*heldToken
}

// heldToken is one token with open streams.
type heldToken struct {
	open map[*heldStream]struct{}
	kick chan struct{} // check now (buffered: kicks merge)
	quit chan struct{} // closed when the last stream is gone
}

// heldStream is one open stream: the tenant and environment it was opened
// in, and how to end it.
type heldStream struct {
	tenantID, envID string
	cancel          context.CancelCauseFunc
}

// Hold returns a context for a stream opened with the token of the viewer
// in ctx: it ends (with cause ErrTokenEnded) within moments of the token
// being revoked, signed out or moved to another tenant, on any replica
// (through the bus), and when the token expires. Call cancel when the
// stream ends; it is also released when ctx ends. A viewer without a token
// (the system) is not held.
func (s *Service) Hold(ctx context.Context) (context.Context, context.CancelFunc) {
	held, cancel, _ := s.HoldAtMost(ctx, 0)
	return held, cancel
}

// HoldAtMost is Hold refusing (RATE_LIMITED) a stream beyond max open
// ones of the same token in this process (0: no bound): for streams each
// of which costs the server work on every signal, so that one token
// cannot multiply that work by opening them by the thousand.
func (s *Service) HoldAtMost(ctx context.Context, max int) (context.Context, context.CancelFunc, error) {
	v := viewer.FromContext(ctx)
	if v == nil || v.System || v.TokenID == "" {
		held, cancel := context.WithCancel(ctx)
		return held, cancel, nil
	}
	held, cancel := context.WithCancelCause(ctx)
	st := &heldStream{tenantID: v.TenantID, envID: v.EnvironmentID, cancel: cancel}
	if !s.add(v.TokenID, st, max) {
		cancel(context.Canceled)
		return nil, nil, fault.New(fault.RateLimited, "at most %d such streams at once per sign-in: close some", max)
	}
	context.AfterFunc(held, func() { s.remove(v.TokenID, st) })
	// Given back at once (AfterFunc's goroutine may come later): a
	// bounded token's next stream must find the place free.
	return held, func() { cancel(context.Canceled); s.remove(v.TokenID, st) }, nil
}

// TokensEnded tells every replica that the tokens ids were revoked or
// moved, so that their open streams end. Call it after the change is
// committed.
func (s *Service) TokensEnded(ctx context.Context, ids ...string) {
	for _, id := range ids {
		if s.Bus != nil {
			err := s.Bus.Publish(context.WithoutCancel(ctx), notify.TopicToken, id)
			if err == nil {
				continue // our own replica hears it through the bus too
			}
			s.logger().Error("signalling a revoked token to other replicas", "token", id, "err", err)
		}
		s.kick(id)
	}
}

// add registers st under token id, unless the token holds max streams
// already (max > 0).
func (s *Service) add(id string, st *heldStream, max int) bool {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	if s.streams.tokens == nil {
		s.streams.tokens = map[string]*heldToken{}
	}
	h := s.streams.tokens[id]
	if h != nil && max > 0 && len(h.open) >= max {
		return false
	}
	if h == nil {
		h = &heldToken{open: map[*heldStream]struct{}{}, kick: make(chan struct{}, 1), quit: make(chan struct{})}
		s.streams.tokens[id] = h
		var wake <-chan struct{}
		unsubscribe := func() {}
		if s.Bus != nil {
			wake, unsubscribe = s.Bus.Subscribe(notify.TopicToken, id)
		}
		go s.watch(id, h, wake, unsubscribe)
	}
	h.open[st] = struct{}{}
	// Check once now: the token may have ended between the request's
	// authentication and this registration, a signal this stream missed.
	kickHeld(h)
	return true
}

func (s *Service) remove(id string, st *heldStream) {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	h := s.streams.tokens[id]
	if h == nil {
		return
	}
	if _, ok := h.open[st]; !ok {
		return // removed already (cancel, then its AfterFunc)
	}
	delete(h.open, st)
	if len(h.open) == 0 {
		delete(s.streams.tokens, id)
		close(h.quit)
	}
}

// kick makes the watcher of token id (if it has open streams here) check it.
func (s *Service) kick(id string) {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	if h := s.streams.tokens[id]; h != nil {
		kickHeld(h)
	}
}

func kickHeld(h *heldToken) {
	select {
	case h.kick <- struct{}{}:
	default: // a check is pending already
	}
}

// watch checks token id whenever it is signalled or kicked, until its last
// stream is gone, and keeps a timer at its expiry.
func (s *Service) watch(id string, h *heldToken, wake <-chan struct{}, unsubscribe func()) {
	defer unsubscribe()
	var expiry *time.Timer
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	for {
		select {
		case <-h.quit:
			return
		case <-wake:
		case <-h.kick:
		}
		expires := s.check(id, h)
		if expires.IsZero() {
			continue
		}
		if expiry != nil {
			expiry.Stop()
		}
		// The timer only kicks: the check decides, by the same clock as
		// Authenticate, so an early timer changes nothing.
		expiry = time.AfterFunc(max(expires.Sub(s.Now()), 0)+10*time.Millisecond, func() { kickHeld(h) })
	}
}

// check ends the streams of token id that it no longer allows, and returns
// the token's expiry (zero: none, or it ended).
func (s *Service) check(id string, h *heldToken) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	unauth := errors.New("ended")
	t, v, err := s.tokenViewer(ctx, unauth, apitoken.ID(id))
	if err != nil && !errors.Is(err, unauth) {
		// The database did not answer: keep the streams rather than cut
		// every one of them on a blip; the next signal or expiry checks again.
		s.logger().Warn("checking the token of open streams", "token", id, "err", err)
		return time.Time{}
	}
	s.streams.mu.Lock()
	ended := 0
	for st := range h.open {
		if err != nil || st.tenantID != v.TenantID || st.envID != v.EnvironmentID {
			st.cancel(ErrTokenEnded)
			ended++
		}
	}
	s.streams.mu.Unlock()
	if ended > 0 {
		s.logger().Info("ended the open streams of a token", "token", id, "streams", ended)
	}
	if err != nil || t.ExpiresAt == nil {
		return time.Time{}
	}
	return *t.ExpiresAt
}

func (s *Service) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}
