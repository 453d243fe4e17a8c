package runtime

import (
	"context"
	"fmt"
)

var _ Terminals = (*job)(nil)

// Attach implements Terminals.
func (j *job) Attach(ctx context.Context, service string, size Size) (Terminal, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := j.running(service)
	if err != nil {
		return nil, err
	}
	if s.tty == nil {
		return nil, ErrNoTTY
	}
	a, err := s.tty.attach(size)
	if err != nil {
		return nil, fmt.Errorf("attaching to %s: %w", service, err)
	}
	j.log.Info("terminal attached", "service", service)
	return a, nil
}

// Exec implements Terminals. The command runs as the service's main
// process does: its user, working directory, environment, cgroups and
// mounts (through a supervisor of its own when the runtime has one), in a
// process group of its own. It ends with the service.
func (j *job) Exec(ctx context.Context, service string, req ExecRequest) (Terminal, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(req.Command) == 0 || req.Command[0] == "" {
		return nil, fmt.Errorf("exec in %s: no command", service)
	}
	s, err := j.running(service)
	if err != nil {
		return nil, err
	}
	e, err := s.exec(req)
	if err != nil {
		return nil, fmt.Errorf("exec %s in %s: %w", req.Command[0], service, err)
	}
	j.log.Info("command exec'd", "service", service, "command", req.Command[0], "tty", req.TTY, "pid", e.pgid)
	return e, nil
}

// running is the service of that name while its command runs.
func (j *job) running(name string) (*service, error) {
	for _, s := range j.services {
		if s.spec.Name != name {
			continue
		}
		s.mu.Lock()
		ok := s.running && !s.exited
		s.mu.Unlock()
		if ok {
			return s, nil
		}
	}
	return nil, ErrNoService
}
