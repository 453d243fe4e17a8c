package secrets_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/auditevent"
	"github.com/levers9/levers9/internal/dbtest"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/fixture"
	"github.com/levers9/levers9/internal/secrets"
	"github.com/levers9/levers9/internal/viewer"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

func newKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, secrets.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func ring(t testing.TB, keys ...[]byte) *secrets.Keyring {
	t.Helper()
	k, err := secrets.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func faultOf(err error) *fault.Error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}

// The value every test hides: it must never appear where it should not.
const hidden = "s3cr3t-v4lue-that-must-not-leak"

// replaced is a second value; like hidden it cannot occur in an ID (IDs
// are lower-case base32), so finding it anywhere is a leak.
const replaced = "Second-VALUE-after-replace"

func TestKeyringSealOpen(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	r := ring(t, k1)
	ct, nonce, id, err := r.Seal([]byte(hidden), []byte("ad"))
	if err != nil {
		t.Fatal(err)
	}
	if id != secrets.KeyID(k1) || len(id) != 8 || bytes.Contains(ct, []byte(hidden)) {
		t.Fatalf("sealed with %q, ciphertext %x", id, ct)
	}
	if got, err := r.Open(ct, nonce, id, []byte("ad")); err != nil || string(got) != hidden {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := r.Open(ct, nonce, id, []byte("other")); !errors.Is(err, secrets.ErrCannotOpen) {
		t.Errorf("opened with other additional data: %v", err)
	}
	// A ring without the sealing key cannot open; one holding it second can.
	if _, err := ring(t, k2).Open(ct, nonce, id, []byte("ad")); !errors.Is(err, secrets.ErrCannotOpen) {
		t.Errorf("a wrong key opened: %v", err)
	}
	if got, err := ring(t, k2, k1).Open(ct, nonce, id, []byte("ad")); err != nil || string(got) != hidden {
		t.Errorf("the second key of a ring did not open: %q %v", got, err)
	}
	// A key with the sealing key's ID but other bytes cannot be forged
	// (the ID is a hash); tampering is caught.
	ct[0] ^= 1
	if _, err := r.Open(ct, nonce, id, []byte("ad")); !errors.Is(err, secrets.ErrCannotOpen) {
		t.Errorf("a tampered ciphertext opened: %v", err)
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	b := base64.StdEncoding.EncodeToString
	r, err := secrets.ParseKeys(b(k1) + "," + b(k2))
	if err != nil || r.Primary() != secrets.KeyID(k1) || !r.Has(secrets.KeyID(k2)) {
		t.Fatalf("ParseKeys: %v", err)
	}
	for _, bad := range []string{"", "not base64!", b([]byte("short")), b(k1) + ",junk"} {
		_, err := secrets.ParseKeys(bad)
		if err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("ParseKeys error echoes its input: %v", err)
		}
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "secret.key")
	r1, err := secrets.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode().Perm(), err)
	}
	r2, err := secrets.LoadOrCreateKeyFile(path)
	if err != nil || r2.Primary() != r1.Primary() {
		t.Fatalf("a second start made another key: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.LoadOrCreateKeyFile(path); err == nil {
		t.Error("a key file others may read was accepted")
	}
}

// world is a tenant with a member and the secrets service.
type world struct {
	tn     *fixture.Tenant
	s      *secrets.Service
	member *ent.User
}

func newWorld(t *testing.T, url string, keys ...[]byte) *world {
	t.Helper()
	if len(keys) == 0 {
		keys = [][]byte{newKey(t)}
	}
	tn := fixture.New(t, url, fixture.TenantOptions{Slug: "acme"})
	return &world{tn: tn, s: &secrets.Service{DB: tn.DB, Log: fixture.Log(), Keys: ring(t, keys...)}, member: tn.AddMember(t, "bob")}
}

func (w *world) use(names ...string) secrets.Use {
	return secrets.Use{TenantID: w.tn.ID, EnvironmentID: w.tn.Env, OwnerID: w.tn.Admin.ID, FunctionID: "fn_1", ContainerID: "ctr_1", JobID: "job_1", Names: names}
}

