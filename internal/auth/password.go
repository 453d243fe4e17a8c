// Package auth signs people in and checks the credentials of every request:
// passwords (argon2id), API tokens and sign-in sessions (stored as hashes).
package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters: OWASP's second recommendation (19 MiB, 2 passes),
// cheap enough to sign in on a 2-core node, costly for an attacker.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	minPassword  = 10
	maxPassword  = 1024
)

// HashPassword returns an encoded argon2id hash of password.
func HashPassword(password string) (string, error) {
	if err := CheckPasswordStrength(password); err != nil {
		return "", err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("reading random salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding.EncodeToString
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemory, argonTime, argonThreads, b64(salt), b64(key)), nil
}

// CheckPasswordStrength refuses passwords too short to be safe.
func CheckPasswordStrength(password string) error {
	if len(password) < minPassword || len(password) > maxPassword {
		return fmt.Errorf("a password needs %d to %d characters", minPassword, maxPassword)
	}
	return nil
}

var errBadHash = errors.New("unrecognised password hash")

// VerifyPassword reports whether password matches the encoded hash.
func VerifyPassword(encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var (
		version      int
		mem, time    uint32
		threads      uint8
		salt, wanted []byte
		err          error
	)
	if _, err = fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	if _, err = fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &time, &threads); err != nil {
		return false, errBadHash
	}
	if salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil {
		return false, errBadHash
	}
	if wanted, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, time, mem, threads, uint32(len(wanted)))
	return subtle.ConstantTimeCompare(got, wanted) == 1, nil
}
