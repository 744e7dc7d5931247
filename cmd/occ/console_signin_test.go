package main_test

// Browser tests of the console's sign-in pages: the provider buttons with the real OpenID
// provider of oidctest, the password and recovery forms, the approval page of a real `occ login`
// process, the CLI sessions view and the account controls, through Chromium against a real
// `occ api` process configured for OIDC sign-in.

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/openclaw/occ/internal/testkit/oidctest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

const oidcDisplayName = "Example SSO"

// signInStack is an `occ api` with OIDC sign-in against a real provider on loopback, and an
// administrator signed in through the API as the console is (cookie, Origin, session key).
type signInStack struct {
	inst    installation
	base    string
	op      *oidctest.Provider
	admin   *browserClient
	adminID string
	env     map[string]string
}

func startSignInStack(t *testing.T, extra map[string]string) signInStack {
	t.Helper()
	inst := bootstrapped(t)
	adminID := inst.scalar(t, `SELECT id FROM occ.accounts WHERE email = $1`, adminEmail)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	op := oidctest.Start(t, oidctest.Client{ID: "occ", Secret: "occ-secret", RedirectURI: base + "/api/auth/providers/oidc/callback"})
	env := map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": inst.db.AppURL, "OCC_CONFIG_PATH": simulatedConfig(t, "{}"),
		"OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(port), "OCC_AUTH_BASE_URL": base,
		"OCC_AUTH_OIDC_ISSUER": op.Issuer, "OCC_AUTH_OIDC_CLIENT_ID": "occ", "OCC_AUTH_OIDC_CLIENT_SECRET": "occ-secret",
		"OCC_AUTH_OIDC_DISPLAY_NAME": oidcDisplayName, "OCC_AUTH_GITHUB_RECOVERY_USER_ID": adminID}
	for k, v := range extra {
		env[k] = v
	}
	api := start(t, env, "api")
	wait.Eventually(t, wait.Medium, "api listening", func() bool { return len(api.events(false, "listening")) == 1 })
	jar, _ := cookiejar.New(nil)
	admin := &browserClient{t: t, base: base, http: &http.Client{Jar: jar}}
	signedIn := admin.json("POST", "/api/auth/sign-in/email", map[string]any{"email": adminEmail, "password": adminPassword}, 200)
	admin.sessionKey = signedIn["sessionKey"].(string)
	return signInStack{inst: inst, base: base, op: op, admin: admin, adminID: adminID, env: env}
}

// person creates a password account and attaches an OIDC identity to it; it returns the account id.
func (s signInStack) person(t *testing.T, email, subject string) string {
	t.Helper()
	created := s.admin.json("POST", "/api/auth/accounts", map[string]any{"email": email, "password": "a-long-enough-password"}, 201)
	id := created["id"].(string)
	s.admin.json("POST", "/api/auth/accounts/"+id+"/providers/oidc", map[string]any{"expectedVersion": 1, "subject": subject}, 200)
	return id
}

// passwordSignIn fills the password form and submits it (the provider buttons above it also
// read "Sign in…").
func (b *browser) passwordSignIn(email, password string) {
	b.t.Helper()
	b.waitFor("the password form", `document.querySelector('form input[type=password]') !== null`)
	b.fill("Email", email)
	b.fill("Password", password)
	b.click("form button[type=submit]", "Sign in")
}

// clickProvider clicks the sign-in button of provider and waits until the round trip through
// the provider (three page loads) is over and the expression landed holds.
func (b *browser) clickProvider(provider, landed string) {
	b.t.Helper()
	b.click(fmt.Sprintf("button[data-provider=%s]", provider), "Sign in with")
	// A page load in between aborts an evaluation, so each try is one evaluation.
	wait.Eventually(b.t, wait.Long, "back from the provider", func() bool {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](landed))
		return err == nil && v
	})
}

