package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
)

// Secrets look like "lv9_" + 52 base32 characters (256 random bits). They
// are high-entropy, so a plain SHA-256 is a safe way to store them and fast
// enough to check on every request.
const secretPrefix = "lv9_"

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewSecret returns a fresh secret and its hash.
func NewSecret() (secret, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	secret = secretPrefix + strings.ToLower(b32.EncodeToString(b))
	return secret, HashSecret(secret)
}

// HashSecret returns the stored form of a secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// wellFormed cheaply refuses strings that cannot be secrets, before any
// database lookup.
func wellFormed(secret string) bool {
	rest, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok || len(rest) != 52 {
		return false
	}
	_, err := b32.DecodeString(strings.ToUpper(rest))
	return err == nil
}

// Hint is the part of a secret shown in lists to tell tokens apart.
func Hint(secret string) string {
	if len(secret) < len(secretPrefix)+6 {
		return ""
	}
	return secret[:len(secretPrefix)+6]
}
