package filesapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent/bucket"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/viewer"
)

// The storage meter's measurement sets each bucket's size to what its
// storage holds, whatever the database believed (jobs write linked buckets
// directly, operators write S3 behind levers9's back).
func TestMeasureBuckets(t *testing.T) {
	t.Parallel()
	eachStorage(t, func(t *testing.T, s *site) {
		sys := viewer.SystemContext(context.Background())
		if code, b := s.do(t, "PUT", "/files/outputs/a/b.txt", s.member, strings.NewReader("12345")); code != http.StatusCreated {
			t.Fatalf("upload: %d %s", code, b)
		}
		s.db.Ent.Bucket.Update().Where(bucket.Name("outputs")).SetSizeBytes(999).ExecX(sys)
		s.db.Ent.Bucket.Update().Where(bucket.Name("inputs")).SetSizeBytes(7).ExecX(sys)
		n, err := (&buckets.Files{Ent: s.db.Ent, AllowPrivateS3: true}).Measure(context.Background())
		if n != 2 {
			t.Errorf("measured %d buckets, want 2", n)
		}
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]int64{"outputs": 5, "inputs": 0} {
			if b := s.db.Ent.Bucket.Query().Where(bucket.Name(name)).OnlyX(sys); b.SizeBytes != want {
				t.Errorf("bucket %s: size %d after measuring, want %d", name, b.SizeBytes, want)
			}
		}
	})
}