// TestConsoleSignInWithOIDC: the sign-in page offers the configured provider under its display
// name; clicking it signs the person in at the real provider and lands on the page they asked
// for, with the session key of the result step; an identity attached to no account is refused
// with its code; the password form signs an administrator in.
func TestConsoleSignInWithOIDC(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startSignInStack(t, nil)
	patID := stack.person(t, "pat@example.com", "pat-at-idp")

	b := newBrowser(t, stack.base, 1280, 900)
	b.open("/console/cli-sessions")
	b.waitFor("the sign-in page", hasText("h1", "Sign in"))
	b.waitFor("the provider button", hasText("button[data-provider=oidc]", "Sign in with "+oidcDisplayName))
	if eval[bool](b, `document.querySelector('details.recovery-sign-in') !== null`) {
		t.Fatal("the password form is folded away although every account may use a password")
	}
	stack.op.LoginAs("pat-at-idp")
	b.clickProvider("oidc", hasText("h1", "CLI sessions"))
	b.waitFor("signed in as Pat", hasText(".account-email", "pat@example.com"))
	b.waitFor("the list read with the session key", hasText(".list-region", "No CLI session"))
	if n := stack.inst.scalar(t, `SELECT count(*)::text FROM occ.sessions WHERE account_id = $1`, patID); n != "1" {
		t.Fatalf("%s sessions for Pat", n)
	}
	if eval[string](b, `sessionStorage.getItem('occ.externalSignIn') || ''`) != "" {
		t.Fatal("the pending sign-in stayed in sessionStorage")
	}
	// Sign-out sends the session key the result step returned: a wrong one would end nothing.
	b.click("button", "Sign out")
	b.waitFor("signed out", hasText("h1", "Sign in"))
	if n := stack.inst.scalar(t, `SELECT count(*)::text FROM occ.sessions WHERE account_id = $1`, patID); n != "0" {
		t.Fatalf("sign-out left %s sessions for Pat", n)
	}

	// An identity no administrator attached: the coded refusal, on the sign-in page.
	stranger := newBrowser(t, stack.base, 1280, 900)
	stranger.open("/console/login")
	stack.op.LoginAs("someone-unknown")
	stranger.clickProvider("oidc", hasText(".alert .error-code", "EXTERNAL_SIGN_IN_REFUSED"))
	stranger.waitFor("its sentence", hasText(".alert", "not attached to an OCC account"))
	stranger.waitFor("still the sign-in page", hasText("h1", "Sign in"))
	if n := stack.inst.scalar(t, `SELECT count(*)::text FROM occ.audit_events WHERE action = 'authentication.login' AND outcome = 'failure'`); n != "1" {
		t.Fatalf("%s audited refusals", n)
	}

	// A disabled account: the refusal says why, since only its owner reaches it.
	version := int(stack.admin.json("GET", "/api/auth/accounts/"+patID, nil, 200)["version"].(float64))
	stack.admin.json("POST", "/api/auth/accounts/"+patID+"/disable", map[string]any{"expectedVersion": version}, 200)
	stack.op.LoginAs("pat-at-idp")
	stranger.open("/console/login")
	stranger.clickProvider("oidc", hasText(".alert .error-code", "ACCOUNT_DISABLED"))
	stranger.waitFor("its sentence", hasText(".alert", "Your account is disabled."))

	// The password form, shown unfolded while every account may use a password.
	admin := newBrowser(t, stack.base, 1280, 900)
	admin.open("/console/people")
	admin.passwordSignIn(adminEmail, adminPassword)
	admin.waitFor("the People page", hasText("h1", "People"))
	admin.waitFor("signed in as the administrator", hasText(".account-email", adminEmail))
}

// TestConsoleSignInRecoveryOnly: with OCC_AUTH_PASSWORD_SIGN_IN=recovery-only the password form
// is folded under the recovery account's disclosure; an ordinary account's password is refused
// with its code and the recovery administrator signs in with it.
func TestConsoleSignInRecoveryOnly(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startSignInStack(t, map[string]string{"OCC_AUTH_PASSWORD_SIGN_IN": "recovery-only"})
	stack.person(t, "pat@example.com", "pat-at-idp")

	b := newBrowser(t, stack.base, 390, 844)
	b.open("/console/login")
	b.waitFor("the provider button", hasText("button[data-provider=oidc]", oidcDisplayName))
	b.waitFor("the folded recovery form", `document.querySelector('details.recovery-sign-in') !== null && !document.querySelector('details.recovery-sign-in').open`)
	if eval[bool](b, `[...document.querySelectorAll('input[type=password]')].some((e) => e.checkVisibility())`) {
		t.Fatal("the password field is shown before the recovery disclosure is opened")
	}
	checkWidth(t, b, "mobile", "sign-in recovery-only")
	// Keyboard: Tab reaches the disclosure and Enter opens it.
	onSummary := `document.activeElement && document.activeElement.tagName === 'SUMMARY'`
	for i := 0; i < 20 && !eval[bool](b, onSummary); i++ {
		b.keys(kb.Tab)
	}
	if !eval[bool](b, onSummary) {
		t.Fatal("Tab never reached the recovery disclosure")
	}
	b.keys(kb.Enter)
	b.waitFor("the recovery form", `document.querySelector('details.recovery-sign-in').open`)
	b.fill("Email", "pat@example.com")
	b.fill("Password", "a-long-enough-password")
	b.click("button[type=submit]", "Sign in with password")
	b.waitFor("the refusal", hasText(".alert .error-code", "UNAUTHENTICATED"))
	b.waitFor("its sentence", hasText(".alert", "may not use a password"))
	b.fill("Email", adminEmail)
	b.fill("Password", adminPassword)
	b.click("button[type=submit]", "Sign in with password")
	b.waitFor("signed in", hasText(".account-email", adminEmail))
}

