package api

import (
	"testing"
	"unicode/utf8"
)

// FuzzDecodeQuery: every route's query decoder answers any query string without a panic, and what
// it accepts is printable UTF-8 (nothing a database would refuse as 22021) under a declared name.
func FuzzDecodeQuery(f *testing.F) {
	for _, seed := range []string{"", "limit=10", "limit=1e1", "cursor=%00", "resourceKind=%00", "resourceId=%c0%ae",
		"actorId=a%01b", "since=2026-01-01T00:00:00Z", "limit=99999999999999999999", "a=1&a=2", "%zz", ";"} {
		f.Add(seed)
	}
	routes := Routes()
	f.Fuzz(func(t *testing.T, raw string) {
		for _, r := range routes {
			if len(r.Query) == 0 || r.OpenQuery {
				continue
			}
			out, perr := decodeQuery(raw, r.Query)
			if perr != nil {
				if perr.Code != "INVALID_REQUEST" {
					t.Fatalf("%s ?%q: code %s", r.Path, raw, perr.Code)
				}
				continue
			}
			for k, v := range out {
				declared := false
				for _, p := range r.Query {
					declared = declared || p.Name == k
				}
				if !declared || !utf8.ValidString(v) || !printableText(v) {
					t.Fatalf("%s ?%q: accepted %q=%q", r.Path, raw, k, v)
				}
			}
		}
	})
}
