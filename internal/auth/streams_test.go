package auth_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/viewer"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestHoldAtMost: a token holds at most max bounded streams at once; the
// next is refused RATE_LIMITED, a place given back is taken again, another
// token is not counted, and Hold (no bound) is never refused.
func TestHoldAtMost(t *testing.T) {
	t.Parallel()
	db := fixture.Open(t, dbtest.SQLiteURL(t))
	tn := fixture.NewTenant(t, db, fixture.TenantOptions{Slug: "acme"})
	s := auth.NewService(db.Ent, fixture.Log(), nil)
	as := func(secret string) context.Context {
		v, err := s.Authenticate(context.Background(), secret)
		if err != nil {
			t.Fatal(err)
		}
		return viewer.NewContext(context.Background(), v)
	}
	admin, other := as(tn.Token(t, tn.Admin)), as(tn.Token(t, tn.Admin))

	var cancels []context.CancelFunc
	for range 2 {
		_, cancel, err := s.HoldAtMost(admin, 2)
		if err != nil {
			t.Fatal(err)
		}
		cancels = append(cancels, cancel)
	}
	var fe *fault.Error
	if _, _, err := s.HoldAtMost(admin, 2); !errors.As(err, &fe) || fe.Code != fault.RateLimited {
		t.Fatalf("a third stream of the token: %v; want RATE_LIMITED", err)
	}
	if _, cancel, err := s.HoldAtMost(other, 2); err != nil {
		t.Errorf("another token's stream: %v", err)
	} else {
		cancel()
	}
	held, cancel := s.Hold(admin)
	if held.Err() != nil {
		t.Errorf("an unbounded Hold beside them ended: %v", context.Cause(held))
	}
	cancel()
	cancels[0]()
	if _, cancel, err := s.HoldAtMost(admin, 2); err != nil {
		t.Errorf("a stream after one was given back: %v", err)
	} else {
		cancel()
	}
	cancels[1]()
}
