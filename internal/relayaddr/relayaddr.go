// Package relayaddr spells where users reach a job's service port through
// the relay: a path on the server (/relay/JOB/SERVICE/PORT/) or, with a
// relay domain, a host of its own (PORT-SERVICE-JOB.DOMAIN). The relay
// serves these addresses; the dashboard and the CLI print them.
package relayaddr

import (
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
