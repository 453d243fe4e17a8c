package graph

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/joblog"
)

// sharedLogEncoding serves the log subscriptions (jobLogs, jobLogBatches)
// from encodings shared between subscribers. Executing the LogLine
// selection for every line and every subscriber was most of a replica's
// work with many followers of one job; instead each line is encoded once
// per shape (joblog.Line.Encoded) and a subscriber's message is only
// those bytes put together under its own alias.
//
// It is a field middleware: gqlgen takes a stream field's result as the
// ready event function when the middleware returns one. Selections it does
// not know (a field it was not written for, @defer) keep gqlgen's own
// execution; TestLogSubscriptionShapes holds its output to gqlgen's.
func sharedLogEncoding(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Object != "Subscription" || (fc.Field.Name != "jobLogs" && fc.Field.Name != "jobLogBatches") {
		return next(ctx)
	}
	res, err := next(ctx)
	if err != nil || res == nil {
		return res, err
	}
	shape, ok := logShapeOf(graphql.GetOperationContext(ctx), fc.Field)
	if !ok {
		return res, nil
	}
	alias := fc.Field.Alias
	switch ch := res.(type) {
	case <-chan *joblog.Line:
		return func(ctx context.Context) graphql.Marshaler {
			select {
			case l, ok := <-ch:
				if !ok {
					return nil
				}
				return shape.message(ctx, alias, false, []*joblog.Line{l})
			case <-ctx.Done():
				return nil
			}
		}, nil
	case <-chan []*joblog.Line:
		return func(ctx context.Context) graphql.Marshaler {
			select {
			case b, ok := <-ch:
				if !ok {
					return nil
				}
				return shape.message(ctx, alias, true, b)
			case <-ctx.Done():
				return nil
			}
		}, nil
	}
	return res, nil
}

// logShape is what a subscription selects of LogLine: its fields in
// answer order, under their aliases.
type logShape struct {
	fields []logField
	key    string // the fields as one string: equal keys encode equally
	time   bool   // time is selected (it cannot be null)
}

type logField struct{ alias, name string }

// logFieldNames are the LogLine fields the shared encoding writes: all of
// them depend on the line alone, never on who reads it. A field added to
// LogLine is executed by gqlgen until it is added here, and
// TestLogFieldsMatchTheSchema fails until then.
var logFieldNames = map[string]bool{"__typename": true, "attempt": true, "seq": true, "service": true, "stream": true, "time": true, "text": true}

var logLineImplementors = []string{"LogLine"}

// logShapeOf collects the selection of field as gqlgen does (fragments,
// @skip and @include with the operation's variables); ok is false for a
// selection the shared encoding does not write.
func logShapeOf(oc *graphql.OperationContext, field graphql.CollectedField) (logShape, bool) {
	if oc == nil {
		return logShape{}, false
	}
	var s logShape
	var key strings.Builder
	seen := map[string]bool{}
	for _, f := range graphql.CollectFields(oc, field.Selections, logLineImplementors) {
		if !logFieldNames[f.Name] || len(f.Deferrables) > 0 || len(f.Arguments) > 0 {
			return logShape{}, false
		}
		if seen[f.Alias] { // as gqlgen writes a field set: the first of an alias
			continue
		}
		seen[f.Alias] = true
		s.fields = append(s.fields, logField{alias: f.Alias, name: f.Name})
		s.time = s.time || f.Name == "time"
		// Aliases are names ([_A-Za-z][_0-9A-Za-z]*): the separators
		// cannot occur in them.
		key.WriteString(f.Alias)
		key.WriteByte(':')
		key.WriteString(f.Name)
		key.WriteByte(',')
	}
	if len(s.fields) == 0 {
		return logShape{}, false
	}
	s.key = key.String()
	return s, true
}

// encode writes l as gqlgen would, with the same scalar marshalers.
func (s logShape) encode(l *joblog.Line) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range s.fields {
		if i > 0 {
			b.WriteByte(',')
		}
		graphql.MarshalString(f.alias).MarshalGQL(&b)
		b.WriteByte(':')
		var m graphql.Marshaler
		switch f.name {
		case "__typename":
			m = graphql.MarshalString("LogLine")
		case "attempt":
			m = graphql.MarshalInt(l.Attempt)
		case "seq":
			m = graphql.MarshalInt64(l.Seq)
		case "service":
			m = graphql.MarshalString(l.Service)
		case "stream":
			m = graphql.MarshalString(l.Stream)
		case "time":
			m = graphql.MarshalTime(l.Time)
		case "text":
			m = graphql.MarshalString(l.Text)
		}
		m.MarshalGQL(&b)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// message is one event's data: {"alias": line} or {"alias": [lines]}.
func (s logShape) message(ctx context.Context, alias string, list bool, lines []*joblog.Line) graphql.Marshaler {
	if s.time {
		// A stored line always has a time; one without would be null in
		// a non-null field, which nulls the whole answer as in gqlgen.
		for _, l := range lines {
			if l.Time.IsZero() {
				graphql.AddError(ctx, &gqlerror.Error{Message: "internal error", Path: graphql.GetPath(ctx),
					Extensions: map[string]any{"code": fault.Internal}})
				return graphql.WriterFunc(func(w io.Writer) {
					_, _ = io.WriteString(w, "{")
					graphql.MarshalString(alias).MarshalGQL(w)
					_, _ = io.WriteString(w, ":null}")
				})
			}
		}
	}
	encoded := make([][]byte, len(lines))
	size := len(alias) + 8
	for i, l := range lines {
		encoded[i] = l.Encoded(s.key, s.encode)
		size += len(encoded[i]) + 1
	}
	return graphql.WriterFunc(func(w io.Writer) {
		if b, ok := w.(*bytes.Buffer); ok {
			b.Grow(size)
		}
		_, _ = io.WriteString(w, "{")
		graphql.MarshalString(alias).MarshalGQL(w)
		_, _ = io.WriteString(w, ":")
		if list {
			_, _ = io.WriteString(w, "[")
		}
		for i, e := range encoded {
			if i > 0 {
				_, _ = io.WriteString(w, ",")
			}
			_, _ = w.Write(e)
		}
		if list {
			_, _ = io.WriteString(w, "]")
		}
		_, _ = io.WriteString(w, "}")
	})
}
