package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/wire"
)

const (
	fanoutSubscribers = 100
	fanoutLines       = 5000
	fanoutBatch       = 50 // lines per append, as an agent batches them
)

// BenchmarkLogFanout stores fanoutLines lines in batches, as the tunnel
// does, while fanoutSubscribers SSE subscribers follow the job. It reports
// lines stored and delivered to every subscriber per second, and the
// latency from a line's append to its arrival at a subscriber.
func BenchmarkLogFanout(b *testing.B) {
	for _, dialect := range dbtest.Dialects() {
		b.Run(fmt.Sprintf("%s/subscribers=%d", dialect, fanoutSubscribers), func(b *testing.B) {
			var lat []time.Duration
			var elapsed time.Duration
			for range b.N {
				l, took := benchFanout(b, dbtest.URL(b, dialect))
				lat = append(lat, l...)
				elapsed += took
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(b.N*fanoutLines)/elapsed.Seconds(), "lines/s")
			reportLatency(b, lat)
		})
	}
}

func benchFanout(b *testing.B, url string) ([]time.Duration, time.Duration) {
	e := newEnv(b, url)
	a := e.newTenant("bench")
	job := e.submit(a)
	var (
		mu   sync.Mutex
		lat  []time.Duration
		wg   sync.WaitGroup
		errs = make(chan error, fanoutSubscribers)
	)
	for range fanoutSubscribers {
		s := e.sse(b, a.memberToken, subLogs, vars{"j": job})
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine, err := readFanout(s)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	// Let every subscription start before timing.
	waitFor(b, 30*time.Second, func() bool { return e.logs.Running() >= fanoutSubscribers })
	start := time.Now()
	ctx := context.Background()
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
	}
	e.endJob(job)
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if len(lat) != fanoutSubscribers*fanoutLines {
		b.Fatalf("delivered %d lines, want %d", len(lat), fanoutSubscribers*fanoutLines)
	}
	return lat, took
}

// readFanout reads one subscription to its end and returns each line's
// latency; it checks order and completeness.
func readFanout(s *sseStream) ([]time.Duration, error) {
	out := make([]time.Duration, 0, fanoutLines)
	next := int64(1)
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "event: complete" {
			break
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var r struct{ Data struct{ JobLogs logLine } }
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			return nil, err
		}
		l := r.Data.JobLogs
		if l.Seq != next {
			return nil, fmt.Errorf("got line %d, want %d", l.Seq, next)
		}
		next++
		ns, err := strconv.ParseInt(l.Text, 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, time.Since(time.Unix(0, ns)))
	}
	if next != fanoutLines+1 {
		return nil, fmt.Errorf("stream ended after line %d", next-1)
	}
	return out, nil
}
