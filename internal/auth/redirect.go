package auth

import (
	"net/url"
	"strings"
)

// maxNext bounds a return path: longer ones are not pages we link to.
const maxNext = 2048

// LocalPath returns next when it is a path on this site, else "/". It is
// the one check for every "go back to next after signing in" value, read
// or written.
//
// Browsers are lenient where Go's URL parser is strict: they drop tabs and
// newlines anywhere ("/\t/evil" becomes "//evil"), strip leading control
// characters and spaces, and read "\" as "/" ("/\evil" is "//evil"), and
// "//host" is another site. So only printable ASCII without backslashes is
// accepted (the values we write come from an escaped RequestURI, which is
// exactly that), "//" nowhere, and what is left must parse as a bare path
// with no scheme, host or user.
func LocalPath(next string) string {
	if next == "" || len(next) > maxNext || next[0] != '/' || strings.Contains(next, "//") {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	// "/%2F%2Fevil" is a path to us, but a proxy or browser that decodes
	// before resolving would see "//evil": refuse encoded slashes and
	// backslashes at the start too.
	if p := u.Path; len(p) > 1 && (p[1] == '/' || p[1] == '\\') {
		return "/"
	}
	return next
}
