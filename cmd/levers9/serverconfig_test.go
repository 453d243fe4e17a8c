package main

import (
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"

	"github.com/levers9/levers9/agent"
	"github.com/levers9/levers9/internal/filesapi"
	"github.com/levers9/levers9/internal/nodes"
)

func lookupIn(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
}

func TestServerConfigDefaults(t *testing.T) {
	c, err := parseServerConfig(nil, lookupIn(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.DataDir != "levers9-data" || c.NodeTTL != nodes.DefaultNodeTTL ||
		c.NodeGrace != nodes.DefaultNodeGrace || c.MaxUpload != filesapi.DefaultMaxUpload || !c.LocalNode ||
		c.AllowPrivateS3 || c.HTTP != defaultHTTPLimits || c.Local.Runtime != runtimeAuto ||
		c.Local.JobUIDs != defaultJobUIDs || *c.Local.LogQuota != agent.DefaultLogQuota || c.LogLevel.String() != "INFO" {
		t.Errorf("defaults: %+v", c)
	}
}

// Every typed variable set to what does not parse stops the server with
// its name, unless its flag is given.
func TestServerConfigRefusesBadVariables(t *testing.T) {
	for _, tc := range []struct{ env, flag, good string }{
		{"LEVERS9_NODE_TTL", "--node-ttl", "5s"},
		{"LEVERS9_NODE_GRACE", "--node-grace", "5s"},
		{"LEVERS9_MAX_UPLOAD", "--max-upload", "1024"},
		{"LEVERS9_ALLOW_PRIVATE_S3", "--allow-private-s3", "true"},
		{"LEVERS9_LOCAL_NODE", "--local-node", "false"},
		{"LEVERS9_JOB_LOG_QUOTA", "--local-node-job-log-quota", "1MB"},
		{"LEVERS9_HTTP_HEADER_TIMEOUT", "--http-header-timeout", "1s"},
		{"LEVERS9_HTTP_BODY_TIMEOUT", "--http-body-timeout", "1s"},
		{"LEVERS9_HTTP_MIN_BODY_RATE", "--http-min-body-rate", "10"},
		{"LEVERS9_HTTP_IDLE_TIMEOUT", "--http-idle-timeout", "1s"},
		{"LEVERS9_LOG_LEVEL", "--log-level", "debug"},
		{"LEVERS9_LOCAL_NODE_RUNTIME", "--local-node-runtime", "process"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			bad := lookupIn(map[string]string{tc.env: "abc"})
			var out strings.Builder
			_, err := parseServerConfig(nil, bad, &out)
			if err == nil || !strings.Contains(err.Error(), "abc") ||
				!strings.Contains(err.Error(), tc.env) {
				t.Fatalf("%s=abc: got %v", tc.env, err)
			}
			if !strings.Contains(out.String(), err.Error()) {
				t.Errorf("the error is not written out: %q", out.String())
			}
			// The flag overrides the variable, bad or good.
			if _, err := parseServerConfig([]string{tc.flag + "=" + tc.good}, bad, io.Discard); err != nil {
				t.Errorf("%s given: %v", tc.flag, err)
			}
			if _, err := parseServerConfig(nil, lookupIn(map[string]string{tc.env: tc.good}), io.Discard); err != nil {
				t.Errorf("%s=%s: %v", tc.env, tc.good, err)
			}
		})
	}
}

func TestServerConfigNamesBadTTL(t *testing.T) {
	_, err := parseServerConfig(nil, lookupIn(map[string]string{"LEVERS9_NODE_TTL": "abc"}), io.Discard)
	if err == nil || err.Error() != `LEVERS9_NODE_TTL: invalid duration "abc"` {
		t.Fatalf("got %v", err)
	}
}

func TestServerConfigFlagsOverrideEnvironment(t *testing.T) {
	vars := lookupIn(map[string]string{
		"LEVERS9_ADDR": "0.0.0.0:1", "LEVERS9_NODE_TTL": "7s", "LEVERS9_HTTP_MIN_BODY_RATE": "9",
		"LEVERS9_LOCAL_NODE": "false", "LEVERS9_TENANT_SLUG": "acme",
	})
	c, err := parseServerConfig(nil, vars, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "0.0.0.0:1" || c.NodeTTL != 7*time.Second || c.HTTP.MinBodyRate != 9 || c.LocalNode || c.Seed.TenantSlug != "acme" {
		t.Errorf("from the environment: %+v", c)
	}
	c, err = parseServerConfig([]string{"--addr=127.0.0.1:2", "--node-ttl=3s", "--http-min-body-rate=0", "--local-node"}, vars, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:2" || c.NodeTTL != 3*time.Second || c.HTTP.MinBodyRate != 0 || !c.LocalNode {
		t.Errorf("flags: %+v", c)
	}
}

// Values of the right type that the server cannot use are refused too,
// and bad usage exits 2.
func TestServerConfigChecksValues(t *testing.T) {
	for _, args := range [][]string{{"--node-ttl=0"}, {"--node-grace=-1s"}, {"--http-idle-timeout=0"}, {"--http-min-body-rate=-1"},
		{"--local-node-runtime=frob"}, {"--local-node-runtime=docker", "--local-node-default-image= "}, {"--node-ttl=d"}} {
		if _, err := parseServerConfig(args, lookupIn(nil), io.Discard); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	// Only Docker needs a default image; durations take days.
	c, err := parseServerConfig([]string{"--local-node-runtime=process", "--local-node-default-image=", "--node-grace=1d"}, lookupIn(nil), io.Discard)
	if err != nil || c.NodeGrace != 24*time.Hour {
		t.Errorf("process without an image, grace 1d: %v, %v", c.NodeGrace, err)
	}
	_, err = parseServerConfig(nil, lookupIn(map[string]string{"LEVERS9_LOCAL_NODE_RUNTIME": "docker", "LEVERS9_LOCAL_NODE_DEFAULT_IMAGE": ""}), io.Discard)
	if err == nil || err.Error() != "LEVERS9_LOCAL_NODE_DEFAULT_IMAGE must name an image" {
		t.Errorf("docker without an image: %v", err)
	}
	t.Setenv("LEVERS9_NODE_TTL", "abc")
	var stderr strings.Builder
	if code := run(t.Context(), []string{"server"}, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "LEVERS9_NODE_TTL") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
}

func TestServerConfigRelay(t *testing.T) {
	t.Parallel()
	c, err := parseServerConfig(nil, lookupIn(nil), io.Discard)
	if err != nil || c.RelayDomain != "" || c.ReplicaURL != "" {
		t.Fatalf("defaults: %q %q, %v", c.RelayDomain, c.ReplicaURL, err)
	}
	c, err = parseServerConfig(nil, lookupIn(map[string]string{"LEVERS9_RELAY_DOMAIN": "Relay.Example.com.", "LEVERS9_REPLICA_URL": "http://10.0.0.5:8080"}), io.Discard)
	if err != nil || c.RelayDomain != "relay.example.com" || c.ReplicaURL != "http://10.0.0.5:8080" {
		t.Fatalf("from the environment: %q %q, %v", c.RelayDomain, c.ReplicaURL, err)
	}
	c, err = parseServerConfig([]string{"--relay-domain=localhost", "--replica-url=https://a.internal"}, lookupIn(map[string]string{"LEVERS9_RELAY_DOMAIN": "x y"}), io.Discard)
	if err != nil || c.RelayDomain != "localhost" || c.ReplicaURL != "https://a.internal" {
		t.Fatalf("flags: %q %q, %v", c.RelayDomain, c.ReplicaURL, err)
	}
	for _, tc := range []struct{ env, value string }{
		{"LEVERS9_RELAY_DOMAIN", "https://relay.example.com"},
		{"LEVERS9_RELAY_DOMAIN", "relay.example.com:443"},
		{"LEVERS9_RELAY_DOMAIN", "*.relay.example.com"},
		{"LEVERS9_RELAY_DOMAIN", "relay..example.com"},
		{"LEVERS9_RELAY_DOMAIN", "-relay.example.com"},
		{"LEVERS9_REPLICA_URL", "10.0.0.5:8080"},
		{"LEVERS9_REPLICA_URL", "ftp://10.0.0.5"},
		{"LEVERS9_REPLICA_URL", "http://"},
		{"LEVERS9_REPLICA_URL", "http://u:p@10.0.0.5"},
	} {
		_, err := parseServerConfig(nil, lookupIn(map[string]string{tc.env: tc.value}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.env) {
			t.Errorf("%s=%s: %v", tc.env, tc.value, err)
		}
		flag := "--" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(tc.env, "LEVERS9_")), "_", "-")
		if _, err := parseServerConfig([]string{flag + "=" + tc.value}, lookupIn(nil), io.Discard); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s=%s: %v", flag, tc.value, err)
		}
	}
}

func TestServerConfigReplicaURL(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		configured, dialect, listen, want string
	}{
		{"", dialect.SQLite, "127.0.0.1:8080", ""}, // one replica
		{"http://a:1", dialect.SQLite, "127.0.0.1:8080", "http://a:1"},
		{"http://a:1", dialect.Postgres, "127.0.0.1:8080", "http://a:1"},
		{"", dialect.Postgres, "10.1.2.3:8080", "http://10.1.2.3:8080"},
		{"", dialect.Postgres, "[fd00::1]:8080", "http://[fd00::1]:8080"},
		{"", dialect.Postgres, "0.0.0.0:8080", "http://" + net.JoinHostPort(host, "8080")},
		{"", dialect.Postgres, "[::]:8080", "http://" + net.JoinHostPort(host, "8080")},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.listen)
		if err != nil {
			t.Fatal(err)
		}
		if got := replicaURL(tc.configured, tc.dialect, addr); got != tc.want {
			t.Errorf("replicaURL(%q, %s, %s) = %q; want %q", tc.configured, tc.dialect, tc.listen, got, tc.want)
		}
	}
}
