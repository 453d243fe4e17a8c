package main

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// serverURL is the server URL s as typed (flag, environment, config file,
// prompt), made whole: without a scheme it is https://, except for the
// loopback names, where a server started with its defaults speaks plain
// HTTP. Anything but an http(s) URL with a host and no user, query or
// fragment is refused, saying what was expected.
func serverURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("server %q: want a URL such as https://levers9.example.com or localhost:8080", s)
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return "", bad
	}
	if !strings.Contains(s, "://") {
		host, _, _ := strings.Cut(s, "/")
		scheme := "https://"
		if isLoopbackName(host) {
			scheme = "http://"
		}
		s = scheme + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" ||
		u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(u.Host, ":") {
		return "", bad
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// isLoopbackName is whether host (with or without a port) names this
// machine: localhost, 127.0.0.1 or [::1].
func isLoopbackName(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}
