package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/container"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/jobspec"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// Box limits and defaults.
const (
	MaxBoxPorts = 16
	// DefaultBoxScaledown is a box's idle window when neither it nor its
	// queue (idle timeout) says otherwise.
	DefaultBoxScaledown = 600
	// MaxBoxCommandWords bounds a command box's command.
	MaxBoxCommandWords = 256
	// MaxBoxRestarts bounds the restarts of a crashed box that no
	// request used in between: then only a request starts it again.
	MaxBoxRestarts = 5
)

// boxRestartPause is how long a box that crashed n times since its last
// use (its restarts unused) waits before the next restart: none after
// the first crash, then 10 s, 20 s, 40 s, 80 s.
func boxRestartPause(n int) time.Duration {
	if n == 0 {
		return 0
	}
	return 5 * time.Second << n
}

// Runner arguments of a box container (after runnerCommand): the runner
// reads them to serve as a box. Arguments, not variables: LEVERS9_*
// variables are the agent's to set.
const (
	BoxPortsArg   = "--box-ports"   // then the ports as JSON ([8080])
	BoxCommandArg = "--box-command" // then the command as JSON (["python3", …])
)

// PortName is the name of a box's port in its container's job spec.
func PortName(port int) string { return "p" + strconv.Itoa(port) }

// planBox checks a BOX's ports and command; other kinds have neither.
func planBox(i int, f *FunctionSpec) error {
	field := func(name string) string { return fmt.Sprintf("functions[%d].%s", i, name) }
	if f.Kind != function.KindBOX {
		if len(f.Ports) > 0 {
			return fault.Invalid(field("ports"), "only BOX functions declare ports (this one is %s)", f.Kind)
		}
		if len(f.Command) > 0 {
			return fault.Invalid(field("command"), "only BOX functions run a command (this one is %s)", f.Kind)
		}
		return nil
	}
	if len(f.Ports) == 0 || len(f.Ports) > MaxBoxPorts {
		return fault.Invalid(field("ports"), "a box declares between 1 and %d ports", MaxBoxPorts)
	}
	seen := map[int]bool{}
	for k, p := range f.Ports {
		if p < 1 || p > 65535 {
			return fault.Invalid(fmt.Sprintf("%s[%d]", field("ports"), k), "port %d is not between 1 and 65535", p)
		}
		if seen[p] {
			return fault.Invalid(fmt.Sprintf("%s[%d]", field("ports"), k), "port %d is declared twice", p)
		}
		seen[p] = true
	}
	if len(f.Command) > MaxBoxCommandWords {
		return fault.Invalid(field("command"), "a command has at most %d words", MaxBoxCommandWords)
	}
	for k, w := range f.Command {
		if err := wire.CheckWord(w); err != nil {
			return fault.Invalid(fmt.Sprintf("%s[%d]", field("command"), k), "%v", err)
		}
	}
	if len(f.Command) > 0 && f.Command[0] == "" {
		return fault.Invalid(field("command"), "a command starts with the program to run")
	}
	return nil
}

// planImage checks a function's image and blueprint: a READY blueprint
// of the tenant gives its image; a user's image may not be a blueprint's.
func (s *Service) planImage(ctx context.Context, i int, p *functionPlan) error {
	field := func(name string) string { return fmt.Sprintf("functions[%d].%s", i, name) }
	f := &p.spec
	if jobspec.ReservedImage(f.Image) {
		return fault.Invalid(field("image"), "%s", jobspec.ReservedMessage)
	}
	if f.Blueprint == "" {
		return nil
	}
	if f.Image != "" {
		return fault.Invalid(field("image"), "a function runs a blueprint or an image, not both")
	}
	if s.Blueprints == nil {
		return fault.Invalid(field("blueprint"), "this server builds no blueprints")
	}
	bp, err := s.Blueprints.Ready(ctx, field("blueprint"), f.Blueprint)
	if err != nil {
		return err
	}
	f.Image, p.blueprintID = bp.Image, bp.ID
	return nil
}

// boxService makes svc a box's runner: its ports declared with their
// numbers (the relay reaches them as /box/NAME/PORT), and the runner
// told what to serve.
func boxService(svc *jobspec.Service, ports []int, command []string) {
	for _, p := range ports {
		svc.Ports = append(svc.Ports, jobspec.Port{Name: PortName(p), Port: p})
	}
	pj, _ := json.Marshal(ports)
	svc.Args = []string{BoxPortsArg, string(pj)}
	if len(command) > 0 {
		cj, _ := json.Marshal(command)
		svc.Args = append(svc.Args, BoxCommandArg, string(cj))
	}
}

