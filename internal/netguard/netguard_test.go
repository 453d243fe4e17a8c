package netguard

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

func TestHostForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.1", true},
		{"127.0.1", true},
		{"0x7f000001", true},
		{"0x7F.1", true},
		{"017700000001", true},
		{"2130706433", true},
		{"0177.0.0.1", true},
		{"127.255.255.254", true},
		{"[::1]", true},
		{"::1", true},
		{"[::ffff:127.0.0.1]", true},
		{"[::ffff:7f00:1]", true},
		{"[::ffff:169.254.169.254]", true},
		{"[::ffff:10.0.0.1]", true},
		{"[::127.0.0.1]", true},
		{"[64:ff9b::127.0.0.1]", true},
		{"[64:ff9b::a9fe:a9fe]", true},
		{"[2002:7f00:1::]", true},
		{"[fe80::1%25eth0]", true},
		{"[fe80::1%eth0]", true},
		{"0.0.0.0", true},
		{"0", true},
		{"[::]", true},
		{"0.1.2.3", true},
		{"169.254.169.254", true},
		{"169.254.0.1", true},
		{"10.0.0.1", true},
		{"10.255.255.255", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"255.255.255.255", true},
		{"240.0.0.1", true},
		{"198.18.0.1", true},
		{"[fd00::1]", true},
		{"[fc00::1]", true},
		{"[fec0::1]", true},
		{"[ff02::1]", true},
		{"[ff05::1]", true},
		// Public addresses stay allowed.
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"172.15.255.255", false},
		{"172.32.0.1", false},
		{"100.63.255.255", false},
		{"100.128.0.1", false},
		{"169.255.0.1", false},
		{"11.0.0.1", false},
		{"192.169.0.1", false},
		{"[2606:4700:4700::1111]", false},
		{"[::ffff:8.8.8.8]", false},
		{"[64:ff9b::808:808]", false},
		{"134744072", false}, // 8.8.8.8 as one number
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			t.Parallel()
			ip, ok := ParseHost(tt.host)
			if !ok {
				t.Fatalf("ParseHost(%q) is not an address", tt.host)
			}
			err := CheckHost(context.Background(), noResolver{t}, tt.host)
			if got := err != nil; got != tt.refused {
				t.Errorf("CheckHost(%q) (%s) = %v, want refused %v", tt.host, ip, err, tt.refused)
			}
			if err != nil && !errors.Is(err, ErrRefused) {
				t.Errorf("CheckHost(%q) = %v, not ErrRefused", tt.host, err)
			}
			port := netip.AddrPortFrom(ip, 443).String()
			if cerr := Control("tcp", port, nil); (cerr != nil) != tt.refused {
				t.Errorf("Control(%q) = %v, want refused %v", port, cerr, tt.refused)
			}
		})
	}
}

func TestNotAddresses(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"example.com", "1.2.3.4.5", "256.1.1.1", "0x1g", "a.0x7f", "", "1..2", "4294967296", "1.16777216"} {
		if ip, ok := ParseHost(h); ok {
			t.Errorf("ParseHost(%q) = %s, want a name", h, ip)
		}
	}
}

// noResolver fails a test that resolves a name that is an address.
type noResolver struct{ t *testing.T }

func (r noResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.t.Errorf("resolved %q, which is an address", host)
	return nil, errors.New("no")
}

type fixed []netip.Addr

func (f fixed) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) { return f, nil }

func TestNames(t *testing.T) {
	t.Parallel()
	a := netip.MustParseAddr
	tests := []struct {
		name    string
		addrs   fixed
		refused bool
	}{
		{"only loopback", fixed{a("127.0.0.1"), a("::1")}, true},
		{"only private", fixed{a("10.1.2.3")}, true},
		{"metadata", fixed{a("169.254.169.254")}, true},
		{"public", fixed{a("93.184.216.34")}, false},
		// Saved: the dialler refuses the private one and tries the next.
		{"mixed", fixed{a("10.0.0.1"), a("93.184.216.34")}, false},
		{"no answer", fixed{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckHost(context.Background(), tt.addrs, "s3.example.com")
			if (err != nil) != tt.refused {
				t.Errorf("CheckHost = %v, want refused %v", err, tt.refused)
			}
		})
	}
}
