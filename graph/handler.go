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
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/levers9/levers9/graph/generated"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// Limits on what one request may ask for.
const (
	MaxBodyBytes  = 1 << 20 // 1 MiB: job specs are small; files go elsewhere
	MaxDepth      = 15
	MaxComplexity = 5000
	MaxPageSize   = 1000
)

// NewHandler returns the GraphQL HTTP handler. Authentication happens in
// Authenticate, which wraps it.
func NewHandler(r *Resolver) http.Handler {
	srv := handler.New(generated.NewExecutableSchema(generated.Config{Resolvers: r}))
	addStreamTransports(srv, r)
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetParserTokenLimit(20000)
	srv.Use(extension.Introspection{})
	srv.Use(extension.FixedComplexityLimit(MaxComplexity))
	srv.Use(depthLimit{max: MaxDepth})
	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		return next(withUsageLoader(ctx))
	})
	srv.AroundRootFields(requireViewer)
	srv.AroundFields(capPageSize)
	srv.SetErrorPresenter(presentError(r.Log))
	srv.SetRecoverFunc(func(ctx context.Context, p any) error {
		r.Log.Error("panic in resolver", "panic", p, "path", graphql.GetPath(ctx))
		return errors.New("internal error")
	})
	stall := r.Follow.StallAfter
	if stall <= 0 {
		stall = defaultStallFor
	}
	return writeDeadline(endWithToken(r.Auth, srv), stall)
}

// presentError gives every error a code and hides anything internal.
func presentError(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		var gerr *gqlerror.Error
		if errors.As(err, &gerr) && gerr.Err == nil {
			// Parse and validation errors from gqlgen already say what is wrong.
			return gerr
		}
		out := graphql.DefaultErrorPresenter(ctx, err)
		cause := err
		if errors.As(err, &gerr) && gerr.Err != nil {
			cause = gerr.Err
		}
		faults := fault.Classify(cause)
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
	case "signIn", "__schema", "__type", "__typename":
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

// capPageSize bounds `first` and `last` of every connection.
func capPageSize(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	for _, arg := range []string{"first", "last"} {
		if n, ok := fc.Args[arg].(*int); ok && n != nil && (*n < 0 || *n > MaxPageSize) {
			return nil, fault.Invalid(arg, "must be between 0 and %d", MaxPageSize)
		}
	}
	return next(ctx)
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

// Authenticate wraps h: it limits the request body, and puts the viewer of a
// bearer token (if any) in the request context. A bad token is refused
// outright rather than treated as anonymous.
func Authenticate(a Authenticator, log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			writeError(w, http.StatusRequestEntityTooLarge, fault.BadUserInput, "request body larger than 1 MiB")
			return
		}
		// Read the body here, not in gqlgen: a chunked body has no
		// Content-Length and must get the same 413 as one that announces it.
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
			if err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					writeError(w, http.StatusRequestEntityTooLarge, fault.BadUserInput, "request body larger than 1 MiB")
					return
				}
				writeError(w, http.StatusBadRequest, fault.BadUserInput, "could not read the request body")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		ctx := r.Context()
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		ctx = context.WithValue(ctx, clientAddrKey, host)
		if authz := r.Header.Get("Authorization"); authz != "" {
			secret, ok := auth.ParseBearer(authz)
			if !ok {
				writeError(w, http.StatusUnauthorized, fault.Unauthenticated, "the Authorization header must be: Bearer TOKEN")
				return
			}
			v, err := a.Authenticate(ctx, secret)
			if err != nil {
				if fs := fault.Classify(err); len(fs) > 0 {
					writeError(w, http.StatusUnauthorized, fs[0].Code, fs[0].Message)
					return
				}
				log.Error("authenticating", "err", err)
				writeError(w, http.StatusInternalServerError, fault.Internal, "internal error")
				return
			}
			ctx = viewer.NewContext(ctx, v)
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
