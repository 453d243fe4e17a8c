package live

import "context"

// maxForeign bounds the keys an Interest remembers as not the viewer's; past
// it they are forgotten and looked up again, so a long stream cannot grow
// with another tenant's activity.
const maxForeign = 4096

// Interest tells which bus keys (IDs) are the viewer's, so a stream woken by
// another tenant's activity reads nothing: the bus signals every tenant's
// changes to every stream of a topic. Keys it has not seen are looked up
// once as the viewer (ent privacy answers); keys found foreign stay
// remembered, up to maxForeign. Not safe for concurrent use: one stream
// owns it.
type Interest struct {
	mine, foreign map[string]bool
	// lookup returns which of ids the viewer can read; nil: keys not
	// marked as the viewer's are foreign.
	lookup func(ctx context.Context, ids []string) ([]string, error)
}

// NewInterest is an Interest looking unseen keys up with lookup (nil: only
// the keys Set are the viewer's).
func NewInterest(lookup func(ctx context.Context, ids []string) ([]string, error)) *Interest {
	return &Interest{mine: map[string]bool{}, foreign: map[string]bool{}, lookup: lookup}
}

// Set makes ids the viewer's keys (what the page shows now), replacing
// those set or found before.
func (in *Interest) Set(ids []string) {
	clear(in.mine)
	for _, id := range ids {
		in.mine[id] = true
		delete(in.foreign, id)
	}
}

// Any reports whether one of keys is the viewer's, looking up the ones it
// has not seen (at most one lookup per call).
func (in *Interest) Any(ctx context.Context, keys []string) (bool, error) {
	var unseen []string
	for _, k := range keys {
		switch {
		case in.mine[k]:
			return true, nil
		case !in.foreign[k]:
			unseen = append(unseen, k)
		}
	}
	if len(unseen) == 0 {
		return false, nil
	}
	var found []string
	if in.lookup != nil {
		var err error
		if found, err = in.lookup(ctx, unseen); err != nil {
			return false, err
		}
	}
	for _, id := range found {
		in.mine[id] = true
	}
	if len(in.foreign)+len(unseen) > maxForeign {
		clear(in.foreign)
	}
	for _, k := range unseen {
		if !in.mine[k] {
			in.foreign[k] = true
		}
	}
	return len(found) > 0, nil
}
