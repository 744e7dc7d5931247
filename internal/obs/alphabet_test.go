package obs

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// The hand-written alphabets accept exactly what their regular expressions accept, and a string
// is written as json.Marshal writes it.
func FuzzAlphabetsMatchTheirPatterns(f *testing.F) {
	safe := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._: /@-]{0,511}$`)
	route := regexp.MustCompile(`^/[A-Za-z0-9._:/{}@-]{0,511}$`)
	for _, s := range []string{"", "a", "/", "/namespaces/{namespaceId}", "GET /v1/x", "a\n", "é", "a b@c.d:e-f_g",
		"{x}", "/a b", strings.Repeat("a", 512), strings.Repeat("a", 513), "/" + strings.Repeat("b", 511), "/" + strings.Repeat("b", 512)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := safeAlphabet(s), safe.MatchString(s); got != want {
			t.Errorf("safeAlphabet(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := routeAlphabet(s), route.MatchString(s); got != want {
			t.Errorf("routeAlphabet(%q) = %v, the pattern says %v", s, got, want)
		}
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, json.Marshal writes %s", s, got, want)
		}
	})
}
