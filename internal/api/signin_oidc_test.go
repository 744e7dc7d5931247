package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/signin"
	"github.com/openclaw/occ/internal/testkit/oidctest"
)

// External sign-in against a real OpenID provider (github.com/zitadel/oidc's op package) running
// on loopback with its own keys and users: the browser is an HTTP client with a cookie jar that
// follows every redirect, as a browser does.

const (
	oidcClientID     = "occ-console"
	oidcClientSecret = "occ-console-secret"
)

// unmatchedCounter is the metrics recorder of these tests; it also counts unmatched callbacks.
type unmatchedCounter struct {
	recorder
	mu        sync.Mutex
	unmatched map[string]int
}

func (u *unmatchedCounter) ObserveUnmatchedCallback(provider string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.unmatched[provider]++
}

func (u *unmatchedCounter) count(provider string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.unmatched[provider]
}

type oidcRig struct {
	e        *env
	op       *oidctest.Provider
	counter  *unmatchedCounter
	provider string
}

// rigOptions choose the provider under test.
type rigOptions struct {
	google         bool
	allowedDomains []string
	discovered     bool
	basic          bool
}

// newOIDCRig serves the API with OIDC (or Google) sign-in against a fresh OpenID provider.
func newOIDCRig(t *testing.T, o rigOptions) *oidcRig {
	t.Helper()
	rig := &oidcRig{counter: &unmatchedCounter{unmatched: map[string]int{}}, provider: signin.OIDC}
	if o.google {
		rig.provider = signin.Google
	}
	rig.e = newEnv(t, func(e *env, cfg *api.Config) {
		callback := e.url + "/api/auth/providers/" + rig.provider + "/callback"
		rig.op = oidctest.Start(t, oidctest.Client{ID: oidcClientID, Secret: oidcClientSecret, RedirectURI: callback, Basic: o.basic})
		opts := signin.Options{CallbackURL: callback}
		var p signin.Provider
		switch {
		case o.google:
			p = signin.NewGoogle(settings.GoogleSignIn{ClientID: oidcClientID, ClientSecret: oidcClientSecret, AllowedDomains: o.allowedDomains},
				signin.Endpoints{Issuer: rig.op.Issuer, AuthorizationURL: rig.op.Issuer + "/authorize",
					TokenURL: rig.op.Issuer + "/oauth/token", JWKSURL: rig.op.Issuer + "/keys"}, opts)
		default:
			c := settings.OIDCSignIn{Issuer: rig.op.Issuer, ClientID: oidcClientID, ClientSecret: oidcClientSecret,
				TokenAuth: settings.TokenAuthClientSecretPost, DisplayName: "Acme SSO"}
			if o.basic {
				c.TokenAuth = settings.TokenAuthClientSecretBasic
			}
			if !o.discovered {
				c.AuthorizationURL, c.TokenURL, c.JWKSURL = rig.op.Issuer+"/authorize", rig.op.Issuer+"/oauth/token", rig.op.Issuer+"/keys"
			}
			p = signin.NewOIDC(c, opts)
		}
		cfg.SignIn = api.SignIn{Providers: []signin.Provider{p}, RecoveryUserID: e.adminAccount, OIDCLabel: "Acme SSO", CLISessions: true}
		cfg.Metrics = rig.counter
	})
	return rig
}

// attach attaches subject of the rig's provider to a new account and returns its account id.
func (r *oidcRig) attach(subject string) identity {
	r.e.t.Helper()
	who := r.e.newHuman("person-" + randomSuffix() + "@example.com")
	r.e.expect(r.e.do(req{method: "POST", path: "/api/auth/accounts/" + who.account + "/providers/" + r.provider,
		cookie: r.e.adminCookie(), origin: testOrigin, body: map[string]any{"expectedVersion": 1, "subject": subject}}), 200)
	return who
}

// signInResult is what a browser saw of one external sign-in.
type signInResult struct {
	location  string // the API callback's Location
	callback  string // the callback URL the provider sent the browser to
	attemptID string
	jar       *cookiejar.Jar
	cookie    string // the session cookie the callback set, "" when none
	attempt   string // the attempt cookie start set
}

// browserSignIn starts a sign-in, lets the provider authenticate subject and follows its
// redirect to the API's callback; stopAtCallback leaves the callback to the caller.
func (r *oidcRig) browserSignIn(subject string, stopAtCallback bool) signInResult {
	t := r.e.t
	t.Helper()
	r.op.LoginAs(subject)
	jar, _ := cookiejar.New(nil)
	res := signInResult{jar: jar}
	start := r.post(jar, "/api/auth/providers/"+r.provider+"/start", nil)
	if start.StatusCode != 200 {
		var why []string
		for _, ev := range r.e.logEvents() {
			if ev["event"] != "http.completed" {
				why = append(why, fmt.Sprint(ev))
			}
		}
		t.Fatalf("start: %d %s; log: %v", start.StatusCode, readAll(start), why)
	}
	var started struct {
		Data struct {
			URL       string `json:"url"`
			AttemptID string `json:"attemptId"`
		} `json:"data"`
	}
	_ = json.Unmarshal([]byte(readAll(start)), &started)
	res.attemptID = started.Data.AttemptID
	res.attempt = r.cookie(jar, "occ_login_attempt")
	stop := "/console"
	if stopAtCallback {
		stop = "/api/auth/providers/"
	}
	browser := oidctest.Browser(jar, stop)
	resp, err := browser.Get(started.Data.URL)
	if err != nil {
		t.Fatal(err)
	}
	oidctest.Drain(resp)
	if stopAtCallback {
		res.callback = resp.Header.Get("Location")
		return res
	}
	res.location = resp.Header.Get("Location")
	res.callback = resp.Request.URL.String()
	res.cookie = r.cookie(jar, auth.CookieName)
	if strings.Contains(res.location, "authError") {
		t.Logf("sign-in of %s refused; log: %s", subject, r.e.logs.String())
	}
	return res
}

