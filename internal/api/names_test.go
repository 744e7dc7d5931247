package api_test

import "testing"

// TestNamesRefuseInvisibleAndCompatibilityLookAlikes: names made of or holding format characters
// are 400 at /name, and a Namespace name equal to a reserved one under NFKC is 409.
func TestNamesRefuseInvisibleAndCompatibilityLookAlikes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, name := range []string{"\u200b", "\u200b\u200b\u200b", "team\u202eabc", "te\u00adam", "\ufeffteam", "te\u200dam", "team\u2066x\u2069"} {
		r := e.admin("POST", "/namespaces", map[string]any{"name": name})
		if r.status != 400 || !r.hasDetail("/name", "INVALID_FORMAT") {
			t.Errorf("Namespace name %q: %d %s", name, r.status, r.raw)
		}
	}
	e.createNamespace("team")
	for _, name := range []string{"ｔｅａｍ", "team"} {
		if r := e.admin("POST", "/namespaces", map[string]any{"name": name}); r.status != 409 || r.errCode() != "RESOURCE_CONFLICT" {
			t.Errorf("Namespace name %q after \"team\": %d %s", name, r.status, r.raw)
		}
	}
	// The rule is the Name rule of every resource.
	ns := e.createNamespace("names")
	if r := e.admin("POST", "/namespaces/"+ns+"/secrets", map[string]any{"name": "to\u200bken", "value": "never-stored-7c1f0e9a2b"}); r.status != 400 || !r.hasDetail("/name", "INVALID_FORMAT") {
		t.Errorf("Secret name with U+200B: %d %s", r.status, r.raw)
	}
}
