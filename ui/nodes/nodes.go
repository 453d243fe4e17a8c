// Package nodes is the Nodes page: every machine of the tenant with its
// status, inventory, last heartbeat and the services running on it; tenant
// admins also invite machines to join (the code shown once, with the join
// command) and revoke unused invites.
package nodes

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/node"
	"github.com/levers9/levers9/ent/nodeinvite"
	"github.com/levers9/levers9/ent/service"
	"github.com/levers9/levers9/internal/inventory"
	nodesvc "github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/ui/admin/adminkit"
	"github.com/levers9/levers9/ui/app"
	"github.com/levers9/levers9/ui/charts"
	"github.com/levers9/levers9/ui/components"
)

// InviteListSize is how many of the newest invites the page lists.
const InviteListSize = 50

// Register adds the Nodes page and the invite routes.
func Register(rt *app.Router) {
	h := &handlers{rt: rt, svc: rt.Deps.Nodes}
	rt.Nav("Nodes", "/nodes", app.Member)
	// Members see the machines (ent lets them read nodes); invites are the
	// admins' (ent hides them from everyone else too).
	rt.Handle("GET /nodes", app.Member, h.list)
	rt.Handle("GET /nodes/live", app.Member, h.live)
	rt.Handle("POST /nodes/invites", app.Admin, h.invite)
	rt.Handle("POST /nodes/invites/{id}/revoke", app.Admin, h.revoke)
	rt.Handle("POST /nodes/{id}/drain", app.Admin, h.drain)
	registerRemoval(rt, h) // remove.go: revoke a credential, remove a node
}

type handlers struct {
	rt  *app.Router
	svc *nodesvc.Service
}

// nodeRow is one machine as the table shows it, formatted.
type nodeRow struct {
	ID, Name, Status string
	Drain            bool
	Runtime          string
	CPUs, Memory     string // free / total
	GPUs             []string
	Heartbeat, Agent string
	Running          []running
}

// running is a service running on a node.
type running struct {
	JobID, JobName, Name string
}

// inviteRow is one invite with its state in words.
type inviteRow struct {
	ID, NodeName, Created, Expires string
	State                          string
	Active                         bool
}

type page struct {
	Nodes []nodeRow
	// Live is the stream keeping the rows current.
	Live string
	// GPUCharts are GPUs booked and free per node and type over the last
	// hours; ChartsLeftOut counts those not shown.
	GPUCharts     []charts.Bars
	ChartsLeftOut int
	Admin         bool
	Invites       []inviteRow
	Form          *adminkit.Form
	// Code and Join are set right after an invite is made: the only time
	// the code can be shown.
	Code, Join string
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	f := adminkit.NewForm("invite", h.rt.CSRFToken(r), nil)
	f.Values.Set("expiresHours", "24")
	return h.render(w, r, http.StatusOK, f, "", "")
}

// render shows the page with the invite form f and, after a creation, the
// code and join command.
func (h *handlers) render(w http.ResponseWriter, r *http.Request, status int, f *adminkit.Form, code, join string) error {
	p, err := h.load(r)
	if err != nil {
		return err
	}
	p.Form, p.Code, p.Join = f, code, join
	return app.Render(w, r, status, view(h.rt.Frame(r, "Nodes"), p))
}

func (h *handlers) load(r *http.Request) (page, error) {
	ctx := r.Context()
	c := h.rt.Deps.DB.Ent
	var p page
	ns, rows, err := h.rows(ctx)
	if err != nil {
		return p, err
	}
	p.Nodes = rows
	p.Live = "/nodes/live?v=" + signature(rows)
	if p.GPUCharts, p.ChartsLeftOut, err = h.gpuCharts(ctx, ns); err != nil {
		return p, err
	}
	v := viewer.FromContext(ctx)
	p.Admin = v.Admin
	if !p.Admin {
		return p, nil
	}
	invs, err := c.NodeInvite.Query().Order(ent.Desc(nodeinvite.FieldCreatedAt)).Limit(InviteListSize).All(ctx)
	if err != nil {
		return p, fmt.Errorf("listing invites: %w", err)
	}
	now := h.svc.Now()
	for _, inv := range invs {
		p.Invites = append(p.Invites, describeInvite(inv, now))
	}
	return p, nil
}

