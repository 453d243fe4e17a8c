// Package relayaddr spells where users reach a job's service port through
// the relay: a path on the server (/relay/JOB/SERVICE/PORT/) or, with a
// relay domain, a host of its own (PORT-SERVICE-JOB.DOMAIN). The relay
// serves these addresses; the dashboard and the CLI print them.
package relayaddr

import (
	"net"
	"net/url"
	"strings"
)

// Path is the relay path of port (a name or a number) of service svc of
// job, with its trailing slash.
func Path(job, svc, port string) string {
	return "/relay/" + url.PathEscape(job) + "/" + url.PathEscape(svc) + "/" + url.PathEscape(port) + "/"
}

// Host is the relay domain host of port of service svc of job.
func Host(domain, job, svc, port string) string {
	return strings.ToLower(port + "-" + svc + "-" + job + "." + domain)
}

// URL is the address users open for port of service svc of job: on the
// relay domain when there is one (applications that need the root path
// work there), else the relay path under public (the server's URL).
func URL(public, domain, job, svc, port string) string {
	if domain == "" {
		return strings.TrimRight(public, "/") + Path(job, svc, port)
	}
	scheme := "https"
	if u, err := url.Parse(public); err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	return scheme + "://" + Host(domain, job, svc, port) + "/"
}

// ParseHost reads the job, service and port a relay domain host names:
// PORT-SERVICE-JOB.DOMAIN, any case, with or without a :port. Job IDs have
// no '-' and ports (names or numbers) none either, so the port ends at the
// first '-' and the job starts after the last; services are DNS labels.
func ParseHost(host, domain string) (job, svc, port string, ok bool) {
	domain = strings.TrimSuffix(strings.ToLower(domain), ".")
	if domain == "" {
		return "", "", "", false
	}
	host = strings.ToLower(host)
	if h, p, err := net.SplitHostPort(host); err == nil {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return "", "", "", false
		}
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	label, ok := strings.CutSuffix(host, "."+domain)
	if !ok || label == "" || strings.Contains(label, ".") {
		return "", "", "", false
	}
	first, last := strings.IndexByte(label, '-'), strings.LastIndexByte(label, '-')
	if first < 0 || last <= first+1 {
		return "", "", "", false
	}
	port, svc, job = label[:first], label[first+1:last], label[last+1:]
	if !isWord(port, "") || !isWord(job, "_") || !isWord(svc, "-") || svc[0] == '-' || svc[len(svc)-1] == '-' {
		return "", "", "", false
	}
	return job, svc, port, true
}

// isWord reports whether s is non-empty lower-case letters, digits and
// the bytes of extra.
func isWord(s, extra string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}
