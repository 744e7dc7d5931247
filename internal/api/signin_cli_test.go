package api_test

import (
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/auth"
)

func withCLISessions(_ *env, c *api.Config) { c.SignIn.CLISessions = true }

// cliLogin runs occ login's protocol: start, approval by the browser session cookie (with its
// session key), and the exchange; it returns the CLI token.
func (e *env) cliLogin(cookie string, start map[string]any) (string, map[string]any) {
	e.t.Helper()
	started := e.expect(e.do(req{method: "POST", path: "/api/auth/cli/device-authorizations", body: start}), 201).data()
	deviceCode, userCode := started["deviceCode"], started["userCode"].(string)
	if started["verificationUri"] != "/console/cli-login" || started["interval"] != float64(5) {
		e.t.Fatalf("start %v", started)
	}
	key := e.expect(e.do(req{method: "GET", path: "/api/auth/session", cookie: cookie}), 200).data()["sessionKey"].(string)
	approver := req{cookie: cookie, origin: testOrigin, header: map[string]string{auth.SessionKeyHeader: key}}
	lookup, decide := approver, approver
	lookup.method, lookup.path, lookup.body = "POST", "/api/auth/cli/device-authorizations/lookup", map[string]any{"userCode": userCode}
	decide.method, decide.path = "POST", "/api/auth/cli/device-authorizations/decide"
	decide.body = map[string]any{"userCode": userCode[:4] + " " + userCode[5:], "decision": "approve"}
	e.expect(e.do(lookup), 200)
	e.expect(e.do(decide), 200)
	issued := e.expect(e.do(req{method: "POST", path: "/api/auth/cli/token", body: map[string]any{"deviceCode": deviceCode}}), 200).data()
	return issued["token"].(string), issued
}

func cliReq(token, method, path string) req {
	return req{method: method, path: path, header: map[string]string{auth.CLISessionHeader: token}}
}

