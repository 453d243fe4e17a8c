package jobs_test

import (
	"errors"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/viewer"
)

func TestTerminalRefusal(t *testing.T) {
	t.Parallel()
	j := &ent.Job{ID: "job_1", OwnerID: "usr_alice"}
	alice := &viewer.Viewer{UserID: "usr_alice", TenantID: "ten_1"}
	bob := &viewer.Viewer{UserID: "usr_bob", TenantID: "ten_1"}
	admin := &viewer.Viewer{UserID: "usr_admin", TenantID: "ten_1", Admin: true}
	cases := []struct {
		name    string
		v       *viewer.Viewer
		mode    queue.Mode
		refused bool
	}{
		{"the owner, interactive queue", alice, queue.ModeInteractive, false},
		{"the owner, queue for both", alice, queue.ModeBoth, false},
		{"a tenant admin", admin, queue.ModeBoth, false},
		{"another member", bob, queue.ModeInteractive, true},
		{"nobody", nil, queue.ModeInteractive, true},
		{"the owner, batch-only queue", alice, queue.ModeBatch, true},
		{"a tenant admin, batch-only queue", admin, queue.ModeBatch, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := jobs.TerminalRefusal(tc.v, j, tc.mode)
			var fe *fault.Error
			switch {
			case !tc.refused && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused && (!errors.As(err, &fe) || fe.Code != fault.Forbidden):
				t.Fatalf("err = %v; want FORBIDDEN", err)
			}
		})
	}
}
