package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/internal/filesapi"
	"github.com/levers9/levers9/internal/nodes"
	"github.com/levers9/levers9/internal/secrets"
	"github.com/levers9/levers9/internal/tenancy"
	"github.com/levers9/levers9/internal/tracing"
	"github.com/spf13/cobra"
)

// serverConfig is the whole configuration of levers9 server, read once
// from flags and the environment and checked by parseServerConfig.
type serverConfig struct {
	Addr        string
	DataDir     string
	DatabaseURL string
	PublicURL   string
	LogLevel    slog.Level
	Seed        tenancy.Seed
	NodeTTL     time.Duration
	NodeGrace   time.Duration
	LocalNode   bool
	Local       localNodeConfig
	MaxUpload   int64
	// AllowPrivateS3 lets S3 storages use internal endpoints.
	AllowPrivateS3 bool
	HTTP           httpLimits
	// RelayDomain serves job ports at PORT-SERVICE-JOB.RelayDomain; "":
	// only under /relay/ on the public URL.
	RelayDomain string
	// ReplicaURL is this replica's URL for the other replicas (relay
	// forwarding); "": derived from the listen address on PostgreSQL
	// (replicaURL), none on SQLite (one replica).
	ReplicaURL string
	// SecretKeyFile holds the keys secrets are sealed with (base64, one
	// per line or comma-separated; the first seals, all open); SecretKey
	// is the same from LEVERS9_SECRET_KEY (never a flag: command lines
	// are public). Neither: <data dir>/secret.key, made at first start.
	SecretKeyFile string
	SecretKey     string
	// PprofAddr serves net/http/pprof on its own listener; "": none.
	PprofAddr string
	// DrainDelay is how long, after SIGTERM, /readyz fails while the
	// server serves on before it stops.
	DrainDelay time.Duration
	Metrics    metricsConfig
	// OTLPEndpoint is the OTLP/HTTP collector spans go to; "": no tracing.
	OTLPEndpoint string
	// spanExporter, set by tests only (no flag), takes the spans of the
	// server and its built-in node instead of an OTLP collector.
	spanExporter tracing.Exporter
}

// defaultDrainDelay covers a Kubernetes endpoint update or a load
// balancer polling /readyz every couple of seconds.
const defaultDrainDelay = 5 * time.Second

// env returns the environment variable name, or def when unset.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// envSource gives flags their defaults from the environment and keeps,
// by flag, the error of each variable set to a value that does not
// parse: it stops the server unless the flag overrides it.
type envSource struct {
	lookup func(string) (string, bool)
	bad    map[string]error // by flag name
	order  []string         // flag names in bad, as registered
}

func newEnvSource(lookup func(string) (string, bool)) *envSource {
	return &envSource{lookup: lookup, bad: map[string]error{}}
}

func (e *envSource) str(name, def string) string {
	if v, ok := e.lookup(name); ok {
		return v
	}
	return def
}

// typed is the value of variable name parsed by parse, or def when the
// variable is unset or empty; a value that does not parse is recorded
// against flagName.
func typed[T any](e *envSource, flagName, name string, def T, kind string, parse func(string) (T, error)) T {
	s, ok := e.lookup(name)
	if !ok || s == "" {
		return def
	}
	v, err := parse(s)
	if err != nil {
		e.fail(flagName, fmt.Errorf("%s: invalid %s %q", name, kind, s))
		return def
	}
	return v
}

func (e *envSource) fail(flagName string, err error) {
	if _, dup := e.bad[flagName]; !dup {
		e.order = append(e.order, flagName)
	}
	e.bad[flagName] = err
}

// durationVar is a duration flag read by parseDuration (so 30d is a
// duration here too), defaulting to variable name, else def.
func (e *envSource) durationVar(fs *flag.FlagSet, p *time.Duration, flagName, name string, def time.Duration, usage string) {
	*p = typed(e, flagName, name, def, "duration", parseDuration)
	fs.Var(durationValue{p}, flagName, usage)
}

func (e *envSource) int64Var(fs *flag.FlagSet, p *int64, flagName, name string, def int64, usage string) {
	parse := func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
	fs.Int64Var(p, flagName, typed(e, flagName, name, def, "integer", parse), usage)
}

func (e *envSource) boolVar(fs *flag.FlagSet, p *bool, flagName, name string, def bool, usage string) {
	fs.BoolVar(p, flagName, typed(e, flagName, name, def, "boolean", strconv.ParseBool), usage)
}

// errors is the error of every bad variable whose flag was not given.
func (e *envSource) errors(fs *flag.FlagSet) error {
	var errs []error
	for _, name := range e.order {
		if !given(fs, name) {
			errs = append(errs, e.bad[name])
		}
	}
	return errors.Join(errs...)
}

