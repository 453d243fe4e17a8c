package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/levers9/levers9/graph/generated"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Limits on what one request may ask for; the cost and answer size limits
// are Limits (complexity.go).
const (
	// MaxBodyBytes fits a function call's largest inline argument (1 MiB,
	// 1.4 MiB in base64) and a map of thousands of small items; larger
	// payloads and files go elsewhere (/api/blobs, /files).
	MaxBodyBytes = 8 << 20
	// MaxAnonymousBodyBytes bounds a request without a token: a sign-in
	// (or a query that will be refused) fits with room to spare.
	MaxAnonymousBodyBytes = 16 << 10
	MaxDepth              = 15
	MaxPageSize           = 1000
)

// NewHandler returns the GraphQL HTTP handler. Authentication happens in
// Authenticate, which wraps it.
func NewHandler(r *Resolver) http.Handler {
	limits := r.Limits.withDefaults()
	srv := handler.New(generated.NewExecutableSchema(generated.Config{Resolvers: r}))
	addStreamTransports(srv, r)
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetParserTokenLimit(20000)
	srv.Use(operationMetrics{}) // first: counts operations refused by the extensions below
	srv.Use(operationTracing{tracer: r.Tracer})
	srv.Use(signedInIntrospection{})
	srv.Use(depthLimit{max: MaxDepth})
	srv.Use(&costLimit{max: limits.Complexity})
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		return next(withBudget(withOpLoader(withUsageLoader(ctx)), limits.ResponseBytes))
	})
	srv.AroundResponses(capResponse(limits.ResponseBytes))
	srv.AroundRootFields(requireViewer)
	srv.AroundFields(fieldLimits)
	srv.AroundFields(sharedLogEncoding) // after fieldLimits: it replaces the log stream's event function
	srv.SetErrorPresenter(presentError(r.Log))
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		r.Log.Error("panic in resolver", "panic", p, "path", graphql.GetPath(ctx))
		return errors.New("internal error")
	})
	stall := r.Follow.StallAfter
	if stall <= 0 {
		stall = defaultStallFor
	}
	return outageStatus(writeDeadline(endWithToken(r.Auth, srv), stall))
}

// presentError gives every error a code and hides anything internal.
func presentError(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		var gerr *gqlerror.Error
		if errors.As(err, &gerr) && gerr.Err == nil {
			// Parse and validation errors from gqlgen already say what is
			// wrong; to anonymous callers without naming what exists.
			if viewer.FromContext(ctx) == nil {
				gerr.Message = withoutSuggestions(gerr.Message)
			}
			return gerr
		}
		out := graphql.DefaultErrorPresenter(ctx, err)
		cause := err
		if errors.As(err, &gerr) && gerr.Err != nil {
			cause = gerr.Err
		}
		faults := fault.Classify(cause)
		if len(faults) == 0 {
			if o := fault.Outage(cause); o != nil {
				// Not a bug: logged as a warning, answered 503 (outageStatus).
				log.Warn("database unreachable", "err", err, "path", out.Path)
				markOutage(ctx, o)
				faults = []*fault.Error{o}
			}
		}
		if arg, ok := argumentPath(ctx, gerr); ok {
			// An argument that could not be read (a token amount, a cursor,
			// a number) is the caller's mistake however it failed.
			if len(faults) == 0 {
				faults = []*fault.Error{fault.Invalid(arg, "%s", argMessage(arg, cause))}
			} else if faults[0].Field == "" {
				f := *faults[0]
				f.Field = arg
				faults[0] = &f
			}
		}
		if len(faults) == 0 {
			log.Error("internal error", "err", err, "path", out.Path)
			out.Message = "internal error"
			out.Extensions = map[string]any{"code": fault.Internal}
			return out
		}
		f := faults[0]
		out.Message = f.Error()
		out.Extensions = map[string]any{"code": f.Code}
		if f.Field != "" {
			out.Extensions["field"] = f.Field
		}
		for k, v := range f.Details {
			out.Extensions[k] = v
		}
		if len(faults) > 1 {
			all := make([]map[string]any, len(faults))
			for i, f := range faults {
				all[i] = map[string]any{"field": f.Field, "message": f.Message, "code": f.Code}
			}
			out.Message = "the input has " + strconv.Itoa(len(faults)) + " problems: " + f.Error() + "; …"
			out.Extensions["problems"] = all
		}
		return out
	}
}

