package metering_test

import (
	"context"
	"testing"
	"time"

	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/ent/storage"
	"github.com/levers9/levers9/ent/tenant"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/metering"
)

// Buckets are charged per whole hour after the one they were created in, at
// size × price per TB-hour, once per hour however often the meter runs, and
// to their project when they name one.
func TestStorageMetering(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		f := newFixture(t, url, tenant.BudgetPolicyFinish)
		st, err := f.db.Ent.Storage.Create().SetName("s3").SetKind(storage.KindS3).
			SetEndpoint("http://127.0.0.1:9").SetS3Bucket("b").SetPricePerTbHour(40 * billing.Unit).Save(f.admin)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.db.Ent.Project.Create().SetName("vision").Save(f.admin)
		if err != nil {
			t.Fatal(err)
		}
		created := f.clock.Now() // 12:00:00 exactly: hour 12 is free
		mine, err := f.db.Ent.Bucket.Create().SetName("mine").SetStorage(st).SetCreatedAt(created).Save(f.admin)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := f.db.Ent.Bucket.Create().SetName("theirs").SetStorage(st).SetProject(p).SetCreatedAt(created).Save(f.admin)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []string{mine.ID, theirs.ID} {
			if err := f.db.Ent.Bucket.UpdateOneID(b).SetSizeBytes(250_000_000_000).Exec(f.sys); err != nil { // 0.25 TB
				t.Fatal(err)
			}
		}
		f.clock.Advance(3*time.Hour + 30*time.Minute) // 15:30: hours 13 and 14 are due
		for range 3 {
			if _, err := f.meter.TickStorage(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		cs, err := f.db.Ent.Charge.Query().Where(charge.KindEQ(charge.KindStorage)).All(f.sys)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 4 {
			t.Fatalf("%d storage charges, want 2 hours × 2 buckets", len(cs))
		}
		for _, c := range cs {
			if c.Tokens != 10*billing.Unit {
				t.Errorf("hour of 0.25 TB at 40/TB-hour charged %v, want 10", c.Tokens)
			}
			switch c.BucketID {
			case mine.ID:
				if c.PayerKind != charge.PayerKindUser || c.UserID != f.user {
					t.Errorf("bucket without project charged to %s %s", c.PayerKind, c.UserID)
				}
			case theirs.ID:
				if c.PayerKind != charge.PayerKindProject || c.ProjectID != p.ID {
					t.Errorf("project bucket charged to %s %s", c.PayerKind, c.ProjectID)
				}
			}
		}
		if got := metering.StorageHourCost(1, billing.Unit); got != 0 {
			t.Errorf("a byte-hour at 1 token per TB-hour = %v, want 0 after rounding", got)
		}
	})
}
