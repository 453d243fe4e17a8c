package app

import (
	"net/url"
	"strconv"
	"strings"

	"entgo.io/contrib/entgql"

	"github.com/levers9/levers9/internal/fault"
)

// Paging is a page request of an ent connection (Paginate) from the query
// string: ?after=CURSOR for the next page, ?before=CURSOR for the previous.
type Paging struct {
	After, Before *entgql.Cursor[string]
	First, Last   *int
}

// ParsePaging reads after/before from q for pages of size.
func ParsePaging(q url.Values, size int) (Paging, error) {
	var p Paging
	switch {
	case q.Get("after") != "":
		p.After = new(entgql.Cursor[string])
		if err := p.After.UnmarshalGQL(q.Get("after")); err != nil {
			return p, fault.Invalid("after", "not a page of this list")
		}
	case q.Get("before") != "":
		p.Before = new(entgql.Cursor[string])
		if err := p.Before.UnmarshalGQL(q.Get("before")); err != nil {
			return p, fault.Invalid("before", "not a page of this list")
		}
		p.Last = &size
		return p, nil
	}
	p.First = &size
	return p, nil
}

// PageLinks returns the URLs of the previous and next pages: base (a path
// with the list's filters in q) with before/after set; empty at the ends.
func PageLinks(base string, q url.Values, pi entgql.PageInfo[string]) (prev, next string) {
	link := func(key string, c *entgql.Cursor[string]) string {
		v := url.Values{}
		for k, vs := range q {
			if k != "after" && k != "before" && len(vs) > 0 && vs[0] != "" {
				v.Set(k, vs[0])
			}
		}
		v.Set(key, CursorString(c))
		return base + "?" + v.Encode()
	}
	if pi.HasPreviousPage && pi.StartCursor != nil {
		prev = link("before", pi.StartCursor)
	}
	if pi.HasNextPage && pi.EndCursor != nil {
		next = link("after", pi.EndCursor)
	}
	return prev, next
}

// CursorString is a cursor as it goes into a URL.
func CursorString(c *entgql.Cursor[string]) string {
	var b strings.Builder
	c.MarshalGQL(&b)
	if s, err := strconv.Unquote(b.String()); err == nil {
		return s
	}
	return b.String()
}
