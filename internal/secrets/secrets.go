// Package secrets keeps environment variables encrypted at rest (AES-256-GCM
// with the server's keys) and hands their values only to the containers
// of functions that name them. Names and variable names are shown; values
// never leave the server except towards those containers, and are never
// logged or audited.
package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/secret"
	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/database"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
	"github.com/levers9/levers9/internal/wire"
)

// Service keeps secrets.
type Service struct {
	DB   *database.DB
	Log  *slog.Logger
	Keys *Keyring
	Now  func() time.Time
}

// Audit actions.
const (
	ActionCreate  = "secret.create"
	ActionReplace = "secret.replace"
	ActionDelete  = "secret.delete"
	ActionUse     = "secret.use"
)

// additional binds a sealed value to the secret it belongs to: a
// ciphertext copied into another row (another tenant's, say) does not open.
func additional(tenantID, envID, name string) []byte {
	return []byte("levers9 secret\x00" + tenantID + "\x00" + envID + "\x00" + name)
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Create stores secret name with values in the viewer's environment,
// owned by the viewer. An existing secret of that name is refused unless
// replace, and then only its owner or an admin replaces it (the owner
// stays). Bad input writes nothing.
func (s *Service) Create(ctx context.Context, name string, values map[string]string, replace bool) (*ent.Secret, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || v.UserID == "" || v.EnvironmentID == "" {
		return nil, fault.New(fault.Forbidden, "create secrets from inside a tenant's environment")
	}
	if err := checkSecret(name, values); err != nil {
		return nil, err
	}
	plain, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("encoding secret %s: %w", name, err)
	}
	ct, nonce, keyID, err := s.Keys.Seal(plain, additional(v.TenantID, v.EnvironmentID, name))
	if err != nil {
		return nil, fmt.Errorf("sealing secret %s: %w", name, err)
	}
	keys := slices.Sorted(maps.Keys(values))
	var out *ent.Secret
	err = s.DB.InTx(ctx, func(tx *database.Tx) error {
		old, err := tx.Ent.Secret.Query().Where(secret.Name(name)).Only(ctx)
		action := ActionCreate
		switch {
		case ent.IsNotFound(err):
			out, err = tx.Ent.Secret.Create().SetTenantID(v.TenantID).SetEnvironmentID(v.EnvironmentID).
				SetName(name).SetKeys(keys).SetOwnerID(v.UserID).
				SetCiphertext(ct).SetNonce(nonce).SetKeyID(keyID).Save(ctx)
		case err != nil:
			return fmt.Errorf("looking up secret %s: %w", name, err)
		case !replace:
			return fault.Invalid("name", "secret %q exists: replace it (--force) or choose another name", name)
		case old.OwnerID != v.UserID && !v.Admin:
			return fault.New(fault.Forbidden, "only the owner of secret %q or an admin may replace it", name)
		default:
			action = ActionReplace
			out, err = tx.Ent.Secret.UpdateOne(old).SetKeys(keys).
				SetCiphertext(ct).SetNonce(nonce).SetKeyID(keyID).Save(ctx)
		}
		if err != nil {
			return fmt.Errorf("storing secret %s: %w", name, err)
		}
		return audit.Record(ctx, tx.Ent, v.TenantID, v.UserID, action, out.ID,
			map[string]string{"name": name, "environment": v.EnvironmentID, "keys": strings.Join(keys, ",")})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete deletes the secret idOrName (its ID or its name) of the viewer's
// environment, returning its ID: its owner or an admin may. Functions
// naming it fail to start containers until it exists again.
func (s *Service) Delete(ctx context.Context, idOrName string) (string, error) {
	v := viewer.FromContext(ctx)
	if !v.InTenant() || v.UserID == "" {
		return "", fault.New(fault.Forbidden, "delete secrets from inside a tenant's environment")
	}
	var id string
	err := s.DB.InTx(ctx, func(tx *database.Tx) error {
		sec, err := tx.Ent.Secret.Query().Where(secret.Or(secret.ID(idOrName), secret.Name(idOrName))).First(ctx)
		if ent.IsNotFound(err) {
			return &fault.Error{Code: fault.NotFound, Field: "id", Message: fmt.Sprintf("secret %.80q not found", idOrName)}
		}
		if err != nil {
			return fmt.Errorf("looking up secret %.80q: %w", idOrName, err)
		}
		if sec.OwnerID != v.UserID && !v.Admin {
			return fault.New(fault.Forbidden, "only the owner of secret %q or an admin may delete it", sec.Name)
		}
		if err := tx.Ent.Secret.DeleteOne(sec).Exec(ctx); err != nil {
			return fmt.Errorf("deleting secret %s: %w", sec.Name, err)
		}
		id = sec.ID
		return audit.Record(ctx, tx.Ent, sec.TenantID, v.UserID, ActionDelete, sec.ID,
			map[string]string{"name": sec.Name, "environment": sec.EnvironmentID, "keys": strings.Join(sec.Keys, ",")})
	})
	return id, err
}

// Check refuses names that are not secrets of the viewer's environment
// (a fault.Invalid on "secrets" naming them): what a deploy asks.
func (s *Service) Check(ctx context.Context, names []string) error {
	names = uniq(names)
	if len(names) == 0 {
		return nil
	}
	found, err := s.DB.Ent.Secret.Query().Where(secret.NameIn(names...)).Select(secret.FieldName).Strings(ctx)
	if err != nil {
		return fmt.Errorf("looking up secrets: %w", err)
	}
	var missing []string
	for _, n := range names {
		if !slices.Contains(found, n) {
			missing = append(missing, fmt.Sprintf("%.80q", n))
		}
	}
	if len(missing) > 0 {
		return fault.Invalid("secrets", "no secret named %s in this environment: create it first (levers9 secret create NAME KEY=VALUE)", strings.Join(missing, ", "))
	}
	return nil
}

// Use is one container's use of secrets: whose function it is and which
// secrets it names.
type Use struct {
	TenantID, EnvironmentID string
	OwnerID                 string // the function's owner: the audit's actor
	FunctionID, ContainerID string
	JobID                   string
	Names                   []string
}

// Env decrypts the secrets u names into environment variables (sorted by
// name; when two secrets set one variable the later name in u.Names
// wins), after writing one "secret.use" audit event per secret. A
// secret that is missing or does not open fails the whole call. It acts
// as the system: the caller has checked who asks (a node for a container
// it runs).
func (s *Service) Env(ctx context.Context, u Use) ([]wire.EnvVar, error) {
	names := uniq(u.Names)
	if len(names) == 0 {
		return nil, nil
	}
	sys := viewer.SystemContext(ctx)
	rows, err := s.DB.Ent.Secret.Query().Where(secret.TenantID(u.TenantID), secret.EnvironmentID(u.EnvironmentID),
		secret.NameIn(names...)).All(sys)
	if err != nil {
		return nil, fmt.Errorf("reading secrets: %w", err)
	}
	byName := map[string]*ent.Secret{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	vars := map[string]string{}
	for _, n := range u.Names {
		r := byName[n]
		if r == nil {
			return nil, fault.Missing(fmt.Sprintf("secret %.80q", n))
		}
		vals, err := s.open(r)
		if err != nil {
			return nil, err
		}
		maps.Copy(vars, vals)
	}
	err = s.DB.InTx(sys, func(tx *database.Tx) error {
		for _, n := range names {
			r := byName[n]
			if err := audit.Record(sys, tx.Ent, u.TenantID, u.OwnerID, ActionUse, r.ID, map[string]string{
				"name": r.Name, "function": u.FunctionID, "container": u.ContainerID, "job": u.JobID,
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	env := make([]wire.EnvVar, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, wire.EnvVar{Name: k, Value: vars[k]})
	}
	return env, nil
}

// open decrypts row r.
func (s *Service) open(r *ent.Secret) (map[string]string, error) {
	plain, err := s.Keys.Open(r.Ciphertext, r.Nonce, r.KeyID, additional(r.TenantID, r.EnvironmentID, r.Name))
	if err != nil {
		return nil, fmt.Errorf("secret %s (%s): %w", r.Name, r.ID, err)
	}
	var vals map[string]string
	if err := json.Unmarshal(plain, &vals); err != nil {
		// Not the decoder's message: it may quote the plaintext.
		return nil, fmt.Errorf("secret %s (%s): the decrypted value is no JSON object of strings", r.Name, r.ID)
	}
	return vals, nil
}

// Reseal re-encrypts with the first key every secret sealed by another
// (rotation: put the new key first, start the server or run this, then
// drop the old key) and returns how many it resealed. A secret no key
// opens is left as it is and named in the error; the others are done.
func (s *Service) Reseal(ctx context.Context) (int, error) {
	sys := viewer.SystemContext(ctx)
	primary := s.Keys.Primary()
	rows, err := s.DB.Ent.Secret.Query().Where(secret.KeyIDNEQ(primary)).All(sys)
	if err != nil {
		return 0, fmt.Errorf("listing secrets to reseal: %w", err)
	}
	n := 0
	var errs []error
	for _, r := range rows {
		vals, err := s.open(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		plain, err := json.Marshal(vals)
		if err != nil {
			return n, err
		}
		ct, nonce, keyID, err := s.Keys.Seal(plain, additional(r.TenantID, r.EnvironmentID, r.Name))
		if err != nil {
			return n, err
		}
		// Only if nobody replaced it meanwhile (a replace seals with the
		// first key already).
		c, err := s.DB.Ent.Secret.Update().Where(secret.ID(r.ID), secret.KeyID(r.KeyID)).
			SetCiphertext(ct).SetNonce(nonce).SetKeyID(keyID).Save(sys)
		if err != nil {
			return n, fmt.Errorf("resealing secret %s: %w", r.ID, err)
		}
		n += c
	}
	if n > 0 {
		s.log().Info("secrets resealed with the first key", "count", n, "key", primary)
	}
	return n, errors.Join(errs...)
}

// uniq returns names without repeats, in first-seen order.
func uniq(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
