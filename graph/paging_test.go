package graph_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	entschema "entgo.io/ent/dialect/sql/schema"

	"github.com/levers9/levers9/ent/migrate"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/ent/task"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// connection is one connection field of the schema, with the orders it
// offers and the object that holds it (empty for a Query field).
type connection struct {
	on, field, orderType string
	orders               []string
}

// pagingConnections is every connection of the schema; TestPaging fails
// when the schema gains one that is missing here.
var pagingConnections = []connection{
	{"", "apiTokens", "APITokenOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "auditEvents", "AuditEventOrder", []string{"ID", "CREATED_AT"}},
	{"", "buckets", "BucketOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "charges", "ChargeOrder", []string{"ID", "CREATED_AT"}},
	{"", "environments", "EnvironmentOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "groups", "GroupOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "jobs", "JobOrder", []string{"ID", "CREATED_AT", "NAME", "STATUS", "PRIORITY"}},
	{"", "nodes", "ComputeNodeOrder", []string{"ID", "CREATED_AT", "NAME", "STATUS"}},
	{"", "nodeInvites", "NodeInviteOrder", []string{"ID", "CREATED_AT"}},
	{"", "projects", "ProjectOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "queues", "QueueOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "storages", "StorageOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "tenants", "TenantOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "users", "UserOrder", []string{"ID", "CREATED_AT", "EMAIL", "NAME"}},
	{"Group", "memberships", "MembershipOrder", []string{"ID", "CREATED_AT"}},
	{"Project", "jobs", "JobOrder", []string{"ID", "CREATED_AT", "NAME", "STATUS", "PRIORITY"}},
	{"Queue", "jobs", "JobOrder", []string{"ID", "CREATED_AT", "NAME", "STATUS", "PRIORITY"}},
	{"User", "memberships", "MembershipOrder", []string{"ID", "CREATED_AT"}},
	{"User", "jobs", "JobOrder", []string{"ID", "CREATED_AT", "NAME", "STATUS", "PRIORITY"}},
	{"", "apps", "AppOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "tasks", "TaskOrder", []string{"ID", "CREATED_AT", "STATE"}},
	{"", "secrets", "SecretOrder", []string{"ID", "CREATED_AT", "NAME"}},
	{"", "blueprints", "BlueprintOrder", []string{"ID", "CREATED_AT"}},
	{"Function", "tasks", "TaskOrder", []string{"ID", "CREATED_AT", "STATE"}},
	{"FunctionMap", "tasks", "TaskOrder", []string{"ID", "CREATED_AT", "STATE"}},
}

// pagingRows is how many rows (at least) each connection holds.
const pagingRows = 7

// TestPaging pages every connection by each of its orders, ascending and
// descending, forwards (first/after) and backwards (last/before), with
// ties in every sort key, and checks each page set holds every row once,
// in order. On SQLite ascending pages used to start with the previous
// page's last row again: stored times carried Go's monotonic clock
// reading, so a cursor's time never equalled its own row's.
func TestPaging(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url)
		a := e.newTenant("pg")
		root := e.superadmin()
		holders := seedPaging(t, e, a)
		checkConnectionList(t, e, root)
		for _, c := range pagingConnections {
			token := a.adminToken
			if c.field == "tenants" {
				token = root
			}
			for _, order := range c.orders {
				for _, dir := range []string{"ASC", "DESC"} {
					name := fmt.Sprintf("%s.%s by %s %s", c.on, c.field, order, dir)
					q := pagingQuery(c, order)
					all := fetchPage(t, e, token, q, holders[c.on], vars{"first": 1000, "order": vars{"field": order, "direction": dir}})
					if len(all.rows) < pagingRows {
						t.Fatalf("%s: %d rows, want at least %d (seeding)", name, len(all.rows), pagingRows)
					}
					want := slices.Clone(all.rows)
					slices.SortFunc(want, func(x, y pagedRow) int { return compareRows(order, dir, x, y) })
					if !slices.Equal(ids(all.rows), ids(want)) {
						t.Errorf("%s: one page %v, want %v", name, all.rows, want)
					}
					for _, size := range []int{1, 3} {
						if got := pageAll(t, e, token, q, holders[c.on], order, dir, size, true); !slices.Equal(got, ids(want)) {
							t.Errorf("%s forward by %d: %d rows %v, want %d %v", name, size, len(got), got, len(want), ids(want))
						}
						if got := pageAll(t, e, token, q, holders[c.on], order, dir, size, false); !slices.Equal(got, ids(want)) {
							t.Errorf("%s backward by %d: %d rows %v, want %d %v", name, size, len(got), got, len(want), ids(want))
						}
					}
				}
			}
		}
	})
}

