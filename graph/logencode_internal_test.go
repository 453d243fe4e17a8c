package graph

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/levers9/levers9/graph/generated"
	"github.com/levers9/levers9/internal/joblog"
)

// The shared log encoding's field list and the schema's LogLine agree both
// ways, and encode writes every field: a field added to the schema fails
// here until the encoding writes it (otherwise every subscriber selecting
// it would silently fall back to gqlgen's per-line execution).
func TestLogFieldsMatchTheSchema(t *testing.T) {
	t.Parallel()
	def := generated.NewExecutableSchema(generated.Config{}).Schema().Types["LogLine"]
	if def == nil {
		t.Fatal("no LogLine type in the schema")
	}
	for _, f := range def.Fields {
		if !logFieldNames[f.Name] {
			t.Errorf("LogLine.%s is not written by the shared encoding (logFieldNames, logShape.encode)", f.Name)
		}
	}
	line := &joblog.Line{Attempt: 2, Seq: 7, Service: "s", Stream: "stdout", Time: time.Unix(1, 0).UTC(), Text: "t"}
	for name := range logFieldNames {
		if name != "__typename" && def.Fields.ForName(name) == nil {
			t.Errorf("logFieldNames has %q, which LogLine does not", name)
			continue
		}
		var got map[string]any
		b := logShape{fields: []logField{{alias: "a", name: name}}}.encode(line)
		if err := json.Unmarshal(b, &got); err != nil || got["a"] == nil {
			t.Errorf("encoding %s: %s (%v)", name, b, err)
		}
	}
}
