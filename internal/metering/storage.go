package metering

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/ent/charge"
	"github.com/levers9/levers9/internal/billing"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/viewer"
)

// StorageHourCost prices one hour of size bytes at pricePerTBHour
// (1 TB = 10^12 bytes), rounded to the nearest micro-token.
func StorageHourCost(size int64, pricePerTBHour billing.Tokens) billing.Tokens {
	return billing.Tokens(math.Round(float64(size) * float64(pricePerTBHour) / 1e12))
}

// TickStorage charges every bucket, for each whole clock hour since it was
// last charged, its size as the storage layer last reported it at its
// storage's price. The hour a bucket is created in is free.
func (m *Meter) TickStorage(ctx context.Context) (TickResult, error) {
	sys := viewer.SystemContext(ctx)
	hour := m.Now().Unix() / 3600
	var res TickResult
	after := ""
	for {
		batch, err := m.DB.Ent.Bucket.Query().
			Where(bucket.IDGT(after), bucket.MeteredHourLT(hour)).
			WithStorage().
			Order(ent.Asc(bucket.FieldID)).Limit(batchSize).All(sys)
		if err != nil {
			return res, fmt.Errorf("listing buckets to meter: %w", err)
		}
		if len(batch) == 0 {
			return res, nil
		}
		after = batch[len(batch)-1].ID
		err = m.DB.InTx(ctx, func(tx *database.Tx) error {
			for _, b := range batch {
				n, err := chargeBucket(sys, tx.Ent, b, hour)
				if err != nil {
					return err
				}
				res.Charges += n
			}
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("metering storage: %w", err)
		}
		res.Jobs += len(batch)
	}
}

func chargeBucket(ctx context.Context, c *ent.Client, b *ent.Bucket, hour int64) (int, error) {
	from := max(b.MeteredHour, b.CreatedAt.Unix()/3600+1)
	cost := StorageHourCost(b.SizeBytes, b.Edges.Storage.PricePerTbHour)
	var builders []*ent.ChargeCreate
	for h := from; h < hour && cost > 0; h++ {
		cb := c.Charge.Create().
			SetTenantID(b.TenantID).SetBucketID(b.ID).SetUserID(b.OwnerID).
			SetKind(charge.KindStorage).SetTokens(cost).
			SetPeriodStart(unixHour(h)).SetPeriodEnd(unixHour(h + 1)).
			SetReason(fmt.Sprintf("%d bytes in bucket %s", b.SizeBytes, b.Name)).
			SetIdempotencyKey(fmt.Sprintf("storage:%s:%d", b.ID, h))
		setPayer(cb, bucketPayer(b))
		builders = append(builders, cb)
	}
	if len(builders) > 0 {
		err := c.Charge.CreateBulk(builders...).
			OnConflictColumns(charge.FieldIdempotencyKey).DoNothing().Exec(ctx)
		if err != nil {
			return 0, fmt.Errorf("charging bucket %s: %w", b.ID, err)
		}
		metrics.Charged(string(charge.KindStorage), len(builders), int64(cost)*int64(len(builders)))
	}
	err := c.Bucket.Update().Where(bucket.ID(b.ID), bucket.MeteredHourLT(hour)).SetMeteredHour(hour).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("recording metering of bucket %s: %w", b.ID, err)
	}
	return len(builders), nil
}

func bucketPayer(b *ent.Bucket) ledger.Payer {
	if b.ProjectID != "" {
		return ledger.Payer{TenantID: b.TenantID, ProjectID: b.ProjectID}
	}
	return ledger.Payer{TenantID: b.TenantID, UserID: b.OwnerID}
}

func unixHour(h int64) time.Time { return time.Unix(h*3600, 0).UTC() }