func TestCreateUseDeleteAndAudit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		ctx := w.tn.AsAdmin()
		sec, err := w.s.Create(ctx, "hf", map[string]string{"HF_TOKEN": hidden, "HF_HOME": "/tmp/hf"}, false)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(sec.Keys, ",") != "HF_HOME,HF_TOKEN" || sec.OwnerID != w.tn.Admin.ID {
			t.Fatalf("stored %v owned by %s", sec.Keys, sec.OwnerID)
		}
		// Nothing printable of the row holds the value.
		js, _ := json.Marshal(sec)
		row, err := w.tn.DB.Ent.Secret.Get(fixture.Sys(), sec.ID)
		if err != nil {
			t.Fatal(err)
		}
		for what, s := range map[string]string{"String()": row.String(), "JSON": string(js), "ciphertext": string(row.Ciphertext)} {
			if strings.Contains(s, hidden) {
				t.Errorf("the value shows in the row's %s", what)
			}
		}
		if strings.Contains(row.String(), fmt.Sprintf("%v", row.Ciphertext)) || bytes.Contains(js, []byte("ciphertext")) {
			t.Errorf("the row's String or JSON shows its ciphertext: %s %s", row.String(), js)
		}
		if err := w.s.Check(ctx, []string{"hf"}); err != nil {
			t.Errorf("Check(hf): %v", err)
		}
		if fe := faultOf(w.s.Check(ctx, []string{"hf", "nope"})); fe == nil || fe.Field != "secrets" || !strings.Contains(fe.Message, "nope") {
			t.Errorf("Check of a missing secret: %v", fe)
		}
		env, err := w.s.Env(context.Background(), w.use("hf"))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(env) != "[{HF_HOME /tmp/hf} {HF_TOKEN "+hidden+"}]" {
			t.Errorf("Env = %v", env)
		}
		// Replacing needs replace; then the new values are what is used.
		if fe := faultOf(errOnly(w.s.Create(ctx, "hf", map[string]string{"HF_TOKEN": "x"}, false))); fe == nil || fe.Field != "name" {
			t.Errorf("create over an existing secret: %v", fe)
		}
		if _, err := w.s.Create(ctx, "hf", map[string]string{"HF_TOKEN": replaced}, true); err != nil {
			t.Fatal(err)
		}
		env, err = w.s.Env(context.Background(), w.use("hf"))
		if err != nil || fmt.Sprint(env) != "[{HF_TOKEN "+replaced+"}]" {
			t.Errorf("Env after replace = %v, %v", env, err)
		}
		if _, err := w.s.Delete(ctx, "hf"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.Env(context.Background(), w.use("hf")); faultOf(err) == nil || faultOf(err).Code != fault.NotFound {
			t.Errorf("Env of a deleted secret: %v", err)
		}
		evs, err := w.tn.DB.Ent.AuditEvent.Query().Where(auditevent.ActionHasPrefix("secret.")).
			Order(ent.Asc(auditevent.FieldCreatedAt), ent.Asc(auditevent.FieldID)).All(fixture.Sys())
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range evs {
			actions = append(actions, e.Action)
			if e.Target != sec.ID || e.ActorID != w.tn.Admin.ID {
				t.Errorf("%s: target %s actor %s", e.Action, e.Target, e.ActorID)
			}
			if b, _ := json.Marshal(e.Details); bytes.Contains(b, []byte(hidden)) || bytes.Contains(b, []byte(replaced)) {
				t.Errorf("%s audits a value: %s", e.Action, b)
			}
			if e.Action == secrets.ActionUse && (e.Details["function"] != "fn_1" || e.Details["container"] != "ctr_1") {
				t.Errorf("use audited with %v", e.Details)
			}
		}
		// Events of one instant have no order: compare them as a set.
		slices.Sort(actions)
		want := "secret.create secret.delete secret.replace secret.use secret.use"
		if strings.Join(actions, " ") != want {
			t.Errorf("audit: %v, want %s", actions, want)
		}
	})
}

func errOnly(_ any, err error) error { return err }

