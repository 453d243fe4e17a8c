package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levers9/levers9/internal/dockertest"
)

// The attack of issue 11: a plain member of the first tenant submits a job
// to the default queue on the built-in node that tries to read the
// server's database (at the data directory's real path) and the node's
// credential (where a working directory kept in the data directory put it,
// three levels up). On either runtime it runs as nobody who can read them,
// and nothing of them reaches the job's log; on the process runtime the
// job's working directory is gone after it.
func TestBuiltinNodeJobCannotReadTheServer(t *testing.T) {
	t.Parallel()
	for _, rt := range []string{"process", "docker"} {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			if rt == "process" && os.Geteuid() != 0 {
				t.Skip("the process runtime of the built-in node needs root (TestBuiltinNodeRefusesUnsafeRuntime covers the refusal)")
			}
			// Open folders around the data directory, so that only the
			// server's own protection stands between the job and its files.
			dir := openTempDir(t)
			dataDir := filepath.Join(dir, "levers9-data")
			workDir := filepath.Join(dir, "work")
			env := []string{"LEVERS9_LOCAL_NODE_RUNTIME=" + rt, "LEVERS9_LOCAL_NODE_WORK_DIR=" + workDir}
			if rt == "docker" {
				env = append(env, "LEVERS9_LOCAL_NODE_DEFAULT_IMAGE="+dockertest.Busybox(t))
			}
			s := startServer(t, dir, "", env...)
			c := s.credentials()
			waitLocalNode(t, s.URL, c.Token)
			member := memberToken(t, s, c.Token)

			credential := nodeCredential(t, dataDir)
			script := `id -u
cat ` + filepath.Join(dataDir, "levers9.db") + ` | head -c 100
cat ` + filepath.Join(dataDir, "node", "node.json") + `
ls ../../..
cat ../../../node.json
cat ../../../levers9-data/node/node.json
true`
			var sub struct{ SubmitJob struct{ ID string } }
			gql(t, s.URL, member, `mutation($cmd: [String!]!) { submitJob(spec: {name: "attack", queue: "default", services: [{name: "main", command: $cmd, cpu: 0.1, memoryMiB: 64}]}) { id } }`,
				map[string]any{"cmd": []string{"sh", "-c", script}}, &sub)
			id := sub.SubmitJob.ID
			var row jobRow
			poll(t, "the attack job to end", func() bool {
				row = jobByID(t, s.URL, member, id)
				return row.Status == "COMPLETE" || row.Status == "ERROR" || row.Status == "CANCELLED"
			})
			if row.Status != "COMPLETE" {
				t.Fatalf("the job ended %s: %s", row.Status, row.StatusReason)
			}
			out, errOut, code := cli(t, s, member, "logs", id)
			if code != 0 {
				t.Fatalf("levers9 logs: exit %d: %s", code, errOut)
			}
			log := out + errOut
			t.Logf("the job's log:\n%s", log)
			for _, leak := range []string{"SQLite format", credential} {
				if strings.Contains(log, leak) {
					t.Errorf("the job's log holds %q", leak)
				}
			}
			// The first line of stdout ("|"; stderr is "!"): the two
			// streams are read apart, so a denial may be stored first.
			var first string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if strings.HasPrefix(l, "main | ") {
					first = l
					break
				}
			}
			uid, err := strconv.Atoi(strings.TrimPrefix(first, "main | "))
			if err != nil {
				t.Fatalf("first line of output %q is not a uid", first)
			}
			switch rt {
			case "process":
				// The job did try: the kernel said no.
				if uid == 0 || !strings.Contains(log, "Permission denied") {
					t.Errorf("uid %d; want an unprivileged user denied access", uid)
				}
				// A uid of its own, from the built-in node's default range.
				if uid < 1_900_000_000 || uid >= 1_900_000_000+65536 {
					t.Errorf("uid %d; want one of the job uids 1900000000:65536", uid)
				}
				// Nothing of the job is left in the work directory.
				ents, err := os.ReadDir(workDir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					if e.Name() != ".running" {
						t.Errorf("left in the work directory: %s", e.Name())
					}
				}
				// The runtime's records of running jobs (fixed slots, zeros
				// where none runs) name none.
				rec, err := os.ReadFile(filepath.Join(workDir, ".running"))
				if err != nil {
					t.Fatal(err)
				}
				if i := bytes.IndexFunc(rec, func(r rune) bool { return r != 0 }); i >= 0 {
					t.Errorf("the work directory's .running still names a job: %q", rec[i:min(i+200, len(rec))])
				}
			case "docker":
				// The server's files are not in the container at all.
				if !strings.Contains(log, "No such file or directory") {
					t.Errorf("the container seems to see the host's files")
				}
			}
			if st, err := os.Stat(dataDir); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("data directory mode %v (%v), want 0700", st.Mode().Perm(), err)
			}
			s.stop()
		})
	}
}

// Where neither Docker nor a user switch is possible (not root, no
// daemon), the server does not start a built-in node that would run jobs
// as itself: it exits and names the fixes.
func TestBuiltinNodeRefusesUnsafeRuntime(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to start the server as another user")
	}
	// The server as an unprivileged user, from a copy of the binary it may run.
	dir := openTempDir(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "levers9")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "server", "--addr", "127.0.0.1:0", "--local-node-runtime", "process")
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		t.Fatal("the server did not exit")
	}
	if err == nil {
		t.Fatalf("the server exited 0:\n%s", out)
	}
	for _, want := range []string{"cannot run jobs safely", "Start Docker", "as root", "--local-node=false"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the server's message lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "levers9-data", "levers9.db")); !os.IsNotExist(err) {
		t.Errorf("the refused server made a database: %v", err)
	}
}

// openTempDir is a temporary directory that every user may pass through,
// as the folders above a data directory usually are.
func openTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// memberToken creates a plain member of the server's first tenant and
// returns a session token of theirs.
func memberToken(t *testing.T, s *server, admin string) string {
	t.Helper()
	const email, password = "mallory@levers9.local", "member password 1"
	gql(t, s.URL, admin, `mutation($e: String!, $p: String!) { createUser(input: {email: $e, password: $p, role: MEMBER}) { id } }`,
		map[string]any{"e": email, "p": password}, new(map[string]any))
	var signIn struct{ SignIn struct{ Token string } }
	gql(t, s.URL, "", `mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { token } }`,
		map[string]any{"e": email, "p": password}, &signIn)
	return signIn.SignIn.Token
}

var credentialField = regexp.MustCompile(`"credential"\s*:\s*"([^"]+)"`)

// nodeCredential is the built-in node's secret, as its state file holds it.
func nodeCredential(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "node", "node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	m := credentialField.FindSubmatch(b)
	if m == nil || len(m[1]) < 16 {
		t.Fatalf("no credential in node.json (fields %v)", keys(st))
	}
	return string(m[1])
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
