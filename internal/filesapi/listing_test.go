package filesapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/wire"
)

// A listing pages by limit and after; a full page names the next one, the
// last does not; a limit the listing cannot give is refused naming limit.
func TestListPages(t *testing.T) {
	t.Parallel()
	eachStorage(t, func(t *testing.T, s *site) {
		for _, key := range []string{"a", "b", "c"} {
			if code, b := s.do(t, "PUT", "/files/outputs/"+key, s.member, strings.NewReader(key)); code != http.StatusCreated {
				t.Fatalf("upload %s: %d %s", key, code, b)
			}
		}
		list := func(query string) wire.FileListing {
			t.Helper()
			code, b := s.do(t, "GET", "/files/outputs/?"+query, s.member, nil)
			var out wire.FileListing
			if err := json.Unmarshal(b, &out); code != http.StatusOK || err != nil {
				t.Fatalf("list ?%s: %d %s (%v)", query, code, b, err)
			}
			return out
		}
		keys := func(l wire.FileListing) string {
			var ks []string
			for _, o := range l.Objects {
				ks = append(ks, o.Key)
			}
			return strings.Join(ks, ",") + " next " + l.Next
		}
		for _, tc := range []struct{ query, want string }{
			{"limit=2", "a,b next b"},
			{"limit=2&after=b", "c next "},
			{"limit=3", "a,b,c next c"},
			{"", "a,b,c next "}, // the default page is larger
		} {
			if got := keys(list(tc.query)); got != tc.want {
				t.Errorf("list ?%s = %s, want %s", tc.query, got, tc.want)
			}
		}
		for _, limit := range []string{"0", "-1", "x", strconv.Itoa(buckets.MaxPageSize + 1)} {
			code, b := s.do(t, "GET", "/files/outputs/?limit="+limit, s.member, nil)
			if code != http.StatusBadRequest || !strings.Contains(string(b), "BAD_USER_INPUT") || !strings.Contains(string(b), "limit") {
				t.Errorf("list ?limit=%s: %d %s, want 400 BAD_USER_INPUT naming limit", limit, code, b)
			}
		}
	})
}
