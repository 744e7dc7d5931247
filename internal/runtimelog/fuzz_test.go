package runtimelog

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzBuild: whatever a runtime prints, a page never panics, holds valid UTF-8 without control
// characters, keeps every message within MaxMessageBytes and never shows a known Secret value.
func FuzzBuild(f *testing.F) {
	for _, seed := range []string{
		"plain", `{"level":"info","subsystem":"s","message":"m"}`, `{"event":"runtime.startup_phase","ms":1e999}`,
		"-----BEGIN PRIVATE KEY-----", "\x00\xc0\xae\u202e", `[[[[[[[[[[[]]]]]]]]]]]`, "Authorization: Bearer x",
	} {
		f.Add(seed, "s3cret-value")
	}
	f.Fuzz(func(t *testing.T, line, secret string) {
		known := []string{secret}
		p := Build(Input{Stream: Stream{Source: "gateway"}, Lines: []RawLine{{Text: line}, {Text: line + " " + secret}}, Known: known})
		raw, err := json.Marshal(p.Records)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Records {
			for _, s := range []string{r.Message, r.Subsystem} {
				if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 || len(s) > MaxMessageBytes {
					t.Fatalf("unclean string %q", s)
				}
			}
		}
		// A known value is masked wherever it appears, unless masking it would need a longer value
		// or it is part of the redaction marks themselves.
		if utf8.RuneCountInString(secret) >= MinSecretLength && utf8.ValidString(secret) && StripControls(secret) == secret &&
			!strings.ContainsAny(secret, `"\`) && !strings.Contains("[redacted:secret] …[truncated]", secret) && strings.Contains(string(raw), secret) {
			t.Fatalf("page shows the known value %q: %s", secret, raw)
		}
	})
}
