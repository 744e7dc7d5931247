package api_test

import (
	"crypto/sha256"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
)

func signInReq(email, password string) req {
	return req{method: "POST", path: "/api/auth/sign-in/email", body: map[string]any{"email": email, "password": password}}
}

func withoutRequestID(r resp) string {
	return strings.Replace(string(r.raw), r.header.Get("X-Request-Id"), "", 1)
}

func TestSignInFailuresAreUniformAndLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wrong := e.do(signInReq(adminEmail, "not-the-password-at-all"))
	unknown := e.do(signInReq("nobody@example.com", "not-the-password-at-all"))
	if wrong.status != 401 || unknown.status != 401 || withoutRequestID(wrong) != withoutRequestID(unknown) {
		t.Fatalf("wrong password %d %s / unknown email %d %s", wrong.status, wrong.raw, unknown.status, unknown.raw)
	}
	if len(wrong.header.Values("Set-Cookie")) != 0 {
		t.Fatal("a failed sign-in set a cookie")
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'authentication.login' AND outcome = 'failure'`); n != 2 {
		t.Fatalf("failed sign-ins audited: %d", n)
	}

	// The email lane already holds one failure: nine more fail normally, the eleventh is limited.
	for i := 0; i < 9; i++ {
		if r := e.do(signInReq(" Admin@OpenClaw.local ", "not-the-password-at-all")); r.status != 401 {
			t.Fatalf("failure %d: %d %s", i+2, r.status, r.raw)
		}
	}
	limited := e.do(signInReq(adminEmail, adminPass))
	retry, err := strconv.Atoi(limited.header.Get("Retry-After"))
	if limited.status != 429 || limited.errCode() != "RATE_LIMITED" || err != nil || retry < 1 || retry > 60 {
		t.Fatalf("11th attempt: %d %s Retry-After %q", limited.status, limited.raw, limited.header.Get("Retry-After"))
	}
	// Another email is not affected; the limited one recovers after the window.
	if r := e.do(signInReq("someone@example.com", "not-the-password-at-all")); r.status != 401 {
		t.Fatalf("other email: %d", r.status)
	}
	e.clock.Advance(61 * time.Second)
	if r := e.do(signInReq(adminEmail, adminPass)); r.status != 200 {
		t.Fatalf("after the window: %d %s", r.status, r.raw)
	}
	var limitedLogs int
	for _, ev := range e.logEvents() {
		if ev["event"] == "authentication.sign-in-limited" && ev["severity"] == "WARN" {
			limitedLogs++
		}
	}
	if limitedLogs != 1 {
		t.Fatalf("sign-in-limited lines: %d", limitedLogs)
	}
}

func TestSessionCookieAndLifetime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.expect(e.do(signInReq(adminEmail, adminPass)), 200)
	if r.data()["authenticated"] != true || len(r.data()["sessionKey"].(string)) != 43 || strings.Contains(string(r.raw), "token") {
		t.Fatalf("sign-in body %s", r.raw)
	}
	cookies := (&http.Response{Header: r.header}).Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	c := cookies[0]
	if c.Name != auth.CookieName || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge != 8*3600 {
		t.Fatalf("cookie %+v", c)
	}
	if n := e.count(`SELECT count(*) FROM occ.sessions WHERE expires_at - created_at = interval '8 hours' AND token_hash = $1`, auth.HashToken(c.Value)); n != 1 {
		t.Fatal("the session is not stored by hash with an 8-hour lifetime")
	}
	session := e.expect(e.do(req{method: "GET", path: "/api/auth/session", cookie: c.Value}), 200)
	user, _ := session.data()["user"].(map[string]any)
	if session.data()["sessionKey"] != r.data()["sessionKey"] || user["email"] != adminEmail {
		t.Fatalf("session %s", session.raw)
	}
	if s := e.expect(e.do(req{method: "GET", path: "/api/auth/session"}), 200); s.doc["data"] != nil {
		t.Fatalf("anonymous session %s", s.raw)
	}
	// A session authenticates resource routes; a mismatched x-occ-session-key does not.
	e.expect(e.do(req{method: "GET", path: "/installation", cookie: c.Value}), 200)
	e.expect(e.do(req{method: "GET", path: "/installation", cookie: c.Value, header: map[string]string{"x-occ-session-key": r.data()["sessionKey"].(string)}}), 200)
	e.expect(e.do(req{method: "GET", path: "/installation", cookie: c.Value, header: map[string]string{"x-occ-session-key": strings.Repeat("A", 43)}}), 401)

	// Expired: storage decides, every time.
	e.exec(`UPDATE occ.sessions SET created_at = now() - interval '9 hours', expires_at = now() - interval '1 hour'`)
	e.expect(e.do(req{method: "GET", path: "/installation", cookie: c.Value}), 401)
	if s := e.expect(e.do(req{method: "GET", path: "/api/auth/session", cookie: c.Value}), 200); s.doc["data"] != nil {
		t.Fatalf("expired session %s", s.raw)
	}
}

func TestSignOutEndsTheSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cookie := e.signIn(adminEmail, adminPass)
	out := e.expect(e.do(req{method: "POST", path: "/api/auth/sign-out", cookie: cookie}), 200)
	cleared := (&http.Response{Header: out.header}).Cookies()
	if len(cleared) != 1 || cleared[0].MaxAge >= 0 {
		t.Fatalf("cleared cookie %v", cleared)
	}
	e.expect(e.do(req{method: "GET", path: "/installation", cookie: cookie}), 401)
	e.expect(e.do(req{method: "POST", path: "/api/auth/sign-out", cookie: cookie}), 401)
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'authentication.session.end'`); n != 1 {
		t.Fatalf("sign-out audits: %d", n)
	}
}

