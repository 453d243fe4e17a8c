package app

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/levers9/levers9/internal/fault"
)

// CSRF protection, for every request that may change state (any method but
// GET, HEAD and OPTIONS):
//
//  1. Go's http.CrossOriginProtection: a browser's Sec-Fetch-Site must say
//     same-origin (or none, a user's own navigation); without it, an
//     Origin header must name the host the request was sent to. The public
//     URL's origin is trusted too (behind a proxy that rewrites Host).
//  2. The request must carry the session's synchronizer token: the form
//     field "csrf", the X-CSRF-Token header, or for multipart uploads (whose
//     body is streamed, so the form is not parsed up front) the "csrf" query
//     parameter of the form's action.
//
// SameSite=Lax cookies already keep cross-site POSTs anonymous; the checks
// make the rule explicit and cover same-site attackers (other ports).

// CSRFField is the form field carrying the token.
const CSRFField = "csrf"

// CSRFHeader is the header scripts send the token in.
const CSRFHeader = "X-CSRF-Token"

func newCSRFToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// CSRFToken returns the session's CSRF token, creating it when missing.
func (rt *Router) CSRFToken(r *http.Request) string {
	ctx := r.Context()
	t := rt.Deps.Sessions.GetString(ctx, keyCSRF)
	if t == "" {
		t = newCSRFToken()
		rt.Deps.Sessions.Put(ctx, keyCSRF, t)
	}
	return t
}

var errCSRF = fault.New(fault.Forbidden, "the form expired or came from another site; reload the page and try again")

func (rt *Router) checkCSRF(next http.Handler) http.Handler {
	cop := rt.crossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		if err := rt.verifyCSRF(cop, r); err != nil {
			rt.Deps.Log.Warn("refused a cross-site request", "path", r.URL.Path, "err", err,
				"origin", r.Header.Get("Origin"), "sec-fetch-site", r.Header.Get("Sec-Fetch-Site"))
			rt.Fail(w, r, errCSRF)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// crossOriginProtection is the header check, trusting the public URL's
// origin besides the request's own host.
func (rt *Router) crossOriginProtection() *http.CrossOriginProtection {
	cop := http.NewCrossOriginProtection()
	if o := rt.publicOrigin(); o != "" {
		if err := cop.AddTrustedOrigin(o); err != nil {
			rt.Deps.Log.Warn("the public URL is no origin to trust for CSRF", "url", rt.Deps.PublicURL, "err", err)
		}
	}
	return cop
}

func (rt *Router) verifyCSRF(cop *http.CrossOriginProtection, r *http.Request) error {
	if err := cop.Check(r); err != nil {
		return err
	}
	want := rt.Deps.Sessions.GetString(r.Context(), keyCSRF)
	if want == "" {
		return errCSRF
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			got = r.URL.Query().Get(CSRFField)
		} else {
			r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
			got = r.PostFormValue(CSRFField)
		}
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errCSRF
	}
	return nil
}
