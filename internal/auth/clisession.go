package auth

import (
	"crypto/rand"
	"math/big"
	"regexp"
	"strings"
)

// CLI sessions of `occ login` (RFC 8628 shape): a device code the CLI polls with, a short user
// code the person types in the browser, and the token the CLI finally receives.
const (
	// CLISessionHeader carries a CLI session token.
	CLISessionHeader = "x-occ-cli-session"
	// CLITokenPrefix starts every CLI session token, so secret scanners recognise one.
	CLITokenPrefix = "occcli_"
	// userCodeAlphabet is 20 consonants: 8 of them carry about 34 bits, shown as BCDF-GHJK.
	userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
	userCodeLength   = 8
)

var cliTokenPattern = regexp.MustCompile(`^occcli_[A-Za-z0-9_-]{43}$`)

// NewCLIToken returns a fresh CLI session token and the SHA-256 hash that is stored.
func NewCLIToken() (token string, hash []byte, err error) {
	s, err := NewSecret()
	if err != nil {
		return "", nil, err
	}
	token = CLITokenPrefix + s
	return token, HashToken(token), nil
}

// WellFormedCLIToken reports whether s has the shape of a CLI session token.
func WellFormedCLIToken(s string) bool { return cliTokenPattern.MatchString(s) }

// NewUserCode returns a user code such as BCDF-GHJK.
func NewUserCode() (string, error) {
	var b strings.Builder
	for i := 0; i < userCodeLength; i++ {
		if i == userCodeLength/2 {
			b.WriteByte('-')
		}
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(userCodeAlphabet))))
		if err != nil {
			return "", err
		}
		b.WriteByte(userCodeAlphabet[n.Int64()])
	}
	return b.String(), nil
}

// NormalizeUserCode is the canonical form of a typed user code: upper-cased, one hyphen or spaces
// between the halves tolerated; ok false for anything else (which spends the wrong-code budget
// without a lookup).
func NormalizeUserCode(typed string) (string, bool) {
	if len(typed) > 16 {
		return "", false
	}
	compact := strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(typed)))
	if len(compact) != userCodeLength {
		return "", false
	}
	for i := 0; i < len(compact); i++ {
		if !strings.ContainsRune(userCodeAlphabet, rune(compact[i])) {
			return "", false
		}
	}
	return compact, true
}
