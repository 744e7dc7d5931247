package api_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"

	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/signin"
	"github.com/openclaw/occ/internal/testkit/oidctest"
)

// fakeGitHub speaks the parts of github.com that a GitHub App's user login uses, because github.com
// cannot be reached from the test machines: the authorize page (it signs in whoever login names and
// redirects back with a code), POST /login/oauth/access_token (application/json, errors answered
// with HTTP 200 as GitHub does, PKCE checked), GET /user, and the membership lookups
// GET /user/memberships/orgs/{org} and GET /orgs/{org}/teams/{team}/memberships/{login}.
type fakeGitHub struct {
	srv          *httptest.Server
	clientID     string
	clientSecret string
	mu           sync.Mutex
	login        struct {
		id   int64
		name string
	}
	codes  map[string]ghCode
	tokens map[string]struct {
		id   int64
		name string
	}
	orgs  map[string]string // "login/org" → state
	teams map[string]string // "org/team/login" → state
	// membershipsDown answers every membership lookup with 502.
	membershipsDown bool
}

type ghCode struct {
	challenge string
	user      struct {
		id   int64
		name string
	}
}

func startFakeGitHub(t *testing.T, clientID, clientSecret string) *fakeGitHub {
	g := &fakeGitHub{clientID: clientID, clientSecret: clientSecret, codes: map[string]ghCode{},
		tokens: map[string]struct {
			id   int64
			name string
		}{}, orgs: map[string]string{}, teams: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != g.clientID || q.Get("code_challenge_method") != "S256" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		g.mu.Lock()
		code := "code-" + randomSuffix()
		g.codes[code] = ghCode{challenge: q.Get("code_challenge"), user: g.login}
		g.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("client_id") != g.clientID || r.Form.Get("client_secret") != g.clientSecret {
			_, _ = w.Write([]byte(`{"error":"incorrect_client_credentials"}`))
			return
		}
		g.mu.Lock()
		c, ok := g.codes[r.Form.Get("code")]
		delete(g.codes, r.Form.Get("code"))
		g.mu.Unlock()
		if !ok || oauthChallenge(r.Form.Get("code_verifier")) != c.challenge {
			_, _ = w.Write([]byte(`{"error":"bad_verification_code"}`))
			return
		}
		token := "gho_fake" + randomSuffix()
		g.mu.Lock()
		g.tokens[token] = c.user
		g.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "bearer", "scope": ""})
	})
	user := func(r *http.Request) (struct {
		id   int64
		name string
	}, bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		u, ok := g.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		return u, ok
	}
	mux.HandleFunc("GET /user", func(w http.ResponseWriter, r *http.Request) {
		u, ok := user(r)
		if !ok {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": u.id, "login": u.name})
	})
	mux.HandleFunc("GET /user/memberships/orgs/{org}", func(w http.ResponseWriter, r *http.Request) {
		u, _ := user(r)
		g.mu.Lock()
		state, ok := g.orgs[u.name+"/"+r.PathValue("org")]
		down := g.membershipsDown
		g.mu.Unlock()
		if down {
			http.Error(w, "unavailable", http.StatusBadGateway)
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"state": state})
	})
	mux.HandleFunc("GET /orgs/{org}/teams/{team}/memberships/{login}", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		state, ok := g.teams[r.PathValue("org")+"/"+r.PathValue("team")+"/"+r.PathValue("login")]
		down := g.membershipsDown
		g.mu.Unlock()
		if down {
			http.Error(w, "unavailable", http.StatusBadGateway)
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"state": state})
	})
	g.srv = httptest.NewServer(mux)
	t.Cleanup(g.srv.Close)
	return g
}

func (g *fakeGitHub) signInAs(id int64, login string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.login = struct {
		id   int64
		name string
	}{id, login}
}

func (g *fakeGitHub) endpoints() signin.GitHubEndpoints {
	return signin.GitHubEndpoints{AuthorizationURL: g.srv.URL + "/login/oauth/authorize",
		TokenURL: g.srv.URL + "/login/oauth/access_token", APIURL: g.srv.URL}
}