// TestCreateRefusesBadInput: each bad secret is refused on its field and
// nothing is written.
func TestCreateRefusesBadInput(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		many := map[string]string{}
		for i := range secrets.MaxKeys + 1 {
			many[fmt.Sprintf("K%d", i)] = "v"
		}
		for _, tc := range []struct {
			name, secret string
			values       map[string]string
			field        string
		}{
			{"bad name", "no spaces", map[string]string{"A": "1"}, "name"},
			{"no values", "a", nil, "values"},
			{"lower-case key", "a", map[string]string{"a": "1"}, "values"},
			{"digit first", "a", map[string]string{"1A": "1"}, "values"},
			{"levers9's own", "a", map[string]string{"LEVERS9_RUNNER_SOCKET": "/x"}, "values"},
			{"too large", "a", map[string]string{"A": strings.Repeat("x", secrets.MaxValueBytes+1)}, "values"},
			{"NUL", "a", map[string]string{"A": "x\x00y"}, "values"},
			{"too many", "a", many, "values"},
		} {
			_, err := w.s.Create(w.tn.AsAdmin(), tc.secret, tc.values, false)
			if fe := faultOf(err); fe == nil || fe.Code != fault.BadUserInput || fe.Field != tc.field {
				t.Errorf("%s: %v, want an error on %s", tc.name, err, tc.field)
			}
		}
		if n, _ := w.tn.DB.Ent.Secret.Query().Count(fixture.Sys()); n != 0 {
			t.Errorf("%d secrets stored by refused creates", n)
		}
		if n, _ := w.tn.DB.Ent.AuditEvent.Query().Where(auditevent.ActionHasPrefix("secret.")).Count(fixture.Sys()); n != 0 {
			t.Errorf("%d audit events of refused creates", n)
		}
	})
}

// TestPrivacy: members create their own secrets; only the owner or an
// admin replaces or deletes one; other tenants and environments see none.
func TestPrivacy(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		w := newWorld(t, url)
		admin, bob := w.tn.AsAdmin(), w.tn.As(w.member)
		carol := w.tn.As(w.tn.AddMember(t, "carol"))
		mine, err := w.s.Create(bob, "bobs", map[string]string{"TOKEN": hidden}, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.Create(admin, "admins", map[string]string{"TOKEN": hidden}, false); err != nil {
			t.Fatal(err)
		}
		// Members read every name of the environment.
		if n, err := w.tn.DB.Ent.Secret.Query().Count(carol); err != nil || n != 2 {
			t.Errorf("carol sees %d secrets (%v), want 2", n, err)
		}
		for _, tc := range []struct {
			name string
			err  error
		}{
			{"carol deletes bob's", errOnly(w.s.Delete(carol, "bobs"))},
			{"bob deletes the admin's", errOnly(w.s.Delete(bob, "admins"))},
			{"carol replaces bob's", errOnly(w.s.Create(carol, "bobs", map[string]string{"TOKEN": "mine now"}, true))},
		} {
			if fe := faultOf(tc.err); fe == nil || fe.Code != fault.Forbidden {
				t.Errorf("%s: %v, want FORBIDDEN", tc.name, tc.err)
			}
		}
		if _, err := w.s.Create(bob, "bobs", map[string]string{"TOKEN": "v2"}, true); err != nil {
			t.Errorf("bob replaces his own: %v", err)
		}
		if id, err := w.s.Delete(admin, mine.ID); err != nil || id != mine.ID {
			t.Errorf("an admin deletes bob's by ID: %q %v", id, err)
		}

		// Another tenant, and another environment of this one, see nothing
		// and cannot use it.
		other := fixture.NewTenant(t, w.tn.DB, fixture.TenantOptions{Slug: "globex"})
		octx := other.AsAdmin()
		if n, _ := w.tn.DB.Ent.Secret.Query().Count(octx); n != 0 {
			t.Errorf("another tenant sees %d secrets", n)
		}
		if err := w.s.Check(octx, []string{"admins"}); faultOf(err) == nil {
			t.Error("another tenant's deploy may name this tenant's secret")
		}
		if _, err := w.s.Delete(octx, "admins"); faultOf(err) == nil || faultOf(err).Code != fault.NotFound {
			t.Errorf("another tenant deletes: %v", err)
		}
		if _, err := w.s.Env(context.Background(), secrets.Use{TenantID: other.ID, EnvironmentID: other.Env, Names: []string{"admins"}}); err == nil {
			t.Error("another tenant's container got this tenant's secret")
		}
		env, err := w.tn.DB.Ent.Environment.Create().SetTenantID(w.tn.ID).SetName("staging").Save(fixture.Sys())
		if err != nil {
			t.Fatal(err)
		}
		staging := viewer.NewContext(context.Background(), &viewer.Viewer{UserID: w.tn.Admin.ID, TenantID: w.tn.ID, EnvironmentID: env.ID, Admin: true})
		if n, _ := w.tn.DB.Ent.Secret.Query().Count(staging); n != 0 {
			t.Errorf("another environment sees %d secrets", n)
		}
		if err := w.s.Check(staging, []string{"admins"}); faultOf(err) == nil {
			t.Error("another environment's deploy may name this environment's secret")
		}
		if _, err := w.s.Env(context.Background(), secrets.Use{TenantID: w.tn.ID, EnvironmentID: env.ID, Names: []string{"admins"}}); err == nil {
			t.Error("another environment's container got this environment's secret")
		}
		// The same name in another environment is another secret.
		if _, err := w.s.Create(staging, "admins", map[string]string{"TOKEN": "staging"}, false); err != nil {
			t.Errorf("the same name in another environment: %v", err)
		}

		// A ciphertext copied into another row does not open there.
		src, err := w.tn.DB.Ent.Secret.Query().All(fixture.Sys())
		if err != nil || len(src) != 2 {
			t.Fatalf("%d secrets, %v", len(src), err)
		}
		if err := w.tn.DB.Ent.Secret.UpdateOne(src[1]).SetCiphertext(src[0].Ciphertext).SetNonce(src[0].Nonce).SetKeyID(src[0].KeyID).Exec(fixture.Sys()); err != nil {
			t.Fatal(err)
		}
		if _, err := w.s.Env(context.Background(), secrets.Use{TenantID: src[1].TenantID, EnvironmentID: src[1].EnvironmentID, Names: []string{src[1].Name}}); !errors.Is(err, secrets.ErrCannotOpen) {
			t.Errorf("a copied ciphertext opened: %v", err)
		}
	})
}

