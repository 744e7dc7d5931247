package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// Service key rules.
const (
	ServiceKeyPrefix          = "occ_sk_"
	DefaultServiceKeyLifetime = 30 * 24 * time.Hour
	startLength               = 12
)

// ServiceKeySecret is a freshly generated key: the plaintext is shown once, only Hash is stored.
type ServiceKeySecret struct {
	Plaintext string
	Hash      []byte // SHA-256 of Plaintext
	Start     string // a short, non-secret prefix that helps operators recognise a key
}

// NewServiceKey generates 32 random bytes as an opaque key.
func NewServiceKey() (ServiceKeySecret, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return ServiceKeySecret{}, err
	}
	plaintext := ServiceKeyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	return ServiceKeySecret{Plaintext: plaintext, Hash: HashServiceKey(plaintext), Start: plaintext[:startLength]}, nil
}

// HashServiceKey is the stored form of a key. Keys carry 256 bits of entropy, so a plain SHA-256
// is enough: there is nothing to brute-force.
func HashServiceKey(plaintext string) []byte {
	sum := sha256.Sum256([]byte(plaintext))
	return sum[:]
}