// callback sends the callback URL with the given attempt cookie, not following the redirect.
func (r *oidcRig) callback(callbackURL, attemptCookie string) string {
	r.e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, callbackURL, nil)
	if attemptCookie != "" {
		req.AddCookie(&http.Cookie{Name: "occ_login_attempt", Value: attemptCookie})
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		r.e.t.Fatal(err)
	}
	oidctest.Drain(resp)
	if resp.StatusCode != http.StatusFound {
		r.e.t.Fatalf("callback answered %d", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

func (r *oidcRig) post(jar http.CookieJar, path string, body any) *http.Response {
	r.e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(http.MethodPost, r.e.url+path, rd)
	req.Header.Set("Origin", testOrigin)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Jar: jar}).Do(req)
	if err != nil {
		r.e.t.Fatal(err)
	}
	return resp
}

func (r *oidcRig) cookie(jar *cookiejar.Jar, name string) string {
	u, _ := url.Parse(r.e.url)
	for _, c := range jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// logins counts authentication.login audit events with reasonCode ("" for successes).
func (e *env) logins(reason string) int {
	if reason == "" {
		return e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'authentication.login' AND outcome = 'success'`)
	}
	return e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'authentication.login'
	   AND details -> '__occAuditMetadata' ->> 'reasonCode' = $1`, reason)
}

func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	rig := newOIDCRig(t, rigOptions{discovered: true})
	e := rig.e
	alice := rig.attach("alice-0001")

	providers := e.expect(e.do(req{method: "GET", path: "/api/auth/providers"}), 200).data()
	if providers["oidc"] != true || providers["github"] != false || providers["password"] != true || providers["sessionBinding"] != true {
		t.Fatalf("providers %v", providers)
	}
	if label, _ := providers["oidcSignIn"].(map[string]any); label["label"] != "Acme SSO" || label["authorizationUrl"] != rig.op.Issuer+"/authorize" {
		t.Fatalf("oidcSignIn %v", providers["oidcSignIn"])
	}

	before := e.logins("")
	res := rig.browserSignIn("alice-0001", false)
	if res.location != "/console/" || res.cookie == "" {
		t.Fatalf("callback went to %q, session cookie %q", res.location, res.cookie)
	}
	if e.logins("") != before+1 {
		t.Fatal("the sign-in is not audited")
	}
	session := e.expect(e.do(req{method: "GET", path: "/api/auth/session", cookie: res.cookie}), 200).data()
	if user, _ := session["user"].(map[string]any); user["id"] != alice.account {
		t.Fatalf("session %v", session)
	}
	// The starting tab trades the receipt for the session key, once.
	result := rig.post(res.jar, "/api/auth/providers/oidc/result", map[string]any{"attemptId": res.attemptID})
	body := readAll(result)
	if result.StatusCode != 200 || !strings.Contains(body, session["sessionKey"].(string)) {
		t.Fatalf("result %d %s", result.StatusCode, body)
	}
	if again := rig.post(res.jar, "/api/auth/providers/oidc/result", map[string]any{"attemptId": res.attemptID}); again.StatusCode != 401 {
		t.Fatalf("second result %d %s", again.StatusCode, readAll(again))
	}
	// The session acts as the person: no grant, so an Installation read is 403.
	if r := e.do(req{method: "GET", path: "/installation", cookie: res.cookie}); r.status != 403 {
		t.Fatalf("installation read %d", r.status)
	}

	// A replayed callback matches no attempt: counted, never audited.
	audits := e.count(`SELECT count(*) FROM occ.audit_events`)
	if loc := rig.callback(res.callback, res.attempt); loc != "/console/?authError=oidc" {
		t.Fatalf("replay went to %q", loc)
	}
	if rig.counter.count("oidc") != 1 || e.count(`SELECT count(*) FROM occ.audit_events`) != audits {
		t.Fatalf("replay: %d unmatched, audit events %d -> %d", rig.counter.count("oidc"), audits, e.count(`SELECT count(*) FROM occ.audit_events`))
	}

	// An identity nobody attached signs nobody in.
	stranger := rig.browserSignIn("stranger-0002", false)
	if stranger.location != "/console/?authError=oidc" || stranger.cookie != "" {
		t.Fatalf("stranger went to %q with cookie %q", stranger.location, stranger.cookie)
	}
	if e.logins("EXTERNAL_IDENTITY_REJECTED") != 1 {
		t.Fatal("the rejection is not audited")
	}
}

