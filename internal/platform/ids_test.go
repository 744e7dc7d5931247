package platform

import (
	"strings"
	"testing"
)

func TestIDs(t *testing.T) {
	t.Parallel()
	id := NewID(PrefixNamespace)
	if !ValidID(PrefixNamespace, id) || ValidID(PrefixAgent, id) {
		t.Fatalf("%s", id)
	}
	for _, bad := range []string{"ns_", "ns_00000000-0000-1000-8000-000000000000", strings.ToUpper(id), id + "0"} {
		if ValidID(PrefixNamespace, bad) {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"support": true, "ünï cødé": true, strings.Repeat("é", 200): true,
		"": false, " x": false, "x ": false, "x\ty": false, "a\x7fb": false, "a\u0085b": false,
		"a\u2028b": false, strings.Repeat("n", 201): false, "\xff": false, "x\u00a0": false,
	} {
		if ValidName(s) != want {
			t.Errorf("ValidName(%q) = %v", s, !want)
		}
	}
}
