package auth

import (
	"net/http"
	"strings"

	"github.com/levers9/levers9/internal/fault"
	"github.com/levers9/levers9/internal/viewer"
)

// FromRequest authenticates the bearer token of r: nil without one, an
// UNAUTHENTICATED error for a malformed, unknown, expired or revoked one.
func (s *Service) FromRequest(r *http.Request) (*viewer.Viewer, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	secret, ok := ParseBearer(h)
	if !ok {
		return nil, fault.New(fault.Unauthenticated, "the Authorization header must be: Bearer TOKEN")
	}
	return s.Authenticate(r.Context(), secret)
}

// ParseBearer takes the secret out of an Authorization value
// ("Bearer SECRET", scheme in any case).
func ParseBearer(header string) (string, bool) {
	scheme, secret, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	secret = strings.TrimSpace(secret)
	return secret, secret != ""
}
