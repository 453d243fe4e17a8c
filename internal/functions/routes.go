package functions

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/app"
	"github.com/levers9/levers9/ent/function"
)

// URL groups: the first segment of a deployment's path. The older names
// (/function, /taskqueue, /pod) answer as aliases.
const (
	GroupJob      = "job"
	GroupEndpoint = "endpoint"
	GroupQueue    = "queue"
	GroupBox      = "box"
)

var groupAliases = map[string]string{
	GroupJob: GroupJob, "function": GroupJob,
	GroupEndpoint: GroupEndpoint,
	GroupQueue:    GroupQueue, "taskqueue": GroupQueue,
	GroupBox: GroupBox, "pod": GroupBox,
}

// PublicPrefix heads the URLs of public deployments, which name their
// tenant and environment since no token does: /pub/TENANT/ENV/endpoint/….
const PublicPrefix = "pub"

// Route is a deployment URL taken apart:
//
//	/GROUP/NAME[/vN | /APP_ID][/REST…]
//	/pub/TENANT/ENVIRONMENT/GROUP/NAME[/vN | /APP_ID][/REST…]
//
// Without a version the URL reaches the live version (the latest, or the
// one rolled back to); an app ID reaches an ephemeral app's deployment
// (the temporary URL `levers9 serve` prints).
type Route struct {
	Group       string
	Name        string
	Version     int    // 0: the live version
	AppID       string // an ephemeral app's deployment
	Tenant      string // tenant slug, public form only
	Environment string // environment name, public form only
	Rest        string // what follows, from its "/"; "/" when nothing does
}

var (
	versionSegment = regexp.MustCompile(`^v([1-9][0-9]{0,8})$`)
	appIDSegment   = regexp.MustCompile(`^app_[0-9A-Za-z]{1,64}$`)
	routeName      = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)
)

// ParseRoute takes a request path apart; ok is false when it is no
// deployment URL.
func ParseRoute(path string) (r Route, ok bool) {
	seg := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(seg) > 0 && seg[0] == PublicPrefix {
		if len(seg) < 3 || seg[1] == "" || seg[2] == "" {
			return Route{}, false
		}
		r.Tenant, r.Environment = seg[1], seg[2]
		seg = seg[3:]
	}
	if len(seg) < 2 {
		return Route{}, false
	}
	g, known := groupAliases[seg[0]]
	if !known || !routeName.MatchString(seg[1]) {
		return Route{}, false
	}
	r.Group, r.Name = g, seg[1]
	seg = seg[2:]
	if len(seg) > 0 {
		if m := versionSegment.FindStringSubmatch(seg[0]); m != nil {
			r.Version, _ = strconv.Atoi(m[1])
			seg = seg[1:]
		} else if appIDSegment.MatchString(seg[0]) {
			r.AppID = seg[0]
			seg = seg[1:]
		}
	}
	r.Rest = "/" + strings.Join(seg, "/")
	return r, true
}

// Prefix is the route's path without Rest.
func (r Route) Prefix() string {
	var b strings.Builder
	if r.Tenant != "" {
		b.WriteString("/" + PublicPrefix + "/" + r.Tenant + "/" + r.Environment)
	}
	b.WriteString("/" + r.Group + "/" + r.Name)
	switch {
	case r.AppID != "":
		b.WriteString("/" + r.AppID)
	case r.Version > 0:
		b.WriteString("/v" + strconv.Itoa(r.Version))
	}
	return b.String()
}

// GroupOf is the URL group a kind of function is reached under; "" for
// none (cron functions have no URL).
func GroupOf(k function.Kind) string {
	switch k {
	case function.KindFUNCTION:
		return GroupJob
	case function.KindENDPOINT, function.KindASGI, function.KindREALTIME:
		return GroupEndpoint
	case function.KindTASK_QUEUE:
		return GroupQueue
	case function.KindBOX:
		return GroupBox
	}
	return ""
}

// Paths are the URL paths (without scheme and host) that reach function
// f of app a: for a deployed app the versioned one, and the alias while
// f's version is the live one; for an ephemeral app its temporary one.
// Public deployments add the /pub/… form of each (tenant slug and
// environment name given).
func Paths(a *ent.App, f *ent.Function, tenantSlug, environment string) []string {
	g := GroupOf(f.Kind)
	if g == "" || a == nil {
		return nil
	}
	name := f.Deployment
	if name == "" {
		name = f.Name
	}
	var rs []Route
	if a.Ephemeral {
		rs = append(rs, Route{Group: g, Name: name, AppID: a.ID})
	} else {
		rs = append(rs, Route{Group: g, Name: name, Version: f.Version})
		if f.Version == a.LiveVersion && a.State == app.StateDEPLOYED {
			rs = append(rs, Route{Group: g, Name: name})
		}
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.Prefix())
		if f.Public && tenantSlug != "" && environment != "" {
			r.Tenant, r.Environment = tenantSlug, environment
			out = append(out, r.Prefix())
		}
	}
	return out
}
