package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/auditevent"
	"github.com/levers9/levers9/ent/jobevent"
	"github.com/levers9/levers9/ent/privacy"
	"github.com/levers9/levers9/ent/schema/rule"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// TestSubmitRowsAsTheRulesWrite: a submission writes its rows through the
// rules, naming the objects it links to as already read
// (rule.ReadInScope), so they must carry what the rules stamp: the viewer's tenant,
// environment and user, on the job, every service and the event. An
// entered superadmin's submission still goes through the rules and is
// audited; a viewer without an environment is still refused.
func TestSubmitRowsAsTheRulesWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "other"})
		js := fixture.Jobs(tn.DB, time.Now)
		sys := fixture.Sys()
		member := tn.AddMember(t, "member")

		check := func(t *testing.T, j *ent.Job, userID string) {
			t.Helper()
			if j.TenantID != tn.ID || j.EnvironmentID != tn.Env || j.OwnerID != userID || j.QueueID != tn.DefaultQueue {
				t.Fatalf("job tenant %s env %s owner %s queue %s, want %s %s %s %s",
					j.TenantID, j.EnvironmentID, j.OwnerID, j.QueueID, tn.ID, tn.Env, userID, tn.DefaultQueue)
			}
			svcs, err := tn.DB.Ent.Service.Query().Where(service.JobID(j.ID)).All(sys)
			if err != nil {
				t.Fatal(err)
			}
			if len(svcs) != 2 {
				t.Fatalf("%d services stored, want 2", len(svcs))
			}
			for _, s := range svcs {
				if s.TenantID != tn.ID || s.EnvironmentID != tn.Env {
					t.Fatalf("service %s: tenant %s env %s, want %s %s", s.Name, s.TenantID, s.EnvironmentID, tn.ID, tn.Env)
				}
			}
			ev, err := tn.DB.Ent.JobEvent.Query().Where(jobevent.JobID(j.ID)).Only(sys)
			if err != nil {
				t.Fatal(err)
			}
			if ev.TenantID != tn.ID || ev.EnvironmentID != tn.Env || ev.Status != jobevent.StatusPending {
				t.Fatalf("event tenant %s env %s status %s", ev.TenantID, ev.EnvironmentID, ev.Status)
			}
			// The job is visible through the rules in its tenant, and not
			// from another.
			if _, err := tn.DB.Ent.Job.Get(tn.As(member), j.ID); err != nil {
				t.Fatalf("a member of the tenant cannot read the job: %v", err)
			}
			if _, err := tn.DB.Ent.Job.Get(other.AsAdmin(), j.ID); !ent.IsNotFound(err) {
				t.Fatalf("another tenant's admin reading the job: %v, want not found", err)
			}
		}

		t.Run("member", func(t *testing.T) {
			j, err := js.Submit(tn.As(member), twoServices())
			if err != nil {
				t.Fatal(err)
			}
			check(t, j, member.ID)
		})

		t.Run("entered superadmin is audited", func(t *testing.T) {
			hash, err := auth.HashPassword(fixture.Password)
			if err != nil {
				t.Fatal(err)
			}
			root := tn.DB.Ent.User.Create().SetEmail("root@ops.test").SetPasswordHash(hash).SetSuperadmin(true).SaveX(sys)
			entered := viewer.NewContext(context.Background(), &viewer.Viewer{
				UserID: root.ID, TenantID: tn.ID, EnvironmentID: tn.Env, Admin: true, Superadmin: true,
			})
			j, err := js.Submit(entered, twoServices())
			if err != nil {
				t.Fatal(err)
			}
			check(t, j, root.ID)
			// One event per row created: the job and its two services.
			for action, want := range map[string]int{"job.create": 1, "service.create": 2} {
				n, err := tn.DB.Ent.AuditEvent.Query().
					Where(auditevent.TenantID(tn.ID), auditevent.ActorID(root.ID), auditevent.Action(action)).Count(sys)
				if err != nil {
					t.Fatal(err)
				}
				if n != want {
					t.Fatalf("%d audit events %s, want %d", n, action, want)
				}
			}
		})

		t.Run("no environment", func(t *testing.T) {
			noEnv := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: member.ID, TenantID: tn.ID})
			if _, err := js.Submit(noEnv, twoServices()); err == nil {
				t.Fatal("a viewer without an environment submitted a job")
			}
		})

		t.Run("another tenant's queue", func(t *testing.T) {
			spec := twoServices()
			spec.Queue = other.DefaultQueue
			if _, err := js.Submit(tn.As(member), spec); err == nil {
				t.Fatal("a member submitted to another tenant's queue")
			}
		})
	})
}

// TestSubmitWakesQueue: every submission's queue is signalled after it
// commits, also when many submit at once and their signals merge.
func TestSubmitWakesQueue(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
		bus := notify.New(tn.DB.Pool, fixture.Log())
		t.Cleanup(bus.Close)
		js := fixture.Jobs(tn.DB, time.Now)
		js.Bus = bus
		woken, stop := bus.Subscribe(notify.TopicQueue, tn.DefaultQueue)
		defer stop()

		const clients, each = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, clients*each)
		for range clients {
			wg.Go(func() {
				for range each {
					if _, err := js.Submit(tn.AsAdmin(), twoServices()); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := errors.Join(func() []error {
			var all []error
			for err := range errs {
				all = append(all, err)
			}
			return all
		}()...); err != nil {
			t.Fatal(err)
		}
		// Each signal sent after the last commit shows every job: wait for
		// one (a lost last signal times out).
		want := clients * each
		for {
			select {
			case <-woken:
			case <-time.After(10 * time.Second):
				t.Fatalf("no signal of the queue after all %d submissions committed", want)
			}
			n, err := tn.DB.Ent.Job.Query().Count(fixture.Sys())
			if err != nil {
				t.Fatal(err)
			}
			if n == want {
				return
			}
		}
	})
}

// rule.ReadInScope lets a link to an object its viewer has read through
// the rules skip reading it back; it holds for that viewer only. Another
// viewer in a context derived from it is checked again, and a link the
// viewer never read is checked as always.
func TestReadInScopeHoldsForItsViewerOnly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
		other := fixture.NewTenant(t, tn.DB, fixture.TenantOptions{Slug: "other"})
		member := tn.AddMember(t, "member")
		create := func(ctx context.Context, queueID string) error {
			return tn.DB.Ent.Job.Create().SetName("x").SetSpec(twoServices()).SetQueueID(queueID).
				SetOwnerID(viewer.FromContext(ctx).UserID).Exec(ctx)
		}
		denied := func(err error) bool { return errors.Is(err, privacy.Deny) }
		as := tn.As(member)
		if err := create(as, other.DefaultQueue); !denied(err) {
			t.Fatal("a member linked a job to another tenant's queue")
		}
		// Named read by the member, then handed to another tenant's admin
		// in a derived context: checked again.
		named := rule.ReadInScope(as, tn.DefaultQueue)
		swapped := viewer.NewContext(named, viewer.FromContext(other.AsAdmin()))
		if err := create(swapped, tn.DefaultQueue); !denied(err) {
			t.Fatal("another tenant's admin linked a job to acme's queue with the member's names")
		}
		if err := create(rule.ReadInScope(as, "que_not_read"), other.DefaultQueue); !denied(err) {
			t.Fatal("a link the viewer never read skipped its check")
		}
		if err := create(rule.ReadInScope(as, tn.DefaultQueue), tn.DefaultQueue); err != nil {
			t.Fatalf("a link to the viewer's own queue, named as read: %v", err)
		}
	})
}
