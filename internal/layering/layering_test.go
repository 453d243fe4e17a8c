package layering_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// module is the import path the rules' package names are relative to.
const module = "github.com/levers9/levers9"

// A rule limits what the packages matching pkgs (but not except) import
// from this module: only what only lists, when only is set (a package may
// always import itself), and never what never lists. "x/..." is x and
// every package under it. A rule binds production code; tests too when
// tests is set, and then test files may also import the test
// infrastructure (testInfra).
type rule struct {
	pkgs, except []string
	only, never  []string
	tests        bool
	why          string
}

// nothing is an only that allows no package of this module.
var nothing = []string{}

// The layering, top to bottom.
var rules = []rule{
	{pkgs: []string{"cmd/..."},
		why: "cmd wires the server, the agent and the CLI: it may import anything"},
	{pkgs: []string{"agent/supervise"}, only: nothing,
		why: "the supervisor is loaded on every service start: it stays small (TestSupervisorLoadsLittle)"},
	{pkgs: []string{"agent/..."}, only: []string{"agent/...", "internal/wire", "storage", "internal/netguard", "sdk/python"}, tests: true,
		why: "the agent shares with the server the wire protocol and storage's drivers (README), with what storage needs, " +
			"and puts the embedded Python package into function containers"},
	{pkgs: []string{"sdk/..."}, only: nothing, tests: true,
		why: "the embedded Python SDK is files, importing nothing"},
	{pkgs: []string{"e2e/..."}, only: nothing, tests: true,
		why: "end-to-end tests drive the binary, the SDK, the browser and public clients, not internal packages"},

	// Front doors: GraphQL, the dashboard, River workers, the tunnel.
	{pkgs: []string{"graph/..."}, never: []string{"ui/...", "storage", "internal/tunnel"}, tests: true,
		why: "a front door: it never imports the dashboard, reads files through internal/buckets, and reaches nodes through domain packages"},
	{pkgs: []string{"ui/..."}, never: []string{"graph/...", "storage", "internal/tunnel"}, tests: true,
		why: "a front door: it never imports GraphQL, reads files through internal/buckets, and reaches nodes through domain packages " +
			"(internal/database is allowed: the database handle cmd gives it, for ent and the session store)"},
	{pkgs: []string{"workers/..."}, only: []string{"ent/...", "internal/..."}, never: []string{"internal/tunnel"}, tests: true,
		why: "River's jobs call domain packages and ent only; node rules are internal/nodes', not the tunnel's"},
	{pkgs: []string{"internal/tunnel"}, never: []string{"graph/...", "ui/...", "workers/...", "agent/..."},
		why: "the tunnel is transport, a front door beside graph and ui (its tests run the real agent against it)"},
	{pkgs: []string{"internal/relay"}, never: []string{"graph/...", "ui/...", "workers/...", "agent/..."},
		why: "the relay is a front door (users' streams to services) over the tunnel's streams"},

	// Domain packages.
	{pkgs: []string{"internal/..."}, except: []string{"internal/tunnel", "internal/relay"},
		never: []string{"graph/...", "ui/...", "workers/...", "cmd/...", "agent/...", "e2e/...", "internal/tunnel"},
		why:   "imports point down: front doors and cmd call the domain, never the other way round"},
	{pkgs: []string{"internal/..."}, never: []string{"graph/...", "ui/...", "cmd/...", "e2e/..."}, tests: true,
		why: "tests of domain packages point down too (they may run River's workers or the agent over what they test)"},
	{pkgs: []string{"internal/queues"}, never: []string{"internal/metering"}, tests: true,
		why: "a queue's prices are the queue's (queues.Rates): metering reads them from queues"},
	{pkgs: []string{"internal/scheduler"}, never: []string{"internal/jobs"}, tests: true,
		why: "placement does not depend on the job state machine"},

	// Leaves.
	{pkgs: []string{"internal/wire", "internal/scheduling", "internal/billing", "internal/viewer", "internal/netguard",
		"internal/ids", "internal/inventory", "internal/nodes/nodename", "internal/relayaddr", "internal/autoscaling"}, only: nothing, tests: true,
		why: "pure packages (the wire protocol, rules and values) that everything, the agent and ent included, may use"},
	{pkgs: []string{"internal/jobspec"}, only: []string{"internal/wire"}, tests: true,
		why: "the job specification is a pure value; its ports and mounts are the wire's"},
	{pkgs: []string{"storage"}, only: []string{"internal/netguard"}, tests: true,
		why: "the bucket drivers are shared with the agent: they use the connection guard and nothing of the server"},
	{pkgs: []string{"ent/..."},
		only: []string{"ent/...", "internal/viewer", "internal/billing", "internal/ids", "internal/inventory", "internal/jobspec", "internal/wire", "internal/nodes/nodename"},
		why:  "privacy rules import only the viewer; schema fields use these value packages"},
}

