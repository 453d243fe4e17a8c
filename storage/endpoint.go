package storage

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/levers9/levers9/internal/netguard"
)

// lookupTimeout bounds CheckEndpoint's name lookup.
const lookupTimeout = 5 * time.Second

// ErrEndpoint is wrapped by every refusal of an S3 endpoint.
var ErrEndpoint = errors.New("s3 endpoint not allowed")

// CheckEndpoint checks an S3 endpoint when it is saved: an http(s) URL
// whose host is not an internal address (netguard's rule) nor a name that
// resolves only to internal addresses, unless allowPrivate (the operator's
// --allow-private-s3). OpenS3 checks every connection again.
func CheckEndpoint(ctx context.Context, endpoint string, allowPrivate bool) error {
	u, err := parseEndpoint(endpoint)
	if err != nil {
		return err
	}
	if allowPrivate {
		return nil
	}
	// A slow resolver must not hold the request: a name not resolved in
	// time passes here and is judged when the server connects.
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	if err := netguard.CheckHost(ctx, net.DefaultResolver, u.Hostname()); err != nil {
		return fmt.Errorf("%w: %w; the server's operator can allow internal endpoints with --allow-private-s3", ErrEndpoint, err)
	}
	return nil
}

func parseEndpoint(endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%w: %q: want http(s)://host[:port]", ErrEndpoint, endpoint)
	}
	return u, nil
}

// s3Transport is minio-go's default transport, except that it never uses
// a proxy (a proxy would dial the endpoint for us, unchecked) and, unless
// allowPrivate, refuses to connect to internal addresses: the check runs
// on the address dialled, after resolution, so DNS rebinding does not get
// past it. minio-go itself never follows redirects.
func s3Transport(secure, allowPrivate bool) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = netguard.Control
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		ResponseHeaderTimeout: time.Minute,
		IdleConnTimeout:       time.Minute,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 10 * time.Second,
		// Objects are stored as sent: no transparent gunzip.
		DisableCompression: true,
	}
	if secure {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return tr
}
