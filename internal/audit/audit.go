// Package audit writes the audit log: actions that must stay traceable,
// such as a superadmin entering a tenant, and every change a superadmin
// makes while inside one. Tenant admins read their tenant's log.
package audit

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	entgo "entgo.io/ent"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/viewer"
)

// maxTargets bounds the IDs one event names: a bulk change of many rows is
// recorded with the first ones and the count.
const maxTargets = 20

// Record writes one audit event of tenant tenantID through c (which may be
// in a transaction, so the event commits or rolls back with the change).
func Record(ctx context.Context, c *ent.Client, tenantID, actorID, action, target string, details map[string]string) error {
	_, err := c.AuditEvent.Create().SetTenantID(tenantID).SetActorID(actorID).
		SetAction(action).SetTarget(target).SetDetails(details).
		Save(viewer.SystemContext(ctx))
	if err != nil {
		return fmt.Errorf("writing audit event %s: %w", action, err)
	}
	return nil
}

// Entered reports whether v is a superadmin acting inside a tenant they
// entered: everything such a viewer changes is audited.
func Entered(v *viewer.Viewer) bool {
	return v != nil && v.Superadmin && !v.System && v.InTenant()
}

// Hook audits every mutation made by an entered superadmin (see Entered),
// whatever front door or domain function made it: one event per mutation,
// in its transaction, with the entity type, the operation, the IDs changed
// and the names of the fields set or cleared (never their values, which
// may be secrets). Work done as the system on the viewer's behalf is not
// audited here: the domain function that does it records it (as
// enterTenant and leaveTenant do).
func Hook() ent.Hook {
	return func(next ent.Mutator) ent.Mutator {
		return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
			v := viewer.FromContext(ctx)
			if !Entered(v) || m.Type() == ent.TypeAuditEvent {
				return next.Mutate(ctx, m)
			}
			var ids []string
			if m.Op().Is(entgo.OpUpdate | entgo.OpDelete) {
				// A bulk change: which rows it touches must be read before.
				im, ok := m.(interface {
					IDs(context.Context) ([]string, error)
				})
				if ok {
					var err error
					if ids, err = im.IDs(ctx); err != nil {
						return nil, fmt.Errorf("reading the rows of an audited %s %s: %w", m.Type(), m.Op(), err)
					}
				}
			}
			val, err := next.Mutate(ctx, m)
			if err != nil {
				return val, err
			}
			if im, ok := m.(interface{ ID() (string, bool) }); ok && len(ids) == 0 {
				if id, ok := im.ID(); ok {
					ids = []string{id}
				}
			}
			cm, ok := m.(interface{ Client() *ent.Client })
			if !ok {
				return val, fmt.Errorf("auditing %s %s: the mutation has no client", m.Type(), m.Op())
			}
			action := strings.ToLower(m.Type()) + "." + opName(m.Op())
			if err := Record(ctx, cm.Client(), v.TenantID, v.UserID, action, targets(ids), changes(m)); err != nil {
				return val, err
			}
			return val, nil
		})
	}
}

func opName(op ent.Op) string {
	switch {
	case op.Is(entgo.OpCreate):
		return "create"
	case op.Is(entgo.OpUpdate | entgo.OpUpdateOne):
		return "update"
	case op.Is(entgo.OpDelete | entgo.OpDeleteOne):
		return "delete"
	}
	return strings.ToLower(op.String())
}

func targets(ids []string) string {
	if len(ids) <= maxTargets {
		return strings.Join(ids, ",")
	}
	return strings.Join(ids[:maxTargets], ",") + ",… (" + strconv.Itoa(len(ids)) + " in all)"
}

// changes names the fields m sets, adds to and clears.
func changes(m ent.Mutation) map[string]string {
	d := map[string]string{"by": "superadmin inside the tenant"}
	for k, fs := range map[string][]string{"set": m.Fields(), "added": m.AddedFields(), "cleared": m.ClearedFields()} {
		if len(fs) > 0 {
			fs = slices.Clone(fs)
			slices.Sort(fs)
			d[k] = strings.Join(fs, ",")
		}
	}
	if es := append(m.AddedEdges(), m.RemovedEdges()...); len(es) > 0 {
		slices.Sort(es)
		d["edges"] = strings.Join(slices.Compact(es), ",")
	}
	return d
}

// Service reads the audit log for the front doors. It holds the ent client,
// not database.DB: database registers this package's hook, so it cannot be
// imported here. Record and the hook stay functions: they run inside the
// writer's transaction.
type Service struct {
	Ent *ent.Client
}

// ActorEmails maps the actors of events to their emails. An actor may be a
// superadmin, whom tenant privacy hides from the tenant's admins; the
// events themselves were read as the viewer (so they are the viewer's to
// see), and naming who did them is the point of the log, so the emails are
// read as the system, for these actors only.
func (s *Service) ActorEmails(ctx context.Context, events []*ent.AuditEvent) (map[string]string, error) {
	ids := make([]string, 0, len(events))
	for _, e := range events {
		ids = append(ids, e.ActorID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	us, err := s.Ent.User.Query().Where(user.IDIn(ids...)).All(viewer.SystemContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("reading the actors of audit events: %w", err)
	}
	out := make(map[string]string, len(us))
	for _, u := range us {
		out[u.ID] = u.Email
	}
	return out, nil
}
