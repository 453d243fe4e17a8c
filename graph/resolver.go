// Package graph is the GraphQL front door: thin resolvers over the domain
// packages. Rules live in the domain and in ent privacy, never here.
package graph

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/internal/auth"
	"github.com/levers9/levers9/internal/blueprints"
	"github.com/levers9/levers9/internal/buckets"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/functions"
	"github.com/levers9/levers9/internal/joblog"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/ledger"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/queues"
	"github.com/levers9/levers9/internal/sandboxes"
	"github.com/levers9/levers9/internal/tenancy"
)

// Resolver holds the domain services resolvers call.
type Resolver struct {
	DB             *database.DB
	Ent            *ent.Client
	Log            *slog.Logger
	Auth           *auth.Service
	Tenancy        *tenancy.Service
	JobService     *jobs.Service
	StorageService buckets.Storages
	NodeService    *nodes.Service
	QueueService   *queues.Service
	Files          *buckets.Files
	Ledger         *ledger.Service
	// Functions runs serverless apps, their calls and maps.
	Functions *functions.Service
	// BlueprintService builds and finds blueprints; nil: buildBlueprint is
	// refused.
	BlueprintService *blueprints.Service
	// SandboxService creates sandboxes; nil: createSandbox is refused.
	SandboxService *sandboxes.Service
	// Secrets stores secrets (internal/secrets.Service); nil: refused.
	Secrets SecretService
	// PublicURL is the URL users reach the server at: deployments' URLs
	// start with it.
	PublicURL string
	// RelayDomain, when set, is where Job.tunnels point (PORT-SERVICE-JOB.DOMAIN),
	// as the dashboard's links do.
	RelayDomain string
	// Logs serves job output and events to queries and subscriptions.
	Logs *joblog.Service
	// Follow tunes subscriptions (buffer, stall limit); zero means defaults.
	Follow joblog.Options
	// Limits bound the cost and answer size of an operation; zero means
	// defaults.
	Limits Limits
	// Tracer, when set, traces queries and mutations (see tracing.go);
	// nil: off.
	Tracer trace.Tracer
}

// SecretService keeps secrets: values go in, never out.
type SecretService interface {
	Create(ctx context.Context, name string, values map[string]string, replace bool) (*ent.Secret, error)
	// Delete deletes secret idOrName and returns its ID.
	Delete(ctx context.Context, idOrName string) (string, error)
}