func TestOriginAndCredentialPrecedence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cookie := e.signIn(adminEmail, adminPass)
	create := func(origin string, header map[string]string) resp {
		return e.do(req{method: "POST", path: "/namespaces", cookie: cookie, origin: origin, header: header,
			body: map[string]any{"name": "o-" + randomSuffix()}})
	}
	if r := create(otherOrigin, nil); r.status != 403 || r.errCode() != "FORBIDDEN" {
		t.Fatalf("foreign origin: %d %s", r.status, r.raw)
	}
	if r := create("", nil); r.status != 403 {
		t.Fatalf("no origin: %d %s", r.status, r.raw)
	}
	if r := create(testOrigin, map[string]string{"Sec-Fetch-Site": "cross-site"}); r.status != 403 {
		t.Fatalf("cross-site fetch: %d %s", r.status, r.raw)
	}
	e.expect(create(testOrigin, map[string]string{"Sec-Fetch-Site": "same-origin"}), 201)
	// Reads need no Origin; keys skip the gate.
	e.expect(e.do(req{method: "GET", path: "/installation", cookie: cookie}), 200)
	e.expect(e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, origin: otherOrigin, body: map[string]any{"name": "k"}}), 201)

	// Sign-in: an explicit foreign Origin is refused before the password is checked.
	if r := e.do(req{method: "POST", path: "/api/auth/sign-in/email", origin: otherOrigin,
		body: map[string]any{"email": adminEmail, "password": adminPass}}); r.status != 403 {
		t.Fatalf("sign-in from a foreign origin: %d", r.status)
	}
	if r := e.do(req{method: "POST", path: "/api/auth/sign-in/email", header: map[string]string{"Sec-Fetch-Site": "cross-site"},
		body: map[string]any{"email": adminEmail, "password": adminPass}}); r.status != 403 {
		t.Fatalf("cross-site sign-in: %d", r.status)
	}
	e.expect(e.do(req{method: "POST", path: "/api/auth/sign-in/email", origin: testOrigin,
		body: map[string]any{"email": adminEmail, "password": adminPass}}), 200)

	// Authorization is always refused; a bad key never falls back to a good cookie.
	if r := e.do(req{method: "GET", path: "/installation", cookie: cookie, header: map[string]string{"Authorization": "Bearer x"}}); r.status != 401 {
		t.Fatalf("Authorization header: %d", r.status)
	}
	if r := e.do(req{method: "GET", path: "/installation", cookie: cookie, header: map[string]string{"x-api-key": "occ_sk_wrong"}}); r.status != 401 {
		t.Fatalf("bad key with a good cookie: %d", r.status)
	}
	if r := e.do(req{method: "GET", path: "/installation", header: map[string]string{"x-api-key": ""}}); r.status != 401 {
		t.Fatalf("blank key: %d", r.status)
	}
	if r := e.do(req{method: "GET", path: "/installation"}); r.status != 401 || r.errCode() != "UNAUTHENTICATED" {
		t.Fatalf("anonymous: %d %s", r.status, r.raw)
	}
}

func TestAccounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cookie := e.signIn(adminEmail, adminPass)
	admin := identity{cookie: cookie}
	body := map[string]any{"email": " New.User@Example.com ", "password": "another-long-password", "name": "New User"}
	r := e.expect(e.do(admin.apply(req{method: "POST", path: "/api/auth/accounts", body: body})), 201)
	if r.data()["email"] != "new.user@example.com" || !strings.HasPrefix(r.data()["principalId"].(string), "prn_") {
		t.Fatalf("account %s", r.raw)
	}
	e.expect(e.do(admin.apply(req{method: "POST", path: "/api/auth/accounts", body: body})), 409)
	e.expect(e.do(req{method: "POST", path: "/api/auth/accounts", key: e.adminKey, body: body}), 401)
	bad := map[string]any{"email": "x@example.com", "password": "another-long-password", "roleId": "no-such-role"}
	if r := e.do(admin.apply(req{method: "POST", path: "/api/auth/accounts", body: bad})); !r.hasDetail("/roleId", "INVALID_VALUE") {
		t.Fatalf("unknown role: %s", r.raw)
	}
	// The new account signs in and has no grant until one is given.
	newCookie := e.signIn("new.user@example.com", "another-long-password")
	e.expect(e.do(req{method: "GET", path: "/installation", cookie: newCookie}), 403)

	// With an Installation Role, the account gets an exact-Installation binding.
	var roleID string
	if err := e.owner.QueryRow(ctxb(), `SELECT id FROM occ.iam_roles WHERE namespace_id IS NULL LIMIT 1`).Scan(&roleID); err != nil {
		t.Fatal(err)
	}
	withRole := map[string]any{"email": "ops@example.com", "password": "another-long-password", "roleId": roleID}
	e.expect(e.do(admin.apply(req{method: "POST", path: "/api/auth/accounts", body: withRole})), 201)
	e.expect(e.do(req{method: "GET", path: "/installation", cookie: e.signIn("ops@example.com", "another-long-password")}), 200)
	if n := e.count(`SELECT count(*) FROM occ.iam_access_bindings WHERE id LIKE 'binding_auth_%' AND resource_kind = 'installation' AND resource_id = $1`, e.installationID); n != 1 {
		t.Fatal("no exact-Installation binding")
	}
}

func TestServiceKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("keys")
	sp := e.expect(e.do(req{method: "POST", path: "/namespaces/" + ns + "/iam/service-principals", key: e.adminKey}), 201).data()["id"].(string)

	issued := e.expect(e.do(req{method: "POST", path: "/api/auth/service-keys", key: e.adminKey,
		body: map[string]any{"servicePrincipalId": sp, "namespaceId": ns, "name": "ci", "expiresIn": 86400}}), 201)
	d := issued.data()
	key, _ := d["key"].(string)
	expires, _ := time.Parse("2006-01-02T15:04:05.000Z", d["expiresAt"].(string))
	if !strings.HasPrefix(key, auth.ServiceKeyPrefix) || d["servicePrincipalId"] != sp || d["namespaceId"] != ns || d["name"] != "ci" ||
		time.Until(expires) > 25*time.Hour || time.Until(expires) < 23*time.Hour || issued.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("issued %s", issued.raw)
	}
	// Stored as a hash only.
	sum := sha256.Sum256([]byte(key))
	if n := e.count(`SELECT count(*) FROM occ.service_keys WHERE id = $1 AND key_hash = $2`, d["id"], sum[:]); n != 1 {
		t.Fatal("the key is not stored by its hash")
	}
	if n := e.count(`SELECT count(*) FROM occ.service_keys k WHERE row_to_json(k)::text LIKE '%' || $1 || '%'`, key[len(auth.ServiceKeyPrefix):]); n != 0 {
		t.Fatal("the key is stored in clear")
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE details::text LIKE '%' || $1 || '%'`, key[len(auth.ServiceKeyPrefix):]); n != 0 {
		t.Fatal("the key reached the audit log")
	}

	// The key authenticates (its principal has no grant: filtered list, 403 on the Namespace).
	e.expect(e.do(req{method: "GET", path: "/namespaces", key: key}), 200)
	e.expect(e.do(req{method: "GET", path: "/namespaces/" + ns, key: key}), 403)
	// A Namespace key cannot manage keys.
	e.expect(e.do(req{method: "POST", path: "/api/auth/service-keys", key: key, body: map[string]any{"servicePrincipalId": sp, "namespaceId": ns, "name": "x"}}), 403)

	// Revocation is immediate.
	rev := e.expect(e.do(req{method: "DELETE", path: "/api/auth/service-keys/" + d["id"].(string), key: e.adminKey}), 200)
	if rev.data()["revoked"] != true {
		t.Fatalf("revoke %s", rev.raw)
	}
	e.expect(e.do(req{method: "GET", path: "/namespaces", key: key}), 401)
	e.expect(e.do(req{method: "DELETE", path: "/api/auth/service-keys/" + d["id"].(string), key: e.adminKey}), 404)

	// Target rules.
	for _, tc := range []struct {
		body map[string]any
		path string
	}{
		{map[string]any{"servicePrincipalId": "spn_00000000-0000-4000-8000-000000000000", "name": "x"}, "/servicePrincipalId"},
		{map[string]any{"servicePrincipalId": e.adminPrincipal, "name": "x"}, "/servicePrincipalId"},
		{map[string]any{"servicePrincipalId": sp, "name": "x"}, "/namespaceId"},
		{map[string]any{"servicePrincipalId": e.adminSP, "namespaceId": ns, "name": "x"}, "/namespaceId"},
	} {
		if r := e.do(req{method: "POST", path: "/api/auth/service-keys", key: e.adminKey, body: tc.body}); r.status != 400 || !r.hasDetail(tc.path, "INVALID_VALUE") {
			t.Errorf("%v: %d %s", tc.body, r.status, r.raw)
		}
	}
	if r := e.do(req{method: "POST", path: "/api/auth/service-keys", key: e.adminKey, body: map[string]any{"servicePrincipalId": sp, "namespaceId": ns, "name": strings.Repeat("n", 33)}}); !r.hasDetail("/name", "TOO_LONG") {
		t.Errorf("long name: %s", r.raw)
	}

	// Coverage: a caller holding only installation:administer cannot issue for a principal that
	// holds grants the caller lacks.
	issuer := e.newServicePrincipal("")
	e.grant(issuer.id, "", iam.KindInstallation, e.installationID, perm(iam.ActionAdminister, iam.KindInstallation))
	e.grant(sp, ns, iam.KindNamespace, ns, perm(iam.ActionRead, iam.KindNamespace))
	before := e.denials()
	e.expect(e.do(issuer.apply(req{method: "POST", path: "/api/auth/service-keys", body: map[string]any{"servicePrincipalId": sp, "namespaceId": ns, "name": "y"}})), 403)
	if e.denials() != before+1 {
		t.Fatal("the coverage denial was not audited")
	}
	e.grant(issuer.id, ns, iam.KindNamespace, ns, perm(iam.ActionRead, iam.KindNamespace))
	e.expect(e.do(issuer.apply(req{method: "POST", path: "/api/auth/service-keys", body: map[string]any{"servicePrincipalId": sp, "namespaceId": ns, "name": "y"}})), 201)
}
