// Package platform holds the domain rules shared by the API, the worker and bootstrap: identifiers,
// names, resource shapes and admission rules.
package platform

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Identifier prefixes.
const (
	PrefixInstallation     = "ins"
	PrefixNamespace        = "ns"
	PrefixConfiguration    = "cfg"
	PrefixSecret           = "sec"
	PrefixServiceAccount   = "sa"
	PrefixPreset           = "pre"
	PrefixAgent            = "agt"
	PrefixRevision         = "rev"
	PrefixAudit            = "aud"
	PrefixPrincipal        = "prn"
	PrefixServicePrincipal = "spn"
	PrefixRequest          = "req"
	PrefixAccount          = "usr"
	// PrefixProvisioning names a guided provisioning record (its workId; ours).
	PrefixProvisioning = "apw"
)

var prefixedID = regexp.MustCompile(`^([a-z]+)_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// NewID returns <prefix>_<lowercase uuidv4>.
func NewID(prefix string) string { return prefix + "_" + uuid.NewString() }

// ValidID reports whether s is <prefix>_<lowercase uuidv4>.
func ValidID(prefix, s string) bool {
	m := prefixedID.FindStringSubmatch(s)
	return m != nil && m[1] == prefix
}

// ValidName applies the Name rule: 1..200 code points, valid UTF-8, no leading or trailing
// whitespace, no C0, DEL, C1, U+2028 or U+2029, and no format character (Unicode category Cf:
// zero-width characters, bidi controls, soft hyphen, byte order mark), which would let two
// names look alike or a name look empty. The database enforces the same rule (occ.is_valid_name).
func ValidName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	n := utf8.RuneCountInString(s)
	if n < 1 || n > 200 || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if r <= 0x1f || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}
