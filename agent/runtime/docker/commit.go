package docker

import (
	"context"
	"fmt"
	"io"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
)

var _ runtime.Committer = (*job)(nil)

// Commit implements runtime.Committer: the service's container is paused
// while its file system is committed to image (memory is not saved), then
// that one image is exported. The caller closes the tar.
func (j *job) Commit(ctx context.Context, service, image string) (io.ReadCloser, error) {
	if !isBlueprint(image) {
		return nil, fmt.Errorf("commit of service %s: image %.80q is not under %s", service, image, BlueprintRepository)
	}
	_, id, _, err := j.runningService(service)
	if err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	// The daemon copies the container's labels into the image, and
	// containers made from it would inherit those this node's runtime
	// sets only sometimes (ports, timeout): blanked, the image says only
	// which blueprint it is.
	labels := map[string]string{LabelBlueprint: blueprintKey(image)}
	for _, l := range []string{labelNode, labelTenant, labelJob, labelAttempt, labelService, labelIndex, labelServices, labelPorts, labelTimeout} {
		labels[l] = ""
	}
	if _, err := j.rt.cli.ContainerCommit(ctx, id, client.ContainerCommitOptions{
		Reference: image,
		Comment:   "levers9 snapshot of job " + j.id + " service " + service,
		Config:    &container.Config{Labels: labels},
	}); err != nil {
		return nil, fmt.Errorf("committing service %s: %w", service, err)
	}
	j.log.Info("committed a service's file system", "service", service, "image", image)
	rc, err := j.rt.cli.ImageSave(ctx, []string{image})
	if err != nil {
		return nil, fmt.Errorf("exporting %s: %w", image, err)
	}
	return rc, nil
}
