package scheduling

import (
	"regexp"
	"strings"
	"testing"
)

// classify is what the metrics' SQL does with ReasonClasses.
func classify(text string) string {
	for _, c := range ReasonClasses {
		parts := strings.Split(c.Like, "%")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		if regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(text) {
			return c.Label
		}
	}
	return "other"
}

// Every text a pending job can get falls in its kind's class: the
// patterns cannot drift from the sentences.
func TestReasonClasses(t *testing.T) {
	t.Parallel()
	nodes := []Node{used(node("n1", 8, 4096, gpus{"H100": 2}), 8, 0, gpus{"H100": 2})}
	for _, tc := range []struct {
		name string
		kind ReasonKind
		text string
	}{
		{"no nodes", NoNodes, Reason{Kind: NoNodes}.String("q")},
		{"no nodes while draining", NoNodes, "queue q has no online nodes taking new jobs: node n1 is draining"},
		{"pinned, offline", PinnedAway, Reason{Kind: PinnedAway, Pin: Pin{Node: "n1"}}.String("q")},
		{"pinned with why", PinnedAway, Reason{Kind: PinnedAway, Pin: Pin{Node: "n1", Why: "its bucket is there"}}.String("q")},
		{"no containers", NoContainers, Reason{Kind: NoContainers, Nodes: 2}.String("q")},
		{"waiting", Waiting, reasonFor(t, job("j", svc("a", 4, 1, 0)), nodes).String("q")},
		{"waiting for GPUs", Waiting, reasonFor(t, job("j", svc("a", 1, 1, 1, "H100")), nodes).String("q")},
		{"not together", Waiting, Reason{Kind: Waiting, Together: true}.String("q")},
		{"ports", Waiting, Reason{Kind: Waiting, Short: Port, Ports: []int{80}}.String("q")},
		{"too large", TooLarge, reasonFor(t, job("j", svc("a", 64, 1, 0)), nodes).String("q")},
		{"too large together", TooLarge, Reason{Kind: TooLarge, Together: true}.String("q")},
	} {
		if got, want := classify(tc.text), ClassOf(tc.kind); got != want || want == "other" {
			t.Errorf("%s: %q is %s, want %s", tc.name, tc.text, got, want)
		}
	}
	for text, want := range map[string]string{
		StartingPrefix + "n1":                 "starting",
		InvalidPrefix + "bucket b is nowhere": "invalid",
		"something new":                       "other",
	} {
		if got := classify(text); got != want {
			t.Errorf("%q is %s, want %s", text, got, want)
		}
	}
}

func reasonFor(t *testing.T, j Job, nodes []Node) Reason {
	t.Helper()
	_, ok, r, err := Place(j, nodes)
	if err != nil || ok {
		t.Fatalf("placed %v, err %v: want a reason", ok, err)
	}
	return r
}
