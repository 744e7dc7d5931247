package api_test

import "testing"

// TestHostileTextIsAClientError: NUL bytes, control characters and invalid UTF-8 in identifier
// members, path identifiers and query values are refused before they reach PostgreSQL (which
// would refuse them as 22021 and make the request a false 503): 400 at the member for bodies and
// queries, 404 for paths.
func TestHostileTextIsAClientError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("hostile")
	base := "/namespaces/" + ns
	sp := e.expect(e.admin("POST", base+"/iam/service-principals", nil), 201).data()["id"].(string)
	role := e.expect(e.admin("POST", base+"/iam/roles", map[string]any{"permissions": permissions("namespace:read")}), 201).data()["id"].(string)
	binding := func(member, value string) map[string]any {
		b := map[string]any{"subjectKind": "identity", "subjectId": sp, "roleId": role, "resourceKind": "namespace", "resourceId": ns}
		b[member] = value
		return b
	}
	for _, member := range []string{"subjectId", "roleId", "resourceId"} {
		for _, value := range []string{"a\x00b", "\x00", "a\u0085b", "a\tb"} {
			if r := e.admin("POST", base+"/iam/access-bindings", binding(member, value)); r.status != 400 || !r.hasDetail("/"+member, "INVALID_FORMAT") {
				t.Errorf("binding %s=%q: %d %s", member, value, r.status, r.raw)
			}
		}
	}
	if r := e.admin("POST", "/api/auth/service-keys", map[string]any{"servicePrincipalId": "spn\x00", "name": "ci"}); r.status != 400 || !r.hasDetail("/servicePrincipalId", "INVALID_FORMAT") {
		t.Errorf("service key for a NUL id: %d %s", r.status, r.raw)
	}
	// Exponents at the edge of int64 once panicked the integer reader (500). A huge integer is out
	// of range (INVALID_VALUE); a tiny one is not an integer at all, INVALID_TYPE as for 1.5.
	for lit, code := range map[string]string{"1e9223372036854775807": "INVALID_VALUE",
		"1e-9223372036854775808": "INVALID_TYPE", "1.5e-9223372036854775808": "INVALID_TYPE"} {
		r := e.do(req{method: "POST", path: "/api/auth/service-keys", key: e.adminKey,
			raw: []byte(`{"servicePrincipalId":"` + sp + `","name":"ci","expiresIn":` + lit + `}`)})
		if r.status != 400 || !r.hasDetail("/expiresIn", code) {
			t.Errorf("expiresIn %s: %d %s", lit, r.status, r.raw)
		}
	}
	for _, p := range []string{base + "/iam/roles/%c0%ae", base + "/iam/roles/%00", base + "/iam/access-bindings/%ff%fe",
		base + "/iam/service-principals/a%00b", "/namespaces/%c0%ae"} {
		if r := e.admin("GET", p, nil); r.status != 404 || r.errCode() != "NOT_FOUND" {
			t.Errorf("GET %s: %d %s", p, r.status, r.raw)
		}
	}
	for _, q := range []struct{ query, member string }{
		{"resourceKind=%00", "/resourceKind"}, {"resourceId=%c0%ae", "/resourceId"}, {"actorId=a%01b", "/actorId"},
		{"namespaceId=%ff", "/namespaceId"},
	} {
		if r := e.admin("GET", "/audit-events?"+q.query, nil); r.status != 400 || !r.hasDetail(q.member, "INVALID_FORMAT") {
			t.Errorf("audit ?%s: %d %s", q.query, r.status, r.raw)
		}
	}
	for _, ev := range e.logEvents() {
		if ev["event"] == "http.dependency_unavailable" || ev["severity"] == "ERROR" {
			t.Errorf("a client mistake logged as a dependency failure: %v", ev)
		}
	}
}
