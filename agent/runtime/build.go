package runtime

import (
	"context"
	"io"
	"time"

	"github.com/levers9/levers9/internal/wire"
)

// BuildService is the one service of a blueprint build job: its log is
// the build's output.
const BuildService = "build"

// BuildSpec is a blueprint build to run (a wire.Start with a Build).
type BuildSpec struct {
	ID      string
	Attempt int
	Tenant  string
	Timeout time.Duration // 0 = none; on expiry the build fails with reason "timeout"
	// Service is the "build" service: its name, the final image, and the
	// CPU and memory the build's steps may use.
	Service ServiceSpec
	Build   wire.Build
	// Code returns the directory holding code package hash unpacked (a
	// COPY step's zip).
	Code func(ctx context.Context, hash string) (string, error)
	// Upload sends the exported image (a `docker save` tar of every step
	// image) to the server under key, saying how many steps ran.
	Upload func(ctx context.Context, key string, tar io.Reader, stepsBuilt int) error
}

// Builder is a runtime that builds blueprints. The job it returns has one
// service, BuildService: STARTING, RUNNING, the build's output as log
// lines, then EXITED (the image is uploaded) or FAILED with the reason.
type Builder interface {
	Build(ctx context.Context, spec BuildSpec) (Job, error)
}

// Committer is a job whose service's file system can be saved as an image
// (a sandbox's snapshot): Commit commits service's container to image and
// returns the `docker save` tar of that one image. The caller closes it.
type Committer interface {
	Commit(ctx context.Context, service, image string) (io.ReadCloser, error)
}

// ImageFetcher returns the exported image (a `docker save` tar) holding
// blueprint image ref, fetched from the server for job jobID.
type ImageFetcher func(ctx context.Context, jobID, ref string) (io.ReadCloser, error)

// ImageSource is a runtime that loads blueprint images through an
// ImageFetcher the agent sets (it knows the server and the credential).
type ImageSource interface {
	SetImageFetcher(f ImageFetcher)
}
