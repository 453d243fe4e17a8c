package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/levers9/levers9/ent/job"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// A submission retried with its idempotency key returns the first job and
// writes nothing, even when the retries race each other; without a key,
// or with another key, every submission is a new job.
func TestSubmitIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		s := w.service(w.schedule)
		sys := viewer.SystemContext(context.Background())

		first, err := s.SubmitOnce(w.admin, twoServices(), "train-42")
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.SubmitOnce(w.admin, twoServices(), "train-42")
		if err != nil || again.ID != first.ID {
			t.Fatalf("resubmission = %v, %v; want job %s", again, err, first.ID)
		}
		if jn, sn, rn := w.rows(t); jn != 1 || sn != 2 || rn != 1 {
			t.Fatalf("after a resubmission: %d jobs, %d services, %d river jobs; want 1, 2, 1", jn, sn, rn)
		}

		// Eight clients retrying one key at once: one job, all told its ID.
		ids := make([]string, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				j, err := s.SubmitOnce(w.admin, twoServices(), "race")
				errs[i] = err
				if j != nil {
					ids[i] = j.ID
				}
			}()
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil || ids[i] != ids[0] {
				t.Fatalf("racing submission %d = %q, %v; want %q", i, ids[i], errs[i], ids[0])
			}
		}
		if n, err := w.db.Ent.Job.Query().Where(job.IdempotencyKey("race")).Count(sys); err != nil || n != 1 {
			t.Fatalf("jobs with the raced key: %d, %v; want 1", n, err)
		}

		// No key, or different keys: new jobs each time.
		for _, key := range []string{"", "", "other"} {
			j, err := s.SubmitOnce(w.admin, twoServices(), key)
			if err != nil || j.ID == first.ID {
				t.Fatalf("submission with key %q = %v, %v; want a new job", key, j, err)
			}
		}
		if jn, _, _ := w.rows(t); jn != 5 {
			t.Fatalf("%d jobs; want 5", jn)
		}
	})
}

// Keys that cannot be stored or shown are refused before anything is written.
func TestSubmitIdempotencyKeyRefused(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		s := w.service(w.schedule)
		for name, key := range map[string]string{
			"too long":          strings.Repeat("k", 201),
			"control character": "a\nb",
			"invalid UTF-8":     "a\xffb",
		} {
			_, err := s.SubmitOnce(w.admin, twoServices(), key)
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.BadUserInput || fe.Field != "idempotencyKey" {
				t.Errorf("%s: err = %v; want BAD_USER_INPUT on idempotencyKey", name, err)
			}
		}
		if jn, sn, rn := w.rows(t); jn != 0 || sn != 0 || rn != 0 {
			t.Fatalf("after refused keys: %d jobs, %d services, %d river jobs; want none", jn, sn, rn)
		}
	})
}
