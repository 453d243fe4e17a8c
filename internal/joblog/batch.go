package joblog

import (
	"context"

	"github.com/levers9/levers9/internal/fault"
)

// Batch limits: a batch is what is already waiting when the consumer asks,
// never a wait for more, so batching adds no latency. The byte bound keeps
// one message small although a line may be 64 KiB.
const (
	MaxBatchLines = 1000
	maxBatchBytes = 1 << 20
)

// FollowBatches is Follow with the lines grouped: each batch holds the
// lines waiting when the previous one was taken (at least one, at most
// maxLines and about 1 MiB), in order. A subscriber of a chatty job gets
// one message per batch instead of one per line, which is what lets a
// replica serve many followers of one stream. The slow-subscriber rule is
// Follow's: a consumer that takes no batch holds up the lines behind it
// until Follow drops it.
func (s *Service) FollowBatches(ctx context.Context, jobID string, attempt int, fromSeq int64, maxLines int, opts Options) (<-chan []*Line, error) {
	if maxLines < 1 || maxLines > MaxBatchLines {
		return nil, fault.Invalid("max", "must be between 1 and %d", MaxBatchLines)
	}
	ctx, cancel := context.WithCancel(ctx)
	lines, err := s.Follow(ctx, jobID, attempt, fromSeq, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	out := make(chan []*Line)
	go func() {
		defer close(out)
		defer cancel() // a consumer gone ends the follow
		for b := range batches(lines, maxLines) {
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// batches yields the lines of in grouped as FollowBatches says.
func batches(in <-chan *Line, maxLines int) func(yield func([]*Line) bool) {
	return func(yield func([]*Line) bool) {
		for l := range in {
			b, size := []*Line{l}, len(l.Text)
		more:
			for len(b) < maxLines && size < maxBatchBytes {
				select {
				case l, ok := <-in:
					if !ok {
						break more
					}
					b, size = append(b, l), size+len(l.Text)
				default:
					break more
				}
			}
			if !yield(b) {
				return
			}
		}
	}
}
