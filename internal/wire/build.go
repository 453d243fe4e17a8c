package wire

// A blueprint build is a job whose Start carries a Build instead of
// services to run as given: the agent builds the steps one image layer at
// a time (a cached virtual environment on the process runtime), streams
// the build's output as the job's log, exports the result and uploads it
// (POST /agent/images/KEY), then ends the job.

// Kinds of blueprint steps.
const (
	StepRegistry    = "REGISTRY"    // a base image pulled from a registry (or already on the node): Ref
	StepDebootstrap = "DEBOOTSTRAP" // a base built from a debootstrap root file system: Suite, Mirror, Packages (--include)
	StepApt         = "APT"         // apt-get install Packages
	StepPip         = "PIP"         // pip install Packages and/or Requirements
	StepRun         = "RUN"         // shell Commands, in order, in one layer
	StepCopy        = "COPY"        // the zip with content address Code unpacked at Path
	StepEnv         = "ENV"         // environment variables Env
	StepWorkdir     = "WORKDIR"     // working directory Path
)

// BuildStep is one step of a blueprint. Key is the hex SHA-256 of the
// previous step's key and this step's canonical JSON (Key left empty);
// the step's image is tagged with it.
type BuildStep struct {
	Key          string   `json:"key,omitempty"`
	Kind         string   `json:"kind"`
	Ref          string   `json:"ref,omitempty"`
	Suite        string   `json:"suite,omitempty"`
	Mirror       string   `json:"mirror,omitempty"`
	Packages     []string `json:"packages,omitempty"`
	Requirements string   `json:"requirements,omitempty"` // a requirements file's content
	Commands     []string `json:"commands,omitempty"`
	Code         string   `json:"code,omitempty"` // hex SHA-256 of an uploaded zip (a code blob)
	Path         string   `json:"path,omitempty"`
	Env          []EnvVar `json:"env,omitempty"`
}

// Build is what a build job makes.
type Build struct {
	Blueprint string `json:"blueprint"` // the blueprint's ID
	// Repository is the image repository of the tenant's blueprints
	// (levers9-bp/TENANT); step I's image is Repository:Steps[I].Key.
	Repository string      `json:"repository"`
	Steps      []BuildStep `json:"steps"`
	// Cached, when set, is an exported image of the tenant (a READY
	// blueprint's key) that holds the step images up to and including
	// Steps[CachedStep]: a node without them fetches it
	// (GET /agent/images/KEY) rather than build them again.
	Cached     string `json:"cached,omitempty"`
	CachedStep int    `json:"cachedStep,omitempty"`
}

// Image is the reference of step i's image.
func (b *Build) Image(i int) string { return b.Repository + ":" + b.Steps[i].Key }

// StreamCommit asks the agent to commit a running service's container to
// StreamOpen.Image, export it and upload it (POST /agent/images/KEY with
// the job's header) before it answers; the reply's Error says why not.
const StreamCommit = "commit"

// StepsBuiltHeader on an image upload says how many of the build's steps
// ran (the others were cached).
const StepsBuiltHeader = "Levers9-Steps-Built"