// given reports whether flag name was on the command line.
func given(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// logQuotaVar registers the per-job log quota flag of a node, defaulting
// to LEVERS9_JOB_LOG_QUOTA or else DefaultLogQuota, and returns the
// variable's error when it is set but is no size.
func logQuotaVar(fs *flag.FlagSet, name, whose string, lookup func(string) (string, bool)) (*int64, error) {
	n := int64(agent.DefaultLogQuota)
	v := sizeValue{&n}
	var err error
	if s, ok := lookup("LEVERS9_JOB_LOG_QUOTA"); ok && s != "" {
		if serr := v.Set(s); serr != nil {
			err = fmt.Errorf("LEVERS9_JOB_LOG_QUOTA: %w", serr)
		}
	}
	fs.Var(v, name, "the most output stored per job attempt on "+whose+", e.g. 1GiB or 100MB; "+
		"later lines are dropped and the job's log says which; 0: no limit (LEVERS9_JOB_LOG_QUOTA; default 1GiB)")
	return &n, err
}

// parseServerConfig reads levers9 server's flags from args, each
// defaulting to its environment variable (read with lookup), and checks
// the result. Every error is also written to out, where the flag package
// writes its own, so the caller only has to exit with exitUsage (or
// exitOK for -h: see usageExit).
func parseServerConfig(args []string, lookup func(string) (string, bool), out io.Writer) (serverConfig, error) {
	var c serverConfig
	e := newEnvSource(lookup)
	fs := flag.NewFlagSet("levers9 server", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Addr, "addr", e.str("LEVERS9_ADDR", "127.0.0.1:8080"), "address to listen on (LEVERS9_ADDR)")
	fs.StringVar(&c.DataDir, "data-dir", e.str("LEVERS9_DATA_DIR", "levers9-data"), "directory for the SQLite database and local buckets (LEVERS9_DATA_DIR)")
	fs.StringVar(&c.DatabaseURL, "database-url", e.str("LEVERS9_DATABASE_URL", ""), "postgres://… to use PostgreSQL; default SQLite in the data directory (LEVERS9_DATABASE_URL)")
	fs.StringVar(&c.PublicURL, "public-url", e.str("LEVERS9_PUBLIC_URL", ""), "URL clients and agents reach the server at; default http://ADDR (LEVERS9_PUBLIC_URL)")
	logLevel := fs.String("log-level", e.str("LEVERS9_LOG_LEVEL", "info"), "debug, info, warn or error (LEVERS9_LOG_LEVEL)")
	e.durationVar(fs, &c.NodeTTL, "node-ttl", "LEVERS9_NODE_TTL", nodes.DefaultNodeTTL, "a node without heartbeats this long goes offline (LEVERS9_NODE_TTL)")
	e.int64Var(fs, &c.MaxUpload, "max-upload", "LEVERS9_MAX_UPLOAD", filesapi.DefaultMaxUpload, "largest file upload in bytes (LEVERS9_MAX_UPLOAD)")
	e.durationVar(fs, &c.NodeGrace, "node-grace", "LEVERS9_NODE_GRACE", nodes.DefaultNodeGrace, "jobs of an offline node wait this long for it before they fail or are requeued (LEVERS9_NODE_GRACE)")
	e.boolVar(fs, &c.AllowPrivateS3, "allow-private-s3", "LEVERS9_ALLOW_PRIVATE_S3", false,
		"let S3 storages use endpoints on loopback, link-local (cloud metadata) and private addresses; off, tenants cannot make the server reach its internal network (LEVERS9_ALLOW_PRIVATE_S3)")
	e.boolVar(fs, &c.LocalNode, "local-node", "LEVERS9_LOCAL_NODE", true, "run a built-in node in the default queue (LEVERS9_LOCAL_NODE)")
	quota, err := logQuotaVar(fs, "local-node-job-log-quota", "the built-in node", lookup)
	if err != nil {
		e.fail("local-node-job-log-quota", err)
	}
	c.Local.LogQuota = quota
	fs.StringVar(&c.Local.Runtime, "local-node-runtime", e.str("LEVERS9_LOCAL_NODE_RUNTIME", runtimeAuto),
		"how the built-in node runs jobs: docker (containers), process (child processes, each job as an unprivileged uid of its own; needs root) or auto (Docker when a daemon answers) (LEVERS9_LOCAL_NODE_RUNTIME)")
	fs.StringVar(&c.Local.DefaultImage, "local-node-default-image", e.str("LEVERS9_LOCAL_NODE_DEFAULT_IMAGE", defaultImage),
		"on Docker, the image of services that give a command but no image (LEVERS9_LOCAL_NODE_DEFAULT_IMAGE)")
	fs.StringVar(&c.Local.WorkDir, "local-node-work-dir", e.str("LEVERS9_LOCAL_NODE_WORK_DIR", ""),
		"on the process runtime, the jobs' working directories, outside the data directory; default "+localWorkBase+"/jobs-HASH (LEVERS9_LOCAL_NODE_WORK_DIR)")
	fs.StringVar(&c.Local.JobUIDs, "local-node-job-uids", e.str("LEVERS9_LOCAL_NODE_JOB_UIDS", defaultJobUIDs),
		"on the process runtime, FIRST:COUNT, the uids jobs run as, one per running job (at most COUNT jobs at once); no account or group may use them (LEVERS9_LOCAL_NODE_JOB_UIDS)")
	c.HTTP.flags(fs, e)
	fs.StringVar(&c.RelayDomain, "relay-domain", e.str("LEVERS9_RELAY_DOMAIN", ""),
		"serve job ports at PORT-SERVICE-JOB.DOMAIN (e.g. relay.example.com; needs wildcard DNS and TLS for *.DOMAIN); default: only under /relay/ on the public URL (LEVERS9_RELAY_DOMAIN)")
	fs.StringVar(&c.ReplicaURL, "replica-url", e.str("LEVERS9_REPLICA_URL", ""),
		"this replica's URL for the other replicas, which forward relay traffic to the one a node's tunnel is on; default on PostgreSQL http://ADDR (the host name when ADDR has no host), none on SQLite (LEVERS9_REPLICA_URL)")
	fs.StringVar(&c.SecretKeyFile, "secret-key-file", e.str("LEVERS9_SECRET_KEY_FILE", ""),
		"file of the keys secrets are encrypted with: base64 of 32 random bytes (openssl rand -base64 32), several comma- or line-separated to rotate (the first encrypts, all decrypt; "+
			"secrets are re-encrypted with the first at start); or set LEVERS9_SECRET_KEY to the keys themselves; default DATA_DIR/secret.key, made at first start. "+
			"Replicas sharing a database need the same keys (LEVERS9_SECRET_KEY_FILE)")
	c.SecretKey = e.str("LEVERS9_SECRET_KEY", "")
	e.durationVar(fs, &c.DrainDelay, "drain-delay", "LEVERS9_DRAIN_DELAY", defaultDrainDelay,
		"after SIGTERM, how long /readyz answers 503 while the server serves on before it stops: at least the time the load balancers polling /readyz take to notice "+
			"(their period × failure threshold); 0: stop at once; a second signal stops at once (LEVERS9_DRAIN_DELAY)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", e.str("LEVERS9_PPROF_ADDR", ""),
		"serve Go's profiler (net/http/pprof) on this address, e.g. 127.0.0.1:6060; keep it off public interfaces; default none (LEVERS9_PPROF_ADDR)")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", e.str("LEVERS9_OTLP_ENDPOINT", ""),
		"send OpenTelemetry traces (GraphQL operations, job submission, scheduling, dispatch) to this OTLP/HTTP collector, e.g. http://collector:4318 (/v1/traces is added to a URL without a path); default none: no tracing (LEVERS9_OTLP_ENDPOINT)")
	c.Metrics.flags(fs, e)
	c.Seed = tenancy.Seed{
		TenantName:         e.str("LEVERS9_TENANT_NAME", ""),
		TenantSlug:         e.str("LEVERS9_TENANT_SLUG", ""),
		AdminEmail:         e.str("LEVERS9_ADMIN_EMAIL", ""),
		AdminPassword:      e.str("LEVERS9_ADMIN_PASSWORD", ""),
		AdminToken:         e.str("LEVERS9_ADMIN_TOKEN", ""),
		SuperadminEmail:    e.str("LEVERS9_SUPERADMIN_EMAIL", ""),
		SuperadminPassword: e.str("LEVERS9_SUPERADMIN_PASSWORD", ""),
	}
	if err := fs.Parse(args); err != nil {
		return c, err // the flag package has said why
	}
	// The log level and runtime are checked with the others, so name
	// where they came from.
	source := func(flagName, name string) string {
		if _, ok := lookup(name); ok && !given(fs, flagName) {
			return name
		}
		return "--" + flagName
	}
	err = errors.Join(e.errors(fs), c.check(*logLevel, source("log-level", "LEVERS9_LOG_LEVEL")),
		c.checkLocalNode(source("local-node-runtime", "LEVERS9_LOCAL_NODE_RUNTIME"), source("local-node-default-image", "LEVERS9_LOCAL_NODE_DEFAULT_IMAGE")),
		c.checkRelay(source("relay-domain", "LEVERS9_RELAY_DOMAIN"), source("replica-url", "LEVERS9_REPLICA_URL")),
		c.Metrics.check(source("metrics-token", "LEVERS9_METRICS_TOKEN")),
		c.checkSecretKey(source("secret-key-file", "LEVERS9_SECRET_KEY_FILE")),
		checkOTLPEndpoint(c.OTLPEndpoint, source("otlp-endpoint", "LEVERS9_OTLP_ENDPOINT")))
	if err != nil {
		fmt.Fprintln(out, "levers9 server:", err)
	}
	return c, err
}

