package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/levers9/levers9/ent"
	"github.com/levers9/levers9/ent/apitoken"
	"github.com/levers9/levers9/ent/environment"
	"github.com/levers9/levers9/ent/predicate"
	"github.com/levers9/levers9/ent/user"
	"github.com/levers9/levers9/internal/audit"
	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/notify"
	"github.com/levers9/levers9/internal/viewer"
)

// SessionTTL is how long a sign-in session token lives.
const SessionTTL = 12 * time.Hour

// Service checks credentials and issues tokens.
type Service struct {
	Ent     *ent.Client
	Log     *slog.Logger
	Now     func() time.Time
	Limiter *Limiter
	// Bus carries "this token ended" to every replica's open streams (see
	// Hold); without it only this process's streams hear of it.
	Bus *notify.Bus
	// streams are the open streams of this process, by token.
	streams streams
	// dummyHash makes a sign-in with an unknown email cost what a wrong
	// password costs, so timing does not tell which emails exist.
	dummyHash string
}

// NewService returns a Service; now may be nil for the wall clock.
func NewService(client *ent.Client, log *slog.Logger, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	h, _ := HashPassword("levers9-dummy-password")
	return &Service{Ent: client, Log: log, Now: now, Limiter: NewLimiter(now), dummyHash: h}
}

var errBadCredentials = fault.New(fault.Unauthenticated, "invalid email or password")

// SignIn checks an email and password and returns a session token secret.
// An unknown email and a wrong password get the same answer. Attempts are
// throttled by s.Limiter (see Policy) and every one is logged. This is the
// one sign-in of both front doors: GraphQL signIn and the dashboard.
func (s *Service) SignIn(ctx context.Context, email, password, clientAddr string) (string, *ent.APIToken, error) {
	email = NormalizeEmail(email)
	log := s.Log.With("email", email, "addr", clientAddr)
	attempt, held := s.Limiter.Begin(email, clientAddr)
	if held != nil {
		secs := int((held.RetryAfter + time.Second - 1) / time.Second)
		log.Warn("sign-in", "outcome", "rate_limited", "by", held.By, "retryAfter", secs)
		return "", nil, &fault.Error{Code: fault.RateLimited,
			Message: fmt.Sprintf("too many sign-in attempts; try again in %d s", secs),
			Details: map[string]any{"retryAfter": secs}}
	}
	secret, tok, err := s.signIn(ctx, email, password)
	switch {
	case err == nil:
		attempt.Succeeded()
		log.Info("sign-in", "outcome", "ok", "user", tok.UserID)
	case errors.Is(err, errBadCredentials):
		log.Warn("sign-in", "outcome", "bad_credentials")
	default:
		// Not the caller's fault: take the failure back.
		attempt.Succeeded()
		log.Error("sign-in", "outcome", "error", "err", err)
	}
	return secret, tok, err
}

func (s *Service) signIn(ctx context.Context, email, password string) (string, *ent.APIToken, error) {
	sys := viewer.SystemContext(ctx)
	u, err := s.Ent.User.Query().Where(user.Email(email)).Only(sys)
	if ent.IsNotFound(err) {
		_, _ = VerifyPassword(s.dummyHash, password)
		return "", nil, errBadCredentials
	}
	if err != nil {
		return "", nil, fmt.Errorf("looking up user: %w", err)
	}
	if ok, _ := VerifyPassword(u.PasswordHash, password); !ok {
		return "", nil, errBadCredentials
	}
	envID := ""
	if u.TenantID != "" {
		env, err := s.Ent.Environment.Query().
			Where(environment.TenantID(u.TenantID), environment.Name("main")).Only(sys)
		if err != nil {
			return "", nil, fmt.Errorf("finding the main environment of tenant %s: %w", u.TenantID, err)
		}
		envID = env.ID
	}
	expires := s.Now().Add(SessionTTL)
	return issue(sys, s.Ent, u, apitoken.KindSession, "sign-in", u.TenantID, envID, &expires, "")
}

// CreateAPIToken issues a token for the viewer in its tenant and environment.
// The secret is returned once and never stored.
func (s *Service) CreateAPIToken(ctx context.Context, name string, expiresAt *time.Time) (string, *ent.APIToken, error) {
	v := viewer.FromContext(ctx)
	if v == nil || v.UserID == "" {
		return "", nil, fault.New(fault.Unauthenticated, "sign in first")
	}
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return "", nil, fault.Invalid("name", "a token needs a name of at most 200 characters")
	}
	if expiresAt != nil && !expiresAt.After(s.Now()) {
		return "", nil, fault.Invalid("expiresAt", "must be in the future")
	}
	u, err := s.Ent.User.Get(ctx, v.UserID)
	if err != nil {
		return "", nil, fmt.Errorf("loading user %s: %w", v.UserID, err)
	}
	return issue(ctx, s.Ent, u, apitoken.KindAPI, name, v.TenantID, v.EnvironmentID, expiresAt, "")
}

