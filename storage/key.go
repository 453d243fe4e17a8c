package storage

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxKeyBytes bounds a key, as S3 does.
const MaxKeyBytes = 1024

var bucketName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{1,61}[a-z0-9])$`)

// CheckBucket refuses a bucket name that is not safe as a path segment and
// an S3 prefix (the same rule the ent schema applies).
func CheckBucket(name string) error {
	if !bucketName.MatchString(name) || strings.Contains(name, "..") {
		return fmt.Errorf("%w: bucket %q", ErrInvalid, name)
	}
	return nil
}

// CheckKey refuses any key that could address something outside its
// bucket on some driver, or be read differently by a proxy or filesystem:
// absolute paths, "." and ".." segments, empty segments, backslashes, NUL
// and other control characters, invalid UTF-8, and percent-encoded dots,
// slashes and backslashes (a second decoding must not change the key).
func CheckKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why) }
	switch {
	case key == "":
		return bad("empty")
	case len(key) > MaxKeyBytes:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyBytes))
	case !utf8.ValidString(key):
		return bad("not UTF-8")
	case strings.HasPrefix(key, "/"):
		return bad("absolute")
	case strings.ContainsRune(key, '\\'):
		return bad("backslash")
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return bad("control character")
		}
	}
	lower := strings.ToLower(key)
	for _, enc := range []string{"%2e", "%2f", "%5c", "%00"} {
		if strings.Contains(lower, enc) {
			return bad("percent-encoded " + enc)
		}
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return bad("empty path segment")
		case ".", "..":
			return bad("relative path segment")
		}
	}
	return nil
}

// CheckPrefix is CheckKey for list prefixes, which may be empty or end in
// a slash.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return CheckKey(strings.TrimSuffix(prefix, "/"))
}

// checkList checks a listing's bucket and options, the same for every
// driver, and returns its page size.
func checkList(bucket string, opts ListOptions) (int, error) {
	if err := CheckBucket(bucket); err != nil {
		return 0, err
	}
	if err := CheckPrefix(opts.Prefix); err != nil {
		return 0, err
	}
	switch {
	case opts.Limit == 0:
		return DefaultPageSize, nil
	case opts.Limit < 0 || opts.Limit > MaxPageSize:
		return 0, fmt.Errorf("%w: page size %d", ErrInvalid, opts.Limit)
	}
	return opts.Limit, nil
}