// check sets the log level from its name and checks the values no flag
// type refuses.
func (c *serverConfig) check(logLevel, levelSource string) error {
	var errs []error
	if err := c.LogLevel.UnmarshalText([]byte(logLevel)); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", levelSource, err))
	}
	if c.NodeTTL <= 0 || c.NodeGrace < 0 {
		errs = append(errs, errors.New("--node-ttl must be positive and --node-grace not negative"))
	}
	if c.DrainDelay < 0 {
		errs = append(errs, errors.New("--drain-delay must not be negative"))
	}
	if err := c.HTTP.check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkLocalNode checks the built-in node's runtime choice, naming the
// flag or variable it came from (runtimeSource, imageSource).
func (c *serverConfig) checkLocalNode(runtimeSource, imageSource string) error {
	err := c.Local.check(localNodeRuntimeFlags)
	if err == nil {
		return nil
	}
	// check names the flags; say the variable when it came from one.
	msg := strings.NewReplacer(localNodeRuntimeFlags.name("runtime"), runtimeSource,
		localNodeRuntimeFlags.name("default-image"), imageSource).Replace(err.Error())
	return errors.New(msg)
}

// checkRelay checks the relay domain and the replica URL, naming the flag
// or variable each came from, and normalizes the domain (lower case, no
// final dot).
func (c *serverConfig) checkRelay(domainSource, replicaSource string) error {
	var errs []error
	if c.RelayDomain != "" {
		d := strings.TrimSuffix(strings.ToLower(c.RelayDomain), ".")
		if !isDomainName(d) {
			errs = append(errs, fmt.Errorf("%s must be a DNS name such as relay.example.com (no scheme, port or path), not %q", domainSource, c.RelayDomain))
		}
		c.RelayDomain = d
	}
	if c.ReplicaURL != "" {
		u, err := url.Parse(c.ReplicaURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("%s must be an http:// or https:// URL other replicas reach this one at, not %q", replicaSource, c.ReplicaURL))
		}
	}
	return errors.Join(errs...)
}