// cliLogin starts a real `occ login` and returns the process, the approval URL and the code it printed.
func cliLogin(t *testing.T, env map[string]string) (*process, string, string) {
	t.Helper()
	login := start(t, env, "login")
	var url, code string
	urlPattern := regexp.MustCompile(`Open (\S+) in a browser`)
	codePattern := regexp.MustCompile(`\b([B-Z]{4}-[B-Z]{4})\b`)
	wait.Eventually(t, wait.Medium, "occ login prints the page and the code", func() bool {
		out := login.stdout.String()
		if m := urlPattern.FindStringSubmatch(out); m != nil {
			url = m[1]
		}
		if m := codePattern.FindStringSubmatch(out); m != nil {
			code = m[1]
		}
		return url != "" && code != ""
	})
	return login, url, code
}

func waitDone(t *testing.T, p *process, what string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not finish: %s %s", what, p.stdout.String(), p.stderr.String())
	}
}

// TestConsoleSignInCLILogin: `occ login` end to end. The CLI prints the console's approval page;
// a person signed in with OIDC opens it (through sign-in and back), enters the code with the
// keyboard, checks the request and approves; the CLI stores its session (0600) and `occ auth
// status` reports it. The CLI sessions view lists it and revokes it, after which the CLI is
// refused. A second login denied in the console leaves the CLI with ACCESS_DENIED.
func TestConsoleSignInCLILogin(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startSignInStack(t, nil)
	stack.person(t, "pat@example.com", "pat-at-idp")
	home := t.TempDir()
	cliEnv := map[string]string{"OCC_URL": stack.base, "XDG_CONFIG_HOME": home}

	login, url, code := cliLogin(t, cliEnv)
	if url != stack.base+"/console/cli-login" {
		t.Fatalf("occ login printed %q", url)
	}
	b := newBrowser(t, stack.base, 1280, 900)
	b.run("open the approval page", chromedp.Navigate(url))
	b.waitFor("sign-in first", hasText("h1", "Sign in"))
	stack.op.LoginAs("pat-at-idp")
	b.clickProvider("oidc", hasText("h1", "Approve occ login"))
	b.tabTo("Code")
	b.keys(code + kb.Enter)
	host, _ := os.Hostname()
	b.waitFor("the request", hasText(".cli-request .client-label", "occ on "+host))
	b.waitFor("from this address", hasText(".cli-request", "the same address as this browser"))
	b.tabTo("Approve")
	b.keys(kb.Enter)
	b.waitFor("approved", hasText(".cli-decision", "Approved."))

	waitDone(t, login, "occ login")
	loginStoredSession(t, login, home, "pat@example.com")
	status := run(t, cliEnv, "auth", "status")
	if status.exitCode() != 0 || !strings.Contains(status.stdout.String(), "pat@example.com") || !strings.Contains(status.stdout.String(), "CLI session") {
		t.Fatalf("auth status: %s %s", status.stdout.String(), status.stderr.String())
	}
	cliSessionID := stack.inst.scalar(t, `SELECT id FROM occ.cli_sessions`)
	if !strings.Contains(status.stdout.String(), cliSessionID) {
		t.Fatalf("auth status does not name %s: %s", cliSessionID, status.stdout.String())
	}

	// The CLI sessions view lists it; revoking asks first, then the CLI is refused.
	b.click("a", "Your CLI sessions")
	b.waitFor("the CLI sessions view", hasText("h1", "CLI sessions"))
	b.waitFor("the session listed", hasText(".list-region .client-label", "occ on "+host))
	b.click("button[aria-label^='Revoke CLI session']", "Revoke")
	b.waitFor("the confirmation", `document.querySelector('dialog[open]') !== null`)
	b.click("dialog button", "Revoke CLI session")
	b.waitFor("the list is empty", hasText(".list-region", "No CLI session"))
	if n := stack.inst.scalar(t, `SELECT count(*)::text FROM occ.cli_sessions`); n != "0" {
		t.Fatalf("%s CLI sessions remain", n)
	}
	after := run(t, cliEnv, "auth", "status")
	if after.exitCode() == 0 || !strings.Contains(after.stderr.String(), "occ login") {
		t.Fatalf("the revoked CLI session still works: %d %s %s", after.exitCode(), after.stdout.String(), after.stderr.String())
	}

	// Deny: the CLI gets the coded refusal.
	denied, _, code := cliLogin(t, cliEnv)
	b.open("/console/cli-login")
	b.waitFor("the approval page", hasText("h1", "Approve occ login"))
	b.fill("Code", code)
	b.click("button", "Continue")
	b.click(".cli-request button", "Deny")
	b.waitFor("denied", hasText(".cli-decision", "Denied."))
	waitDone(t, denied, "the denied occ login")
	if denied.exitCode() == 0 || !strings.Contains(denied.stderr.String(), "ACCESS_DENIED") {
		t.Fatalf("the denied occ login: %d %s %s", denied.exitCode(), denied.stdout.String(), denied.stderr.String())
	}

	// A wrong code is refused with its code, not a blank page.
	b.open("/console/cli-login")
	b.fill("Code", "BBBB-CCCC")
	b.click("button", "Continue")
	b.waitFor("the refusal", hasText(".alert .error-code", "NOT_FOUND"))
}

