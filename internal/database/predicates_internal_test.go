package database

import "testing"

func TestNormalPredicate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		stored, declared string
		same             bool
	}{
		{"((status)::text = 'PENDING'::text)", "status = 'PENDING'", true},
		{"(((status)::text = 'PENDING'::text) AND (smallest_cpu >= (0)::double precision))", "status = 'PENDING' AND smallest_cpu >= 0", true},
		{"(((status)::text = 'PENDING'::text) AND (smallest_memory_mib >= 0))", "status = 'PENDING' AND smallest_memory_mib >= 0", true},
		{"(((status)::text = 'PENDING'::text) AND (smallest_memory_mib >= 0))", "status = 'PENDING' AND smallest_cpu >= 0", false},
		{"((idempotency_key)::text <> ''::text)", "idempotency_key <> ''", true},
		{"((state)::text = 'DEPLOYED'::text)", "state = 'DEPLOYED'", true},
		{"((status)::text = 'RUNNING'::text)", "status = 'PENDING'", false},
		{"((status)::text <> 'PENDING'::text)", "status = 'PENDING'", false},
		{"((queue_id)::text = 'x'::text)", "status = 'x'", false},
	} {
		if got := normalPredicate(c.stored) == normalPredicate(c.declared); got != c.same {
			t.Errorf("%q against %q: same = %t, want %t", c.stored, c.declared, got, c.same)
		}
	}
}
