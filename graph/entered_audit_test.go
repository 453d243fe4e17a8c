package graph_test

import (
	"context"
	"slices"
	"testing"

	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
)

const auditQuery = `{ auditEvents(first: 100, orderBy: {field: CREATED_AT, direction: DESC}) { edges { node { actorID action target } } } }`

type auditRow struct{ ActorID, Action, Target string }

func (e *env) auditEvents(t testing.TB, token string) []auditRow {
	t.Helper()
	r := e.gql(token, auditQuery, nil)
	r.ok(t)
	var out struct {
		AuditEvents struct{ Edges []struct{ Node auditRow } }
	}
	r.decode(t, &out)
	var rows []auditRow
	for _, ed := range out.AuditEvents.Edges {
		rows = append(rows, ed.Node)
	}
	return rows
}

// A superadmin inside a tenant: every change they make there is in the
// tenant's audit log, which its admins (not its members, not another
// tenant) read; tokens they make there are marked and end, with their
// streams, when they leave; so do the streams of the token they entered with.
func TestSuperadminInsideTenant(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		e.auth.Bus = e.bus
		e.tenancy.Auth = e.auth
		a := e.newTenant("visited")
		b := e.newTenant("elsewhere")
		root := e.superadmin()
		rootUser, err := e.db.Ent.User.Query().Where(user.Email("root@ops.test")).Only(viewer.SystemContext(context.Background()))
		if err != nil {
			t.Fatal(err)
		}
		job := e.submit(a)
		e.appendLines(job, 1, 2)

		e.gql(root, `mutation($id: ID!) { enterTenant(id: $id) { id } }`, vars{"id": a.ent.ID}).ok(t)
		inside, insideID := e.createToken(t, root, "made inside", nil)
		e.gql(root, `mutation { createGroup(input: {name: "visitors"}) { id } }`, nil).ok(t)
		// The tenant's own admin's changes are not what this log is for.
		e.gql(a.adminToken, `mutation { createGroup(input: {name: "locals"}) { id } }`, nil).ok(t)

		tok, err := e.db.Ent.APIToken.Query().Where(apitoken.ID(insideID)).Only(viewer.SystemContext(context.Background()))
		if err != nil {
			t.Fatal(err)
		}
		if !tok.Entered {
			t.Error("a token a superadmin made inside a tenant is not marked entered")
		}
		_, ownID := e.createToken(t, a.memberToken, "member's own", nil)
		own, err := e.db.Ent.APIToken.Get(viewer.SystemContext(context.Background()), ownID)
		if err != nil {
			t.Fatal(err)
		}
		if own.Entered {
			t.Error("a member's token is marked entered")
		}

		// A token made inside cannot take itself to another tenant, out of
		// reach of the revocation that leaving brings.
		if r := e.gql(inside, `mutation($id: ID!) { enterTenant(id: $id) { id } }`, vars{"id": b.ent.ID}); r.code() != "FORBIDDEN" {
			t.Errorf("a token made inside entered another tenant: %s %+v", r.Data, r.Errors)
		}

		streams := []stream{
			e.openLogs(t, "sse", inside, job),
			e.openLogs(t, "websocket", inside, job),
			e.openLogs(t, "sse", root, job),
		}
		for _, s := range streams {
			expectLines(t, s, 1, 2)
		}

		e.gql(root, `mutation { leaveTenant }`, nil).ok(t)
		for _, s := range streams {
			expectEnded(t, s)
		}
		if r := e.gql(inside, `{ jobs(first: 1) { totalCount } }`, nil); r.code() != "UNAUTHENTICATED" {
			t.Errorf("a token made inside still works after leaving: %s %+v", r.Data, r.Errors)
		}
		if r := e.gql(a.memberToken, `{ jobs(first: 1) { totalCount } }`, nil); len(r.Errors) > 0 {
			t.Errorf("leaving revoked a member's token: %+v", r.Errors)
		}

		rows := e.auditEvents(t, a.adminToken)
		var actions []string
		for _, r := range rows {
			if r.ActorID != rootUser.ID {
				t.Errorf("audit event %+v is not the superadmin's", r)
			}
			actions = append(actions, r.Action)
		}
		for _, want := range []string{"tenant.enter", "apitoken.create", "group.create", "tenant.leave"} {
			if !slices.Contains(actions, want) {
				t.Errorf("audit log %v lacks %s", actions, want)
			}
		}
		if len(rows) > 0 && rows[0].Action != "tenant.leave" {
			t.Errorf("newest event is %s, want tenant.leave", rows[0].Action)
		}
		if i := slices.Index(actions, "apitoken.create"); i >= 0 && rows[i].Target != insideID {
			t.Errorf("apitoken.create names %s, want %s", rows[i].Target, insideID)
		}
		if r := e.gql(a.memberToken, auditQuery, nil); r.code() != "FORBIDDEN" {
			t.Errorf("a member reads the audit log: %s %+v", r.Data, r.Errors)
		}
		if rows := e.auditEvents(t, b.adminToken); len(rows) != 0 {
			t.Errorf("another tenant's admin sees %+v", rows)
		}
	})
}