// githubRig serves the API with GitHub sign-in against the fake.
func githubRig(t *testing.T, cfg settings.GitHubSignIn, extra func(e *env, s *api.SignIn)) (*oidcRig, *fakeGitHub) {
	gh := startFakeGitHub(t, cfg.ClientID, cfg.ClientSecret)
	rig := &oidcRig{counter: &unmatchedCounter{unmatched: map[string]int{}}, provider: signin.GitHub}
	rig.e = newEnv(t, func(e *env, c *api.Config) {
		p := signin.NewGitHub(cfg, gh.endpoints(), signin.Options{CallbackURL: e.url + "/api/auth/providers/github/callback"})
		c.SignIn = api.SignIn{Providers: []signin.Provider{p}, RecoveryUserID: e.adminAccount, CLISessions: true}
		if extra != nil {
			extra(e, &c.SignIn)
		}
		c.Metrics = rig.counter
	})
	return rig, gh
}

// githubSignIn signs in through the fake GitHub; it returns the callback's Location and the
// session cookie.
func (r *oidcRig) githubSignIn() (string, string) {
	r.e.t.Helper()
	jar, _ := cookiejar.New(nil)
	start := r.post(jar, "/api/auth/providers/github/start", nil)
	var started struct {
		Data struct{ URL string } `json:"data"`
	}
	_ = json.Unmarshal([]byte(readAll(start)), &started)
	resp, err := oidctest.Browser(jar, "/console").Get(started.Data.URL)
	if err != nil {
		r.e.t.Fatal(err)
	}
	oidctest.Drain(resp)
	return resp.Header.Get("Location"), r.cookie(jar, "openclaw_occ.session_token")
}

func TestGitHubSignIn(t *testing.T) {
	t.Parallel()
	rig, gh := githubRig(t, settings.GitHubSignIn{ClientID: "Iv1.test", ClientSecret: "gh-secret"}, nil)
	e := rig.e
	who := rig.attach("4242")
	gh.signInAs(4242, "octocat")
	loc, cookie := rig.githubSignIn()
	if loc != "/console/" || cookie == "" {
		t.Fatalf("went to %q", loc)
	}
	user := e.expect(e.do(req{method: "GET", path: "/api/auth/session", cookie: cookie}), 200).data()["user"].(map[string]any)
	if user["id"] != who.account {
		t.Fatalf("signed in as %v", user)
	}
	// The numeric id is the subject: another id with the same login is someone else.
	gh.signInAs(4343, "octocat")
	if loc, _ := rig.githubSignIn(); loc != "/console/?authError=github" {
		t.Fatalf("unattached id went to %q", loc)
	}
	// Detaching the identity ends its sessions; the password still works.
	account := e.expect(e.do(req{method: "GET", path: "/api/auth/accounts/" + who.account, cookie: e.adminCookie(), origin: testOrigin}), 200).data()
	methods := account["methods"].([]any)
	if len(methods) != 2 || methods[0].(map[string]any)["providerId"] != "credential" ||
		!strings.HasPrefix(methods[1].(map[string]any)["providerId"].(string), "github:") || methods[1].(map[string]any)["subject"] != "4242" {
		t.Fatalf("methods %v", methods)
	}
	e.expect(e.do(req{method: "POST", path: "/api/auth/accounts/" + who.account + "/methods/" + methods[1].(map[string]any)["methodId"].(string) + "/detach",
		cookie: e.adminCookie(), origin: testOrigin, body: map[string]any{"expectedVersion": account["version"]}}), 200)
	if r := e.do(req{method: "GET", path: "/api/auth/session", cookie: cookie}); r.status != 200 || r.doc["data"] != nil {
		t.Fatalf("the GitHub session survived the detach: %s", r.raw)
	}
	gh.signInAs(4242, "octocat")
	if loc, _ := rig.githubSignIn(); loc != "/console/?authError=github" {
		t.Fatalf("detached identity went to %q", loc)
	}
	e.signIn(who.accountEmail(e), "a-long-test-password")
}