// TestConsoleSignInAccountControls: an administrator reaches an account from the People page,
// disables and enables it, enrols it, detaches its identity and attaches another, each with the version the
// page read; a change made meanwhile makes the page's next change fail with the conflict code,
// and nothing changes until the account is read again. The recovery page then moves the recovery
// designation to another administrator.
func TestConsoleSignInAccountControls(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startSignInStack(t, nil)
	patID := stack.person(t, "pat@example.com", "pat-at-idp")
	account := func() map[string]any { return stack.admin.json("GET", "/api/auth/accounts/"+patID, nil, 200) }

	b := newBrowser(t, stack.base, 1280, 900)
	b.open("/console/people")
	b.passwordSignIn(adminEmail, adminPassword)
	b.waitFor("the People page", hasText("h1", "People"))
	b.fill("Account id", patID)
	b.click("button", "Open account")
	b.waitFor("the account page", hasText("h1", "Account"))
	b.waitFor("its id", hasText(".account-id", patID))
	b.waitFor("its OIDC identity", hasText("table td", "pat-at-idp"))
	b.waitFor("version 2", hasText(".account-version", "2"))

	b.click("button", "Disable")
	b.click("dialog button", "Disable account")
	b.waitFor("disabled", hasText(".account-notice", "The account is disabled."))
	b.waitFor("shown disabled", hasText(".badge", "disabled"))
	if a := account(); a["disabled"] != true {
		t.Fatalf("the account is not disabled: %v", a)
	}
	b.click("button", "Enable")
	b.waitFor("enabled", hasText(".account-notice", "The account is enabled."))
	if a := account(); a["disabled"] != false {
		t.Fatalf("the account is not enabled: %v", a)
	}

	// Enrol: every OCC account already is.
	b.click("button", "Enrol")
	b.waitFor("enrolled", hasText(".account-notice", "Already enrolled"))

	// Detach the identity and attach another with the form.
	b.click("button[aria-label^='Detach OIDC identity']", "Detach")
	b.click("dialog button", "Detach identity")
	b.waitFor("detached", hasText(".account-notice", "The identity is detached."))
	b.choose("Provider", "OIDC")
	b.fill("Subject", "pat-second-idp")
	b.click("button", "Attach identity")
	b.waitFor("attached", hasText(".account-notice", "The OIDC identity is attached."))
	b.waitFor("the new identity listed", hasText("table td", "pat-second-idp"))
	methods := fmt.Sprint(account()["methods"])
	if !strings.Contains(methods, "pat-second-idp") || strings.Contains(methods, "pat-at-idp") {
		t.Fatalf("methods %s", methods)
	}

	// A change made elsewhere: the page's version is stale, the change is refused and shown.
	version := int(account()["version"].(float64))
	stack.admin.json("POST", "/api/auth/accounts/"+patID+"/revoke", map[string]any{"expectedVersion": version}, 200)
	b.click("button", "Disable")
	b.click("dialog button", "Disable account")
	b.waitFor("the conflict", hasText(".action-failure .error-code", "RESOURCE_CONFLICT"))
	b.waitFor("explained", hasText(".action-failure", "changed since this page read it"))
	if a := account(); a["disabled"] != false {
		t.Fatal("a stale disable was applied")
	}
	b.click(".action-failure button", "Refresh")
	b.waitFor("the new version", hasText(".account-version", fmt.Sprint(version+1)))
	b.waitFor("the failure gone", `document.querySelector('.action-failure .alert') === null`)

	// The recovery designation moves to another local-password administrator.
	roleID := stack.inst.scalar(t, `SELECT id FROM occ.iam_roles WHERE namespace_id IS NULL ORDER BY created_at LIMIT 1`)
	second := stack.admin.json("POST", "/api/auth/accounts", map[string]any{"email": "second-admin@example.com",
		"password": "a-long-enough-password", "roleId": roleID}, 201)["id"].(string)
	b.click("a.button", "Recovery account")
	b.waitFor("the recovery page", hasText("h1", "Recovery account"))
	b.waitFor("the current holder", hasText(".recovery-user", stack.adminID))
	b.fill("New recovery account", second)
	b.click("button", "Move designation")
	b.click("dialog button", "Move designation")
	b.waitFor("moved", hasText(".alert", "The recovery account is now "+second))
	b.waitFor("the new holder", hasText(".recovery-user", second))
	if rec := stack.admin.json("GET", "/api/auth/recovery", nil, 200); rec["userId"] != second {
		t.Fatalf("recovery %v", rec)
	}
}

