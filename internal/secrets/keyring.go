package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of a server key: AES-256.
const KeySize = 32

// Keyring holds the server's keys: the first seals, every one opens, so a
// new key can be put first while rows sealed with the old ones still open
// (rotation: then Reseal, then drop the old key).
type Keyring struct {
	keys []ringKey
}

type ringKey struct {
	id   string
	aead cipher.AEAD
}

// KeyID names a key without revealing it: the first 8 hex digits of its
// SHA-256.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// NewKeyring returns a keyring of keys (each KeySize bytes), the first
// sealing.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("no secret key given")
	}
	k := &Keyring{}
	seen := map[string]bool{}
	for i, key := range keys {
		if len(key) != KeySize {
			return nil, fmt.Errorf("secret key %d is %d bytes, want %d (base64 of 32 random bytes: openssl rand -base64 32)", i+1, len(key), KeySize)
		}
		id := KeyID(key)
		if seen[id] {
			continue
		}
		seen[id] = true
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("secret key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secret key %d: %w", i+1, err)
		}
		k.keys = append(k.keys, ringKey{id: id, aead: aead})
	}
	return k, nil
}

// ParseKeys reads base64 keys separated by commas or white space (the
// environment variable's and the key file's form), the first sealing.
func ParseKeys(s string) (*Keyring, error) {
	var keys [][]byte
	for i, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		b, err := base64.StdEncoding.DecodeString(f)
		if err != nil {
			// Never echo the text: it is meant to be a key.
			return nil, fmt.Errorf("secret key %d is not base64", i+1)
		}
		keys = append(keys, b)
	}
	return NewKeyring(keys...)
}

// LoadKeyFile reads the keys in file path (see ParseKeys).
func LoadKeyFile(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the secret key file: %w", err)
	}
	k, err := ParseKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return k, nil
}

// LoadOrCreateKeyFile reads the keys in path, first writing a new random
// key there (mode 0600) when the file does not exist: the default of a
// server given no key. A file others may read is refused.
func LoadOrCreateKeyFile(path string) (*Keyring, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("writing the secret key file: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("creating the secret key file: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret key file %s is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	return LoadKeyFile(path)
}

// Primary is the ID of the sealing key.
func (k *Keyring) Primary() string { return k.keys[0].id }

// Has reports whether the keyring holds key id.
func (k *Keyring) Has(id string) bool {
	for _, r := range k.keys {
		if r.id == id {
			return true
		}
	}
	return false
}

// Seal encrypts plain with the first key, bound to ad (what the sealed
// value belongs to, so that a row's ciphertext copied into another row
// does not open there).
func (k *Keyring) Seal(plain, ad []byte) (ciphertext, nonce []byte, keyID string, err error) {
	r := k.keys[0]
	nonce = make([]byte, r.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, "", err
	}
	return r.aead.Seal(nil, nonce, plain, ad), nonce, r.id, nil
}

// ErrCannotOpen is a sealed value that no key of the ring opens: the key
// that sealed it is gone, or the value or its owner changed.
var ErrCannotOpen = errors.New("cannot decrypt the secret: its key is not among the server's keys, or it was altered")

// Open decrypts a value sealed by key keyID with ad.
func (k *Keyring) Open(ciphertext, nonce []byte, keyID string, ad []byte) ([]byte, error) {
	for _, r := range k.keys {
		if r.id != keyID {
			continue
		}
		if len(nonce) != r.aead.NonceSize() {
			return nil, ErrCannotOpen
		}
		plain, err := r.aead.Open(nil, nonce, ciphertext, ad)
		if err != nil {
			return nil, ErrCannotOpen
		}
		return plain, nil
	}
	return nil, fmt.Errorf("%w (key %s)", ErrCannotOpen, keyID)
}