// testInfra are the packages tests may import whatever their rule's only
// says: a private database, object storage or Docker daemon.
var testInfra = []string{"internal/dbtest/...", "internal/objtest", "internal/dockertest/..."}

// pending are breaks of the rules being fixed under issue 13: a break
// listed here does not fail the test, and an entry that no longer breaks
// a rule does, so that the list can only shrink.
var pending = []struct{ from, to, item string }{}

// systemContext says where front doors may act as the system, which sees
// every tenant: code outside a tenant's request, never a page or a
// resolver serving one.
var systemContext = []struct {
	pkgs    string
	allowed []string // functions that may ("pkg.Func", "pkg.(*T).Method", "pkg.*")
	why     string
}{
	{"workers/...", []string{"*"}, "River's jobs run for no user: they act as the system"},
	{"graph/...", []string{"graph.(*mutationResolver).SignIn"},
		"the only use: reading the user a sign-in just made a token for, before a viewer exists"},
	{"ui/...", []string{"ui/admin/admintest.*"}, "dashboard handlers see what the viewer sees (ui/admin/admintest builds test worlds)"},
}

func TestImportsFollowTheLayering(t *testing.T) {
	edges, mentions := load(t)
	var broken []string
	seen := map[string]bool{} // pending entries that still occur
	for _, e := range edges {
		for _, r := range rules {
			if !r.binds(e) {
				continue
			}
			if !r.allows(e) {
				key := e.from + " -> " + e.to
				if isPending(e.from, e.to) {
					seen[key] = true
					break
				}
				broken = append(broken, fmt.Sprintf("%s imports %s (%s), against the rule for %s: %s",
					e.from, e.to, e.where, strings.Join(r.pkgs, ", "), r.why))
				break
			}
		}
	}
	broken = append(broken, systemContextUses(t, mentions, seen)...)
	for _, p := range pending {
		if !seen[p.from+" -> "+p.to] {
			broken = append(broken, fmt.Sprintf("pending %s -> %s (%s) no longer occurs: remove it from the pending list", p.from, p.to, p.item))
		}
	}
	slices.Sort(broken)
	for _, b := range slices.Compact(broken) {
		t.Error(b)
	}
}

// edge is an import of a package of this module by one, both relative to
// the module; test says only test files import it.
type edge struct {
	from, to string
	test     bool
	where    string // the file that imports it
}

// binds reports whether r governs e.
func (r rule) binds(e edge) bool {
	return match(r.pkgs, e.from) && !match(r.except, e.from) && (r.tests || !e.test)
}

// allows reports whether r lets e be.
func (r rule) allows(e edge) bool {
	switch {
	case e.to == e.from:
		return true
	case match(r.never, e.to):
		return false
	case r.only == nil, match(r.only, e.to):
		return true
	}
	return e.test && match(testInfra, e.to)
}

func isPending(from, to string) bool {
	return slices.ContainsFunc(pending, func(p struct{ from, to, item string }) bool { return p.from == from && p.to == to })
}

// match reports whether pkg is one of patterns.
func match(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if p == pkg {
			return true
		}
		if dir, ok := strings.CutSuffix(p, "/..."); ok && (pkg == dir || strings.HasPrefix(pkg, dir+"/")) {
			return true
		}
	}
	return false
}

// load lists every import inside the module, of every package and its
// tests (an import that production code makes is not a test one), and the
// front doors whose production code mentions SystemContext.
func load(t *testing.T) (edges []edge, mentions []string) {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports, Dir: "../..", Tests: true}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatalf("loading the module's packages: %v", err)
	}
	prod := map[[2]string]bool{}
	all := map[[2]string]string{}
	for _, p := range pkgs {
		if strings.HasSuffix(p.ID, ".test") {
			continue // the generated test main
		}
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.ID, e)
		}
		from, ok := inModule(strings.TrimSuffix(p.PkgPath, "_test"))
		if !ok {
			continue
		}
		for path := range p.Imports {
			to, ok := inModule(path)
			if !ok {
				continue
			}
			k := [2]string{from, to}
			if p.ID == p.PkgPath {
				prod[k] = true
			}
			if _, ok := all[k]; !ok || p.ID == p.PkgPath {
				all[k] = importer(p, path)
			}
		}
		if p.ID == p.PkgPath && match([]string{"graph/...", "ui/...", "workers/...", "internal/relay"}, from) && mentionsSystemContext(p) {
			mentions = append(mentions, p.PkgPath)
		}
	}
	if len(all) == 0 {
		t.Fatal("no imports found: the module did not load")
	}
	for k, where := range all {
		edges = append(edges, edge{from: k[0], to: k[1], test: !prod[k], where: where})
	}
	return edges, mentions
}

