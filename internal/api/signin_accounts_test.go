package api_test

import (
	"context"

	"github.com/google/uuid"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/signin"
	"github.com/openclaw/occ/internal/store"
)

// adminRequest is a request of the bootstrap administrator's browser session.
func (e *env) adminRequest(method, path string, body any) req {
	return req{method: method, path: path, body: body, cookie: e.adminCookie(), origin: testOrigin}
}

func (e *env) accountVersion(id string) any {
	e.t.Helper()
	return e.expect(e.do(e.adminRequest("GET", "/api/auth/accounts/"+id, nil)), 200).data()["version"]
}

// TestAccountControls: disable ends every session and refuses sign-in, enable restores it, revoke
// ends sessions but allows a fresh sign-in; every mutation needs the version just read; the
// recovery account cannot be disabled.
func TestAccountControls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOfflineSignIn)
	who := e.newHuman("controlled@example.com")
	path := "/api/auth/accounts/" + who.account

	// The read needs the exact Origin, even for GET, and refuses a service key.
	if r := e.do(req{method: "GET", path: path, cookie: e.adminCookie()}); r.status != 403 {
		t.Fatalf("read without Origin: %d", r.status)
	}
	// A browser's same-origin GET sends no Origin but Sec-Fetch-Site: same-origin, which pages
	// cannot set; the console reads accounts that way.
	if r := e.do(req{method: "GET", path: path, cookie: e.adminCookie(), header: map[string]string{"Sec-Fetch-Site": "same-origin"}}); r.status != 200 {
		t.Fatalf("a same-origin browser read: %d %s", r.status, r.raw)
	}
	if r := e.do(req{method: "GET", path: path, cookie: e.adminCookie(), header: map[string]string{"Sec-Fetch-Site": "cross-site"}}); r.status != 403 {
		t.Fatalf("a cross-site read: %d", r.status)
	}
	if r := e.do(req{method: "GET", path: path, key: e.adminKey}); r.status != 401 {
		t.Fatalf("read with a service key: %d", r.status)
	}
	e.expect(e.do(e.adminRequest("POST", path+"/disable", map[string]any{"expectedVersion": 7})), 409)

	e.expect(e.do(e.adminRequest("POST", path+"/disable", map[string]any{"expectedVersion": 1})), 200)
	if r := e.do(req{method: "GET", path: "/api/auth/session", cookie: who.cookie}); r.doc["data"] != nil {
		t.Fatalf("the session survived the disable: %s", r.raw)
	}
	if r := e.do(req{method: "POST", path: "/api/auth/sign-in/email", body: map[string]any{"email": "controlled@example.com", "password": "a-long-test-password"}}); r.status != 401 {
		t.Fatalf("a disabled account signed in: %d", r.status)
	}
	e.expect(e.do(e.adminRequest("POST", path+"/disable", map[string]any{"expectedVersion": 2})), 409)
	e.expect(e.do(e.adminRequest("POST", path+"/enable", map[string]any{"expectedVersion": 2})), 200)
	cookie := e.signIn("controlled@example.com", "a-long-test-password")

	e.expect(e.do(e.adminRequest("POST", path+"/revoke", map[string]any{"expectedVersion": 3})), 200)
	if r := e.do(req{method: "GET", path: "/api/auth/session", cookie: cookie}); r.doc["data"] != nil {
		t.Fatalf("the session survived the revoke: %s", r.raw)
	}
	e.signIn("controlled@example.com", "a-long-test-password")
	if v := e.accountVersion(who.account); v != float64(4) {
		t.Fatalf("version %v", v)
	}

	// A password method cannot be detached; an unknown method is 404.
	methods := e.expect(e.do(e.adminRequest("GET", path, nil)), 200).data()["methods"].([]any)
	password := methods[0].(map[string]any)["methodId"].(string)
	e.expect(e.do(e.adminRequest("POST", path+"/methods/"+password+"/detach", map[string]any{"expectedVersion": 4})), 409)
	e.expect(e.do(e.adminRequest("POST", path+"/methods/mth_00000000-0000-4000-8000-000000000000/detach", map[string]any{"expectedVersion": 4})), 404)

	// The subject another account holds is taken.
	e.expect(e.do(e.adminRequest("POST", path+"/providers/oidc", map[string]any{"expectedVersion": 4, "subject": "shared-sub"})), 200)
	other := e.newHuman("other@example.com")
	r := e.expect(e.do(e.adminRequest("POST", "/api/auth/accounts/"+other.account+"/providers/oidc",
		map[string]any{"expectedVersion": 1, "subject": "shared-sub"})), 409)
	if !strings.Contains(string(r.raw), "already assigned") {
		t.Fatalf("%s", r.raw)
	}

	// The recovery account refuses to be disabled; its read names the bootstrap administrator.
	rec := e.expect(e.do(e.adminRequest("GET", "/api/auth/recovery", nil)), 200).data()
	if rec["userId"] != e.adminAccount {
		t.Fatalf("recovery %v", rec)
	}
	e.expect(e.do(e.adminRequest("POST", "/api/auth/accounts/"+e.adminAccount+"/disable",
		map[string]any{"expectedVersion": e.accountVersion(e.adminAccount)})), 409)

	// enrol answers without changing anything.
	enrolled := e.expect(e.do(e.adminRequest("POST", "/api/auth/accounts/"+other.account+"/enrol", nil)), 200).data()
	if enrolled["created"] != false || enrolled["version"] != float64(1) {
		t.Fatalf("enrol %v", enrolled)
	}
}