// checkConnectionList fails when the schema has a connection field that
// pagingConnections does not list.
func checkConnectionList(t *testing.T, e *env, token string) {
	t.Helper()
	r := e.gql(token, `{ __schema { types { name fields { name type { kind name ofType { name } } } } } }`, nil)
	r.ok(t)
	var out struct {
		Schema struct {
			Types []struct {
				Name   string
				Fields []struct {
					Name string
					Type struct {
						Kind, Name string
						OfType     *struct{ Name string }
					}
				}
			}
		} `json:"__schema"`
	}
	r.decode(t, &out)
	listed := map[string]bool{}
	for _, c := range pagingConnections {
		listed[orDefault(c.on, "Query")+"."+c.field] = true
	}
	for _, ty := range out.Schema.Types {
		for _, f := range ty.Fields {
			name := f.Type.Name
			if f.Type.OfType != nil {
				name = f.Type.OfType.Name
			}
			if strings.HasSuffix(name, "Connection") && !listed[ty.Name+"."+f.Name] {
				t.Errorf("connection %s.%s is not paged by TestPaging", ty.Name, f.Name)
			}
		}
	}
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// pagingKey is the field of a node that order sorts by.
var pagingKey = map[string]string{
	"ID": "id", "CREATED_AT": "createdAt", "NAME": "name", "EMAIL": "email", "STATUS": "status", "PRIORITY": "priority", "STATE": "state",
}

func pagingQuery(c connection, order string) string {
	sel := fmt.Sprintf(`c: %s(first: $first, after: $after, last: $last, before: $before, orderBy: $order) {
		edges { node { id k: %s } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }`, c.field, pagingKey[order])
	if c.on == "" {
		return fmt.Sprintf(`query($first: Int, $after: Cursor, $last: Int, $before: Cursor, $order: %s) { %s }`, c.orderType, sel)
	}
	return fmt.Sprintf(`query($id: ID!, $first: Int, $after: Cursor, $last: Int, $before: Cursor, $order: %s) {
		node(id: $id) { ... on %s { %s } } }`, c.orderType, c.on, sel)
}

type pagedRow struct {
	ID string
	K  any
}

type page struct {
	rows     []pagedRow
	next     bool
	previous bool
	start    string
	end      string
}

func fetchPage(t *testing.T, e *env, token, query, holder string, v vars) page {
	t.Helper()
	if holder != "" {
		v["id"] = holder
	}
	r := e.gql(token, query, v)
	r.ok(t)
	type conn struct {
		Edges []struct {
			Node struct {
				ID string
				K  any
			}
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       *string
		}
	}
	var out struct {
		C    *conn
		Node *struct{ C *conn }
	}
	r.decode(t, &out)
	c := out.C
	if out.Node != nil {
		c = out.Node.C
	}
	if c == nil {
		t.Fatalf("no connection in %s", r.Data)
	}
	p := page{next: c.PageInfo.HasNextPage, previous: c.PageInfo.HasPreviousPage}
	if c.PageInfo.StartCursor != nil {
		p.start, p.end = *c.PageInfo.StartCursor, *c.PageInfo.EndCursor
	}
	for _, e := range c.Edges {
		p.rows = append(p.rows, pagedRow{e.Node.ID, e.Node.K})
	}
	return p
}

// pageAll reads every page of size, forwards from the start or backwards
// from the end, and returns the IDs in order.
func pageAll(t *testing.T, e *env, token, query, holder, order, dir string, size int, forward bool) []string {
	t.Helper()
	var got []string
	var cursor any
	for range 200 {
		v := vars{"order": vars{"field": order, "direction": dir}}
		if forward {
			v["first"], v["after"] = size, cursor
		} else {
			v["last"], v["before"] = size, cursor
		}
		p := fetchPage(t, e, token, query, holder, v)
		if forward {
			got = append(got, ids(p.rows)...)
			if !p.next {
				return got
			}
			cursor = p.end
		} else {
			got = append(ids(p.rows), got...)
			if !p.previous {
				return got
			}
			cursor = p.start
		}
	}
	t.Errorf("paging did not end after 200 pages")
	return got
}

func ids(rows []pagedRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// compareRows orders rows as the connection promises: by the key, then by
// ID, both in dir. The test databases compare text bytewise (PostgreSQL's
// C collation); enums are stored in lower case.
func compareRows(order, dir string, x, y pagedRow) int {
	var c int
	switch order {
	case "CREATED_AT":
		tx, _ := time.Parse(time.RFC3339Nano, x.K.(string))
		ty, _ := time.Parse(time.RFC3339Nano, y.K.(string))
		c = tx.Compare(ty)
	case "PRIORITY":
		c = int(x.K.(float64) - y.K.(float64))
	case "STATUS":
		c = strings.Compare(strings.ToLower(x.K.(string)), strings.ToLower(y.K.(string)))
	default:
		c = strings.Compare(x.K.(string), y.K.(string))
	}
	if c == 0 {
		c = strings.Compare(x.ID, y.ID)
	}
	if dir == "DESC" {
		c = -c
	}
	return c
}

// seedPaging gives tenant a (and the tenants list) at least pagingRows
// rows in each connection, then makes ties in the sort keys: creation
// times on three instants, shared names, statuses and priorities. It
// returns the holder of each nested connection by type.
func seedPaging(t *testing.T, e *env, a *tenant) map[string]string {
	t.Helper()
	ctx := viewer.SystemContext(context.Background())
	do := func(query string, v vars) map[string]any {
		t.Helper()
		r := e.gql(a.adminToken, query, v)
		r.ok(t)
		var m map[string]any
		r.decode(t, &m)
		for _, x := range m {
			if o, ok := x.(map[string]any); ok {
				return o
			}
		}
		return nil
	}
	team := do(`mutation { createGroup(input: {name: "team"}) { id } }`, nil)["id"].(string)
	project := do(`mutation($g: ID!) { createProject(input: {name: "p0", groupIDs: [$g]}) { id } }`, vars{"g": team})["id"].(string)
	var groups []string
	for i := range pagingRows {
		groups = append(groups, do(`mutation($n: String!) { createGroup(input: {name: $n}) { id } }`, vars{"n": fmt.Sprintf("g%d%d", i%3, i)})["id"].(string))
		u := do(`mutation($e: String!) { createUser(input: {email: $e, password: "correct horse battery"}) { id } }`,
			vars{"e": fmt.Sprintf("u%d@pg.test", i)})["id"].(string)
		do(`mutation($u: ID!, $g: ID!) { createMembership(input: {userID: $u, groupID: $g}) { id } }`, vars{"u": u, "g": team})
		do(`mutation($u: ID!, $g: ID!) { createMembership(input: {userID: $u, groupID: $g}) { id } }`, vars{"u": a.admin.ID, "g": groups[i]})
		do(`mutation($n: String!) { createQueue(input: {name: $n}) { id } }`, vars{"n": fmt.Sprint("q", i)})
		do(`mutation($n: String!) { createProject(input: {name: $n}) { id } }`, vars{"n": fmt.Sprint("p", i+1)})
		do(`mutation($n: String!) { createEnvironment(input: {name: $n}) { id } }`, vars{"n": fmt.Sprint("e", i)})
		do(`mutation($n: String!) { createNodeInvite(nodeName: $n) { invite { id } } }`, vars{"n": fmt.Sprint("n", i)})
		do(`mutation($n: String!) { createAPIToken(name: $n) { apiToken { id } } }`, vars{"n": fmt.Sprint("t", i%2)})
		do(`mutation($p: String!, $pr: Int!) { submitJob(spec: {name: "train", queue: "default", project: $p, priority: $pr,
			services: [{name: "main", command: ["true"], cpu: 1, memoryMiB: 64}]}) { id } }`, vars{"p": project, "pr": i % 2})
		do(`mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100, reason: "welcome"}) { id } }`, vars{"u": a.member.ID})
		if _, err := e.db.Ent.Node.Create().SetTenantID(a.ent.ID).SetName(fmt.Sprintf("node%d%d", i%2, i)).Save(ctx); err != nil {
			t.Fatal(err)
		}
		s, err := e.db.Ent.Storage.Create().SetTenantID(a.ent.ID).SetName(fmt.Sprint("s", i)).SetKind(storage.KindLocal).SetPath(fmt.Sprint("/srv/s", i)).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Ent.Bucket.Create().SetTenantID(a.ent.ID).SetName(fmt.Sprint("bucket", i)).SetStorageID(s.ID).SetOwnerID(a.admin.ID).Save(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Ent.AuditEvent.Create().SetTenantID(a.ent.ID).SetActorID(a.admin.ID).SetAction("paging.test").Save(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Ent.Tenant.Create().SetName(fmt.Sprint("T", i%2)).SetSlug(fmt.Sprint("pg", i)).Save(ctx); err != nil {
			t.Fatal(err)
		}
		// Sealed values are no concern here: the rows only get paged.
		if _, err := e.db.Ent.Secret.Create().SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).SetName(fmt.Sprintf("sec%d%d", i%3, i)).
			SetKeys([]string{"K"}).SetOwnerID(a.admin.ID).SetCiphertext([]byte("x")).SetNonce([]byte("n")).SetKeyID("k").Save(ctx); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%064d", i)
		if _, err := e.db.Ent.Blueprint.Create().SetTenantID(a.ent.ID).SetKey(key).SetFirstKey(key).
			SetSteps([]wire.BuildStep{{Key: key, Kind: wire.StepRegistry, Ref: "busybox"}}).SetImage("levers9-bp/" + a.ent.ID + ":" + key).SetOwnerID(a.admin.ID).Save(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fn, fmap := seedFunctions(t, e, a)
	// Ties: every row of every table on one of three instants, written
	// as times the way ent's defaults write time.Now(): with a monotonic
	// clock reading (the driver formats them as for the application).
	base := time.Now().Add(-time.Hour)
	for _, tbl := range migrate.Tables {
		if !slices.ContainsFunc(tbl.Columns, func(c *entschema.Column) bool { return c.Name == "created_at" }) {
			continue
		}
		rows, err := e.db.SQL.Query(fmt.Sprintf(`SELECT id FROM %q ORDER BY id`, tbl.Name))
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			all = append(all, id)
		}
		rows.Close()
		for i, id := range all {
			at := base.Add(time.Duration((i*5)%3) * time.Millisecond)
			if _, err := e.db.SQL.Exec(fmt.Sprintf(`UPDATE %q SET created_at = $1 WHERE id = $2`, tbl.Name), at, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	return map[string]string{"Group": team, "Project": project, "Queue": e.queueID(a), "User": a.admin.ID,
		"Function": fn, "FunctionMap": fmap}
}

// seedFunctions stores pagingRows apps and, in the first one's function,
// a map of pagingRows calls in two states; it returns the function and
// the map.
func seedFunctions(t *testing.T, e *env, a *tenant) (string, string) {
	t.Helper()
	ctx := viewer.SystemContext(context.Background())
	c := e.db.Ent
	var fnID, mapID string
	for i := range pagingRows {
		ap, err := c.App.Create().SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).SetName(fmt.Sprintf("app%d%d", i%3, i)).
			SetCodeHash(strings.Repeat("ab", 32)).SetOwnerID(a.admin.ID).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			continue
		}
		f, err := c.Function.Create().SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).SetAppID(ap.ID).SetName("f").
			SetModule("app").SetQualname("f").SetOwnerID(a.admin.ID).SetQueueID(e.queueID(a)).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.FunctionMap.Create().SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).SetFunctionID(f.ID).
			SetAppID(ap.ID).SetOwnerID(a.admin.ID).SetTotal(pagingRows).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fnID, mapID = f.ID, m.ID
	}
	for i := range pagingRows {
		st := task.StatePENDING
		if i%2 == 1 {
			st = task.StateCOMPLETE
		}
		if _, err := c.Task.Create().SetTenantID(a.ent.ID).SetEnvironmentID(a.mainEnv).SetFunctionID(fnID).SetAppID("app").
			SetOwnerID(a.admin.ID).SetMapID(mapID).SetMapIndex(i).SetState(st).SetArgs([]byte("x")).Save(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return fnID, mapID
}
