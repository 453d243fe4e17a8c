package workers

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/riverqueue/river"
)

// A periodic safety net with nothing to catch costs a River job (its
// insert, fetch and completion: several writes) every few seconds, which
// is most of what an idle server does beyond River's own floor. ifDue asks
// a cheap read first and inserts nothing when it says no work waits.

// dueCheckTimeout bounds that read: River's enqueuer waits for its
// constructors, which must not block long. On SQLite the read waits for
// the one connection like the enqueuer's own insert would, so the bound
// leaves room for a long write (a big scheduling pass). A check that fails
// or times out inserts the job, as if there were work: the pass then runs
// and reports whatever is wrong.
const dueCheckTimeout = 10 * time.Second

// ifDue returns a constructor of args that inserts nothing when due says
// the pass would find nothing to do.
func ifDue(args river.JobArgs, due func(context.Context) (bool, error), log *slog.Logger) river.PeriodicJobConstructor {
	return func() (river.JobArgs, *river.InsertOpts) {
		ctx, cancel := context.WithTimeout(context.Background(), dueCheckTimeout)
		defer cancel()
		ok, err := due(ctx)
		if err != nil {
			log.Warn("periodic check failed; running the pass", "kind", args.Kind(), "error", err)
			return args, nil
		}
		if !ok {
			return nil, nil
		}
		return args, nil
	}
}

// skipMessage ends what River logs, at info, each time a periodic
// constructor inserts nothing: with ifDue, every few seconds on an idle
// server, so riverLog drops it.
const skipMessage = "nil returned from periodic job constructor, skipping"

// riverLog is River's logger: h without River's skip notices.
type riverLog struct{ slog.Handler }

func (h riverLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level <= slog.LevelInfo && strings.HasSuffix(r.Message, skipMessage) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h riverLog) WithAttrs(as []slog.Attr) slog.Handler { return riverLog{h.Handler.WithAttrs(as)} }
func (h riverLog) WithGroup(name string) slog.Handler    { return riverLog{h.Handler.WithGroup(name)} }
