package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	"github.com/levers9/levers9/agent/runtime"
	"github.com/levers9/levers9/internal/wire"
)

// LabelBlueprint marks every image a build makes with its step's key.
const LabelBlueprint = "levers9.blueprint"

var _ runtime.Builder = (*Runtime)(nil)

// Build implements runtime.Builder: the steps from the first one this
// node lacks are built one image layer each (after loading the export of
// spec.Build.Cached when it holds more of them), then every step image is
// exported and uploaded.
func (r *Runtime) Build(ctx context.Context, spec runtime.BuildSpec) (runtime.Job, error) {
	if err := checkBuild(spec); err != nil {
		return nil, fmt.Errorf("build job %s: %w", spec.ID, err)
	}
	if err := r.ctx.Err(); err != nil {
		return nil, fmt.Errorf("build job %s: docker runtime closed", spec.ID)
	}
	if !r.claim(spec.ID) {
		return nil, fmt.Errorf("build job %s: already running", spec.ID)
	}
	if spec.Service.Name == "" {
		spec.Service.Name = runtime.BuildService
	}
	bctx, cancel := context.WithCancel(r.ctx)
	b := &buildJob{
		rt: r, spec: spec, ctx: bctx, cancel: cancel,
		log:    r.log.With("job", spec.ID, "build", spec.Build.Blueprint),
		events: make(chan runtime.Event, eventBuffer), done: make(chan struct{}),
	}
	go b.run()
	return b, nil
}

func checkBuild(spec runtime.BuildSpec) error {
	b := spec.Build
	switch {
	case len(b.Steps) == 0:
		return errors.New("a build needs steps")
	case !isBlueprint(b.Repository+":x") || !repositoryRE.MatchString(b.Repository):
		return fmt.Errorf("repository %.80q is not under %s", b.Repository, BlueprintRepository)
	case spec.Upload == nil:
		return errors.New("a build needs somewhere to upload its image")
	}
	for i, s := range b.Steps {
		if !codeHash(s.Key) {
			return fmt.Errorf("step %d: key %.80q is not a hex SHA-256", i+1, s.Key)
		}
	}
	if b.Cached != "" && (!codeHash(b.Cached) || b.CachedStep < 0 || b.CachedStep >= len(b.Steps)) {
		return fmt.Errorf("cached image %.80q (step %d) does not fit the build", b.Cached, b.CachedStep)
	}
	return nil
}

// repositoryRE is a blueprint repository (levers9-bp/TENANT): it starts
// each step's Dockerfile, so it is one plain word.
var repositoryRE = regexp.MustCompile(`^levers9-bp/[a-z0-9][a-z0-9_.-]{0,127}$`)

func codeHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// buildJob is a running build: a job of one service whose output is the
// build's.
type buildJob struct {
	rt     *Runtime
	spec   runtime.BuildSpec
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	events chan runtime.Event
	done   chan struct{}

	emitMu sync.Mutex
	seq    uint64

	mu      sync.Mutex
	stopped string // the first stop reason
	result  runtime.Result
	built   int // steps built (not cached)

	network string // the steps' network, made by the first RUN (build goroutine only)
}

func (b *buildJob) ID() string                   { return b.spec.ID }
func (b *buildJob) Events() <-chan runtime.Event { return b.events }
func (b *buildJob) Done() <-chan struct{}        { return b.done }

// Stop cancels the build; the service ends FAILED with the reason.
func (b *buildJob) Stop(reason string, _ time.Duration) {
	b.mu.Lock()
	if b.stopped == "" {
		b.stopped = reason
		if b.stopped == "" {
			b.stopped = "stopped"
		}
	}
	b.mu.Unlock()
	b.cancel()
}

func (b *buildJob) Wait() runtime.Result {
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.result
}

// StepsBuilt is how many steps the build ran (the others were cached).
func (b *buildJob) StepsBuilt() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.built
}

func (b *buildJob) emitLog(stream runtime.Stream, text string) {
	b.emitMu.Lock()
	defer b.emitMu.Unlock()
	b.seq++
	b.events <- runtime.LogEvent{JobID: b.spec.ID, Service: b.spec.Service.Name, Stream: stream, Seq: b.seq, Time: time.Now(), Text: text}
}

func (b *buildJob) emitState(state runtime.State, code *int, reason string) {
	b.emitMu.Lock()
	defer b.emitMu.Unlock()
	b.events <- runtime.StateEvent{JobID: b.spec.ID, Service: b.spec.Service.Name, State: state, ExitCode: code, Reason: reason, Time: time.Now()}
}

func (b *buildJob) printf(format string, args ...any) {
	(&lineSplitter{emit: func(s string) { b.emitLog(runtime.Stdout, s) }}).write(fmt.Sprintf(format, args...) + "\n")
}