// rows reads the viewer's nodes with their usage and running services (three
// queries), as the page and its live stream show them.
func (h *handlers) rows(ctx context.Context) ([]*ent.Node, []nodeRow, error) {
	c := h.rt.Deps.DB.Ent
	ns, err := c.Node.Query().Order(ent.Asc(node.FieldName)).All(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing nodes: %w", err)
	}
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = n.ID
	}
	// Only services the viewer may see: a member sees their own jobs' only.
	running, err := c.Service.Query().
		Where(service.StatusEQ(service.StatusRunning), service.NodeIDIn(ids...)).
		WithJob().Order(ent.Asc(service.FieldStartedAt)).All(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing running services: %w", err)
	}
	usage, err := h.svc.Usages(ctx, ns)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]nodeRow, 0, len(ns))
	for _, n := range ns {
		rows = append(rows, describeNode(n, usage[n.ID], running))
	}
	return ns, rows, nil
}

func describeInvite(inv *ent.NodeInvite, now time.Time) inviteRow {
	state := nodesvc.InviteState(inv, now)
	return inviteRow{ID: inv.ID, NodeName: inv.NodeName, Created: components.When(&inv.CreatedAt),
		Expires: components.When(&inv.ExpiresAt), State: state, Active: state == "open"}
}

// describeNode formats node n with its usage and, among all, the services
// running on it (their jobs loaded).
func describeNode(n *ent.Node, u nodesvc.Usage, all []*ent.Service) nodeRow {
	row := nodeRow{ID: n.ID, Name: n.Name, Status: string(n.Status), Drain: n.Drain, Runtime: runtime(n.Inventory),
		CPUs:   cpus(u.Free.CPU) + " / " + cpus(n.Inventory.CPUs),
		Memory: memory(u.Free.MemoryMiB) + " / " + memory(n.Inventory.MemoryMiB),
		GPUs:   gpus(n.Inventory, u), Heartbeat: components.When(n.LastHeartbeatAt), Agent: n.AgentVersion}
	for _, s := range all {
		if s.NodeID == n.ID {
			row.Running = append(row.Running, running{JobID: s.JobID, JobName: jobName(s), Name: s.Name})
		}
	}
	return row
}

// memory is MiB for people.
func memory(mib int64) string {
	if mib >= 1024 {
		return fmt.Sprintf("%.1f GiB", float64(mib)/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}

// gpus lists a node's GPUs by type, with how many are free and which
// devices are booked ("4 × A100: 3 free; booked 2"), or none.
func gpus(inv inventory.Inventory, u nodesvc.Usage) []string {
	var out []string
	for _, g := range inv.GPUs {
		s := fmt.Sprintf("%d × %s: %d free", g.Count, g.Type, countOf(u.Free.GPUs, g.Type).Count)
		if b := countOf(u.Booked.GPUs, g.Type); b.Count > 0 {
			s += "; booked " + strconv.Itoa(b.Count)
			if len(b.Devices) > 0 {
				s += " (" + strings.Join(b.Devices, ", ") + ")"
			}
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// countOf is the entry of type t in gs (zero when absent).
func countOf(gs []inventory.GPU, t string) inventory.GPU {
	for _, g := range gs {
		if g.Type == t {
			return g
		}
	}
	return inventory.GPU{Type: t}
}

// runtime says how a node runs services.
func runtime(inv inventory.Inventory) string {
	if inv.NodeRuntime() == inventory.RuntimeDocker {
		return "docker (containers)"
	}
	return "process"
}

// cpus is a CPU amount for people.
func cpus(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