// TestRotation: with a new key first, old secrets still open; Reseal
// moves them to the new key, after which the old key can go.
func TestRotation(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		old, next := newKey(t), newKey(t)
		w := newWorld(t, url, old)
		for _, n := range []string{"a", "b"} {
			if _, err := w.s.Create(w.tn.AsAdmin(), n, map[string]string{"V": hidden + n}, false); err != nil {
				t.Fatal(err)
			}
		}
		w.s.Keys = ring(t, next, old)
		if env, err := w.s.Env(context.Background(), w.use("a")); err != nil || env[0].Value != hidden+"a" {
			t.Fatalf("the old key no longer opens after the new one came first: %v %v", env, err)
		}
		n, err := w.s.Reseal(context.Background())
		if err != nil || n != 2 {
			t.Fatalf("Reseal = %d, %v", n, err)
		}
		if n, err := w.s.Reseal(context.Background()); err != nil || n != 0 {
			t.Errorf("a second Reseal = %d, %v", n, err)
		}
		w.s.Keys = ring(t, next)
		for _, name := range []string{"a", "b"} {
			env, err := w.s.Env(context.Background(), w.use(name))
			if err != nil || env[0].Value != hidden+name {
				t.Errorf("%s after dropping the old key: %v %v", name, env, err)
			}
		}
		// A wrong key opens nothing.
		w.s.Keys = ring(t, old)
		if _, err := w.s.Env(context.Background(), w.use("a")); !errors.Is(err, secrets.ErrCannotOpen) {
			t.Errorf("Env with a key that did not seal: %v", err)
		}
		if n, err := w.s.Reseal(context.Background()); err == nil || n != 0 {
			t.Errorf("Reseal with only a wrong key = %d, %v", n, err)
		}
	})
}

func FuzzParseAssignment(f *testing.F) {
	for _, s := range []string{"A=1", "HF_TOKEN=a=b", "A=", "=x", "a=1", "LEVERS9_X=1", "A", "_=\x00", "Ä=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, v, err := secrets.ParseAssignment(s)
		if err != nil {
			// Values are secret: a long one is never quoted back (short
			// ones may match the message's words).
			key, val, _ := strings.Cut(s, "=")
			if len(val) >= 16 && !strings.Contains(key, val) && strings.Contains(err.Error(), val) {
				t.Fatalf("the error quotes the value: %v", err)
			}
			return
		}
		if k+"="+v != s {
			t.Fatalf("ParseAssignment(%q) = %q %q", s, k, v)
		}
		if secrets.CheckKey(k) != nil || secrets.CheckValue(k, v) != nil || strings.HasPrefix(k, "LEVERS9_") || strings.ContainsRune(v, 0) {
			t.Fatalf("ParseAssignment(%q) accepted %q", s, k)
		}
		for _, r := range k {
			if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
				t.Fatalf("ParseAssignment(%q) accepted key %q", s, k)
			}
		}
	})
}
