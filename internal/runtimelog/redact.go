// Package runtimelog turns what an Agent's containers printed into records that may leave OCC:
// each line is classified against an allowlist of operational output, every string kept is
// redacted and bounded, and a page labels every loss it can see (a restarted container, lines
// skipped between polls, a byte limit) instead of hiding it. Compute Drivers call Build on the
// lines they read, so no driver can return a line that skipped these steps.
package runtimelog

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinSecretLength is the shortest known Secret value Redact masks by value: shorter values would
// mask ordinary words.
const MinSecretLength = 6

type pattern struct {
	name string
	re   *regexp.Regexp
	// keep is the number of leading submatches kept verbatim (a key name, a scheme).
	keep int
	// tail keeps the last submatch verbatim too (the @ after URL user information).
	tail bool
	// hints are lower-case substrings one of which every match holds: a line with none of them
	// skips the expression (Go's regexp runs in linear time, but with a large constant per byte).
	hints []string
}

// patterns are applied in order; each replaces the secret part of its match with
// [redacted:<name>]. They are best-effort: an opaque short token with no known prefix and no key
// name beside it stays visible (docs/observability.md says so).
var patterns = []pattern{
	{"pem", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(-----END [A-Z0-9 ]+-----|$)`), 0, false, []string{"-----begin "}},
	{"authorization", regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization\b["']?\s*[:=]\s*)("[^"]*"|'[^']*'|.+)`), 1, false, []string{"authorization"}},
	{"cookie", regexp.MustCompile(`(?i)(\b(?:set-)?cookie\b["']?\s*[:=]\s*)("[^"]*"|'[^']*'|.+)`), 1, false, []string{"cookie"}},
	{"bearer", regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]+`), 1, false, []string{"bearer"}},
	{"basic", regexp.MustCompile(`(?i)(\bbasic\s+)[A-Za-z0-9+/]{6,}={0,2}`), 1, false, []string{"basic"}},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`), 0, false, []string{"eyj"}},
	{"token", regexp.MustCompile(`\b(?:sk-(?:proj-|ant-)?|sk_live_|sk_test_|rk_live_|ghp_|gho_|ghs_|ghu_|ghr_|github_pat_|glpat-|hf_|xox[abposr]-|npm_|AKIA|ASIA)[A-Za-z0-9_-]{8,}`), 0, false, []string{"sk-", "sk_", "rk_", "gh", "glpat-", "hf_", "xox", "npm_", "akia", "asia"}},
	{"url-userinfo", regexp.MustCompile(`(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]+:[^/\s@]*(@)`), 1, true, []string{"@"}},
	{"url-query", regexp.MustCompile(`(://[^\s?#]*\?|&)([^=\s&#]+=)[^&\s#"']+`), 2, false, []string{"://"}},
	{"url-fragment", regexp.MustCompile(`(://[^\s#]*#)[^\s"']+`), 1, false, []string{"#"}},
	{"key-value", regexp.MustCompile(`(?i)(["']?\b(?:password|passwd|pwd|secret|client[_-]?secret|token|access[_-]?token|refresh[_-]?token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential)s?\b["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;}]+)`), 1, false, []string{"pass", "pwd", "secret", "token", "key", "credential"}},
	{"env-key", regexp.MustCompile(`(\b[A-Z][A-Z0-9_]*_(?:KEY|TOKEN|SECRET|PASSWORD|PAT)=)\S+`), 1, false, []string{"_key=", "_token=", "_secret=", "_password=", "_pat="}},
	{"netrc", regexp.MustCompile(`(?i)(\blogin\s+\S+\s+password\s+)\S+`), 1, false, []string{"password"}},
	{"credential-flag", regexp.MustCompile(`((?:^|\s)(?:--password|--pass|--token|--with-token|--client-secret)[ =])\S+`), 1, false, []string{"--pass", "--token", "--with-token", "--client-secret"}},
	{"user-password", regexp.MustCompile(`((?:^|\s)(?:-u|-U|--user|--proxy-user)[ =])[^\s:]+:\S+`), 1, false, []string{"-u", "--user", "--proxy-user"}},
}