func (b *buildJob) run() {
	b.emitState(runtime.Starting, nil, "")
	b.emitState(runtime.Running, nil, "")
	ctx := b.ctx
	if b.spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.spec.Timeout)
		defer cancel()
	}
	err := b.build(ctx)
	b.cancel()
	b.mu.Lock()
	stopped := b.stopped
	b.mu.Unlock()
	name := b.spec.Service.Name
	var res runtime.ServiceResult
	cause := ""
	switch {
	case err == nil:
		zero := 0
		res = runtime.ServiceResult{Name: name, State: runtime.Exited, ExitCode: &zero}
	case stopped != "":
		res = runtime.ServiceResult{Name: name, State: runtime.Failed, Reason: "stopped: " + stopped}
		cause = stopped
	case b.spec.Timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res = runtime.ServiceResult{Name: name, State: runtime.Failed, Reason: "timeout"}
		cause = "timeout"
	default:
		res = runtime.ServiceResult{Name: name, State: runtime.Failed, Reason: err.Error()}
		b.emitLog(runtime.Stderr, "build failed: "+err.Error())
	}
	b.emitState(res.State, res.ExitCode, res.Reason)
	b.mu.Lock()
	b.result = runtime.Summarize(cause, []runtime.ServiceResult{res})
	b.mu.Unlock()
	b.log.Info("build ended", "status", b.result.Status, "reason", b.result.Reason)
	b.emitMu.Lock()
	close(b.events)
	b.emitMu.Unlock()
	b.rt.release(b.spec.ID)
	close(b.done)
}

// build runs the steps and uploads the result.
func (b *buildJob) build(ctx context.Context) error {
	bs := b.spec.Build
	n := len(bs.Steps)
	have, err := b.deepestLocal(ctx)
	if err != nil {
		return err
	}
	if bs.Cached != "" && bs.CachedStep > have {
		ref := bs.Repository + ":" + bs.Cached
		b.printf("loading steps 1-%d from blueprint %s", bs.CachedStep+1, short(bs.Cached))
		if err := b.rt.loadBlueprint(ctx, b.spec.ID, ref); err != nil {
			return err
		}
		if ok, err := b.rt.hasImage(ctx, bs.Image(bs.CachedStep)); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("the export of blueprint %s lacks step %d's image", short(bs.Cached), bs.CachedStep+1)
		}
		have = bs.CachedStep
	}
	for i := 0; i <= have; i++ {
		b.printf("step %d/%d %s %s (cached)", i+1, n, bs.Steps[i].Kind, stepSummary(bs.Steps[i]))
	}
	defer b.removeNetwork()
	for i := have + 1; i < n; i++ {
		s := bs.Steps[i]
		b.printf("step %d/%d %s %s (building)", i+1, n, s.Kind, stepSummary(s))
		began := time.Now()
		if err := b.buildStep(ctx, i); err != nil {
			return fmt.Errorf("step %d/%d %s: %w", i+1, n, s.Kind, err)
		}
		b.mu.Lock()
		b.built++
		b.mu.Unlock()
		b.printf("step %d/%d done in %s", i+1, n, time.Since(began).Round(time.Millisecond))
	}
	return b.export(ctx)
}

// deepestLocal is the index of the deepest step whose image the daemon
// has (-1: none): the build goes on from the step after it.
func (b *buildJob) deepestLocal(ctx context.Context) (int, error) {
	for i := len(b.spec.Build.Steps) - 1; i >= 0; i-- {
		ok, err := b.rt.hasImage(ctx, b.spec.Build.Image(i))
		if err != nil {
			return 0, err
		}
		if ok {
			return i, nil
		}
	}
	return -1, nil
}

func (r *Runtime) hasImage(ctx context.Context, ref string) (bool, error) {
	_, err := r.cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("inspecting image %s: %w", ref, err)
}

func (b *buildJob) buildStep(ctx context.Context, i int) error {
	bs := b.spec.Build
	s := bs.Steps[i]
	target := bs.Image(i)
	switch {
	case s.Kind == wire.StepRegistry:
		if i != 0 {
			return errors.New("only the first step may name a base image")
		}
		// docker.io/levers9-bp/T:K is the same local image as
		// levers9-bp/T:K: another tenant's, if it were taken.
		if l := strings.ToLower(s.Ref); isBlueprint(l) || strings.Contains(l, "/"+BlueprintRepository) {
			return fmt.Errorf("base image %s is a blueprint's: name the blueprint instead", s.Ref)
		}
		err := b.rt.ensureImage(ctx, b.spec.ID, s.Ref, func(p string) { b.printf("%s", p) })
		if err != nil {
			return err
		}
		_, err = b.rt.cli.ImageTag(ctx, client.ImageTagOptions{Source: s.Ref, Target: target})
		if err != nil {
			return fmt.Errorf("tagging %s as %s: %w", s.Ref, target, err)
		}
		return nil
	case s.Kind == wire.StepDebootstrap:
		if i != 0 {
			return errors.New("only the first step may build a base")
		}
		return b.debootstrap(ctx, s, target)
	case i == 0:
		return fmt.Errorf("the first step must be %s or %s", wire.StepRegistry, wire.StepDebootstrap)
	}
	return b.dockerfileStep(ctx, i)
}