// requireViewer refuses every root field but sign-in and introspection to
// requests without credentials.
func requireViewer(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	fc := graphql.GetRootFieldContext(ctx)
	switch fc.Field.Name {
	case "signIn", "__typename":
		return next(ctx)
	}
	if viewer.FromContext(ctx) == nil {
		graphql.AddError(ctx, &gqlerror.Error{
			Message:    "sign in first: send an API token as Authorization: Bearer TOKEN",
			Path:       graphql.GetPath(ctx),
			Extensions: map[string]any{"code": fault.Unauthenticated},
		})
		return graphql.Null
	}
	return next(ctx)
}

// fieldLimits bounds `first` and `last` of every connection, gives one
// without either a page of MaxPageSize (what its cost assumed), and stops
// resolving once the answer is over its byte budget.
func fieldLimits(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if overBudget(ctx) {
		return nil, errTooLarge
	}
	first, paged := fc.Args["first"].(*int)
	last, _ := fc.Args["last"].(*int)
	for arg, n := range map[string]*int{"first": first, "last": last} {
		if n != nil && (*n < 0 || *n > MaxPageSize) {
			return nil, fault.Invalid(arg, "must be between 0 and %d", MaxPageSize)
		}
	}
	if _, hasLast := fc.Args["last"]; paged && hasLast && first == nil && last == nil {
		page := MaxPageSize
		fc.Args["first"] = &page
	}
	res, err := next(ctx)
	if err == nil && !spend(ctx, fc, res) {
		return nil, errTooLarge
	}
	return res, err
}

// errTooLarge fails the fields resolved once an answer is over budget;
// capResponse then replaces the whole answer by one error.
var errTooLarge = fault.New(fault.BadUserInput, "the answer is too large")

// signedInIntrospection allows __schema and __type to signed-in callers
// only: anonymous callers learn nothing of the schema beyond signIn.
type signedInIntrospection struct{}

func (signedInIntrospection) ExtensionName() string                   { return "SignedInIntrospection" }
func (signedInIntrospection) Validate(graphql.ExecutableSchema) error { return nil }
func (signedInIntrospection) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	oc.DisableIntrospection = viewer.FromContext(ctx) == nil
	return nil
}

// withoutSuggestions drops the "Did you mean …?" gqlparser appends to
// validation errors (unknown fields, arguments, types, enum values), which
// would let an anonymous caller spell out the schema by guessing.
func withoutSuggestions(msg string) string {
	if i := strings.Index(msg, " Did you mean"); i >= 0 {
		return msg[:i]
	}
	return msg
}

// argumentPath reports whether err arose reading an argument of the field
// of ctx (its path goes below the field's), and names the argument as
// clients know it: "after", or the path inside an input object without the
// argument's name ("tokens", "gpuPrices[0].perMinute").
func argumentPath(ctx context.Context, gerr *gqlerror.Error) (string, bool) {
	fc := graphql.GetFieldContext(ctx)
	if gerr == nil || fc == nil {
		return "", false
	}
	field := fc.Path()
	if len(gerr.Path) <= len(field) || !slices.Equal(gerr.Path[:len(field)], field) {
		return "", false
	}
	rel := gerr.Path[len(field):]
	if len(rel) > 1 {
		rel = rel[1:]
	}
	var b strings.Builder
	for _, p := range rel {
		switch p := p.(type) {
		case ast.PathName:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(p))
		case ast.PathIndex:
			b.WriteString("[" + strconv.Itoa(int(p)) + "]")
		}
	}
	return b.String(), true
}

// argMessage says what is wrong with an argument that could not be read,
// without the decoder's internals.
func argMessage(arg string, err error) string {
	if arg == "after" || arg == "before" {
		return "not a cursor of this connection (use pageInfo.endCursor or startCursor)"
	}
	return err.Error()
}