// accountEmail reads a human's email.
func (i identity) accountEmail(e *env) string {
	e.t.Helper()
	var email string
	if err := e.owner.QueryRow(ctxb(), `SELECT email FROM occ.accounts WHERE id = $1`, i.account).Scan(&email); err != nil {
		e.t.Fatal(err)
	}
	return email
}

// TestGitHubMembership: with an allowlist, only an active member of a listed organization or team
// signs in; a pending invitation does not count; a failed lookup is MEMBERSHIP_UNAVAILABLE.
func TestGitHubMembership(t *testing.T) {
	t.Parallel()
	rig, gh := githubRig(t, settings.GitHubSignIn{ClientID: "Iv1.members", ClientSecret: "gh-secret",
		AllowedOrgs: []string{"acme"}, AllowedTeams: []string{"tools/platform"}}, nil)
	e := rig.e
	for _, id := range []string{"1", "2", "3", "4"} {
		rig.attach(id)
	}
	gh.mu.Lock()
	gh.orgs["member/acme"] = "active"
	gh.orgs["invited/acme"] = "pending"
	gh.orgs["teammate/tools"] = "active"
	gh.teams["tools/platform/teammate"] = "active"
	gh.mu.Unlock()
	cases := []struct {
		id     int64
		login  string
		where  string
		reason string
	}{
		{1, "member", "/console/", ""},
		{2, "invited", "/console/?authError=github&authReason=membership", "MEMBERSHIP_REQUIRED"},
		{3, "teammate", "/console/", ""},
		{4, "outsider", "/console/?authError=github&authReason=membership", "MEMBERSHIP_REQUIRED"},
	}
	for _, c := range cases {
		gh.signInAs(c.id, c.login)
		if loc, _ := rig.githubSignIn(); loc != c.where {
			t.Errorf("%s went to %q, want %q", c.login, loc, c.where)
		}
	}
	if n := e.logins("MEMBERSHIP_REQUIRED"); n != 2 {
		t.Fatalf("%d MEMBERSHIP_REQUIRED audits", n)
	}
	// The API cannot reach the membership lookup: closed, and said so.
	gh.mu.Lock()
	gh.membershipsDown = true
	gh.mu.Unlock()
	gh.signInAs(4, "outsider")
	if loc, _ := rig.githubSignIn(); loc != "/console/?authError=github&authReason=membership-unavailable" {
		t.Fatalf("failed lookup went to %q", loc)
	}
	if e.logins("MEMBERSHIP_UNAVAILABLE") != 1 {
		t.Fatal("MEMBERSHIP_UNAVAILABLE is not audited")
	}
}

// TestGitHubClientRejected: a wrong client secret is a provider failure the operator must fix
// (client_rejected), not a rejected person.
func TestGitHubClientRejected(t *testing.T) {
	t.Parallel()
	gh := startFakeGitHub(t, "Iv1.test", "the-real-secret")
	rig := &oidcRig{counter: &unmatchedCounter{unmatched: map[string]int{}}, provider: signin.GitHub}
	rig.e = newEnv(t, func(e *env, c *api.Config) {
		p := signin.NewGitHub(settings.GitHubSignIn{ClientID: "Iv1.test", ClientSecret: "a-stale-secret"}, gh.endpoints(),
			signin.Options{CallbackURL: e.url + "/api/auth/providers/github/callback"})
		c.SignIn = api.SignIn{Providers: []signin.Provider{p}, RecoveryUserID: e.adminAccount}
	})
	rig.attach("77")
	gh.signInAs(77, "someone")
	if loc, _ := rig.githubSignIn(); loc != "/console/?authError=github" {
		t.Fatalf("went to %q", loc)
	}
	if rig.e.logins("PROVIDER_UNAVAILABLE") != 1 {
		t.Fatal("not audited as PROVIDER_UNAVAILABLE")
	}
	found := false
	for _, ev := range rig.e.logEvents() {
		found = found || ev["event"] == "authentication.provider-unavailable-warning" && ev["cause"] == "client_rejected" && ev["step"] == "token"
	}
	if !found {
		t.Fatalf("no client_rejected warning: %v", rig.e.logEvents())
	}
}

// oauthChallenge is the PKCE S256 challenge of verifier.
func oauthChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
