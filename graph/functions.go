package graph

import (
	"context"
	"encoding/base64"
	"math"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/graph/model"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/functions"
)

// functionSpec is a function as the domain takes it; zero fields take the
// domain's defaults.
func functionSpec(f *model.FunctionInput) functions.FunctionSpec {
	return functions.FunctionSpec{
		Name: f.Name, Module: f.Module, Qualname: f.Qualname, Queue: f.Queue,
		Project: deref(f.Project), Image: deref(f.Image), GPU: deref(f.Gpu), CPU: deref(f.CPU),
		MemoryMiB: int64(deref(f.MemoryMiB)), TimeoutSeconds: deref(f.TimeoutSeconds), Retries: deref(f.Retries),
		MinContainers: deref(f.MinContainers), MaxContainers: deref(f.MaxContainers), KeepWarm: deref(f.KeepWarm),
		Concurrency: deref(f.Concurrency), ScaledownWindowSeconds: deref(f.ScaledownWindowSeconds),
		Kind: deref(f.Kind), Deployment: deref(f.Deployment), HTTPMethod: deref(f.HTTPMethod),
		SyncTimeoutSeconds: deref(f.SyncTimeoutSeconds), Public: deref(f.Public), Secrets: f.Secrets, Cron: deref(f.Cron),
		Ports: f.Ports, Command: f.Command, Blueprint: deref(f.Blueprint),
	}
}

// payloadIn decodes a payload argument: data is standard base64. Whether
// it is small enough, or the blob uploaded, is the domain's to say.
func payloadIn(field string, p *model.PayloadInput) (functions.Payload, error) {
	var out functions.Payload
	if p.Blob != nil {
		out.Blob = *p.Blob
	}
	if p.Data != nil {
		// An inline payload larger than the limit is refused before it
		// is decoded into memory.
		if base64.StdEncoding.DecodedLen(len(*p.Data)) > functions.InlineLimit+2 {
			return out, fault.Invalid(field+".data", "inline payloads are at most %d bytes: upload it as a blob and give its hash", functions.InlineLimit)
		}
		b, err := base64.StdEncoding.DecodeString(*p.Data)
		if err != nil {
			return out, fault.Invalid(field+".data", "not standard base64: %v", err)
		}
		if b == nil {
			b = []byte{} // given, but empty
		}
		out.Data = b
	}
	return out, nil
}

// payloadOut is a payload as GraphQL shows it, nil for none.
func payloadOut(p *functions.Payload) *model.Payload {
	if p == nil {
		return nil
	}
	if p.Blob != "" {
		return &model.Payload{Blob: &p.Blob}
	}
	s := base64.StdEncoding.EncodeToString(p.Data)
	return &model.Payload{Data: &s}
}

// phasesOf is when a call passed each start phase; it was queued when it
// was created.
func phasesOf(t *ent.Task) *model.TaskPhases {
	return &model.TaskPhases{
		QueuedAt: t.CreatedAt, ScheduledAt: t.ScheduledAt, ImageReadyAt: t.ImageReadyAt,
		CodeFetchedAt: t.CodeFetchedAt, ProcessStartedAt: t.ProcessStartedAt, ImportedAt: t.ImportedAt,
		StartedAt: t.StartedAt, FinishedAt: t.FinishedAt,
	}
}

// waitArg is a waitSeconds argument (absent: no wait); the domain caps it.
func waitArg(s *float64) (time.Duration, error) {
	if s == nil {
		return 0, nil
	}
	if math.IsNaN(*s) || *s < 0 {
		return 0, fault.Invalid("waitSeconds", "must not be negative")
	}
	return time.Duration(min(*s, functions.MaxWait.Seconds()) * float64(time.Second)), nil
}

// followChanges sends what load returns now, then again after each signal
// on topic and key, until load reports the end (that value is sent last)
// or the subscriber leaves. A value equal to the last one sent (same
// update time) is skipped.
func followChanges[T any](ctx context.Context, r *Resolver, topic, key string,
	load func(context.Context) (T, bool, error)) (<-chan T, error) {
	if err := requireSubscriber(ctx); err != nil {
		return nil, err
	}
	_, release, err := r.followOptions(ctx)
	if err != nil {
		return nil, err
	}
	sig, stop := r.Functions.Bus.Subscribe(topic, key)
	first, done, err := load(ctx)
	if err != nil {
		stop()
		release()
		return nil, err
	}
	out := make(chan T, 1)
	out <- first
	go func() {
		defer release()
		defer stop()
		defer close(out)
		// A lost signal (another replica's, during a reconnect) only
		// delays: the state is read again every so often anyway.
		tick := time.NewTicker(followRecheck)
		defer tick.Stop()
		last := updated(first)
		for !done {
			select {
			case <-ctx.Done():
				return
			case <-sig:
			case <-tick.C:
			}
			var v T
			v, done, err = load(ctx)
			if err != nil {
				if ctx.Err() == nil {
					addSubscriptionError(ctx, r.streamError(err))
				}
				return
			}
			u := updated(v)
			if u.Equal(last) && !done {
				continue
			}
			last = u
			select {
			case out <- v:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// followRecheck is how often a followed task or map is read again without
// a signal.
const followRecheck = 15 * time.Second

func updated(v any) time.Time {
	switch v := v.(type) {
	case *ent.Task:
		return v.UpdatedAt
	case *ent.FunctionMap:
		return v.UpdatedAt
	}
	return time.Time{}
}
