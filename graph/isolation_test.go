package graph_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	entschema "entgo.io/ent/dialect/sql/schema"

	"github.com/levers9/levers9/ent/auditevent"
	"github.com/levers9/levers9/ent/group"
	"github.com/levers9/levers9/ent/migrate"
	"github.com/levers9/levers9/ent/queue"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/graph"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// TestTenantIsolation signs in as tenant alpha (admin, member) and as a
// superadmin outside every tenant, and tries every query, mutation and
// node(id) on the objects of tenant beta: each must come back not found or
// forbidden, and no row of the database may change. Superadmins then see
// beta's data only between enterTenant and leaveTenant.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		e := newEnv(t, url, withDeployments, withSecrets(t), withBlueprints(t),
			func(r *graph.Resolver) { r.Functions.Blueprints = r.BlueprintService })
		a, b := e.newTenant("alpha"), e.newTenant("beta")
		root := e.superadmin()
		bo := seedBeta(t, e, b)
		ao := alphaObjects(t, e, a.ent.ID)
		bIDs := tenantIDs(t, e, b.ent.ID)
		for name, id := range bo {
			if _, ok := bIDs[id]; !ok {
				t.Fatalf("beta's %s %s is not a row of tenant beta", name, id)
			}
		}
		bTenantID := b.ent.ID
		leaks := func(data []byte) (found []string) {
			for id := range bIDs {
				if bytes.Contains(data, []byte(id)) {
					found = append(found, id)
				}
			}
			slices.Sort(found)
			return found
		}

		probes := []probe{
			{name: "alpha admin", token: a.adminToken,
				forbidden: set("tenants"),
				seesOwn:   set("groups", "queues", "users", "environments", "storages", "apiTokens")},
			{name: "alpha member", token: a.memberToken,
				forbidden: set("tenants", "nodeInvites", "auditEvents"),
				seesOwn:   set("groups", "queues", "users", "environments", "apiTokens")},
			// Outside every tenant a superadmin sees the tenants themselves
			// (checked below) and nothing inside them.
			{name: "superadmin outside", token: root, super: true, mayForbid: true,
				skip: set("tenants", bTenantID)},
		}

		before := dump(t, e)

		t.Run("node", func(t *testing.T) {
			for _, p := range probes {
				t.Run(p.name, func(t *testing.T) {
					for id, table := range bIDs {
						if p.skip[id] {
							continue
						}
						r := e.gql(p.token, `query($id: ID!) { node(id: $id) { id __typename } }`, vars{"id": id})
						if l := leaks(r.Data); len(l) > 0 {
							t.Errorf("node(%s) of %s returned beta's data %s", id, table, r.Data)
						}
						if c := r.code(); c != "" && c != "NOT_FOUND" && c != "FORBIDDEN" {
							t.Errorf("node(%s) of %s: code %s, want NOT_FOUND or FORBIDDEN: %+v", id, table, c, r.Errors)
						}
					}
				})
			}
		})

		t.Run("lists", func(t *testing.T) {
			for _, p := range probes {
				for _, l := range lists {
					if p.skip[l.field] {
						continue
					}
					t.Run(p.name+"/"+l.field, func(t *testing.T) {
						check := func(label string, where vars) {
							t.Helper()
							q := fmt.Sprintf(`query($w: %s) { %s(first: 1000, where: $w) { totalCount edges { node { id } } } }`, l.where, l.field)
							r := e.gql(p.token, q, vars{"w": where})
							if found := leaks(r.Data); len(found) > 0 {
								t.Errorf("%s: leaks beta's %v", label, found)
							}
							if len(r.Errors) > 0 {
								if r.code() != "FORBIDDEN" || !(p.forbidden[l.field] || p.mayForbid) {
									t.Errorf("%s: unexpected errors %+v", label, r.Errors)
								}
								return
							}
							if p.forbidden[l.field] {
								t.Errorf("%s: want FORBIDDEN, got %s", label, r.Data)
								return
							}
							var out map[string]struct {
								TotalCount int
								Edges      []struct{ Node struct{ ID string } }
							}
							r.decode(t, &out)
							conn := out[l.field]
							// Counting must filter like listing: a count over
							// every tenant would differ from the edges.
							if conn.TotalCount != len(conn.Edges) {
								t.Errorf("%s: totalCount %d but %d edges", label, conn.TotalCount, len(conn.Edges))
							}
							if where != nil && len(conn.Edges) > 0 {
								t.Errorf("%s: a filter on beta's IDs matched %d objects", label, len(conn.Edges))
							}
							if where == nil && p.seesOwn[l.field] && len(conn.Edges) == 0 {
								t.Errorf("%s: control failed: sees none of its own tenant's objects", label)
							}
						}
						check("unfiltered", nil)
						all := make([]string, 0, len(bIDs))
						for id := range bIDs {
							all = append(all, id)
						}
						check("where idIn beta", vars{"idIn": all})
						for id := range bIDs {
							if strings.HasPrefix(id, l.prefix+"_") {
								check("where id "+id, vars{"id": id})
							}
						}
					})
				}
			}
		})

		t.Run("mutations", func(t *testing.T) {
			for _, p := range probes {
				for _, m := range mutations(ao, bo, a.member.ID) {
					if p.super && m.tenantUsersOnly {
						continue
					}
					t.Run(p.name+"/"+m.name, func(t *testing.T) {
						r := e.gql(p.token, m.query, m.vars)
						if c := r.code(); !slices.Contains(m.codes, c) {
							t.Errorf("code %q, want one of %v: data %s, errors %+v", c, m.codes, r.Data, r.Errors)
						}
						if found := leaks(r.Data); len(found) > 0 {
							t.Errorf("leaks beta's %v: %s", found, r.Data)
						}
					})
				}
			}
		})

		t.Run("nothing changed", func(t *testing.T) { compareDumps(t, before, dump(t, e)) })

		t.Run("superadmin enters and leaves", func(t *testing.T) {
			ctx := viewer.SystemContext(context.Background())
			r := e.gql(root, `{ tenants(first: 100) { edges { node { id } } } }`, nil)
			r.ok(t)
			for _, id := range []string{a.ent.ID, bTenantID} {
				if !bytes.Contains(r.Data, []byte(id)) {
					t.Errorf("tenants lacks %s: %s", id, r.Data)
				}
			}
			sees := func(field, id string) bool {
				t.Helper()
				r := e.gql(root, `{ `+field+`(first: 1000) { edges { node { id } } } }`, nil)
				if c := r.code(); c != "" && c != "FORBIDDEN" {
					t.Fatalf("%s: %+v", field, r.Errors)
				}
				return bytes.Contains(r.Data, []byte(id))
			}
			if sees("jobs", bo["job"]) || sees("queues", bo["queue"]) {
				t.Fatal("superadmin sees beta's jobs or queues before entering it")
			}
			audits := func(action string) int {
				t.Helper()
				n, err := e.db.Ent.AuditEvent.Query().
					Where(auditevent.TenantID(bTenantID), auditevent.Action(action), auditevent.Target(bTenantID)).Count(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}

			r = e.gql(root, `mutation($id: ID!) { enterTenant(id: $id) { slug } }`, vars{"id": bTenantID})
			r.ok(t)
			var who struct {
				Viewer struct {
					Tenant *struct{ Slug string }
					Admin  bool
				}
			}
			e.gql(root, `{ viewer { tenant { slug } admin } }`, nil).decode(t, &who)
			if who.Viewer.Tenant == nil || who.Viewer.Tenant.Slug != "beta" || !who.Viewer.Admin {
				t.Fatalf("after enterTenant, viewer = %+v", who.Viewer)
			}
			if !sees("jobs", bo["job"]) || !sees("queues", bo["queue"]) {
				t.Error("inside beta, the superadmin does not see beta's job and queue")
			}
			if sees("groups", ao.group) {
				t.Error("inside beta, the superadmin sees alpha's group")
			}
			if n := audits("tenant.enter"); n != 1 {
				t.Errorf("%d tenant.enter audit events, want 1", n)
			}

			r = e.gql(root, `mutation { leaveTenant }`, nil)
			r.ok(t)
			if sees("jobs", bo["job"]) || sees("queues", bo["queue"]) {
				t.Error("after leaveTenant, the superadmin still sees beta's jobs or queues")
			}
			e.gql(root, `{ viewer { tenant { slug } admin } }`, nil).decode(t, &who)
			if who.Viewer.Tenant != nil || who.Viewer.Admin {
				t.Errorf("after leaveTenant, viewer = %+v", who.Viewer)
			}
			if n := audits("tenant.leave"); n != 1 {
				t.Errorf("%d tenant.leave audit events, want 1", n)
			}
		})
	})
}