// checkSecretKey checks that at most one source of secret keys is given
// and that LEVERS9_SECRET_KEY holds keys (never quoting it).
func (c *serverConfig) checkSecretKey(fileSource string) error {
	if c.SecretKey == "" {
		return nil
	}
	if c.SecretKeyFile != "" {
		return fmt.Errorf("give the secret keys in %s or in LEVERS9_SECRET_KEY, not both", fileSource)
	}
	if _, err := secrets.ParseKeys(c.SecretKey); err != nil {
		return fmt.Errorf("LEVERS9_SECRET_KEY: %w", err)
	}
	return nil
}

// secretKeys are the keys of cfg: LEVERS9_SECRET_KEY's, the key file's,
// or those of dataDir/secret.key, written at first start.
func secretKeys(cfg serverConfig, dataDir string) (*secrets.Keyring, error) {
	switch {
	case cfg.SecretKey != "":
		return secrets.ParseKeys(cfg.SecretKey)
	case cfg.SecretKeyFile != "":
		return secrets.LoadKeyFile(cfg.SecretKeyFile)
	}
	return secrets.LoadOrCreateKeyFile(filepath.Join(dataDir, "secret.key"))
}

// replicaURL is this replica's URL for the others: the configured one,
// else on PostgreSQL (where replicas may share the database) http:// and
// the listen address, with the machine's host name when that address has
// no host (0.0.0.0, ::); on SQLite none (one replica, nothing to forward).
func replicaURL(configured, dialectName string, listen net.Addr) string {
	if configured != "" || dialectName != dialect.Postgres {
		return configured
	}
	host, port, err := net.SplitHostPort(listen.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil {
			return ""
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// isDomainName reports whether d is lower-case DNS labels (letters,
// digits, inner '-') joined by dots.
func isDomainName(d string) bool {
	if d == "" || len(d) > 253 {
		return false
	}
	for _, l := range strings.Split(d, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return false
		}
	}
	return true
}

// newServerCommand is levers9 server: its flags default to environment
// variables and are read, with them, into one checked serverConfig
// (parseServerConfig); levers9 server -h lists them.
func newServerCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "server [flags]",
		Short:              "run the control plane (GraphQL at /graphql)",
		Long:               "Run the control plane (GraphQL at /graphql).\nRun with -h for its flags; each defaults to the environment variable it names.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := parseServerConfig(args, os.LookupEnv, a.stderr)
			if err != nil {
				return codeErr(usageExit(err))
			}
			if err := runServer(cmd.Context(), cfg, a.stdout); err != nil {
				fmt.Fprintln(a.stderr, "levers9:", err)
				return exitCode(exitError)
			}
			return nil
		},
	}
}
