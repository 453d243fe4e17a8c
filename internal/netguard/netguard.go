// Package netguard decides which network addresses the server may connect
// to on a tenant's behalf (today: the endpoints of S3 storages). A tenant
// admin chooses those endpoints, so without this rule they could make the
// server send requests to its own loopback services, the cloud metadata
// service or the operator's private network (SSRF). The rule is checked
// twice: when an endpoint is saved (a clear error at the field) and on
// every connection, on the address actually dialled, so a name that
// resolves to a public address when saved and to a private one later (DNS
// rebinding) is refused too.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// ErrRefused is wrapped by every refusal.
var ErrRefused = errors.New("internal address")

// refusedPrefixes are ranges that are not the public internet, beyond what
// netip's predicates cover.
var refusedPrefixes = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // with 255.255.255.255
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
}

// embedding are IPv6 ranges that carry an IPv4 address in their last 32
// bits and reach it (NAT64, IPv4-compatible); 6to4 (2002::/16) carries it in
// bits 16-48.
var embedding = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("::/96"),
}

var sixToFour = netip.MustParsePrefix("2002::/16")

// Check returns an error wrapping ErrRefused when ip is not a public
// unicast address: unspecified, loopback, link-local (169.254.169.254, the
// metadata service, is one), private (RFC 1918, fc00::/7), carrier-grade
// NAT, multicast, reserved, or an IPv6 form of any of these.
func Check(ip netip.Addr) error {
	why := reason(ip)
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: %s is %s", ErrRefused, ip, why)
}

func reason(ip netip.Addr) string {
	if !ip.IsValid() {
		return "not an address"
	}
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1 on the wire
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsPrivate():
		return "private"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, r := range refusedPrefixes {
		if r.p.Contains(ip) {
			return r.why
		}
	}
	if ip.Is6() {
		b := ip.As16()
		for _, p := range embedding {
			if p.Contains(ip) {
				if why := reason(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
					return "an IPv6 form of a " + why + " address"
				}
			}
		}
		if sixToFour.Contains(ip) {
			if why := reason(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
				return "a 6to4 form of a " + why + " address"
			}
		}
	}
	return ""
}

// ParseHost reads host (as in a URL, IPv6 in brackets or not) as an IP
// address when it is one, including the forms C resolvers accept for IPv4
// ("127.1", "0x7f000001", "017700000001", "2130706433"): a name that is
// really a number is judged as that number, whichever resolver meets it.
func ParseHost(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i] // a zone names an interface, not another address
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip, true
	}
	return parseInetAton(strings.TrimSuffix(h, "."))
}

// parseInetAton parses IPv4 as inet_aton does: 1 to 4 parts, each decimal,
// octal (leading 0) or hex (0x), the last filling the remaining bytes.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if s == "" || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	last := len(vals) - 1
	var n uint64
	for i, v := range vals[:last] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	if vals[last] >= 1<<(32-8*last) {
		return netip.Addr{}, false
	}
	n |= vals[last]
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// Resolver looks up a name's addresses (net.DefaultResolver does).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckHost refuses a host that is a refused address, or a name whose
// addresses are all refused. A name that does not resolve (yet) passes:
// the connection is checked again when it is made.
func CheckHost(ctx context.Context, r Resolver, host string) error {
	if ip, ok := ParseHost(host); ok {
		return Check(ip)
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil
	}
	var first error
	for _, ip := range addrs {
		err := Check(ip)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return fmt.Errorf("%s resolves only to addresses not allowed: %w", host, first)
}

// Control is a net.Dialer Control function that refuses to connect to a
// refused address. It runs after name resolution, on each address tried,
// so it judges the address really dialled.
func Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read dialled address %q", ErrRefused, address)
	}
	if err := Check(ap.Addr()); err != nil {
		return fmt.Errorf("connecting to %s: %w", address, err)
	}
	return nil
}