// dockerfileStep builds step i as `FROM <step i-1's image>` and its one
// instruction.
func (b *buildJob) dockerfileStep(ctx context.Context, i int) error {
	bs := b.spec.Build
	s := bs.Steps[i]
	instr, err := stepInstruction(s)
	if err != nil {
		return err
	}
	codeDir := ""
	if s.Kind == wire.StepCopy {
		if b.spec.Code == nil {
			return errors.New("this node cannot fetch code packages")
		}
		if codeDir, err = b.spec.Code(ctx, s.Code); err != nil {
			return fmt.Errorf("fetching the files to copy: %w", err)
		}
	}
	dockerfile := "FROM " + bs.Image(i-1) + "\n" + instr + "\n"
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeContext(pw, dockerfile, codeDir)) }()
	defer pr.Close()
	network, err := b.ensureNetwork(ctx)
	if err != nil {
		return err
	}
	opts := client.ImageBuildOptions{
		Tags: []string{bs.Image(i)}, Remove: true, ForceRemove: true, Version: build.BuilderV1,
		Labels: map[string]string{LabelBlueprint: s.Key}, NetworkMode: network,
	}
	if m := b.spec.Service.MemoryMiB; m > 0 {
		opts.Memory, opts.MemorySwap = m<<20, m<<20
	}
	if c := b.spec.Service.CPU; c > 0 {
		opts.CPUPeriod, opts.CPUQuota = 100_000, int64(c*100_000)
	}
	res, err := b.rt.cli.ImageBuild(ctx, pr, opts)
	if err != nil {
		return fmt.Errorf("starting the build: %w", err)
	}
	defer res.Body.Close()
	lines := &lineSplitter{emit: func(s string) { b.emitLog(runtime.Stdout, s) }}
	err = readJSONStream(res.Body, lines.write)
	lines.flush()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if ok, err := b.rt.hasImage(ctx, bs.Image(i)); err != nil {
		return err
	} else if !ok {
		return errors.New("the image is missing after the build")
	}
	return nil
}

// ensureNetwork is the build's own bridge network, which its step
// containers join: on the daemon's default bridge, builds of different
// tenants running side by side would reach each other. Labeled as a job's,
// so a restarted agent removes it if left.
func (b *buildJob) ensureNetwork(ctx context.Context) (string, error) {
	if b.network != "" {
		return b.network, nil
	}
	name := networkName(b.spec.ID, b.spec.Attempt)
	labels := jobLabels(b.rt.cfg.NodeID, runtime.JobSpec{ID: b.spec.ID, Attempt: b.spec.Attempt, Tenant: b.spec.Tenant})
	_, err := b.rt.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels})
	if err != nil && !cerrdefs.IsConflict(err) {
		return "", fmt.Errorf("creating the build's network: %w", err)
	}
	b.network = name
	return name, nil
}

func (b *buildJob) removeNetwork() {
	if b.network == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.rt.cli.NetworkRemove(ctx, b.network, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		b.log.Warn("build network not removed", "network", b.network, "err", err)
	}
}

// writeContext writes a build context: the Dockerfile and, for a COPY
// step, the files of dir under code/.
func writeContext(w io.Writer, dockerfile, dir string) error {
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: epoch}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return err
	}
	if dir != "" {
		if err := tw.WriteHeader(&tar.Header{Name: codeDirInContext + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			name := codeDirInContext + "/" + filepath.ToSlash(rel)
			fi, err := d.Info()
			if err != nil {
				return err
			}
			switch {
			case fi.IsDir():
				return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch})
			case !fi.Mode().IsRegular():
				return nil // the code cache holds only files and folders
			}
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: epoch}); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
		if err != nil {
			return fmt.Errorf("packing the files to copy: %w", err)
		}
	}
	return tw.Close()
}

// export saves every step image (one tar: shared layers once) and uploads
// it under the last step's key.
func (b *buildJob) export(ctx context.Context) error {
	bs := b.spec.Build
	var refs []string
	for i := range bs.Steps {
		ok, err := b.rt.hasImage(ctx, bs.Image(i))
		if err != nil {
			return err
		}
		if ok {
			refs = append(refs, bs.Image(i))
		}
	}
	final := bs.Steps[len(bs.Steps)-1].Key
	b.printf("exporting %d step images", len(refs))
	began := time.Now()
	rc, err := b.rt.cli.ImageSave(ctx, refs)
	if err != nil {
		return fmt.Errorf("exporting the image: %w", err)
	}
	defer rc.Close()
	b.mu.Lock()
	built := b.built
	b.mu.Unlock()
	if err := b.spec.Upload(ctx, final, rc, built); err != nil {
		return fmt.Errorf("uploading the image: %w", err)
	}
	b.printf("uploaded blueprint %s in %s (%d of %d steps built)", short(final), time.Since(began).Round(time.Millisecond), built, len(bs.Steps))
	return nil
}

func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

// trimOutput keeps the end of a long command output for an error.
func trimOutput(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 2000 {
		s = "…" + strings.ToValidUTF8(s[len(s)-2000:], "")
	}
	return s
}