// probe is someone trying to reach tenant beta.
type probe struct {
	name, token string
	super       bool
	// forbidden lists must answer FORBIDDEN; with mayForbid any list may.
	forbidden map[string]bool
	mayForbid bool
	// seesOwn lists must show some of the viewer's own objects: a control
	// that the probe does not pass only because the query is broken.
	seesOwn map[string]bool
	// skip holds lists and IDs the probe may see by design.
	skip map[string]bool
}

func set(keys ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// lists are the list queries, with their where input and the ID prefix of
// their objects.
var lists = []struct{ field, where, prefix string }{
	{"tenants", "TenantWhereInput", "tnt"},
	{"jobs", "JobWhereInput", "job"},
	{"queues", "QueueWhereInput", "que"},
	{"nodes", "ComputeNodeWhereInput", "node"},
	{"nodeInvites", "NodeInviteWhereInput", "inv"},
	{"projects", "ProjectWhereInput", "prj"},
	{"storages", "StorageWhereInput", "sto"},
	{"buckets", "BucketWhereInput", "bkt"},
	{"charges", "ChargeWhereInput", "chg"},
	{"groups", "GroupWhereInput", "grp"},
	{"users", "UserWhereInput", "usr"},
	{"environments", "EnvironmentWhereInput", "env"},
	{"apiTokens", "APITokenWhereInput", "tok"},
	{"auditEvents", "AuditEventWhereInput", "aud"},
	{"apps", "AppWhereInput", "app"},
	{"tasks", "TaskWhereInput", "task"},
	{"secrets", "SecretWhereInput", "sec"},
}

// alpha holds alpha's own objects, used as the near end of links to beta.
type alpha struct{ group, queue, storage string }

func alphaObjects(t *testing.T, e *env, tenantID string) alpha {
	t.Helper()
	ctx := viewer.SystemContext(context.Background())
	var (
		a   alpha
		err error
	)
	if a.group, err = e.db.Ent.Group.Query().Where(group.TenantID(tenantID), group.Name("everyone")).OnlyID(ctx); err != nil {
		t.Fatal(err)
	}
	if a.queue, err = e.db.Ent.Queue.Query().Where(queue.TenantID(tenantID), queue.Name("default")).OnlyID(ctx); err != nil {
		t.Fatal(err)
	}
	if a.storage, err = e.db.Ent.Storage.Query().Where(storage.TenantID(tenantID), storage.Name("local")).OnlyID(ctx); err != nil {
		t.Fatal(err)
	}
	return a
}

// seedBeta creates one object of each kind in tenant b, through the API as
// b's admin where there is a mutation for it, and returns their IDs by kind.
func seedBeta(t *testing.T, e *env, b *tenant) map[string]string {
	t.Helper()
	ids := map[string]string{"tenant": b.ent.ID, "admin": b.admin.ID, "member": b.member.ID, "mainEnv": b.mainEnv}
	do := func(kind, query string, v vars, path ...string) {
		t.Helper()
		r := e.gql(b.adminToken, query, v)
		r.ok(t)
		var m any
		r.decode(t, &m)
		for _, p := range path {
			switch x := m.(type) {
			case map[string]any:
				m = x[p]
			case []any:
				m = x[0]
			}
		}
		s, ok := m.(string)
		if !ok || s == "" {
			t.Fatalf("%s: no %v in %s", kind, path, r.Data)
		}
		ids[kind] = s
	}
	ctx := viewer.SystemContext(context.Background())
	n, err := e.db.Ent.Node.Create().SetTenantID(b.ent.ID).SetName("gpu1").Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids["node"] = n.ID

	do("group", `mutation { createGroup(input: {name: "beta-team"}) { id } }`, nil, "createGroup", "id")
	do("membership", `mutation($u: ID!, $g: ID!) { createMembership(input: {userID: $u, groupID: $g}) { id } }`,
		vars{"u": b.member.ID, "g": ids["group"]}, "createMembership", "id")
	do("storage", `mutation { createStorage(input: {name: "beta-s3", kind: S3, endpoint: "http://127.0.0.1:9/", s3Bucket: "b"}) { id } }`,
		nil, "createStorage", "id")
	do("queue", `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`,
		vars{"in": vars{"name": "beta-gpu", "groupIDs": []string{ids["group"]}, "storageIDs": []string{ids["storage"]}, "nodeIDs": []string{ids["node"]}}},
		"createQueue", "id")
	do("project", `mutation($g: ID!) { createProject(input: {name: "beta-research", groupIDs: [$g]}) { id } }`,
		vars{"g": ids["group"]}, "createProject", "id")
	do("bucket", `mutation($s: ID!, $g: ID!) { createBucket(input: {name: "beta-data", storageID: $s, readGroupIDs: [$g], writeGroupIDs: [$g]}) { id } }`,
		vars{"s": ids["storage"], "g": ids["group"]}, "createBucket", "id")
	do("environment", `mutation { createEnvironment(input: {name: "staging"}) { id } }`, nil, "createEnvironment", "id")
	do("nodeInvite", `mutation { createNodeInvite(nodeName: "gpu2") { invite { id } } }`, nil, "createNodeInvite", "invite", "id")
	do("apiToken", `mutation { createAPIToken(name: "ci") { apiToken { id } } }`, nil, "createAPIToken", "apiToken", "id")
	do("job", `mutation { submitJob(spec: {name: "train", queue: "default", services: [{name: "main", command: ["true"], cpu: 1, memoryMiB: 64}]}) { id } }`,
		nil, "submitJob", "id")
	do("service", `query($id: ID!) { node(id: $id) { ... on Job { services { id } } } }`, vars{"id": ids["job"]}, "node", "services", "0", "id")
	do("charge", `mutation($u: ID!) { grantTokens(input: {userID: $u, tokens: 100, reason: "welcome"}) { id } }`,
		vars{"u": b.member.ID}, "grantTokens", "id")
	do("app", `mutation($i: DeployAppInput!) { deployApp(input: $i) { id } }`, vars{"i": vars{"name": "beta-web", "code": strings.Repeat("ef", 32),
		"deploy": true, "functions": []vars{{"name": "beta_q", "module": "app", "qualname": "q", "queue": "default", "kind": "TASK_QUEUE"}}}},
		"deployApp", "id")
	do("function", `query($id: ID!) { node(id: $id) { ... on App { functions { id } } } }`, vars{"id": ids["app"]}, "node", "functions", "0", "id")
	do("task", `mutation($f: ID!) { putTask(function: $f, item: {data: "eA=="}, idempotencyKey: "beta-key") { id } }`,
		vars{"f": ids["function"]}, "putTask", "id")
	do("secret", `mutation { createSecret(input: {name: "beta-secret", values: [{key: "TOKEN", value: "beta-value"}]}) { id } }`,
		nil, "createSecret", "id")
	key := strings.Repeat("9", 64)
	bp, err := e.db.Ent.Blueprint.Create().SetTenantID(b.ent.ID).SetKey(key).SetFirstKey(key).SetState("READY").
		SetSteps([]wire.BuildStep{{Key: key, Kind: wire.StepRegistry, Ref: "python:3.12-slim"}}).
		SetImage("levers9-bp/" + b.ent.ID + ":" + key).SetOwnerID(b.admin.ID).SetBuildJobID(ids["job"]).Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids["blueprint"] = bp.ID
	x, err := e.db.Ent.Execution.Create().SetTenantID(b.ent.ID).SetEnvironmentID(b.mainEnv).SetJobID(ids["job"]).
		SetService("main").SetUserID(b.admin.ID).SetCommand([]string{"cat", "/beta-secret"}).Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids["execution"] = x.ID
	return ids
}

// tenantIDs returns the ID of every row of tenant id, in every table, with
// its table: what was seeded and what the tenant started with.
func tenantIDs(t *testing.T, e *env, id string) map[string]string {
	t.Helper()
	out := map[string]string{id: migrate.TenantsTable.Name}
	for _, tbl := range migrate.Tables {
		if !slices.ContainsFunc(tbl.Columns, func(c *entschema.Column) bool { return c.Name == "tenant_id" }) {
			continue
		}
		rows, err := e.db.SQL.Query(fmt.Sprintf(`SELECT id FROM %q WHERE tenant_id = '%s'`, tbl.Name, id))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var rid string
			if err := rows.Scan(&rid); err != nil {
				t.Fatal(err)
			}
			out[rid] = tbl.Name
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

// dump reads every row of every table, all tenants, as text. Only when API
// tokens were last used may change: probing uses the probes' tokens.
func dump(t *testing.T, e *env) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tbl := range migrate.Tables {
		var cols []string
		for _, c := range tbl.Columns {
			if tbl == migrate.APITokensTable && (c.Name == "last_used_at" || c.Name == "updated_at") {
				continue
			}
			cols = append(cols, fmt.Sprintf("%q", c.Name))
		}
		rows, err := e.db.SQL.Query(fmt.Sprintf(`SELECT %s FROM %q ORDER BY 1, 2`, strings.Join(cols, ", "), tbl.Name))
		if err != nil {
			t.Fatal(err)
		}
		out[tbl.Name] = scanRows(t, rows, len(cols))
	}
	return out
}

func scanRows(t *testing.T, rows *sql.Rows, n int) []string {
	t.Helper()
	defer rows.Close()
	var out []string
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fields := make([]string, n)
		for i, v := range vals {
			switch v := v.(type) {
			case []byte:
				fields[i] = string(v)
			case time.Time:
				fields[i] = v.UTC().Format(time.RFC3339Nano)
			default:
				fields[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(fields, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func compareDumps(t *testing.T, before, after map[string][]string) {
	t.Helper()
	tables := make([]string, 0, len(before))
	for table := range before {
		tables = append(tables, table)
	}
	slices.Sort(tables)
	for _, table := range tables {
		rows, now := before[table], after[table]
		if len(now) != len(rows) {
			t.Errorf("table %s: %d rows before probing, %d after", table, len(rows), len(now))
			continue
		}
		for i := range rows {
			if rows[i] != now[i] {
				t.Errorf("table %s changed:\nbefore: %s\nafter:  %s", table, rows[i], now[i])
			}
		}
	}
}

// mutation is one attempt on beta's objects and the codes it may fail with.
type mutation struct {
	name, query string
	vars        vars
	codes       []string
	// tenantUsersOnly cases are skipped for superadmins, who may do them.
	tenantUsersOnly bool
}

// mutations are the attempts on beta's objects b, some through alpha's own
// objects a (linking them to beta's).
func mutations(a alpha, b map[string]string, alphaMember string) []mutation {
	var (
		gone = []string{"NOT_FOUND", "FORBIDDEN"}
		ref  = []string{"NOT_FOUND", "FORBIDDEN", "BAD_USER_INPUT"}
		ids  = func(s string) []string { return []string{s} }
		job  = func(spec vars) vars {
			spec["services"] = []vars{{"name": "main", "command": []string{"true"}, "cpu": 1, "memoryMiB": 64}}
			return vars{"spec": spec}
		}
	)
	const (
		updateGroup   = `mutation($id: ID!, $in: UpdateGroupInput!) { updateGroup(id: $id, input: $in) { id } }`
		createQueue   = `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`
		updateQueue   = `mutation($id: ID!, $in: UpdateQueueInput!) { updateQueue(id: $id, input: $in) { id } }`
		createGroup   = `mutation($in: CreateGroupInput!) { createGroup(input: $in) { id } }`
		createBucket  = `mutation($in: CreateBucketInput!) { createBucket(input: $in) { id } }`
		updateStorage = `mutation($id: ID!, $in: UpdateStorageInput!) { updateStorage(id: $id, input: $in) { id } }`
		updateUser    = `mutation($id: ID!, $in: UpdateUserInput!) { updateUser(id: $id, input: $in) { id } }`
		membership    = `mutation($u: ID!, $g: ID!) { createMembership(input: {userID: $u, groupID: $g}) { id } }`
		grant         = `mutation($in: GrantTokensInput!) { grantTokens(input: $in) { id } }`
		submit        = `mutation($spec: JobSpecInput!) { submitJob(spec: $spec) { id } }`
		byID          = `mutation($id: ID!) { %s(id: $id)%s }`
	)
	return []mutation{
		{name: "updateGroup", query: updateGroup, vars: vars{"id": b["group"], "in": vars{"description": "pwned"}}, codes: gone},
		{name: "deleteGroup", query: fmt.Sprintf(byID, "deleteGroup", ""), vars: vars{"id": b["group"]}, codes: gone},
		{name: "createMembership alpha group + beta user", query: membership, vars: vars{"u": b["member"], "g": a.group}, codes: ref},
		{name: "createMembership beta group + alpha user", query: membership, vars: vars{"u": alphaMember, "g": b["group"]}, codes: ref},
		{name: "deleteMembership", query: fmt.Sprintf(byID, "deleteMembership", ""), vars: vars{"id": b["membership"]}, codes: gone},
		{name: "updateQueue", query: updateQueue, vars: vars{"id": b["queue"], "in": vars{"description": "pwned"}}, codes: gone},
		{name: "deleteQueue", query: fmt.Sprintf(byID, "deleteQueue", ""), vars: vars{"id": b["queue"]}, codes: gone},
		{name: "createQueue with beta groups", query: createQueue, vars: vars{"in": vars{"name": "stolen", "groupIDs": ids(b["group"])}}, codes: ref},
		{name: "createQueue with beta storages", query: createQueue, vars: vars{"in": vars{"name": "stolen", "storageIDs": ids(b["storage"])}}, codes: ref},
		{name: "createQueue with beta nodes", query: createQueue, vars: vars{"in": vars{"name": "stolen", "nodeIDs": ids(b["node"])}}, codes: ref},
		{name: "updateQueue alpha queue adding beta group", query: updateQueue, vars: vars{"id": a.queue, "in": vars{"addGroupIDs": ids(b["group"])}}, codes: ref},
		{name: "updateQueue alpha queue adding beta storage", query: updateQueue, vars: vars{"id": a.queue, "in": vars{"addStorageIDs": ids(b["storage"])}}, codes: ref},
		{name: "updateQueue alpha queue adding beta node", query: updateQueue, vars: vars{"id": a.queue, "in": vars{"addNodeIDs": ids(b["node"])}}, codes: ref},
		{name: "updateProject", query: `mutation($id: ID!) { updateProject(id: $id, input: {description: "pwned"}) { id } }`, vars: vars{"id": b["project"]}, codes: gone},
		{name: "deleteProject", query: fmt.Sprintf(byID, "deleteProject", ""), vars: vars{"id": b["project"]}, codes: gone},
		{name: "createProject with beta groups", query: `mutation($g: ID!) { createProject(input: {name: "stolen", groupIDs: [$g]}) { id } }`, vars: vars{"g": b["group"]}, codes: ref},
		{name: "createGroup with beta queues", query: createGroup, vars: vars{"in": vars{"name": "stolen", "queueIDs": ids(b["queue"])}}, codes: ref},
		{name: "createGroup with beta projects", query: createGroup, vars: vars{"in": vars{"name": "stolen", "projectIDs": ids(b["project"])}}, codes: ref},
		{name: "createGroup with beta buckets", query: createGroup, vars: vars{"in": vars{"name": "stolen", "readableBucketIDs": ids(b["bucket"]), "writableBucketIDs": ids(b["bucket"])}}, codes: ref},
		{name: "updateGroup alpha group adding beta queue", query: updateGroup, vars: vars{"id": a.group, "in": vars{"addQueueIDs": ids(b["queue"])}}, codes: ref},
		{name: "updateGroup alpha group adding beta project", query: updateGroup, vars: vars{"id": a.group, "in": vars{"addProjectIDs": ids(b["project"])}}, codes: ref},
		{name: "updateGroup alpha group adding beta bucket", query: updateGroup, vars: vars{"id": a.group, "in": vars{"addWritableBucketIDs": ids(b["bucket"])}}, codes: ref},
		{name: "updateStorage", query: updateStorage, vars: vars{"id": b["storage"], "in": vars{"region": "pwned"}}, codes: gone},
		{name: "deleteStorage", query: fmt.Sprintf(byID, "deleteStorage", ""), vars: vars{"id": b["storage"]}, codes: gone},
		{name: "updateStorage alpha storage adding beta queue", query: updateStorage, vars: vars{"id": a.storage, "in": vars{"addQueueIDs": ids(b["queue"])}}, codes: ref},
		{name: "createStorage on beta node", query: `mutation($n: ID!) { createStorage(input: {name: "stolen", kind: NODE, nodeID: $n, path: "/data"}) { id } }`, vars: vars{"n": b["node"]}, codes: ref},
		{name: "createBucket on beta storage", query: createBucket, vars: vars{"in": vars{"name": "stolen", "storageID": b["storage"]}}, codes: ref},
		{name: "createBucket with beta groups", query: createBucket, vars: vars{"in": vars{"name": "stolen", "storageID": a.storage, "readGroupIDs": ids(b["group"])}}, codes: ref},
		{name: "updateBucket", query: `mutation($id: ID!) { updateBucket(id: $id, input: {clearReadGroups: true}) { id } }`, vars: vars{"id": b["bucket"]}, codes: gone},
		{name: "deleteBucket", query: fmt.Sprintf(byID, "deleteBucket", ""), vars: vars{"id": b["bucket"]}, codes: gone},
		{name: "updateNode", query: `mutation($id: ID!) { updateNode(id: $id, input: {name: "stolen"}) { id } }`, vars: vars{"id": b["node"]}, codes: gone},
		{name: "revokeNodeInvite", query: fmt.Sprintf(byID, "revokeNodeInvite", " { id }"), vars: vars{"id": b["nodeInvite"]}, codes: gone},
		{name: "revokeAPIToken", query: fmt.Sprintf(byID, "revokeAPIToken", " { id }"), vars: vars{"id": b["apiToken"]}, codes: gone},
		{name: "cancelJob", query: fmt.Sprintf(byID, "cancelJob", " { id }"), vars: vars{"id": b["job"]}, codes: gone},
		{name: "updateUser beta member", query: updateUser, vars: vars{"id": b["member"], "in": vars{"name": "pwned"}}, codes: gone},
		{name: "updateUser beta admin to member", query: updateUser, vars: vars{"id": b["admin"], "in": vars{"role": "MEMBER"}}, codes: gone},
		{name: "updateUser alpha member taking beta membership", query: updateUser, vars: vars{"id": alphaMember, "in": vars{"addMembershipIDs": ids(b["membership"])}}, codes: ref},
		{name: "updateUser alpha member taking beta job", query: updateUser, vars: vars{"id": alphaMember, "in": vars{"addJobIDs": ids(b["job"])}}, codes: ref},
		{name: "grantTokens to beta user", query: grant, vars: vars{"in": vars{"userID": b["member"], "tokens": 1, "reason": "pwned"}}, codes: ref},
		{name: "grantTokens to beta project", query: grant, vars: vars{"in": vars{"projectID": b["project"], "tokens": 1, "reason": "pwned"}}, codes: ref},
		{name: "submitJob on beta queue by ID", query: submit, vars: job(vars{"queue": b["queue"]}), codes: ref},
		{name: "submitJob on beta queue by name", query: submit, vars: job(vars{"queue": "beta-gpu"}), codes: ref},
		{name: "submitJob charging beta project by ID", query: submit, vars: job(vars{"queue": "default", "project": b["project"]}), codes: ref},
		{name: "submitJob charging beta project by name", query: submit, vars: job(vars{"queue": "default", "project": "beta-research"}), codes: ref},
		{name: "submitJob mounting beta bucket by ID", query: submit, vars: job(vars{"queue": "default", "mounts": []vars{{"bucket": b["bucket"], "path": "/data"}}}), codes: ref},
		{name: "submitJob mounting beta bucket by name", query: submit, vars: job(vars{"queue": "default", "mounts": []vars{{"bucket": "beta-data", "path": "/data", "readOnly": true}}}), codes: ref},
		{name: "estimateJobCost on beta queue", query: `query($spec: JobSpecInput!) { estimateJobCost(spec: $spec) { total } }`, vars: job(vars{"queue": b["queue"]}), codes: ref},
		// Email domains decide the tenant of a user: no tenant may claim
		// another's, nor create users in it.
		{name: "updateTenant claiming beta's email domain", query: `mutation { updateTenant(input: {appendEmailDomains: ["beta.test"]}) { id } }`, codes: ref},
		{name: "updateTenant replacing domains with beta's", query: `mutation { updateTenant(input: {emailDomains: ["alpha.test", "beta.test"]}) { id } }`, codes: ref},
		{name: "createUser in beta's email domain", query: `mutation { createUser(input: {email: "intruder@beta.test", password: "correct horse battery"}) { id } }`, codes: ref},
		{name: "createUser with beta member's email", query: `mutation { createUser(input: {email: "member@beta.test", password: "correct horse battery"}) { id } }`, codes: ref},
		{name: "deleteSecret", query: fmt.Sprintf(byID, "deleteSecret", ""), vars: vars{"id": b["secret"]}, codes: gone},
		{name: "deleteSecret by name", query: fmt.Sprintf(byID, "deleteSecret", ""), vars: vars{"id": "beta-secret"}, codes: gone},
		{name: "lookupFunction", query: `{ lookupFunction(app: "beta-web", name: "beta_q") { id } }`, codes: gone},
		{name: "putTask", query: `mutation($id: ID!) { putTask(function: $id, item: {data: "eA=="}) { id } }`, vars: vars{"id": b["function"]}, codes: gone},
		{name: "putTask with beta's key", query: `mutation($id: ID!) { putTask(function: $id, item: {data: "eA=="}, idempotencyKey: "beta-key") { id } }`,
			vars: vars{"id": b["function"]}, codes: gone},
		{name: "callFunction", query: `mutation($id: ID!) { callFunction(function: $id, args: {data: "eA=="}) { id } }`, vars: vars{"id": b["function"]}, codes: gone},
		{name: "requeueTask", query: fmt.Sprintf(byID, "requeueTask", " { id }"), vars: vars{"id": b["task"]}, codes: gone},
		{name: "cancelTask", query: fmt.Sprintf(byID, "cancelTask", " { id }"), vars: vars{"id": b["task"]}, codes: gone},
		{name: "rollbackApp", query: fmt.Sprintf(byID, "rollbackApp", " { id }"), vars: vars{"id": b["app"]}, codes: gone},
		{name: "stopAppVersion", query: `mutation($id: ID!) { stopAppVersion(id: $id, version: 1) { id } }`, vars: vars{"id": b["app"]}, codes: gone},
		{name: "stopApp", query: fmt.Sprintf(byID, "stopApp", " { id }"), vars: vars{"id": b["app"]}, codes: gone},
		{name: "blueprint", query: `query($id: ID!) { blueprint(id: $id) { id } }`, vars: vars{"id": b["blueprint"]}, codes: gone},
		{name: "createSandbox from beta blueprint", query: `mutation($bp: ID!) { createSandbox(input: {blueprint: $bp}) { id } }`,
			vars: vars{"bp": b["blueprint"]}, codes: ref},
		{name: "deployApp on beta blueprint", query: `mutation($bp: ID!) { deployApp(input: {name: "stolen", code: "` + strings.Repeat("ef", 32) +
			`", functions: [{name: "f", module: "app", qualname: "f", queue: "default", blueprint: $bp}]}) { id } }`,
			vars: vars{"bp": b["blueprint"]}, codes: ref},
		{name: "enterTenant beta", query: fmt.Sprintf(byID, "enterTenant", " { id }"), vars: vars{"id": b["tenant"]}, codes: []string{"FORBIDDEN"}, tenantUsersOnly: true},
	}
}