// CheckPresetToken reports whether preset can be used as a token secret.
func CheckPresetToken(preset string) error {
	if !wellFormed(preset) {
		return fmt.Errorf("a preset token must look like lv9_ followed by 52 lower-case base32 characters")
	}
	return nil
}

// IssueToken issues an API token for u through client c (which may be in a
// transaction), without a viewer: for start-up and scripted set-ups only. A
// preset secret is used when given; otherwise a fresh one is made.
func IssueToken(ctx context.Context, c *ent.Client, u *ent.User, name, envID, preset string) (string, error) {
	if preset != "" {
		if err := CheckPresetToken(preset); err != nil {
			return "", err
		}
	}
	secret, _, err := issue(viewer.SystemContext(ctx), c, u, apitoken.KindAPI, name, u.TenantID, envID, nil, preset)
	return secret, err
}

func issue(ctx context.Context, c *ent.Client, u *ent.User, kind apitoken.Kind, name, tenantID, envID string, expires *time.Time, secret string) (string, *ent.APIToken, error) {
	var hash string
	if secret == "" {
		secret, hash = NewSecret()
	} else {
		hash = HashSecret(secret)
	}
	// A superadmin's token made inside a tenant they entered ends when they
	// leave it (tenancy.LeaveTenant).
	entered := audit.Entered(viewer.FromContext(ctx))
	t, err := c.APIToken.Create().
		SetName(name).
		SetEntered(entered).
		SetKind(kind).
		SetTokenHash(hash).
		SetHint(Hint(secret)).
		SetUserID(u.ID).
		SetTenantID(tenantID).
		SetEnvironmentID(envID).
		SetNillableExpiresAt(expires).
		Save(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("storing token: %w", err)
	}
	return secret, t, nil
}

// RevokeAPIToken revokes one of the viewer's tokens.
func (s *Service) RevokeAPIToken(ctx context.Context, id string) (*ent.APIToken, error) {
	t, err := s.Ent.APIToken.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if t.RevokedAt != nil {
		return t, nil
	}
	if t, err = t.Update().SetRevokedAt(s.Now()).Save(ctx); err != nil {
		return nil, fmt.Errorf("revoking token %s: %w", id, err)
	}
	s.TokensEnded(ctx, t.ID)
	return t, nil
}

// Authenticate turns a bearer secret into the viewer it acts as.
func (s *Service) Authenticate(ctx context.Context, secret string) (*viewer.Viewer, error) {
	unauth := fault.New(fault.Unauthenticated, "invalid, expired or revoked token")
	if !wellFormed(secret) {
		return nil, unauth
	}
	return s.viewerOf(ctx, unauth, apitoken.TokenHash(HashSecret(secret)))
}

// viewerOf is the viewer of the token matching which, by the rules every
// front door shares: revoked and expired tokens are refused, a member's
// token acts only in the member's own tenant; unauth is the answer when not.
func (s *Service) viewerOf(ctx context.Context, unauth error, which predicate.APIToken) (*viewer.Viewer, error) {
	_, v, err := s.tokenViewer(ctx, unauth, which)
	return v, err
}

// tokenViewer is viewerOf with the token itself.
func (s *Service) tokenViewer(ctx context.Context, unauth error, which predicate.APIToken) (*ent.APIToken, *viewer.Viewer, error) {
	sys := viewer.SystemContext(ctx)
	t, err := s.Ent.APIToken.Query().Where(which, joinUser()).Only(sys)
	if ent.IsNotFound(err) {
		return nil, nil, unauth
	}
	if err != nil {
		return nil, nil, fmt.Errorf("looking up token: %w", err)
	}
	now := s.Now()
	if TokenState(t, now) != "active" {
		return nil, nil, unauth
	}
	u, err := joinedUser(t)
	if err != nil {
		return nil, nil, fmt.Errorf("looking up token: %w", err)
	}
	if !u.superadmin && t.TenantID != u.tenantID {
		return nil, nil, unauth
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
		// Coarse on purpose: a write per request would cost more than the request.
		if err := s.Ent.APIToken.UpdateOneID(t.ID).SetLastUsedAt(now).Exec(sys); err != nil {
			s.Log.Warn("recording token use", "token", t.ID, "err", err)
		}
	}
	return t, &viewer.Viewer{
		UserID:        u.id,
		TenantID:      t.TenantID,
		EnvironmentID: t.EnvironmentID,
		Admin:         u.role == user.RoleAdmin || (u.superadmin && t.TenantID != ""),
		Superadmin:    u.superadmin,
		TokenID:       t.ID,
	}, nil
}

// NormalizeEmail lower-cases and trims an email address.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }
