package obs

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Redacted replaces a value, or a credential-looking span of text, that must not be
// recorded.
const Redacted = "[REDACTED]"

// secretPattern is the plaintext-credential expression of the startup YAML check, matched
// case-insensitively.
var secretPattern = regexp.MustCompile(`(?i)\bBearer\s+[A-Za-z0-9._~-]+` +
	`|\bsk-(?:proj-)?[A-Za-z0-9_-]{12,}` +
	`|-----BEGIN [A-Z ]*PRIVATE KEY-----` +
	`|\b(?:ghp|gho|github_pat)_[A-Za-z0-9_]{12,}` +
	`|\bAKIA[0-9A-Z]{16}\b`)

// credentialPattern is wider than secretPattern. It is what ScrubSecrets replaces and
// what the log sanitizer refuses, matched case-insensitively:
//
//   - long forms, wherever they start (no word boundary, so "xsk-proj-…" or
//     "ask-proj-…" still count): "bearer" followed by whitespace and a token;
//     a PEM private-key header, together with everything up to its END line or the
//     end of the text; "sk-" or "sk-proj-" followed by 12 or more of [A-Za-z0-9_-];
//     "ghp", "gho", "ghu", "ghs", "ghr" or "github_pat", then "_" or "-", then 12 or
//     more of [A-Za-z0-9_]; "xox" plus up to two letters or digits, "-", then 10 or
//     more of [A-Za-z0-9-]; "akia" followed by 16 letters or digits;
//   - short forms, at the start of the text or right after a character that is not
//     a letter or digit (group 1 holds that character, which scrubbing keeps):
//     "sk-", "gh?_"/"gh?-" (? one of o p u s r), "github_pat_", "xox…-", or "akia"
//     followed by a letter or digit; with any run of [A-Za-z0-9_.~+/=-] after it.
//     So "sk-abc" and "ghp_x" count, while "task-1" or "disk-pressure" do not.
var credentialPattern = regexp.MustCompile(`(?i)` +
	`bearer\s+\S+` +
	`|-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY-----|$)` +
	`|sk-(?:proj-)?[A-Za-z0-9_-]{12,}` +
	`|(?:gh[opusr]|github_pat)[-_][A-Za-z0-9_]{12,}` +
	`|xox[a-z0-9]{0,2}-[A-Za-z0-9-]{10,}` +
	`|akia[0-9a-z]{16}` +
	`|(^|[^A-Za-z0-9])(?:sk-|gh[opusr][-_]|github_pat_|xox[a-z0-9]{0,2}-|akia[0-9a-z])[A-Za-z0-9_.~+/=-]*`)

// LooksLikeSecret reports whether s contains a plaintext credential by the shared
// definition: a Bearer token, an OpenAI-style "sk-" key, a
// PEM private-key header, a GitHub token, or an AWS access key id; case-insensitive.
func LooksLikeSecret(s string) bool {
	return secretPattern.MatchString(s)
}

// ScrubSecrets replaces every credential-looking span of s with [Redacted]. It covers
// everything LooksLikeSecret matches and more (short "sk-…" and "ghp_…" forms, Slack
// "xox?-…" tokens, whole PEM private-key blocks); the result never satisfies
// LooksLikeSecret.
func ScrubSecrets(s string) string {
	// A short form glued to the end of a long one ("akia…(16)sk-x") only has its
	// boundary once the long one is replaced, so repeat until nothing matches. Each
	// round consumes original text, so this ends.
	for credentialPattern.MatchString(s) {
		s = scrubOnce(s)
	}
	return s
}

func scrubOnce(s string) string {
	matches := credentialPattern.FindAllStringSubmatchIndex(s, -1)
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, m := range matches {
		start := m[0]
		if m[2] >= 0 { // short form: keep the boundary character
			start = m[3]
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// looksLikeCredential is the log sanitizer's test, deliberately more conservative than
// LooksLikeSecret because a log line is a public interface: a string is refused when
// it matches LooksLikeSecret or credentialPattern, or when it contains "bearer" or
// "private key" anywhere (case-insensitive), even with nothing after it.
func looksLikeCredential(s string) bool {
	if !mayHoldCredential(s) {
		return false
	}
	if secretPattern.MatchString(s) || credentialPattern.MatchString(s) {
		return true
	}
	lower := strings.ToLower(s)
	return strings.Contains(lower, "bearer") || strings.Contains(lower, "private key")
}

// credentialHints are the ASCII words at least one of which every form of secretPattern and
// credentialPattern contains, in lower case.
var credentialHints = []string{"bearer", "private key", "sk-", "gho", "ghp", "ghu", "ghs", "ghr", "github_pat", "xox", "akia"}

// mayHoldCredential is the cheap test in front of the two expressions, which took a tenth of the
// API's CPU on an authorized read (docs/performance.md): it is false only for an ASCII string
// without any hint. Text with other bytes always goes to the expressions, whose case folding
// also matches letters such as the Kelvin sign (U+212A) for k.
func mayHoldCredential(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	lower := strings.ToLower(s)
	for _, h := range credentialHints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}
