package api_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// TestCursorIsBoundToItsList: a cursor returned by one Namespace's list is refused on another
// Namespace's list of the same kind and on the same list under other filters, and a forged
// cursor carrying a NUL or invalid UTF-8 is a 400, not a database error.
func TestCursorIsBoundToItsList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.createNamespace("cursor-a"), e.createNamespace("cursor-b")
	for _, ns := range []string{a, b} {
		for range 2 {
			e.expect(e.admin("POST", "/namespaces/"+ns+"/iam/roles", map[string]any{"permissions": permissions("namespace:read")}), 201)
		}
	}
	next := func(r resp) string {
		c, _ := r.doc["meta"].(map[string]any)["nextCursor"].(string)
		if c == "" {
			t.Fatalf("no next cursor: %s", r.raw)
		}
		return c
	}
	cur := next(e.expect(e.admin("GET", "/namespaces/"+a+"/iam/roles?limit=1", nil), 200))
	e.expect(e.admin("GET", "/namespaces/"+a+"/iam/roles?limit=1&cursor="+cur, nil), 200)
	if r := e.admin("GET", "/namespaces/"+b+"/iam/roles?limit=1&cursor="+cur, nil); r.status != 400 || !r.hasDetail("/cursor", "INVALID_FORMAT") {
		t.Fatalf("another Namespace's cursor: %d %s", r.status, r.raw)
	}

	audit := next(e.expect(e.admin("GET", "/audit-events?limit=1&namespaceId="+a, nil), 200))
	e.expect(e.admin("GET", "/audit-events?limit=1&namespaceId="+a+"&cursor="+audit, nil), 200)
	if r := e.admin("GET", "/audit-events?limit=1&namespaceId="+b+"&cursor="+audit, nil); r.status != 400 || !r.hasDetail("/cursor", "INVALID_FORMAT") {
		t.Fatalf("a cursor under other filters: %d %s", r.status, r.raw)
	}

	// Forge cursors from a genuine one: same list and scope, hostile position.
	raw, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"role\x00x", "\xc0\xae", "a\u0085b"} {
		doc["i"] = id
		forged, _ := json.Marshal(doc)
		if id == "\xc0\xae" { // json.Marshal would repair it; write the bytes as they come
			forged = []byte(`{"r":"` + doc["r"].(string) + `","s":"` + doc["s"].(string) + `","t":1,"i":"` + id + `"}`)
		}
		q := base64.RawURLEncoding.EncodeToString(forged)
		if r := e.admin("GET", "/namespaces/"+a+"/iam/roles?limit=1&cursor="+q, nil); r.status != 400 || !r.hasDetail("/cursor", "INVALID_FORMAT") {
			t.Errorf("forged cursor position %q: %d %s", id, r.status, r.raw)
		}
	}
}
