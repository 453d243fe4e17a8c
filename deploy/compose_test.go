package deploy

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of a compose file the tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string         `yaml:"image"`
	Build       *composeBuild  `yaml:"build"`
	Command     []string       `yaml:"command"`
	Environment composeEnv     `yaml:"environment"`
	DependsOn   map[string]any `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

// composeEnv is a service's environment, written as a map or as a list
// of NAME=VALUE.
type composeEnv map[string]string

func (e *composeEnv) UnmarshalYAML(n *yaml.Node) error {
	*e = composeEnv{}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]string{}
		if err := n.Decode(&m); err != nil {
			return err
		}
		for k, v := range m {
			(*e)[k] = v
		}
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		for _, kv := range l {
			k, v, _ := strings.Cut(kv, "=")
			(*e)[k] = v
		}
	default:
		return fmt.Errorf("environment: a map or a list, not %v", n.Tag)
	}
	return nil
}

func readCompose(t *testing.T, path string) composeFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// levers9Services are the services of c that run the levers9 image
// (built from deploy/Dockerfile).
func levers9Services(c composeFile) []string {
	var names []string
	for name, s := range c.Services {
		if s.Build != nil && strings.HasSuffix(s.Build.Dockerfile, "deploy/Dockerfile") || strings.HasPrefix(s.Image, "levers9") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// interpolation is a compose variable reference, ${NAME…}.
var interpolation = regexp.MustCompile(`\$\{[A-Z0-9_]+[^}]*\}`)

// composeProblems lists what is wrong with the levers9 services of c:
// variables levers9 server does not read (a typo there is silently
// ignored), secrets written into the file instead of taken from .env, and
// a database URL that does not reach the PostgreSQL service.
func composeProblems(c composeFile, known map[string]bool) []string {
	var problems []string
	servers := levers9Services(c)
	if len(servers) == 0 {
		return []string{"no service runs the levers9 image"}
	}
	for _, name := range servers {
		s := c.Services[name]
		if len(s.Command) > 0 && s.Command[0] != "server" {
			continue // only the server is checked here
		}
		var vars []string
		for k := range s.Environment {
			vars = append(vars, k)
		}
		slices.Sort(vars)
		for _, v := range unknownVariables(vars, known) {
			problems = append(problems, fmt.Sprintf("%s: levers9 server does not read %s", name, v))
		}
		for _, k := range vars {
			secret := strings.Contains(k, "PASSWORD") || strings.Contains(k, "SECRET") || strings.HasSuffix(k, "_TOKEN")
			if secret && !interpolation.MatchString(s.Environment[k]) {
				problems = append(problems, fmt.Sprintf("%s: %s is written in the file; take it from .env (${%s})", name, k, k))
			}
		}
		problems = append(problems, databaseProblems(c, name, s.Environment["LEVERS9_DATABASE_URL"])...)
	}
	return problems
}

// databaseProblems checks that the server's database URL names a
// PostgreSQL service of c, its user and database, and that the server
// waits for it to be healthy.
func databaseProblems(c composeFile, server, dsn string) []string {
	if dsn == "" {
		return nil // SQLite in the data volume
	}
	u, err := url.Parse(interpolation.ReplaceAllString(dsn, "x"))
	if err != nil {
		return []string{fmt.Sprintf("%s: LEVERS9_DATABASE_URL: %v", server, err)}
	}
	db, ok := c.Services[u.Hostname()]
	if !ok || !strings.HasPrefix(db.Image, "postgres") {
		return []string{fmt.Sprintf("%s: LEVERS9_DATABASE_URL names host %q, no PostgreSQL service", server, u.Hostname())}
	}
	var problems []string
	if got, want := u.User.Username(), db.Environment["POSTGRES_USER"]; got != want {
		problems = append(problems, fmt.Sprintf("%s: database user %q, the service makes %q", server, got, want))
	}
	if got, want := strings.TrimPrefix(u.Path, "/"), db.Environment["POSTGRES_DB"]; got != want {
		problems = append(problems, fmt.Sprintf("%s: database %q, the service makes %q", server, got, want))
	}
	dep, _ := c.Services[server].DependsOn[u.Hostname()].(map[string]any)
	if dep["condition"] != "service_healthy" || db.Healthcheck == nil {
		problems = append(problems, fmt.Sprintf("%s: does not wait for %s to be healthy", server, u.Hostname()))
	}
	return problems
}

// deploy/compose.yaml sets only variables levers9 server reads, takes its
// secrets from .env, and points the server at its PostgreSQL service.
func TestComposeFile(t *testing.T) {
	c := readCompose(t, "compose.yaml")
	if got := levers9Services(c); !slices.Equal(got, []string{"levers9"}) {
		t.Errorf("levers9 services = %v", got)
	}
	for _, name := range []string{"postgres", "minio"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("no %s service", name)
		}
	}
	if b := c.Services["levers9"].Build; b == nil || b.Context != ".." || b.Dockerfile != "deploy/Dockerfile" {
		t.Errorf("build = %+v; want the repository root and deploy/Dockerfile", b)
	}
	if p := composeProblems(c, serverVariables(t)); len(p) > 0 {
		t.Errorf("deploy/compose.yaml:\n%s", strings.Join(p, "\n"))
	}
}

// The check finds what it is there for.
func TestComposeProblems(t *testing.T) {
	t.Parallel()
	known := map[string]bool{"LEVERS9_DATABASE_URL": true, "LEVERS9_SECRET_KEY": true}
	db := composeService{Image: "postgres:16", Environment: composeEnv{"POSTGRES_USER": "u", "POSTGRES_DB": "d"},
		Healthcheck: &struct {
			Test []string `yaml:"test"`
		}{Test: []string{"CMD", "pg_isready"}}}
	healthy := map[string]any{"db": map[string]any{"condition": "service_healthy"}}
	server := func(env composeEnv, deps map[string]any) composeFile {
		return composeFile{Services: map[string]composeService{
			"app": {Image: "levers9:latest", Environment: env, DependsOn: deps}, "db": db,
		}}
	}
	tests := []struct {
		name string
		c    composeFile
		want []string // substrings, one per problem
	}{
		{"good", server(composeEnv{"LEVERS9_DATABASE_URL": "postgres://u:${PW}@db:5432/d", "LEVERS9_SECRET_KEY": "${K:?set}"}, healthy), nil},
		{"unknown variable", server(composeEnv{"LEVERS9_DATABSE_URL": "x"}, nil), []string{"does not read LEVERS9_DATABSE_URL"}},
		{"literal secret", server(composeEnv{"LEVERS9_SECRET_KEY": "c2VjcmV0"}, nil), []string{"LEVERS9_SECRET_KEY is written"}},
		{"wrong host", server(composeEnv{"LEVERS9_DATABASE_URL": "postgres://u:${PW}@pg:5432/d"}, healthy), []string{`host "pg"`}},
		{"wrong user and database", server(composeEnv{"LEVERS9_DATABASE_URL": "postgres://x:${PW}@db:5432/y"}, healthy),
			[]string{`user "x"`, `database "y"`}},
		{"not waiting", server(composeEnv{"LEVERS9_DATABASE_URL": "postgres://u:${PW}@db:5432/d"}, nil), []string{"does not wait for db"}},
		{"no server", composeFile{Services: map[string]composeService{"db": db}}, []string{"no service runs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := composeProblems(tt.c, known)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d: %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}
