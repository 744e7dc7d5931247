package api

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/platform"
)

// FuzzPathIDs puts one escaped path segment in place of every path parameter of every route, then
// matches the path and checks its parameters as a request does: nothing panics, a parameter the
// route does not declare never gets through, and a refused id is a 404 NOT_FOUND (never a 5xx);
// an accepted id is non-empty printable UTF-8, so nothing reaches PostgreSQL that it would refuse
// (SQLSTATE 22021, which used to answer 503).
func FuzzPathIDs(f *testing.F) {
	for _, seed := range []string{"ns_00000000-0000-4000-8000-000000000000", "role_x", "%c0%ae", "%00", "a%00b", "%01", "%7f",
		"%c2%85", "%ff", "%ed%a0%80", "%e2%80%ae", "%2F", "a%2Fb", "..", "%", "%zz", "", " ", "%20",
		strings.Repeat("a", 201), strings.Repeat("%c3%a9", 201)} {
		f.Add(seed)
	}
	routes := Routes()
	rt := newRouter(routes)
	f.Fuzz(func(t *testing.T, segment string) {
		for _, r := range routes {
			if len(r.PathParams) == 0 {
				continue
			}
			path := fillParams(r.Path, segment)
			route, params, _, _ := rt.match(r.Method, path)
			if route == nil {
				continue // 404 or 405
			}
			for name := range params {
				if route.PathParams[name] == nil {
					t.Fatalf("%s %q: parameter %s is not declared", route.Path, path, name)
				}
			}
			if err := checkPathParams(route, params); err != nil {
				if err.Code != platform.CodeNotFound || err.Status() != http.StatusNotFound {
					t.Fatalf("%s %q: %s (%d), want a 404 NOT_FOUND", route.Path, path, err.Code, err.Status())
				}
				continue
			}
			for name, v := range params {
				if v == "" || !utf8.ValidString(v) || !printableText(v) {
					t.Fatalf("%s %q: accepted %s=%q", route.Path, path, name, v)
				}
			}
		}
	})
}

// fillParams replaces every {name} segment of template with segment.
func fillParams(template, segment string) string {
	parts := strings.Split(template, "/")
	for i, p := range parts {
		if paramSegment.MatchString(p) {
			parts[i] = segment
		}
	}
	return strings.Join(parts, "/")
}
