package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

const (
	fanoutSubscribers = 100
	fanoutRate        = 5000 // lines appended per second
	fanoutBatch       = 50   // lines per append, as an agent batches them
	fanoutFor         = 3 * time.Second
	fanoutLines       = fanoutRate * int(fanoutFor/time.Second)
)

// BenchmarkLogFanout appends fanoutRate lines a second in batches, as the
// tunnel does, for fanoutFor, while fanoutSubscribers follow the job over
// SSE or WebSocket (one connection each; jobLogs, a message per line, or
// jobLogBatches) and, in the same run, one direct
// in-process joblog.Follow as the baseline. Every subscriber must get every
// line in order. It reports the latency from a line's append to its arrival
// (p50/p99; base-: the direct follower's) and the lines per second the
// slowest subscriber received.
func BenchmarkLogFanout(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		for _, kind := range []string{"sse", "ws", "sse-batches", "ws-batches"} {
			b.Run(fmt.Sprintf("%s/%s/subscribers=%d", dialect, kind, fanoutSubscribers), func(b *testing.B) {
				var r fanoutResult
				for range b.N {
					r.add(benchFanout(b, dbtest.URL(b, dialect), kind))
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(r.minRate, "lines/s/sub")
				b.ReportMetric(r.baseRate, "base-lines/s")
				reportLatency(b, r.lat)
				b.ReportMetric(pctMs(r.base, 0.50), "base-p50-ms")
				b.ReportMetric(pctMs(r.base, 0.99), "base-p99-ms")
			})
		}
	}
}

type fanoutResult struct {
	lat, base         []time.Duration
	minRate, baseRate float64
}

func (r *fanoutResult) add(o fanoutResult) {
	r.lat = append(r.lat, o.lat...)
	r.base = append(r.base, o.base...)
	if r.minRate == 0 || o.minRate < r.minRate {
		r.minRate = o.minRate
	}
	if r.baseRate == 0 || o.baseRate < r.baseRate {
		r.baseRate = o.baseRate
	}
}

// pctMs is the p-th quantile of lat in ms.
func pctMs(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	i := min(len(sorted)-1, int(p*float64(len(sorted))))
	return float64(sorted[i]) / float64(time.Millisecond)
}

// fanoutReader reads one subscription's next line; done at its end.
type fanoutReader func() (l logLine, done bool, err error)

func benchFanout(b *testing.B, url, kind string) fanoutResult {
	e := newEnv(b, url)
	a := e.newTenant("bench")
	job := e.submit(a)
	var (
		mu    sync.Mutex
		res   fanoutResult
		wg    sync.WaitGroup
		errs  = make(chan error, fanoutSubscribers+1)
		start time.Time
		ready = make(chan struct{})
	)
	consume := func(read fanoutReader, base bool) {
		defer wg.Done()
		lat, took, err := readFanout(read)
		if err != nil {
			errs <- err
			return
		}
		<-ready
		rate := float64(fanoutLines) / took.Sub(start).Seconds()
		mu.Lock()
		defer mu.Unlock()
		if base {
			res.base, res.baseRate = lat, rate
			return
		}
		res.lat = append(res.lat, lat...)
		if res.minRate == 0 || rate < res.minRate {
			res.minRate = rate
		}
	}
	for range fanoutSubscribers {
		var read fanoutReader
		switch kind {
		case "sse":
			read = sseReader(e.sse(b, a.memberToken, subLogs, vars{"j": job}))
		case "sse-batches":
			read = sseBatchReader(e.sse(b, a.memberToken, subLogBatches, vars{"j": job}))
		case "ws", "ws-batches":
			c := e.dialWS(b, a.memberToken)
			if kind == "ws" {
				c.subscribe("1", subLogs, vars{"j": job})
				read = wsReader(c)
			} else {
				c.subscribe("1", subLogBatches, vars{"j": job})
				read = wsBatchReader(c)
			}
		}
		wg.Add(1)
		go consume(read, false)
	}
	// The baseline: a direct follower in the same process, same run.
	member := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: a.member.ID, TenantID: a.ent.ID, EnvironmentID: a.mainEnv})
	direct, err := e.logs.Follow(member, job, 0, 1, joblog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	wg.Add(1)
	go consume(func() (logLine, bool, error) {
		l, ok := <-direct
		if !ok {
			return logLine{}, true, nil
		}
		return logLine{Seq: l.Seq, Text: l.Text}, false, nil
	}, true)
	// Let every subscription start before timing.
	waitFor(b, 30*time.Second, func() bool { return e.logs.Running() >= fanoutSubscribers+1 })
	start = time.Now()
	close(ready)
	ctx := context.Background()
	tick := time.NewTicker(time.Second * fanoutBatch / fanoutRate)
	defer tick.Stop()
	for from := 1; from <= fanoutLines; from += fanoutBatch {
		lines := make([]wire.LogLine, 0, fanoutBatch)
		now := time.Now()
		for seq := from; seq < from+fanoutBatch; seq++ {
			// The text carries the append time, to measure latency.
			lines = append(lines, wire.LogLine{Service: "main", Stream: wire.Stdout, Seq: uint64(seq), Time: now, Text: strconv.FormatInt(now.UnixNano(), 10)})
		}
		if err := e.logs.Append(ctx, job, 1, lines); err != nil {
			b.Fatal(err)
		}
		if err := e.bus.Publish(ctx, notify.TopicJob, job); err != nil {
			b.Fatal(err)
		}
		<-tick.C // at the pace of a chatty job, not as fast as possible
	}
	e.endJob(job)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if len(res.lat) != fanoutSubscribers*fanoutLines || len(res.base) != fanoutLines {
		b.Fatalf("delivered %d lines and %d directly, want %d and %d", len(res.lat), len(res.base), fanoutSubscribers*fanoutLines, fanoutLines)
	}
	return res
}

