package nodes

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Label limits: labels describe a machine (rack=a4, gpu=h100), they are not
// a place to store data.
const (
	MaxLabels      = 64
	maxLabelKey    = 63
	maxLabelValue  = 128
	labelRuleWords = "a label is KEY=VALUE: KEY 1 to 63 letters, digits, '.', '_', '-' or '/', starting with a letter or digit; VALUE up to 128 letters, digits, '.', '_', '-', ':', '/', '@' or '+'"
)

var (
	labelKey   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
	labelValue = regexp.MustCompile(`^[A-Za-z0-9._:/@+-]*$`)
)

// Update changes what a tenant admin may change of a node: its name,
// queues, labels and drain flag. Liveness (status, last heartbeat) and
// inventory belong to the server and are not in the input at all.
func (s *Service) Update(ctx context.Context, id string, in ent.UpdateComputeNodeInput) (*ent.Node, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || !v.Admin {
		return nil, fault.New(fault.Forbidden, "only tenant admins change nodes")
	}
	if in.Name != nil {
		if err := checkName(*in.Name); err != nil {
			return nil, err
		}
	}
	for _, ls := range [][]string{in.Labels, in.AppendLabels} {
		if err := checkLabels(ls); err != nil {
			return nil, err
		}
	}
	// Loaded as the viewer: another tenant's node is not found.
	n, err := s.Ent.Node.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	labels, changed := mergeLabels(n.Labels, in)
	if len(labels) > MaxLabels {
		return nil, fault.Invalid("labels", "a node has at most %d labels, this would make %d", MaxLabels, len(labels))
	}
	// The merged list replaces the input's label fields, so a key appended
	// again replaces its value instead of appearing twice.
	in.Labels, in.AppendLabels, in.ClearLabels = nil, nil, false
	u := s.Ent.Node.UpdateOne(n).SetInput(in)
	if changed {
		u.SetLabels(labels)
	}
	n, err = u.Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("updating node %s: %w", id, err)
	}
	return n, nil
}

// checkLabels checks labels given in one input field.
func checkLabels(labels []string) error {
	if len(labels) > MaxLabels {
		return fault.Invalid("labels", "a node has at most %d labels, got %d", MaxLabels, len(labels))
	}
	seen := map[string]bool{}
	for _, l := range labels {
		k, val, ok := strings.Cut(l, "=")
		if !ok || len(k) > maxLabelKey || len(val) > maxLabelValue || !labelKey.MatchString(k) || !labelValue.MatchString(val) {
			return fault.Invalid("labels", "%q: %s", clip(l, 80), labelRuleWords)
		}
		if seen[k] {
			return fault.Invalid("labels", "label %s is given twice", k)
		}
		seen[k] = true
	}
	return nil
}

// mergeLabels applies the input's label fields to old: clear, then replace,
// then append (a key already there takes the appended value). changed is
// false when the input has no label field.
func mergeLabels(old []string, in ent.UpdateComputeNodeInput) (labels []string, changed bool) {
	labels = slices.Clone(old)
	if in.ClearLabels {
		labels, changed = nil, true
	}
	if in.Labels != nil {
		labels, changed = slices.Clone(in.Labels), true
	}
	for _, l := range in.AppendLabels {
		k, _, _ := strings.Cut(l, "=")
		labels = slices.DeleteFunc(labels, func(o string) bool { return strings.HasPrefix(o, k+"=") })
		labels, changed = append(labels, l), true
	}
	return labels, changed
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
