package joblog

import (
	"context"
	"fmt"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/logline"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
)

// Line is one stored output line of a job.
type Line struct {
	Attempt int // the run of the job that wrote it; each numbers its lines from 1
	Seq     int64
	Service string
	Stream  string // stdout, stderr or system (levers9's own notes)
	Time    time.Time
	Text    string

	enc *encodings // set on lines a hub shares between its follows
}

// Event is one stored transition of a job (Service nil) or of one of its
// services.
type Event struct {
	ID      string
	Service *string
	Status  job.Status
	Reason  string
	At      time.Time
}

// MaxPage is the most lines one read returns.
const MaxPage = 1000

// jobState is what readers need to know of a job.
type jobState struct {
	status  job.Status
	attempt int // the current attempt
}

// ended reports whether attempt will write no more lines: the job has
// ended, or a later attempt has begun (reports of earlier ones are refused).
func (s jobState) ended(attempt int) bool { return jobs.Ended(s.status) || s.attempt > attempt }

// readJob returns the state of job jobID as the viewer of ctx sees it:
// ent privacy hides other tenants' jobs, which are NOT_FOUND like missing ones.
func readJob(ctx context.Context, c *ent.Client, jobID string) (jobState, error) {
	j, err := c.Job.Query().Where(job.ID(jobID)).Select(job.FieldStatus, job.FieldAttempt).Only(ctx)
	if ent.IsNotFound(err) {
		return jobState{}, fault.Missing("job " + jobID)
	}
	if err != nil {
		return jobState{}, fmt.Errorf("reading job %s: %w", jobID, err)
	}
	return jobState{status: j.Status, attempt: max(j.Attempt, 1)}, nil
}

// attemptOf is the attempt a reader asked for, 0 meaning the current one;
// one that has not begun is refused.
func attemptOf(st jobState, attempt int) (int, error) {
	switch {
	case attempt == 0:
		return st.attempt, nil
	case attempt < 0 || attempt > st.attempt:
		return 0, fault.Invalid("attempt", "must be between 1 and %d (the job's current attempt)", st.attempt)
	}
	return attempt, nil
}

// Lines returns up to limit stored lines of job jobID with seq >= fromSeq
// written by attempt attempt (0: the job's current one), in order, as the
// viewer of ctx may see them.
func (s *Service) Lines(ctx context.Context, jobID string, attempt int, fromSeq int64, limit int) ([]Line, error) {
	c := s.DB.Ent
	if limit < 0 || limit > MaxPage {
		return nil, fault.Invalid("first", "must be between 0 and %d", MaxPage)
	}
	st, err := readJob(ctx, c, jobID)
	if err != nil {
		return nil, err
	}
	attempt, err = attemptOf(st, attempt)
	if err != nil {
		return nil, err
	}
	return readLines(ctx, c, jobID, attempt, fromSeq, limit)
}

func readLines(ctx context.Context, c *ent.Client, jobID string, attempt int, fromSeq int64, limit int) ([]Line, error) {
	rows, err := c.LogLine.Query().
		Where(logline.JobID(jobID), logline.Attempt(attempt), logline.SeqGTE(fromSeq)).
		Order(ent.Asc(logline.FieldSeq)).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading logs of job %s: %w", jobID, err)
	}
	out := make([]Line, len(rows))
	for i, r := range rows {
		out[i] = Line{Attempt: r.Attempt, Seq: r.Seq, Service: r.Service, Stream: string(r.Stream), Time: r.Time, Text: r.Text}
	}
	return out, nil
}

// Tail is where the stored log of an attempt ends: its last seq (0: none)
// and, per service, the time of that service's last line. A reattaching
// agent resumes output right after it.
func (s *Service) Tail(ctx context.Context, jobID string, attempt int) (int64, map[string]time.Time, error) {
	c := s.DB.Ent
	// The last seq per service, then those lines' times: aggregating
	// times directly does not scan alike on every database.
	var ends []struct {
		Service string `json:"service"`
		Seq     int64  `json:"max"`
	}
	err := c.LogLine.Query().
		Where(logline.JobID(jobID), logline.Attempt(attempt)).
		GroupBy(logline.FieldService).Aggregate(ent.Max(logline.FieldSeq)).
		Scan(ctx, &ends)
	if err != nil {
		return 0, nil, fmt.Errorf("finding the end of the logs of job %s: %w", jobID, err)
	}
	if len(ends) == 0 {
		return 0, map[string]time.Time{}, nil
	}
	seqs := make([]int64, len(ends))
	for i, e := range ends {
		seqs[i] = e.Seq
	}
	rows, err := c.LogLine.Query().
		Where(logline.JobID(jobID), logline.Attempt(attempt), logline.SeqIn(seqs...)).
		Select(logline.FieldService, logline.FieldSeq, logline.FieldTime).All(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("finding the end of the logs of job %s: %w", jobID, err)
	}
	var seq int64
	last := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		seq = max(seq, r.Seq)
		last[r.Service] = r.Time
	}
	return seq, last, nil
}

// Events returns the stored events of job jobID in the order they happened.
func (s *Service) Events(ctx context.Context, jobID string) ([]Event, error) {
	if _, err := readJob(ctx, s.DB.Ent, jobID); err != nil {
		return nil, err
	}
	return readEvents(ctx, s.DB.Ent, jobID)
}

func readEvents(ctx context.Context, c *ent.Client, jobID string) ([]Event, error) {
	// IDs are time-ordered ULIDs: ordering by them is ordering by insertion.
	rows, err := c.JobEvent.Query().Where(jobevent.JobID(jobID)).
		Order(ent.Asc(jobevent.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading events of job %s: %w", jobID, err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		e := Event{ID: r.ID, Status: job.Status(r.Status), Reason: r.Reason, At: r.At}
		if r.Service != "" {
			s := r.Service
			e.Service = &s
		}
		out[i] = e
	}
	return out, nil
}