// depthLimit refuses operations nested deeper than max, fragments included.
type depthLimit struct{ max int }

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	if depth(oc.Operation.SelectionSet, oc.Doc.Fragments, 0, d.max) > d.max {
		return &gqlerror.Error{
			Message:    "query is nested more than " + strconv.Itoa(d.max) + " levels deep",
			Extensions: map[string]any{"code": fault.BadUserInput},
		}
	}
	return nil
}

func depth(set ast.SelectionSet, frags ast.FragmentDefinitionList, level, limit int) int {
	if level > limit {
		return level // deep enough to refuse; stop walking
	}
	deepest := level
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.SelectionSet) == 0 {
				d = level + 1
			} else {
				d = depth(s.SelectionSet, frags, level+1, limit)
			}
		case *ast.InlineFragment:
			d = depth(s.SelectionSet, frags, level, limit)
		case *ast.FragmentSpread:
			if f := frags.ForName(s.Name); f != nil {
				d = depth(f.SelectionSet, frags, level, limit)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

type ctxKey int

const clientAddrKey ctxKey = 0

// clientAddr is the remote address of the request, for rate limits.
func clientAddr(ctx context.Context) string {
	s, _ := ctx.Value(clientAddrKey).(string)
	return s
}

// Authenticator turns a bearer token into a viewer.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*viewer.Viewer, error)
}

// Authenticate wraps h: it puts the viewer of a bearer token (if any) in
// the request context, then reads the body within a limit. The token is
// checked before a byte of the body is read, and a bad one is refused
// outright rather than treated as anonymous; without one the body may be
// MaxAnonymousBodyBytes only (all an anonymous caller can do is sign in),
// so nobody unauthenticated can make the server wait for a large body.
func Authenticate(a Authenticator, log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		ctx = context.WithValue(ctx, clientAddrKey, host)
		limit, tooLarge := int64(MaxAnonymousBodyBytes), "request body larger than 16 KiB without a token: send Authorization: Bearer TOKEN"
		// Refusals come before the body is read: they close the connection
		// rather than let the server read (and wait for) the body after.
		refuse := func(status int, code fault.Code, msg string) {
			w.Header().Set("Connection", "close")
			writeError(w, status, code, msg)
		}
		if authz := r.Header.Get("Authorization"); authz != "" {
			secret, ok := auth.ParseBearer(authz)
			if !ok {
				refuse(http.StatusUnauthorized, fault.Unauthenticated, "the Authorization header must be: Bearer TOKEN")
				return
			}
			v, err := a.Authenticate(ctx, secret)
			if err != nil {
				if fs := fault.Classify(err); len(fs) > 0 {
					refuse(fault.HTTPStatus(fs[0].Code), fs[0].Code, fs[0].Message)
					return
				}
				if o := fault.Outage(err); o != nil {
					log.Warn("authenticating: database unreachable", "err", err)
					fault.SetRetryAfter(w.Header(), o)
					refuse(fault.HTTPStatus(o.Code), o.Code, o.Message)
					return
				}
				log.Error("authenticating", "err", err)
				refuse(http.StatusInternalServerError, fault.Internal, "internal error")
				return
			}
			ctx = viewer.NewContext(ctx, v)
			limit, tooLarge = MaxBodyBytes, "request body larger than 8 MiB"
		}
		if r.ContentLength > limit {
			refuse(http.StatusRequestEntityTooLarge, fault.BadUserInput, tooLarge)
			return
		}
		// Read the body here, not in gqlgen: a chunked body has no
		// Content-Length and must get the same 413 as one that announces it.
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					refuse(http.StatusRequestEntityTooLarge, fault.BadUserInput, tooLarge)
					return
				}
				refuse(http.StatusBadRequest, fault.BadUserInput, "could not read the request body")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		start := time.Now()
		h.ServeHTTP(w, r.WithContext(ctx))
		log.Debug("graphql", "took", time.Since(start))
	})
}

// writeError answers outside GraphQL execution in GraphQL's error shape.
func writeError(w http.ResponseWriter, status int, code fault.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]any{{"message": msg, "extensions": map[string]any{"code": code}}},
	})
}
