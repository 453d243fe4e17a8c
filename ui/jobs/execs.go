package jobs

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/execution"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/ui/components"
)

// maxShownExecs bounds the exec history a job page shows (newest first).
const maxShownExecs = 100

// execRow is one command run in a job's service, formatted.
type execRow struct {
	ID, Who, Service, Command, Started, Ended, Exit string
}

// execHistory is the commands run in job jobID, newest first, with who
// ran them: two queries, whatever the count.
func execHistory(ctx context.Context, c *ent.Client, jobID string) ([]execRow, error) {
	xs, err := c.Execution.Query().Where(execution.JobID(jobID)).
		Order(ent.Desc(execution.FieldCreatedAt), ent.Desc(execution.FieldID)).Limit(maxShownExecs).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the job's exec history: %w", err)
	}
	var ids []string
	for _, x := range xs {
		if x.UserID != "" {
			ids = append(ids, x.UserID)
		}
	}
	emails := map[string]string{}
	if len(ids) > 0 {
		us, err := c.User.Query().Where(user.IDIn(ids...)).Select(user.FieldID, user.FieldEmail).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading who ran the job's commands: %w", err)
		}
		for _, u := range us {
			emails[u.ID] = u.Email
		}
	}
	out := make([]execRow, 0, len(xs))
	for _, x := range xs {
		who, ok := emails[x.UserID]
		if !ok {
			who = "—" // a token without a user, or a user the viewer may not see
		}
		exit := "—"
		switch {
		case x.ExitCode != nil:
			exit = strconv.Itoa(*x.ExitCode)
		case x.Error != "":
			exit = x.Error
		case x.EndedAt == nil:
			exit = "running"
		}
		out = append(out, execRow{ID: x.ID, Who: who, Service: x.Service, Command: strings.Join(x.Command, " "),
			Started: components.When(&x.CreatedAt), Ended: components.When(x.EndedAt), Exit: exit})
	}
	return out, nil
}
