package auth

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter limits sign-in attempts per key (an email, a client address):
// a burst of 10, then one every 6 seconds.
type Limiter struct {
	mu      sync.Mutex
	now     func() time.Time
	buckets map[string]*rate.Limiter
	swept   time.Time
}

// NewLimiter returns an empty limiter.
func NewLimiter(now func() time.Time) *Limiter {
	return &Limiter{now: now, buckets: map[string]*rate.Limiter{}}
}

// Allow reports whether one more attempt for key may go ahead.
func (l *Limiter) Allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.swept) > 10*time.Minute {
		// Full buckets carry no information; drop them so memory stays bounded.
		for k, b := range l.buckets {
			if b.TokensAt(now) >= float64(b.Burst()) {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = rate.NewLimiter(rate.Every(6*time.Second), 10)
		l.buckets[key] = b
	}
	return b.AllowN(now, 1)
}
