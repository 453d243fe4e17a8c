package docker

import (
	"slices"
	"testing"

	"github.com/levers9/levers9/internal/wire"
)

// Debootstrap runs as root on the host: only plain names and http(s)
// mirrors reach its command line, and signatures are always checked.
func TestDebootstrapArgs(t *testing.T) {
	t.Parallel()
	ok := []wire.BuildStep{
		{Suite: "bookworm", Mirror: "http://deb.debian.org/debian", Packages: []string{"python3", "libstdc++6", "g++-12", "libc6:amd64"}},
		{},
		{Suite: "stable", Mirror: "https://mirror.example:8443/debian/"},
	}
	for _, s := range ok {
		args, err := debootstrapArgs(s, "/tmp/x")
		if err != nil {
			t.Errorf("%+v: %v", s, err)
			continue
		}
		if !slices.Contains(args, "--force-check-gpg") {
			t.Errorf("%v: signatures not forced", args)
		}
	}
	bad := []wire.BuildStep{
		{Suite: "../../../../var/lib/levers9/code/abc/evil"},
		{Suite: "--no-check-gpg"},
		{Suite: "bookworm\nx"},
		{Mirror: "file:///"},
		{Mirror: "file:///var/lib/levers9/code/abc"},
		{Mirror: "ftp://x/debian"},
		{Mirror: "http://user:pw@x/debian"},
		{Mirror: "--keyring=/tmp/k"},
		{Mirror: "http://x/debian --no-check-gpg"},
		{Packages: []string{"--foreign"}},
		{Packages: []string{"a,b"}},
		{Packages: []string{"../x.deb"}},
		{Packages: []string{"python3 --no-check-gpg"}},
		{Packages: []string{""}},
	}
	for _, s := range bad {
		if args, err := debootstrapArgs(s, "/tmp/x"); err == nil {
			t.Errorf("%+v: accepted as %q", s, args)
		}
	}
}
