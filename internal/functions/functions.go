// Package functions is the serverless layer's rules: apps and their
// functions, calls (tasks) and maps, the runner's side of a call, and the
// containers that run them. GraphQL, the runner API and workers are thin
// front doors onto it.
package functions

import (
	"context"
	"log/slog"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/function"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/jobs"
	"github.com/levers9/levers9/internal/notify"
)

// Service runs apps, functions and their calls.
type Service struct {
	DB   *database.DB
	Log  *slog.Logger
	Now  func() time.Time
	Bus  *notify.Bus
	Jobs *jobs.Service // starts and stops containers
	// Blobs tells whether the viewer's tenant holds a blob (code packages
	// and large payloads are uploaded before they are named).
	Blobs interface {
		Has(ctx context.Context, hash string) (bool, error)
	}
	// Secrets checks that the secrets a function names exist in the
	// viewer's environment (a fault.Invalid naming the missing ones).
	Secrets interface {
		Check(ctx context.Context, names []string) error
	}
	// Blueprints gives a function its READY blueprint of the viewer's
	// tenant (a fault naming field otherwise); nil: no blueprints.
	Blueprints interface {
		Ready(ctx context.Context, field, id string) (*ent.Blueprint, error)
	}
}

// InlineLimit is the largest payload carried inline; larger ones are
// uploaded as blobs and named by hash.
const InlineLimit = 1 << 20

// Payload is a pickled argument tuple or result: inline, or a blob.
type Payload struct {
	Data []byte
	Blob string // hex SHA-256
}

// Failure is why an attempt failed.
type Failure struct {
	Kind      string // exception, timeout, cancelled, container lost
	Message   string
	Traceback string
	Exception []byte // the pickled exception, when it pickles
}

// Failure kinds the server itself records.
const (
	KindException     = "exception"
	KindTimeout       = "timeout"
	KindCancelled     = "cancelled"
	KindContainerLost = "container lost"
	KindStartFailed   = "container failed to start"
)

// FunctionSpec is one function of an app as the SDK declares it.
type FunctionSpec struct {
	Name, Module, Qualname string
	Queue                  string // ID or name
	Project                string // ID or name; "" for none
	Image                  string
	// GPU is "", a type ("H100"), a count of a type ("H100:2") or a
	// preference list ("H100,A100": the first type with free capacity).
	GPU                    string
	CPU                    float64 // 0: 1
	MemoryMiB              int64   // 0: 1024
	TimeoutSeconds         int     // 0: 300
	Retries                int
	MinContainers          int
	MaxContainers          int // 0: 10
	KeepWarm               int
	Concurrency            int // 0: 1
	ScaledownWindowSeconds int // 0: 60

	Kind               function.Kind // "": FUNCTION
	Deployment         string        // the name in URLs; "": Name
	HTTPMethod         string        // an ENDPOINT's method; "": any
	SyncTimeoutSeconds int           // 0: 60
	Public             bool          // its URLs answer callers without a token (audited)
	Secrets            []string      // names of secrets its containers get
	Cron               string        // a CRON function's schedule (UTC)
	Ports              []int         // a BOX's ports (at least one), reached at /box/NAME/PORT/
	Command            []string      // a BOX that runs this command instead of the function (levers9 box run)
	Blueprint          string        // a READY blueprint's ID: its containers run the blueprint's image (not with Image)
}

// AppSpec is an app as the SDK deploys it.
type AppSpec struct {
	Name      string
	CodeHash  string
	Functions []FunctionSpec
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