// TestCLISessions: the protocol's answers, what a CLI session admits and refuses, and how it ends.
func TestCLISessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCLISessions)
	admin := e.adminCookie()

	// Pending, then polling too fast, then denied.
	started := e.expect(e.do(req{method: "POST", path: "/api/auth/cli/device-authorizations", body: map[string]any{"clientLabel": "laptop"}}), 201).data()
	poll := req{method: "POST", path: "/api/auth/cli/token", body: map[string]any{"deviceCode": started["deviceCode"]}}
	if r := e.do(poll); r.status != 400 || r.errCode() != "AUTHORIZATION_PENDING" {
		t.Fatalf("first poll %d %s", r.status, r.raw)
	}
	if r := e.do(poll); r.status != 400 || r.errCode() != "SLOW_DOWN" {
		t.Fatalf("fast poll %d %s", r.status, r.raw)
	}
	// The approval page must send the session key; a wrong code is 404.
	if r := e.do(req{method: "POST", path: "/api/auth/cli/device-authorizations/lookup", cookie: admin, origin: testOrigin,
		body: map[string]any{"userCode": started["userCode"]}}); r.status != 401 {
		t.Fatalf("lookup without the session key %d", r.status)
	}
	key := e.expect(e.do(req{method: "GET", path: "/api/auth/session", cookie: admin}), 200).data()["sessionKey"].(string)
	deny := req{method: "POST", path: "/api/auth/cli/device-authorizations/decide", cookie: admin, origin: testOrigin,
		header: map[string]string{auth.SessionKeyHeader: key}, body: map[string]any{"userCode": "BBBB-BBBB", "decision": "deny"}}
	if r := e.do(deny); r.status != 404 {
		t.Fatalf("wrong code %d", r.status)
	}
	deny.body = map[string]any{"userCode": started["userCode"], "decision": "deny"}
	e.expect(e.do(deny), 200)
	e.exec(`UPDATE occ.cli_device_authorizations SET last_polled_at = last_polled_at - interval '10 seconds'`)
	if r := e.do(poll); r.status != 400 || r.errCode() != "ACCESS_DENIED" {
		t.Fatalf("denied poll %d %s", r.status, r.raw)
	}

	// An approved session acts as the admin, needs no Origin, and is refused where a browser is
	// required.
	token, issued := e.cliLogin(admin, map[string]any{"clientLabel": "laptop"})
	if issued["user"].(map[string]any)["id"] != e.adminAccount {
		t.Fatalf("issued %v", issued)
	}
	e.expect(e.do(cliReq(token, "GET", "/installation")), 200)
	create := cliReq(token, "POST", "/namespaces")
	create.body = map[string]any{"name": "from-the-cli"}
	e.expect(e.do(create), 201)
	for _, r := range []req{cliReq(token, "GET", "/api/auth/session"), cliReq(token, "GET", "/api/auth/cli-sessions"),
		cliReq(token, "POST", "/api/auth/service-keys")} {
		if got := e.do(r); got.status != 403 {
			t.Errorf("%s %s with a CLI session: %d", r.method, r.path, got.status)
		}
	}
	both := cliReq(token, "GET", "/installation")
	both.key = e.adminKey
	if r := e.do(both); r.status != 401 {
		t.Fatalf("both credentials %d", r.status)
	}
	if r := e.do(cliReq("occcli_"+token[7:len(token)-1]+"x", "GET", "/installation")); r.status != 401 {
		t.Fatalf("a wrong token %d", r.status)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE details ->> 'actorCliSessionId' IS NOT NULL AND details ->> 'admissionMethod' = 'cli_session'`); n != 1 {
		t.Fatalf("%d audited CLI-session mutations", n)
	}
	current := e.expect(e.do(cliReq(token, "GET", "/api/auth/cli-sessions/current")), 200).data()
	if current["user"].(map[string]any)["email"] != adminEmail {
		t.Fatalf("current %v", current)
	}
	if l := e.expect(e.do(req{method: "GET", path: "/api/auth/cli-sessions", cookie: admin}), 200).list(); len(l) != 1 {
		t.Fatalf("list %v", l)
	}

	// Pinned to a Namespace: Installation routes and other Namespaces are refused.
	pinned, _ := e.cliLogin(admin, map[string]any{"clientLabel": "ci shell", "namespaceId": e.defaultNS})
	e.expect(e.do(cliReq(pinned, "GET", "/namespaces/"+e.defaultNS)), 200)
	if r := e.do(cliReq(pinned, "GET", "/installation")); r.status != 403 {
		t.Fatalf("pinned on the Installation %d", r.status)
	}

	// The console revokes one; logout ends the other; signing out of the browser ends all.
	e.expect(e.do(req{method: "DELETE", path: "/api/auth/cli-sessions/" + current["id"].(string), cookie: admin, origin: testOrigin}), 200)
	if r := e.do(cliReq(token, "GET", "/installation")); r.status != 401 {
		t.Fatalf("after revoke %d", r.status)
	}
	e.expect(e.do(cliReq(pinned, "DELETE", "/api/auth/cli-sessions/current")), 200)
	if r := e.do(cliReq(pinned, "GET", "/namespaces/"+e.defaultNS)); r.status != 401 {
		t.Fatalf("after logout %d", r.status)
	}
	third, _ := e.cliLogin(admin, map[string]any{"clientLabel": "third"})
	e.expect(e.do(req{method: "POST", path: "/api/auth/sign-out", cookie: admin, origin: testOrigin}), 200)
	if r := e.do(cliReq(third, "GET", "/installation")); r.status != 401 {
		t.Fatalf("after the browser signed out %d", r.status)
	}
	for _, action := range []string{api.ActionCLISessionsApprove, api.ActionCLISessionsDeny, api.ActionCLISessionsIssue, api.ActionCLISessionsRevoke} {
		if e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1`, action) == 0 {
			t.Errorf("no %s audit event", action)
		}
	}
}

// TestCLISessionsDisabled: with OCC_AUTH_CLI_SESSIONS=disabled, occ login answers 404 and a CLI
// token 401.
func TestCLISessionsDisabled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(e.do(req{method: "POST", path: "/api/auth/cli/device-authorizations", body: map[string]any{"clientLabel": "x"}}), 404)
	if r := e.do(cliReq("occcli_"+"0123456789012345678901234567890123456789012", "GET", "/installation")); r.status != 401 {
		t.Fatalf("a CLI token while disabled %d", r.status)
	}
}