// TestConsoleSignInLayout: the new pages at a desktop width and at 390 px show their heading and
// nothing wider than the viewport; with OCC_CONSOLE_SCREENSHOTS set the sign-in page with its
// provider button (390 px) and the account page (desktop) are saved for docs/console.md.
func TestConsoleSignInLayout(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startSignInStack(t, nil)
	patID := stack.person(t, "pat.with.a.rather-long-address@example.com", "pat-at-idp")
	// A CLI session of the administrator, so the sessions view has a row.
	anonymous := &browserClient{t: t, base: stack.base, http: &http.Client{}}
	started := anonymous.json("POST", "/api/auth/cli/device-authorizations",
		map[string]any{"clientLabel": "occ on a-workstation-with-a-long-host-name.example.internal"}, 201)
	stack.admin.json("POST", "/api/auth/cli/device-authorizations/decide", map[string]any{"userCode": started["userCode"], "decision": "approve"}, 200)
	stack.admin.json("POST", "/api/auth/cli/token", map[string]any{"deviceCode": started["deviceCode"]}, 200)
	dir := os.Getenv(screenshotDirVariable)

	pages := []struct{ name, path, heading, loaded string }{
		{"cli-login", "/console/cli-login", "Approve occ login", ""},
		{"cli-sessions", "/console/cli-sessions", "CLI sessions", hasText(".list-region .client-label", "a-workstation")},
		{"account", "/console/people/" + patID, "Account", hasText(".account-id", patID)},
		{"recovery", "/console/recovery", "Recovery account", hasText(".recovery-user", stack.adminID)},
		{"people", "/console/people", "People", ""},
	}
	for _, size := range []struct {
		name          string
		width, height int
	}{{"desktop", 1280, 800}, {"mobile", 390, 844}} {
		b := newBrowser(t, stack.base, size.width, size.height)
		b.open("/console/login")
		b.waitFor("the provider button", hasText("button[data-provider=oidc]", oidcDisplayName))
		b.waitFor("the password form", `document.querySelector('input[type=password]') !== null`)
		checkWidth(t, b, size.name, "sign-in")
		if dir != "" && size.name == "mobile" {
			shoot(t, b, filepath.Join(dir, "sign-in-providers-mobile.png"))
		}
		b.passwordSignIn(adminEmail, adminPassword)
		b.waitFor("signed in", hasText(".account-email", adminEmail))
		for _, p := range pages {
			b.open(p.path)
			b.waitFor(p.name+" heading", hasText("h1", p.heading))
			b.waitFor(p.name+" loaded", `![...document.querySelectorAll('[aria-busy=true], .loading')].length`)
			if p.loaded != "" {
				b.waitFor(p.name+" content", p.loaded)
			}
			checkWidth(t, b, size.name, p.name)
			if p.name == "cli-login" {
				// A pending request with a long label, looked up.
				pending := anonymous.json("POST", "/api/auth/cli/device-authorizations",
					map[string]any{"clientLabel": "occ on another-workstation-with-a-long-name.example.internal"}, 201)
				b.fill("Code", pending["userCode"].(string))
				b.click("button", "Continue")
				b.waitFor("the request", hasText(".cli-request .client-label", "another-workstation"))
				checkWidth(t, b, size.name, "cli-login request")
			}
			if dir != "" && p.name == "account" && size.name == "desktop" {
				shoot(t, b, filepath.Join(dir, "account-desktop.png"))
			}
		}
	}
}