// HasPort reports whether BOX function f serves port.
func HasPort(f *ent.Function, port int) bool {
	for _, p := range f.Ports {
		if p == port {
			return true
		}
	}
	return false
}

// BoxContainer returns the job of a READY container of BOX function f,
// starting one when none runs and waiting up to wait (like
// RealtimeContainer). Each request counts as the box's use: its idle
// window starts again.
func (s *Service) BoxContainer(ctx context.Context, f *ent.Function, wait time.Duration) (jobID string, err error) {
	if f.Kind != function.KindBOX {
		return "", fault.Invalid("function", "%s is a %s function, not a box", f.Name, f.Kind)
	}
	return s.readyContainer(ctx, f, wait)
}

// keepBox starts a container of BOX function f when none is live while
// it is in use: its last connection (any container's last_task_at) is
// within its scale-down window. A crashed box comes back; an idle one
// stays stopped until its next request. A container that ended before
// its runner started is not replaced here (the next request tries
// again): a box that cannot start would otherwise start forever. One
// that keeps crashing unused is restarted after growing pauses, at most
// MaxBoxRestarts times (boxRestartPause).
func (s *Service) keepBox(ctx context.Context, f *ent.Function, lives int) error {
	if f.Kind != function.KindBOX || lives > 0 {
		return nil
	}
	sys := viewer.SystemContext(ctx)
	last, err := s.DB.Ent.Container.Query().Where(container.FunctionID(f.ID)).
		Order(ent.Desc(container.FieldCreatedAt)).First(sys)
	if ent.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading containers of %s: %w", f.ID, err)
	}
	if last.ProcessStartedAt == nil {
		return nil
	}
	used, err := s.DB.Ent.Container.Query().Where(container.FunctionID(f.ID), container.LastTaskAtNotNil()).
		Order(ent.Desc(container.FieldLastTaskAt)).First(sys)
	if ent.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading containers of %s: %w", f.ID, err)
	}
	if s.now().Sub(*used.LastTaskAt) >= time.Duration(f.ScaledownWindowSeconds)*time.Second {
		return nil // idle: stopped until the next request
	}
	// Containers that ended since the last use: the used one, then its
	// restarts that ended unused. A box that keeps dying is retried after
	// a growing pause, then left to its next request. (Stop times, not
	// creation times: both come from s.now.)
	ended, err := s.DB.Ent.Container.Query().Where(container.FunctionID(f.ID),
		container.StateEQ(container.StateSTOPPED), container.StoppedAtGT(*used.LastTaskAt)).Count(sys)
	if err != nil {
		return fmt.Errorf("counting restarts of %s: %w", f.ID, err)
	}
	crashes := max(ended-1, 0)
	if crashes >= MaxBoxRestarts {
		return nil
	}
	stopped := last.CreatedAt
	if last.StoppedAt != nil {
		stopped = *last.StoppedAt
	}
	if s.now().Sub(stopped) < boxRestartPause(crashes) {
		return nil
	}
	ok, err := s.startContainer(ctx, f)
	if err != nil || !ok {
		return err
	}
	// The new container's idle window counts from the box's last use,
	// not from its restart.
	n, err := s.DB.Ent.Container.Update().
		Where(container.FunctionID(f.ID), container.StateIn(live...), container.LastTaskAtIsNil()).
		SetLastTaskAt(*used.LastTaskAt).Save(sys)
	if err != nil {
		return fmt.Errorf("carrying the last use of box %s: %w", f.ID, err)
	}
	s.Log.Info("box restarted", "function", f.ID, "containers", n, "after", last.StopReason)
	return nil
}

// MarkUsed records that the containers running jobs ids (a box's or a
// realtime function's, reached through the relay) were used at at: an
// open connection or a stream keeps a box from its idle stop and, once
// it crashes, brings it back. Jobs of no container are ignored. The
// relay's Activity.Mark calls it besides jobs.Service.MarkActive.
func (s *Service) MarkUsed(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	sys := viewer.SystemContext(ctx)
	if err := s.DB.Ent.Container.Update().
		Where(container.JobIDIn(ids...), container.StateIn(live...),
			container.Or(container.LastTaskAtIsNil(), container.LastTaskAtLT(at))).
		SetLastTaskAt(at).Exec(sys); err != nil {
		return fmt.Errorf("recording the use of %d containers: %w", len(ids), err)
	}
	return nil
}
