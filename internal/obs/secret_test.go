package obs

import (
	"strings"
	"testing"
)

func TestLooksLikeSecret(t *testing.T) {
	for _, s := range []string{
		"Bearer abc.def-123", "bearer x", "Authorization: BEARER abc",
		"sk-proj-abcdefghijklmnop", "sk-abcdefghijkl", "SK-ABCDEFGHIJKL",
		"-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----", "-----begin openssh private key-----",
		"ghp_abcdefghijklmnopqrstuvwxyz", "gho_abcdefghijkl", "github_pat_abcdefghijklmnop",
		"AKIAABCDEFGHIJKLMNOP", "akiaabcdefghijklmnop", "id=AKIAABCDEFGHIJKLMNOP",
	} {
		if !LooksLikeSecret(s) {
			t.Errorf("LooksLikeSecret(%q) = false", s)
		}
	}
	for _, s := range []string{
		"", "Bearer", "sk-short", "ask-proj-abcdefghijklmnop", "ghp_short", "AKIAABC",
		"AKIAABCDEFGHIJKLMNOPQ", "namespace:ns_1:ensure", "BEGIN PRIVATE KEY", "task-runner",
	} {
		if LooksLikeSecret(s) {
			t.Errorf("LooksLikeSecret(%q) = true", s)
		}
	}
}

func TestLooksLikeCredentialIsConservative(t *testing.T) {
	for _, s := range []string{
		"Bearer", "bearer", "Bearerabc", "sk-", "sk-a", "x sk-a", "x_sk-abc", "ghp_x", "gho_", "ghs-abc",
		"github_pat_", "akia1", "AKIAABC", "xoxb-1", "ask-proj-abcdefghijklmnop", "xghp_abcdefghijklmnop",
		"1akiaabcdefghijklmnop", "a private key", "PRIVATE KEY",
	} {
		if !looksLikeCredential(s) {
			t.Errorf("looksLikeCredential(%q) = false", s)
		}
	}
	for _, s := range []string{
		"task-runner", "disk-pressure", "risk-1", "namespace:ns_0f8fad5b-d9cb-469f-a165-70867728950e:ensure",
		"compute-kubernetes", "NAMESPACE_RECONCILED", "ghost", "github", "akia", "Slovakia",
	} {
		if looksLikeCredential(s) {
			t.Errorf("looksLikeCredential(%q) = true", s)
		}
	}
}

func TestScrubSecrets(t *testing.T) {
	cases := map[string]string{
		"no secrets here":                        "no secrets here",
		"Authorization: Bearer abc.def-123 rest": "Authorization: [REDACTED] rest",
		"key sk-proj-abcdefghijklmnop end":       "key [REDACTED] end",
		"short sk-abc and (sk-x)":                "short [REDACTED] and ([REDACTED])",
		"glued ask-proj-abcdefghijklmnop":        "glued a[REDACTED]",
		"task-runner stays":                      "task-runner stays",
		"ghp_abcdefghijklmnopqrstuvwxyz":         "[REDACTED]",
		"ghp-abc, gho_x":                         "[REDACTED], [REDACTED]",
		"slack xoxb-123-456 token":               "slack [REDACTED] token",
		"id AKIAABCDEFGHIJKLMNOP. next":          "id [REDACTED] next", // the token class includes "."
		"pem -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- after": "pem [REDACTED] after",
		"open -----BEGIN PRIVATE KEY----- MIIE...":                                       "open [REDACTED]",
		"akiaabcdefghijklmnopsk-x":                                                       "[REDACTED][REDACTED]",
	}
	for in, want := range cases {
		if got := ScrubSecrets(in); got != want {
			t.Errorf("ScrubSecrets(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzScrubSecrets(f *testing.F) {
	for _, s := range append(leakSamples(), "plain", "x sk-a", "akiaabcdefghijklmnopsk-x", "bearer\tabc") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := ScrubSecrets(s)
		if LooksLikeSecret(out) || credentialPattern.MatchString(out) {
			t.Fatalf("ScrubSecrets(%q) = %q still holds a credential", s, out)
		}
		if !credentialPattern.MatchString(s) && out != s {
			t.Fatalf("clean input changed: %q → %q", s, out)
		}
	})
}

// leakSamples are the acceptance-test credentials, as given and lower-cased.
func leakSamples() []string {
	base := []string{
		"Bearer abc.def-123",
		"sk-proj-abcdefghijklmnop",
		"-----BEGIN RSA PRIVATE KEY-----",
		"-----BEGIN PRIVATE KEY-----",
		"ghp_abcdefghijklmnopqrstuvwxyz",
		"github_pat_abcdefghijklmnop",
		"AKIAABCDEFGHIJKLMNOP",
	}
	out := append([]string(nil), base...)
	for _, s := range base {
		out = append(out, strings.ToLower(s))
	}
	return out
}

// FuzzCredentialHintsNeverHideACredential: the cheap pre-test in front of the expressions never
// changes looksLikeCredential's answer.
func FuzzCredentialHintsNeverHideACredential(f *testing.F) {
	for _, s := range append(leakSamples(), "plain", "NAMESPACE_RECONCILED", "\u212Aakia", "s\u212A-abc",
		"\u017Fk-abcdefghijklmnop", "x\tBEARER\nabc", "GHS-abc", "XOXP-1234567890", "A PRIVATE KEY") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		full := secretPattern.MatchString(s) || credentialPattern.MatchString(s) ||
			strings.Contains(strings.ToLower(s), "bearer") || strings.Contains(strings.ToLower(s), "private key")
		if full && !mayHoldCredential(s) {
			t.Fatalf("mayHoldCredential(%q) = false, but the expressions match", s)
		}
		if looksLikeCredential(s) != full {
			t.Fatalf("looksLikeCredential(%q) = %v, want %v", s, !full, full)
		}
	})
}

// BenchmarkLooksLikeCredential compares the log sanitizer's test on the values of a typical
// request log line with the two expressions alone (the anchor), in one run.
func BenchmarkLooksLikeCredential(b *testing.B) {
	values := []string{"api.request", "GET", "/api/v1/namespaces/ns_0f8fad5b-d9cb-469f-a165-70867728950e",
		"ns_0f8fad5b-d9cb-469f-a165-70867728950e", "req_8d0b2c1e-7f7a-4d0e-9a55-3c2f5f3a9b11",
		"prn_4a7c9e2d-1b3f-4c5d-8e6f-7a8b9c0d1e2f", "openclaw.namespaces.get"}
	b.Run("expressions", func(b *testing.B) {
		for b.Loop() {
			for _, v := range values {
				_ = secretPattern.MatchString(v) || credentialPattern.MatchString(v)
			}
		}
	})
	b.Run("hints-then-expressions", func(b *testing.B) {
		for b.Loop() {
			for _, v := range values {
				_ = looksLikeCredential(v)
			}
		}
	})
}