// TestOIDCRejectsBadIDTokens: a wrong audience, an expired token, a tampered payload and a nonce
// other than the one requested each fail the sign-in closed, audited as a rejection.
func TestOIDCRejectsBadIDTokens(t *testing.T) {
	t.Parallel()
	rig := newOIDCRig(t, rigOptions{basic: true})
	e := rig.e
	rig.attach("bob-0003")
	for i, fault := range []oidctest.Fault{oidctest.WrongAudience, oidctest.ExpiredIDToken, oidctest.TamperedIDToken, oidctest.WrongNonce} {
		rig.op.SetFault(fault)
		res := rig.browserSignIn("bob-0003", false)
		if res.location != "/console/?authError=oidc" || res.cookie != "" {
			t.Fatalf("fault %d: went to %q with cookie %q", fault, res.location, res.cookie)
		}
		if n := e.logins("EXTERNAL_IDENTITY_REJECTED"); n != i+1 {
			t.Fatalf("fault %d: %d rejections audited", fault, n)
		}
	}
	rig.op.SetFault(oidctest.NoFault)
	if res := rig.browserSignIn("bob-0003", false); res.location != "/console/" {
		t.Fatalf("without a fault: %q", res.location)
	}
}

// TestOIDCKeyRotation: the provider replaces its signing key; the next sign-in verifies against
// the new key without a restart.
func TestOIDCKeyRotation(t *testing.T) {
	t.Parallel()
	rig := newOIDCRig(t, rigOptions{})
	rig.attach("carol-0004")
	if res := rig.browserSignIn("carol-0004", false); res.location != "/console/" {
		t.Fatalf("before rotation: %q", res.location)
	}
	old := rig.op.KeyID()
	rig.op.RotateKey()
	if rig.op.KeyID() == old {
		t.Fatal("the key did not change")
	}
	if res := rig.browserSignIn("carol-0004", false); res.location != "/console/" {
		t.Fatalf("after rotation: %q", res.location)
	}
}

// TestOIDCProviderDown: the provider stops answering after the person authenticated; the code
// exchange fails, audited PROVIDER_UNAVAILABLE, with one warning naming only the step and cause.
func TestOIDCProviderDown(t *testing.T) {
	t.Parallel()
	rig := newOIDCRig(t, rigOptions{})
	e := rig.e
	rig.attach("dave-0005")
	res := rig.browserSignIn("dave-0005", true)
	if !strings.Contains(res.callback, "/api/auth/providers/oidc/callback?") {
		t.Fatalf("the provider sent the browser to %q", res.callback)
	}
	rig.op.Stop()
	if loc := rig.callback(res.callback, res.attempt); loc != "/console/?authError=oidc" {
		t.Fatalf("went to %q", loc)
	}
	if e.logins("PROVIDER_UNAVAILABLE") != 1 {
		t.Fatal("the outage is not audited")
	}
	var warnings []map[string]any
	for _, ev := range e.logEvents() {
		if ev["event"] == "authentication.provider-unavailable-warning" {
			warnings = append(warnings, ev)
		}
	}
	if len(warnings) != 1 || warnings[0]["step"] != "token" || warnings[0]["cause"] != "connect_refused" || warnings[0]["provider"] != "oidc" {
		t.Fatalf("warnings %v", warnings)
	}
	line, _ := json.Marshal(warnings[0])
	if strings.Contains(string(line), "127.0.0.1") || strings.Contains(string(line), "http:") {
		t.Fatalf("the warning carries more than the bounded fields: %s", line)
	}
}

// TestGoogleHostedDomains: with allowed domains, only an ID token whose hd is allowed and whose
// email is verified signs in.
func TestGoogleHostedDomains(t *testing.T) {
	t.Parallel()
	rig := newOIDCRig(t, rigOptions{google: true, allowedDomains: []string{"example.com"}})
	e := rig.e
	rig.op.AddUser("g-allowed", map[string]any{"hd": "example.com", "email_verified": true})
	rig.op.AddUser("g-other", map[string]any{"hd": "other.example", "email_verified": true})
	rig.op.AddUser("g-personal", map[string]any{"email_verified": true})
	rig.op.AddUser("g-unverified", map[string]any{"hd": "example.com", "email_verified": false})
	for _, sub := range []string{"g-allowed", "g-other", "g-personal", "g-unverified"} {
		rig.attach(sub)
	}
	if res := rig.browserSignIn("g-allowed", false); res.location != "/console/" || res.cookie == "" {
		t.Fatalf("allowed domain: %q", res.location)
	}
	for i, sub := range []string{"g-other", "g-personal", "g-unverified"} {
		if res := rig.browserSignIn(sub, false); res.location != "/console/?authError=google" || res.cookie != "" {
			t.Fatalf("%s: %q", sub, res.location)
		}
		if n := e.logins("EXTERNAL_IDENTITY_REJECTED"); n != i+1 {
			t.Fatalf("%s: %d rejections", sub, n)
		}
	}
}