// mentionsSystemContext reports whether a file of p has the word: only
// those packages are type-checked to find the calls, as type-checking
// every front door (gqlgen's and templ's output included) is slow.
func mentionsSystemContext(p *packages.Package) bool {
	for _, name := range p.GoFiles {
		b, err := os.ReadFile(name)
		if err == nil && bytes.Contains(b, []byte("SystemContext")) {
			return true
		}
	}
	return false
}

// inModule gives path relative to the module, if it is in it.
func inModule(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, module+"/")
	return rest, ok
}

// importer names the first file of p that imports path.
func importer(p *packages.Package, path string) string {
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, imp := range f.Imports {
			if v, _ := strconv.Unquote(imp.Path.Value); v == path {
				rel, _ := strings.CutPrefix(name, p.Dir+"/")
				return rel
			}
		}
	}
	return "?"
}

// systemContextUses finds the calls of viewer.SystemContext in the
// production code of front doors (the packages of mentions) that
// systemContext does not allow; a use in a package pending lists is marked
// in seen instead.
func systemContextUses(t *testing.T, mentions []string, seen map[string]bool) []string {
	t.Helper()
	if len(mentions) == 0 {
		t.Error("no front door mentions SystemContext: the search is broken (graph's SignIn does)")
		return nil
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo, Dir: "../.."}
	pkgs, err := packages.Load(cfg, mentions...)
	if err != nil {
		t.Fatalf("loading the front doors: %v", err)
	}
	var out []string
	found := 0
	for _, p := range pkgs {
		from, _ := inModule(p.PkgPath)
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.ID, e)
		}
		for _, f := range p.Syntax {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || !callsSystemContext(p.TypesInfo, fn) {
					continue
				}
				found++
				name := funcName(from, fn)
				for _, sc := range systemContext {
					if !match([]string{sc.pkgs}, from) || slices.ContainsFunc(sc.allowed, func(a string) bool {
						return a == "*" || a == name || strings.HasSuffix(a, ".*") && strings.HasPrefix(name, strings.TrimSuffix(a, "*"))
					}) {
						continue
					}
					if isPending(from, "viewer.SystemContext") {
						seen[from+" -> viewer.SystemContext"] = true
						continue
					}
					out = append(out, fmt.Sprintf("%s calls viewer.SystemContext (%s), against the rule for %s: %s",
						name, p.Fset.Position(fn.Pos()), sc.pkgs, sc.why))
				}
			}
		}
	}
	if found == 0 {
		t.Error("no front door calls viewer.SystemContext: the search is broken (graph's SignIn does)")
	}
	return out
}

// callsSystemContext reports whether fn uses viewer.SystemContext.
func callsSystemContext(info *types.Info, fn *ast.FuncDecl) bool {
	used := false
	ast.Inspect(fn, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return !used
		}
		if f, ok := info.Uses[id].(*types.Func); ok && f.Name() == "SystemContext" && f.Pkg().Path() == module+"/internal/viewer" {
			used = true
		}
		return !used
	})
	return used
}

// funcName names fn of package pkg (relative to the module) as "pkg.Func"
// or "pkg.(*T).Method".
func funcName(pkg string, fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return pkg + "." + fn.Name.Name
	}
	return fmt.Sprintf("%s.(%s).%s", pkg, types.ExprString(fn.Recv.List[0].Type), fn.Name.Name)
}

// The service supervisor (cmd/levers9-supervise) is a program started for
// every service: the networking and TLS packages, which the runtime brings
// in through the wire protocol, tripled the CPU of its start (6.5 → 17 ms
// on the CI machines), and os/user or net make it a cgo binary.
func TestSupervisorLoadsLittle(t *testing.T) {
	t.Parallel()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Dir: "../.."}
	pkgs, err := packages.Load(cfg, "./cmd/levers9-supervise")
	if err != nil || len(pkgs) != 1 {
		t.Fatalf("loading the supervisor: %v", err)
	}
	heavy := []string{"net", "net/http", "crypto/tls", "os/user", "runtime/cgo", "log/slog"}
	var found []string
	packages.Visit(pkgs, func(p *packages.Package) bool {
		if slices.Contains(heavy, p.PkgPath) {
			found = append(found, p.PkgPath)
		}
		return true
	}, nil)
	if len(found) > 0 {
		t.Errorf("cmd/levers9-supervise imports %v: keep the supervisor's packages out of the runtime's", found)
	}
}