// readFanout reads one subscription to its end and returns each line's
// latency and when the last line came; it checks order and completeness.
func readFanout(read fanoutReader) ([]time.Duration, time.Time, error) {
	out := make([]time.Duration, 0, fanoutLines)
	next := int64(1)
	var last time.Time
	for {
		l, done, err := read()
		if err != nil {
			return nil, last, fmt.Errorf("after line %d: %w", next-1, err)
		}
		if done {
			break
		}
		last = time.Now()
		if l.Seq != next {
			return nil, last, fmt.Errorf("got line %d, want %d", l.Seq, next)
		}
		next++
		ns, err := strconv.ParseInt(l.Text, 10, 64)
		if err != nil {
			return nil, last, err
		}
		out = append(out, last.Sub(time.Unix(0, ns)))
	}
	if next != int64(fanoutLines)+1 {
		return nil, last, fmt.Errorf("stream ended after line %d", next-1)
	}
	return out, last, nil
}

func sseReader(s *sseStream) fanoutReader {
	return func() (logLine, bool, error) {
		for s.sc.Scan() {
			line := s.sc.Text()
			if line == "event: complete" {
				return logLine{}, true, nil
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var r struct{ Data struct{ JobLogs logLine } }
			if err := json.Unmarshal([]byte(data), &r); err != nil {
				return logLine{}, false, err
			}
			return r.Data.JobLogs, false, nil
		}
		return logLine{}, true, s.sc.Err()
	}
}

func wsReader(c *wsClient) fanoutReader {
	return func() (logLine, bool, error) {
		m, err := c.next(time.Minute)
		if err != nil {
			return logLine{}, false, err
		}
		switch m.Type {
		case "next":
			var r struct {
				Data   struct{ JobLogs logLine }
				Errors []gqlError
			}
			if err := json.Unmarshal(m.Payload, &r); err != nil {
				return logLine{}, false, err
			}
			if len(r.Errors) > 0 {
				return logLine{}, false, fmt.Errorf("%+v", r.Errors)
			}
			return r.Data.JobLogs, false, nil
		case "complete":
			return logLine{}, true, nil
		}
		return logLine{}, false, fmt.Errorf("unexpected message %s %s", m.Type, m.Payload)
	}
}

// sseBatchReader reads a jobLogBatches stream line by line.
func sseBatchReader(s *sseStream) fanoutReader {
	var held []logLine
	return func() (logLine, bool, error) {
		for len(held) == 0 {
			if !s.sc.Scan() {
				return logLine{}, true, s.sc.Err()
			}
			line := s.sc.Text()
			if line == "event: complete" {
				return logLine{}, true, nil
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var r struct {
				Data struct{ JobLogBatches []logLine }
			}
			if err := json.Unmarshal([]byte(data), &r); err != nil {
				return logLine{}, false, err
			}
			held = r.Data.JobLogBatches
		}
		l := held[0]
		held = held[1:]
		return l, false, nil
	}
}

// wsBatchReader reads a jobLogBatches subscription line by line.
func wsBatchReader(c *wsClient) fanoutReader {
	var held []logLine
	return func() (logLine, bool, error) {
		for len(held) == 0 {
			m, err := c.next(time.Minute)
			if err != nil {
				return logLine{}, false, err
			}
			switch m.Type {
			case "next":
				var r struct {
					Data   struct{ JobLogBatches []logLine }
					Errors []gqlError
				}
				if err := json.Unmarshal(m.Payload, &r); err != nil {
					return logLine{}, false, err
				}
				if len(r.Errors) > 0 {
					return logLine{}, false, fmt.Errorf("%+v", r.Errors)
				}
				held = r.Data.JobLogBatches
			case "complete":
				return logLine{}, true, nil
			default:
				return logLine{}, false, fmt.Errorf("unexpected message %s %s", m.Type, m.Payload)
			}
		}
		l := held[0]
		held = held[1:]
		return l, false, nil
	}
}
