package joblog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/notify"
)

// ErrTooSlow ends a follow whose consumer took nothing for Options.StallAfter:
// holding lines for it forever would let one idle client grow the server.
var ErrTooSlow = errors.New("the subscriber did not read for too long and was dropped")

// Options tune a follow; zero values take the defaults.
type Options struct {
	Buffer     int           // items held for the consumer (default 256: at most 16 MiB of 64 KiB lines)
	StallAfter time.Duration // drop a consumer blocked this long (default 30 s)
	GapWait    time.Duration // wait this long for a missing seq before skipping it (default 5 s)
	Poll       time.Duration // re-read without a signal this often: signals can be lost (default 30 s)
	Log        *slog.Logger  // default: the service's
	// OnError, when set, is called once before the channel closes because
	// of an error (ErrTooSlow, a database failure); not on cancellation or
	// on a normal end.
	OnError func(error)
	// OnDone, when set, is called when the follow has ended, however.
	OnDone func()
}

func (o Options) withDefaults(log *slog.Logger) Options {
	if o.Buffer <= 0 {
		o.Buffer = 256
	}
	if o.StallAfter <= 0 {
		o.StallAfter = 30 * time.Second
	}
	if o.GapWait <= 0 {
		o.GapWait = 5 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = 30 * time.Second
	}
	if o.Log == nil {
		o.Log = log
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Follow sends the lines that attempt attempt (0: the job's current one)
// of job jobID wrote, from seq fromSeq on: first the stored ones, then each
// new one as the bus signals it, in seq order without gaps or duplicates, until
// the attempt is over (the job has ended, or was requeued as a later
// attempt) and its last line was sent; then it closes the channel. Queries
// run as the viewer of ctx, so a job of another tenant is NOT_FOUND.
// Cancelling ctx ends the follow.
func (s *Service) Follow(ctx context.Context, jobID string, attempt int, fromSeq int64, opts Options) (<-chan *Line, error) {
	opts = opts.withDefaults(s.Log)
	c := s.DB.Ent
	st, err := readJob(ctx, c, jobID)
	if err != nil {
		return nil, err
	}
	attempt, err = attemptOf(st, attempt)
	if err != nil {
		return nil, err
	}
	// One reader per attempt on this replica; this follow takes its lines
	// from the reader's window, or the database when behind it.
	h, err := s.join(ctx, hubKey{jobID: jobID, attempt: attempt, gapWait: opts.GapWait, poll: opts.Poll}, fromSeq, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan *Line, opts.Buffer)
	f := &lineFollow{c: c, h: h, jobID: jobID, attempt: attempt, next: max(fromSeq, 1), opts: opts, out: sender[*Line]{ch: out, stall: opts.StallAfter}}
	s.start(ctx, opts, jobID, h.leave, func() { close(out) }, f.run)
	return out, nil
}

// FollowEvents sends the events of job jobID, the stored ones and then each
// new one, until the job has ended; like Follow otherwise.
func (s *Service) FollowEvents(ctx context.Context, jobID string, opts Options) (<-chan *Event, error) {
	opts = opts.withDefaults(s.Log)
	c := s.DB.Ent
	if _, err := readJob(ctx, c, jobID); err != nil {
		return nil, err
	}
	wake, stop := subscribe(s.Bus, jobID)
	out := make(chan *Event, opts.Buffer)
	f := &eventFollow{c: c, jobID: jobID, opts: opts, seen: map[string]bool{}, out: sender[*Event]{ch: out, stall: opts.StallAfter}}
	s.start(ctx, opts, jobID, stop, func() { close(out) }, func(ctx context.Context) error { return f.run(ctx, wake) })
	return out, nil
}

func subscribe(bus *notify.Bus, jobID string) (<-chan struct{}, func()) {
	if bus == nil {
		return nil, func() {} // polling only
	}
	return bus.Subscribe(notify.TopicJob, jobID)
}

// start runs one follow in its own goroutine and reports how it ended.
func (s *Service) start(ctx context.Context, opts Options, jobID string, stop, closeOut func(), run func(context.Context) error) {
	s.running.Add(1)
	go func() {
		defer s.running.Add(-1)
		if opts.OnDone != nil {
			defer opts.OnDone()
		}
		defer closeOut()
		defer stop()
		err := run(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		if errors.Is(err, ErrTooSlow) {
			opts.Log.Info("dropping a slow log subscriber", "job", jobID)
		} else {
			opts.Log.Error("following a job", "job", jobID, "err", err)
		}
		if opts.OnError != nil {
			opts.OnError(err)
		}
	}()
}

// sender puts items in a bounded channel and gives up on a consumer that
// takes nothing for stall.
type sender[T any] struct {
	ch    chan T
	stall time.Duration
	timer *time.Timer
}

func (s *sender[T]) send(ctx context.Context, v T) error {
	select {
	case s.ch <- v:
		return nil
	default:
	}
	if s.timer == nil {
		s.timer = time.NewTimer(s.stall)
	} else {
		s.timer.Reset(s.stall)
	}
	defer s.timer.Stop()
	select {
	case s.ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.timer.C:
		return ErrTooSlow
	}
}

// wait blocks until a signal, the poll interval, retry (when not nil) or
// the end of ctx.
func wait(ctx context.Context, wake <-chan struct{}, poll time.Duration, retry <-chan time.Time) error {
	t := time.NewTimer(poll)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-retry:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

type lineFollow struct {
	c        *ent.Client // reads history as the follower
	h        *hub
	jobID    string
	attempt  int
	next     int64 // the seq to send next
	opts     Options
	out      sender[*Line]
	gapSince time.Time // when the line at next went missing
}

// page bounds one read: lines may be 64 KiB each.
const page = 256

// run sends the follower's lines: stored ones below the hub's window from
// the database, then the window's as the hub fills it, until the attempt
// is over and its last line was sent.
func (f *lineFollow) run(ctx context.Context) error {
	for {
		v := f.h.view(f.next)
		if v.err != nil {
			return v.err
		}
		var retry <-chan time.Time
		if f.next < v.floor {
			progressed, held, err := f.replay(ctx, v)
			if err != nil {
				return err
			}
			if progressed {
				continue
			}
			if held {
				retry = time.After(min(f.opts.GapWait/10, time.Second))
			}
		} else {
			for _, l := range v.lines {
				if err := f.out.send(ctx, l); err != nil {
					return err
				}
				metrics.LogLinesDelivered.Inc()
				f.next = l.Seq + 1
			}
			// The hub covered everything below v.next: what it did not
			// deliver there, it skipped.
			f.next = max(f.next, v.next)
			if len(v.lines) > 0 {
				continue
			}
			if v.done {
				return nil
			}
		}
		select {
		case <-v.changed:
		case <-retry:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// replay sends stored lines below the hub's window (v.floor). Below the
// hub's start it holds at a gap for at most GapWait while the attempt runs,
// as the hub does above it: lines of one job may commit out of order, and
// a follower must not skip the late ones.
func (f *lineFollow) replay(ctx context.Context, v view) (progressed, held bool, err error) {
	lines, err := readLines(ctx, f.c, f.jobID, f.attempt, f.next, page)
	if err != nil {
		return false, false, err
	}
	beyond := v.next > v.start // the hub delivered a line past the gap
	for i := range lines {
		l := &lines[i]
		if l.Seq >= v.floor {
			beyond = true
			break
		}
		if l.Seq > f.next && f.next < v.start && !v.done {
			if f.holdGap() {
				return progressed, true, nil
			}
			f.opts.Log.Warn("log lines missing; skipping them", "job", f.jobID, "from", f.next, "to", l.Seq-1)
		}
		f.gapSince = time.Time{}
		if err := f.out.send(ctx, l); err != nil {
			return false, false, err
		}
		metrics.LogLinesDelivered.Inc()
		f.next = l.Seq + 1
		progressed = true
	}
	if progressed {
		return true, false, nil
	}
	// Nothing is stored from f.next up to the window.
	switch {
	case f.next >= v.start || v.done:
		// The hub covered it, or nothing more will be written.
	case !beyond:
		return false, false, nil // nothing written past it yet: wait
	case f.holdGap():
		return false, true, nil
	default:
		f.opts.Log.Warn("log lines missing; skipping them", "job", f.jobID, "from", f.next, "to", v.floor-1)
	}
	f.gapSince = time.Time{}
	f.next = v.floor
	return true, false, nil
}

// holdGap reports whether the line at f.next may still come.
func (f *lineFollow) holdGap() bool {
	if f.gapSince.IsZero() {
		f.gapSince = time.Now()
	}
	return time.Since(f.gapSince) < f.opts.GapWait
}

type eventFollow struct {
	c     *ent.Client
	jobID string
	opts  Options
	seen  map[string]bool // events are few per job: remember them all
	out   sender[*Event]
}

func (f *eventFollow) run(ctx context.Context, wake <-chan struct{}) error {
	for {
		st, err := readJob(ctx, f.c, f.jobID)
		if err != nil {
			return err
		}
		events, err := readEvents(ctx, f.c, f.jobID)
		if err != nil {
			return err
		}
		for i := range events {
			e := &events[i]
			if f.seen[e.ID] {
				continue
			}
			f.seen[e.ID] = true
			if err := f.out.send(ctx, e); err != nil {
				return err
			}
		}
		if jobs.Ended(st.status) {
			return nil
		}
		if err := wait(ctx, wake, f.opts.Poll, nil); err != nil {
			return fmt.Errorf("waiting for events of job %s: %w", f.jobID, err)
		}
	}
}
