package jobs

import (
	"context"
	"fmt"
	"unicode"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// maxIdempotencyKey bounds a key's length, as the column does.
const maxIdempotencyKey = 200

// checkIdempotencyKey refuses keys that could not be stored or shown:
// over-long ones and ones with control characters.
func checkIdempotencyKey(key string) error {
	if len(key) > maxIdempotencyKey {
		return fault.Invalid("idempotencyKey", "is %d bytes long; at most %d", len(key), maxIdempotencyKey)
	}
	for _, r := range key {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return fault.Invalid("idempotencyKey", "must be printable text")
		}
	}
	return nil
}

// submittedWith returns the viewer's job submitted with key, or nil when
// there is none. The privacy policy limits the look-up to the viewer's
// tenant and environment; the unique index spans the tenant.
func submittedWith(ctx context.Context, client *ent.Client, v *viewer.Viewer, key string) (*ent.Job, error) {
	j, err := client.Job.Query().
		Where(job.OwnerID(v.UserID), job.IdempotencyKey(key)).
		Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking up the job of idempotency key %q: %w", key, err)
	}
	return j, nil
}

// firstWithKey is the job a racing submission stored with key. A key used
// in another environment of the tenant is taken there and cannot be seen
// here: that is the client's mistake, said so.
func firstWithKey(ctx context.Context, client *ent.Client, v *viewer.Viewer, key string) (*ent.Job, error) {
	j, err := submittedWith(ctx, client, v, key)
	if err != nil {
		return nil, err
	}
	if j == nil {
		return nil, fault.Invalid("idempotencyKey", "is already used by one of your jobs in another environment")
	}
	return j, nil
}
