package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/internal/metrics"
	"github.com/levers9/levers9/internal/metrics/dbstate"
)

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var metricName = regexp.MustCompile(`\blevers9_[a-zA-Z0-9_]*`)

// dashboardProblems lists every metric d names that known (the metric
// families levers9 defines) lacks, and panels without a query.
func dashboardProblems(d dashboard, known []string) []string {
	exists := func(name string) bool {
		if slices.Contains(known, name) {
			return true
		}
		// A histogram's series.
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(known, base) {
				return true
			}
		}
		return false
	}
	var problems []string
	check := func(where, expr string) {
		for _, name := range metricName.FindAllString(expr, -1) {
			if !exists(name) {
				problems = append(problems, fmt.Sprintf("%s: %s is no levers9 metric", where, name))
			}
		}
	}
	for _, v := range d.Templating.List {
		check("variable "+v.Name, v.Definition)
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			problems = append(problems, fmt.Sprintf("panel %q has no query", p.Title))
		}
		for _, t := range p.Targets {
			if !metricName.MatchString(t.Expr) {
				problems = append(problems, fmt.Sprintf("panel %q: %q names no levers9 metric", p.Title, t.Expr))
			}
			check(fmt.Sprintf("panel %q", p.Title), t.Expr)
		}
	}
	return problems
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile("grafana/levers9.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("grafana/levers9.json: %v", err)
	}
	return d
}

// Every metric the dashboard queries is one levers9 defines, so a renamed
// metric cannot leave a panel silently empty.
func TestDashboardNamesOnlyDefinedMetrics(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	known := append(metrics.Names(), dbstate.Names()...)
	for _, p := range dashboardProblems(d, known) {
		t.Error(p)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("the dashboard needs a uid and a title (uid %q, title %q)", d.UID, d.Title)
	}
}

// The dashboard shows what the issue asks an operator to see.
func TestDashboardHasTheOperatorsPanels(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	for _, want := range []struct{ title, metric string }{
		{"Queue depth", "levers9_jobs"},
		{"Pending reasons", "levers9_jobs_pending"},
		{"GPUs booked and free", "levers9_gpus_free"},
		{"Placement latency", "levers9_job_start_wait_seconds_bucket"},
		{"Tokens per hour", "levers9_tokens_charged_total"},
		{"Job starts", "levers9_job_start_wait_seconds_count"},
		{"API errors", "levers9_graphql_operations_total"},
	} {
		found := false
		for _, p := range d.Panels {
			if strings.HasPrefix(p.Title, want.title) {
				for _, tg := range p.Targets {
					found = found || slices.Contains(metricName.FindAllString(tg.Expr, -1), want.metric)
				}
			}
		}
		if !found {
			t.Errorf("no panel %q querying %s", want.title, want.metric)
		}
	}
}

// The check above can fail: a misspelt metric and an empty panel are found.
func TestDashboardProblemsAreFound(t *testing.T) {
	t.Parallel()
	var d dashboard
	if err := json.Unmarshal([]byte(`{"panels": [
		{"title": "ok", "targets": [{"expr": "histogram_quantile(0.9, rate(levers9_job_start_wait_seconds_bucket[5m]))"}]},
		{"title": "typo", "targets": [{"expr": "sum(levers9_job_pending)"}]},
		{"title": "no metric", "targets": [{"expr": "up"}]},
		{"title": "empty"}]}`), &d); err != nil {
		t.Fatal(err)
	}
	got := dashboardProblems(d, append(metrics.Names(), dbstate.Names()...))
	want := []string{
		`panel "typo": levers9_job_pending is no levers9 metric`,
		`panel "no metric": "up" names no levers9 metric`,
		`panel "empty" has no query`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
