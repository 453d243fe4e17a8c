package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/viewer"
)

// maxExecErrorBytes bounds the error kept on an execution.
const maxExecErrorBytes = 1000

// endWrite bounds recording an execution's end, which runs after the
// stream closed (its context may be gone).
const endWrite = 10 * time.Second

// ExecStarted records that the viewer in ctx runs command (on a terminal
// when tty) in service svc of job j: the job's exec history, kept without
// the output. It returns the execution's ID for ExecEnded.
func (s *Service) ExecStarted(ctx context.Context, j *ent.Job, svc string, command []string, tty bool) (string, error) {
	c := s.DB.Ent.Execution.Create().
		SetTenantID(j.TenantID).SetEnvironmentID(j.EnvironmentID).
		SetJobID(j.ID).SetService(svc).SetCommand(clipWords(command)).SetTty(tty)
	if v := viewer.FromContext(ctx); v != nil && v.UserID != "" {
		c.SetUserID(v.UserID)
	}
	// The job was found by the viewer; the row is the job's (its tenant
	// and environment), written even while the viewer's request ends.
	e, err := c.Save(viewer.SystemContext(context.WithoutCancel(ctx)))
	if err != nil {
		return "", fmt.Errorf("recording an exec in job %s: %w", j.ID, err)
	}
	return e.ID, nil
}

// ExecEnded records how execution id ended: its exit code when the
// process's exit passed through the relay, else errText (the agent's
// error, or why the stream closed first).
func (s *Service) ExecEnded(ctx context.Context, id string, exitCode *int, errText string) error {
	ctx, cancel := context.WithTimeout(viewer.SystemContext(context.WithoutCancel(ctx)), endWrite)
	defer cancel()
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	u := s.DB.Ent.Execution.UpdateOneID(id).SetEndedAt(now).SetError(clipError(errText))
	if exitCode != nil {
		u.SetExitCode(*exitCode)
	}
	if err := u.Exec(ctx); err != nil {
		return fmt.Errorf("recording the end of execution %s: %w", id, err)
	}
	return nil
}

// clipWords bounds a command kept in the history like the audit log's.
func clipWords(command []string) []string {
	out := make([]string, len(command))
	for i, w := range command {
		out[i] = clipCommand(w)
	}
	return out
}

func clipError(s string) string {
	if len(s) <= maxExecErrorBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxExecErrorBytes], "") + "…"
}