// Redact masks credential patterns and every known value in s. Known values shorter than
// MinSecretLength are not masked by value.
func Redact(s string, known []string) string {
	s = redactKnown(s, known)
	lower := strings.ToLower(s)
	for _, p := range patterns {
		if !hinted(lower, p.hints) || !p.re.MatchString(s) {
			continue
		}
		mask := "[redacted:" + p.name + "]"
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			if strings.HasPrefix(m, "[redacted:") {
				return m
			}
			if p.keep == 0 {
				return mask
			}
			sub := p.re.FindStringSubmatch(m)
			var kept strings.Builder
			for _, g := range sub[1 : p.keep+1] {
				kept.WriteString(g)
			}
			if strings.HasPrefix(m[kept.Len():], "[redacted:") {
				return m
			}
			if p.tail {
				return kept.String() + mask + sub[len(sub)-1]
			}
			return kept.String() + mask
		})
	}
	return maskLongRuns(s)
}

func hinted(lower string, hints []string) bool {
	for _, h := range hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return len(hints) == 0
}

// MinOpaqueRun is the length from which a run of base64 or hex characters is masked as an
// opaque credential.
const MinOpaqueRun = 40

// maskLongRuns masks runs of at least MinOpaqueRun characters of the base64 alphabets (with "_"
// but not "-", so that opaque ids such as rev_<uuid> stay visible) that look encoded.
func maskLongRuns(s string) string {
	var b strings.Builder
	start, last := -1, 0
	flush := func(end int) {
		if start >= 0 && end-start >= MinOpaqueRun {
			name := opaqueRun(strings.TrimRight(s[start:end], "="))
			if name == "" {
				start = -1
				return
			}
			b.WriteString(s[last:start])
			b.WriteString("[redacted:" + name + "]")
			last = end
		}
		start = -1
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isRunByte(c) || (c == '=' && start >= 0) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// opaqueRun names a run that looks like an encoded credential: hex with a digit, or base64 with a
// digit and both letter cases. "" for anything else, such as a long path of words.
func opaqueRun(run string) string {
	var digit, lower, upper bool
	for i := 0; i < len(run); i++ {
		c := run[i]
		digit = digit || c >= '0' && c <= '9'
		lower = lower || c >= 'a' && c <= 'z'
		upper = upper || c >= 'A' && c <= 'Z'
	}
	switch {
	case digit && strings.Trim(run, "0123456789abcdefABCDEF") == "":
		return "hex"
	case digit && lower && upper:
		return "base64"
	}
	return ""
}

func isRunByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_'
}

// redactKnown replaces each known value, longest first (a value that contains another is masked
// whole).
func redactKnown(s string, known []string) string {
	if len(known) == 0 {
		return s
	}
	values := make([]string, 0, len(known))
	for _, v := range known {
		if utf8.RuneCountInString(v) >= MinSecretLength {
			values = append(values, v)
		}
	}
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
	for _, v := range values {
		s = strings.ReplaceAll(s, v, "[redacted:secret]")
	}
	return s
}

// StripControls makes s valid UTF-8 and removes control and bidirectional formatting characters
// (a log line must not rewrite the terminal or the page that shows it); tabs become spaces.
func StripControls(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	clean := true
	for _, r := range s {
		if dropRune(r) || r == '\t' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case dropRune(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func dropRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u200b' || r == '\ufeff'
}

// Clean strips controls, redacts and bounds s to limit bytes: what every string kept from a
// runtime goes through (log messages, field values, event messages).
func Clean(s string, known []string, limit int) (string, bool) {
	return truncate(Redact(StripControls(s), known), limit)
}

// Bound strips controls from and bounds s to limit bytes, without redaction: for identifiers a
// runtime reports (image references, digests, phases), which redaction would mask as hex runs.
func Bound(s string, limit int) string {
	out, _ := truncate(StripControls(s), limit)
	return out
}

const truncationMark = "…[truncated]"

func truncate(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	cut := limit - len(truncationMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncationMark, true
}