// TestAccountTakeoverNeedsEveryGrant: an administrator whose grants do not cover the target
// account's is refused (403, audited ACCOUNT_PRINCIPAL_GRANTS_NOT_COVERED naming the account),
// also for the recovery move, whose target is the current holder.
func TestAccountTakeoverNeedsEveryGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOfflineSignIn)
	limited := e.newHuman("limited-admin@example.com")
	e.grant(limited.id, "", iam.KindInstallation, e.installationID, perm(iam.ActionAdminister, iam.KindInstallation))
	target := e.newHuman("powerful@example.com")
	e.grant(target.id, "", iam.KindInstallation, e.installationID, perm(iam.ActionAdminister, iam.KindInstallation),
		perm(iam.ActionRead, iam.KindInstallation))
	r := e.do(limited.apply(req{method: "POST", path: "/api/auth/accounts/" + target.account + "/revoke", body: map[string]any{"expectedVersion": 1}}))
	if r.status != 403 {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	n := e.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND action = 'openclaw.auth.accounts.revoke'
	   AND details -> '__occAuditMetadata' ->> 'reasonCode' = 'ACCOUNT_PRINCIPAL_GRANTS_NOT_COVERED' AND details ->> 'userId' = $1`, target.account)
	if n != 1 {
		t.Fatalf("%d coverage denials", n)
	}
	// Taking the recovery designation acts against its holder, the bootstrap administrator.
	if r := e.do(limited.apply(req{method: "POST", path: "/api/auth/recovery",
		body: map[string]any{"userId": limited.account, "expectedCurrentUserId": e.adminAccount, "expectedVersion": 1}})); r.status != 403 {
		t.Fatalf("recovery move: %d %s", r.status, r.raw)
	}
	// The bootstrap administrator covers the target.
	e.expect(e.do(e.adminRequest("POST", "/api/auth/accounts/"+target.account+"/revoke", map[string]any{"expectedVersion": 1})), 200)
}

// TestPasswordOnlyProfile: without a provider the account routes answer 409 to an authorized
// administrator, and /api/auth/providers offers the password only.
func TestPasswordOnlyProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	who := e.newHuman("plain@example.com")
	e.expect(e.do(e.adminRequest("GET", "/api/auth/accounts/"+who.account, nil)), 409)
	e.expect(e.do(e.adminRequest("GET", "/api/auth/recovery", nil)), 409)
	p := e.expect(e.do(req{method: "GET", path: "/api/auth/providers"}), 200).data()
	if p["password"] != true || p["github"] != false || p["sessionBinding"] != false || p["oidcSignIn"] != nil {
		t.Fatalf("providers %v", p)
	}
	e.expect(e.do(req{method: "POST", path: "/api/auth/providers/github/start", origin: testOrigin}), 404)
}

// TestRecoveryOnlyPasswords: only the recovery account signs in with a password; every other
// email gets the ordinary 401 after the same hashing.
func TestRecoveryOnlyPasswords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOfflineSignIn, func(_ *env, c *api.Config) { c.SignIn.RecoveryOnly = true })
	e.newHumanNoSignIn("ordinary@example.com")
	if r := e.do(req{method: "POST", path: "/api/auth/sign-in/email", body: map[string]any{"email": "ordinary@example.com", "password": "a-long-test-password"}}); r.status != 401 {
		t.Fatalf("an ordinary account signed in with a password: %d", r.status)
	}
	e.signIn(adminEmail, adminPass)
	if p := e.expect(e.do(req{method: "GET", path: "/api/auth/providers"}), 200).data(); p["password"] != false {
		t.Fatalf("providers %v", p)
	}
}

// newHumanNoSignIn creates a password account without signing it in.
func (e *env) newHumanNoSignIn(email string) {
	e.t.Helper()
	accountID, principalID := "usr_"+uuid.NewString(), "prn_"+uuid.NewString()
	issuer := auth.Issuer(e.installationID)
	if err := store.InsertIAMIdentity(ctxb(), e.owner, store.IAMIdentity{ID: principalID, Kind: iam.IdentityKindPrincipal, Issuer: &issuer, Subject: &accountID}); err != nil {
		e.t.Fatal(err)
	}
	hash, err := auth.HashPassword("a-long-test-password")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := store.InsertAccount(ctxb(), e.owner, store.Account{ID: accountID, Email: email, Name: "Test", PrincipalID: principalID}, hash); err != nil {
		e.t.Fatal(err)
	}
}

// TestSessionEndsWithItsProvider: a session signed in through a provider instance ends on its next
// request once the API runs without that instance, audited once as PROVIDER_NOT_CONFIGURED;
// password sessions are unaffected.
func TestSessionEndsWithItsProvider(t *testing.T) {
	t.Parallel()
	rig := newOIDCRig(t, rigOptions{})
	e := rig.e
	rig.attach("erin-0006")
	res := rig.browserSignIn("erin-0006", false)
	if res.cookie == "" {
		t.Fatalf("no session: %q", res.location)
	}
	password := e.adminCookie()
	// Another API process on the same database, configured with GitHub only.
	other, err := api.New(context.Background(), api.Config{Pool: e.app, ReadPool: e.appRead, Mode: settings.Development, AuthSecret: testSecret,
		AuthBaseURL: testOrigin, IAMDriverID: iamDriverID, Logger: obs.NewLogger(e.logs, "occ-api", slog.LevelInfo),
		SignIn: api.SignIn{RecoveryUserID: e.adminAccount, Providers: []signin.Provider{
			signin.NewGitHub(settings.GitHubSignIn{ClientID: "gh", ClientSecret: "s"}, signin.GitHubDotCom, signin.Options{})}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(other)
	defer srv.Close()
	for range 2 {
		if r := doHTTP(t, srv.URL, req{method: "GET", path: "/namespaces", cookie: res.cookie}); r.status != 401 {
			t.Fatalf("the OIDC session was admitted: %d", r.status)
		}
	}
	if r := doHTTP(t, srv.URL, req{method: "GET", path: "/namespaces", cookie: password}); r.status != 200 {
		t.Fatalf("the password session ended: %d %s", r.status, r.raw)
	}
	n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1 AND details -> '__occAuditMetadata' ->> 'reasonCode' = 'PROVIDER_NOT_CONFIGURED'`,
		api.ActionSignOut)
	if n != 1 {
		t.Fatalf("%d session ends audited", n)
	}
}

// TestCookiesOnHTTPS: with external sign-in on an https origin the session cookie is __Host-
// (Secure, Path=/, no Domain); two session cookies are refused.
func TestCookiesOnHTTPS(t *testing.T) {
	t.Parallel()
	c := auth.Cookies{Secure: true, HostOnly: true}.Session("token", auth.SessionLifetime)
	if c.Name != "__Host-openclaw_occ.session_token" || !c.Secure || c.Path != "/" || c.Domain != "" || !c.HttpOnly {
		t.Fatalf("%+v", c)
	}
	shared := auth.Cookies{Secure: true, Domain: "oce.example.com"}.Session("token", auth.SessionLifetime)
	if shared.Name != "__Secure-openclaw_occ_shared.session_token" || shared.Domain != "oce.example.com" {
		t.Fatalf("%+v", shared)
	}
	e := newEnv(t)
	cookie := e.adminCookie()
	r := e.do(req{method: "GET", path: "/namespaces", header: map[string]string{
		"Cookie": auth.CookieName + "=" + cookie + "; " + auth.CookieName + "=" + cookie}})
	if r.status != 401 {
		t.Fatalf("duplicate session cookies: %d", r.status)
	}
}
