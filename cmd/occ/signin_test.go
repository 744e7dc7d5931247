package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/testkit/wait"

	"github.com/openclaw/occ/internal/testkit/oidctest"
)

// TestSignInAcrossTwoAPIs: two `occ api` processes behind one address, a front proxy that sends
// each request to the other process than the one before. One OIDC sign-in (start, provider
// callback, result) and one `occ login` (start, browser approval, token exchange) each have their
// steps answered by both processes, because attempts, receipts, device authorizations, CLI
// sessions and budgets live in PostgreSQL. The OpenID provider is a real one on loopback; the
// approval is made by a signed-in browser-equivalent client: the session cookie, the exact Origin
// and the session key, as the console's approval page sends them.
func TestSignInAcrossTwoAPIs(t *testing.T) {
	t.Parallel()
	inst := bootstrapped(t)
	adminAccount := inst.scalar(t, `SELECT id FROM occ.accounts LIMIT 1`)

	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	frontURL := "http://" + front.Addr().String()
	op := oidctest.Start(t, oidctest.Client{ID: "occ", Secret: "occ-secret", RedirectURI: frontURL + "/api/auth/providers/oidc/callback"})

	cfg := simulatedConfig(t, "{}")
	var backends []*url.URL
	for i := range 2 {
		port := freePort(t)
		p := start(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": inst.db.AppURL, "OCC_CONFIG_PATH": cfg,
			"OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(port), "OCC_AUTH_BASE_URL": frontURL,
			"OCC_AUTH_OIDC_ISSUER": op.Issuer, "OCC_AUTH_OIDC_CLIENT_ID": "occ", "OCC_AUTH_OIDC_CLIENT_SECRET": "occ-secret",
			"OCC_AUTH_GITHUB_RECOVERY_USER_ID": adminAccount}, "api")
		wait.Eventually(t, wait.Medium, fmt.Sprintf("api %d listening", i), func() bool { return len(p.events(false, "listening")) == 1 })
		u, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
		backends = append(backends, u)
	}
	proxy := &alternatingProxy{backends: backends}
	go func() { _ = http.Serve(front, proxy) }()
	t.Cleanup(func() { _ = front.Close() })

	// The administrator attaches an OIDC identity to a new account.
	jar, _ := cookiejar.New(nil)
	browser := &browserClient{t: t, base: frontURL, http: &http.Client{Jar: jar}}
	adminPassword := "openclaw-development-password"
	browser.json("POST", "/api/auth/sign-in/email", map[string]any{"email": "admin@openclaw.local", "password": adminPassword}, 200)
	created := browser.json("POST", "/api/auth/accounts", map[string]any{"email": "pat@example.com", "password": "a-long-enough-password"}, 201)
	patID := created["id"].(string)
	browser.json("POST", "/api/auth/accounts/"+patID+"/providers/oidc", map[string]any{"expectedVersion": 1, "subject": "pat-at-idp"}, 200)

	// Pat signs in with OIDC in a fresh browser; the steps alternate between the processes.
	patJar, _ := cookiejar.New(nil)
	pat := &browserClient{t: t, base: frontURL, http: &http.Client{Jar: patJar}}
	op.LoginAs("pat-at-idp")
	before := proxy.count()
	started := pat.json("POST", "/api/auth/providers/oidc/start", nil, 200)
	resp, err := oidctest.Browser(patJar, "/console").Get(started["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	oidctest.Drain(resp)
	if loc := resp.Header.Get("Location"); loc != "/console/" {
		t.Fatalf("the callback went to %q", loc)
	}
	key := pat.json("POST", "/api/auth/providers/oidc/result", map[string]any{"attemptId": started["attemptId"]}, 200)["sessionKey"].(string)
	steps := proxy.since(before)
	if len(steps) != 3 || steps[0] == steps[1] || steps[1] == steps[2] {
		t.Fatalf("start, callback and result were answered by %v", steps)
	}
	session := pat.json("GET", "/api/auth/session", nil, 200)
	if session["user"].(map[string]any)["id"] != patID || session["sessionKey"] != key {
		t.Fatalf("session %v", session)
	}
	pat.sessionKey = key

	// occ login: the CLI starts and polls through the front; Pat approves in the browser.
	home := t.TempDir()
	cliEnv := map[string]string{"OCC_URL": frontURL, "XDG_CONFIG_HOME": home}
	login := start(t, cliEnv, "login")
	var code string
	codePattern := regexp.MustCompile(`\b([B-Z]{4}-[B-Z]{4})\b`)
	wait.Eventually(t, wait.Medium, "occ login prints a code", func() bool {
		if m := codePattern.FindStringSubmatch(login.stdout.String()); m != nil {
			code = m[1]
		}
		return code != ""
	})
	if !strings.Contains(login.stdout.String(), frontURL+"/console/cli-login") {
		t.Fatalf("occ login did not print the approval page: %s", login.stdout.String())
	}
	lookedUp := pat.json("POST", "/api/auth/cli/device-authorizations/lookup", map[string]any{"userCode": code}, 200)
	if !strings.HasPrefix(lookedUp["clientLabel"].(string), "occ") || lookedUp["requesterAddress"] != "127.0.0.1" {
		t.Fatalf("lookup %v", lookedUp)
	}
	pat.json("POST", "/api/auth/cli/device-authorizations/decide", map[string]any{"userCode": code, "decision": "approve"}, 200)
	select {
	case <-login.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("occ login did not finish: %s %s", login.stdout.String(), login.stderr.String())
	}
	sessionFile := loginStoredSession(t, login, home, "pat@example.com")
	if info, err := os.Stat(filepath.Dir(sessionFile)); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("session directory mode %v %v", info.Mode(), err)
	}
	hosts := map[string]bool{}
	for _, h := range proxy.since(before) {
		hosts[h] = true
	}
	if len(hosts) != 2 {
		t.Fatalf("one process answered everything: %v", hosts)
	}

	// The CLI acts as Pat, with Pat's own (absent) grants, on both processes.
	status := run(t, cliEnv, "auth", "status")
	if status.exitCode() != 0 || !strings.Contains(status.stdout.String(), "pat@example.com") ||
		!strings.Contains(status.stdout.String(), "CLI session") {
		t.Fatalf("auth status: %s %s", status.stdout.String(), status.stderr.String())
	}
	for range 2 {
		list := run(t, cliEnv, "namespace", "list", "-o", "json")
		if list.exitCode() != 0 || strings.TrimSpace(list.stdout.String()) != "[]" {
			t.Fatalf("namespace list as Pat: %s %s", list.stdout.String(), list.stderr.String())
		}
	}
	sessions := pat.list("GET", "/api/auth/cli-sessions")
	if len(sessions) != 1 {
		t.Fatalf("cli sessions %v", sessions)
	}

	logout := run(t, cliEnv, "logout")
	if logout.exitCode() != 0 {
		t.Fatalf("logout: %s %s", logout.stdout.String(), logout.stderr.String())
	}
	if files, _ := filepath.Glob(filepath.Join(home, "occ", "sessions", "*.json")); len(files) != 0 {
		t.Fatalf("the session file stayed: %v", files)
	}
	if after := run(t, cliEnv, "namespace", "list"); after.exitCode() != 2 || !strings.Contains(after.stderr.String(), "occ login") {
		t.Fatalf("after logout: %d %s", after.exitCode(), after.stderr.String())
	}
	if n := inst.scalar(t, `SELECT count(*)::text FROM occ.cli_sessions`); n != "0" {
		t.Fatalf("%s CLI sessions remain", n)
	}
}

// alternatingProxy sends each request to the other backend than the previous one and remembers
// which answered.
type alternatingProxy struct {
	backends []*url.URL
	mu       sync.Mutex
	next     int
	served   []string
}

func (p *alternatingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	target := p.backends[p.next%len(p.backends)]
	p.next++
	p.served = append(p.served, target.Host)
	p.mu.Unlock()
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host
	}}
	rp.ServeHTTP(w, r)
}

func (p *alternatingProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.served)
}

func (p *alternatingProxy) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.served[n:]...)
}

// browserClient is a signed-in browser as the console is: cookies, the exact Origin on every
// request, and the session key once known.
type browserClient struct {
	t          *testing.T
	base       string
	http       *http.Client
	sessionKey string
}

func (b *browserClient) do(method, path string, body any, want int) []byte {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, b.base+path, rd)
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.sessionKey != "" {
		req.Header.Set("x-occ-session-key", b.sessionKey)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return raw
}

func (b *browserClient) json(method, path string, body any, want int) map[string]any {
	b.t.Helper()
	var doc struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(b.do(method, path, body, want), &doc)
	return doc.Data
}

func (b *browserClient) list(method, path string) []any {
	b.t.Helper()
	var doc struct {
		Data []any `json:"data"`
	}
	_ = json.Unmarshal(b.do(method, path, nil, 200), &doc)
	return doc.Data
}

// TestSignInStartupRefusals: an invalid sign-in configuration stops `occ api` before it connects to
// PostgreSQL (the database URL points at a port nothing listens on), with the seed's codes.
func TestSignInStartupRefusals(t *testing.T) {
	t.Parallel()
	base := map[string]string{"NODE_ENV": "production", "OCC_HOST": "10.0.0.1", "OCC_PORT": "8080",
		"OCC_DATABASE_URL": fmt.Sprintf("postgres://occ_app@127.0.0.1:%d/occ", freePort(t)), "OCC_CONFIG_PATH": "/nonexistent/installation.yaml",
		"OCC_AUTH_SECRET": strings.Repeat("s", 32), "OCC_AUTH_BASE_URL": "https://console.oce.example.com"}
	github := map[string]string{"OCC_AUTH_GITHUB_CLIENT_ID": "Iv1.x", "OCC_AUTH_GITHUB_CLIENT_SECRET": "s",
		"OCC_AUTH_GITHUB_RECOVERY_USER_ID": "usr_0b3f0c1e-4a3f-4c2b-9d7e-1a2b3c4d5e6f"}
	for _, tc := range []struct {
		name, code, variable string
		env                  map[string]string
	}{
		{"external sign-in with native admin", "EXTERNAL_SIGN_IN_NATIVE_ADMIN_UNSUPPORTED", "OCC_AGENT_NATIVE_ADMIN_ENABLED",
			merge(github, map[string]string{"OCC_AGENT_NATIVE_ADMIN_ENABLED": "true", "OCC_AUTH_COOKIE_DOMAIN": "oce.example.com"})},
		{"cookie domain is a public suffix", "AUTH_BASE_URL_INVALID", "OCC_AUTH_COOKIE_DOMAIN",
			map[string]string{"OCC_AGENT_NATIVE_ADMIN_ENABLED": "true", "OCC_AUTH_COOKIE_DOMAIN": "com"}},
		{"partial provider", "CONFIG_ENV_INVALID", "OCC_AUTH_GITHUB_CLIENT_SECRET",
			map[string]string{"OCC_AUTH_GITHUB_CLIENT_ID": "Iv1.x", "OCC_AUTH_GITHUB_RECOVERY_USER_ID": "usr_0b3f0c1e-4a3f-4c2b-9d7e-1a2b3c4d5e6f"}},
		{"recovery-only without a provider", "CONFIG_ENV_INVALID", "OCC_AUTH_PASSWORD_SIGN_IN",
			map[string]string{"OCC_AUTH_PASSWORD_SIGN_IN": "recovery-only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := run(t, merge(base, tc.env), "api")
			if p.exitCode() != 1 {
				t.Fatalf("exit %d: %s", p.exitCode(), p.stderr.String())
			}
			ev := p.events(true, "startup-error")
			if len(ev) != 1 || ev[0]["code"] != tc.code || !strings.Contains(fmt.Sprint(ev[0]["details"]), "/env/"+tc.variable) {
				t.Fatalf("startup-error %v", ev)
			}
		})
	}
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// loginStoredSession checks that a finished `occ login` signed in as email and stored exactly one
// session file under the config directory home, readable by its owner only; it returns its path.
func loginStoredSession(t *testing.T, login *process, home, email string) string {
	t.Helper()
	if login.exitCode() != 0 || !strings.Contains(login.stdout.String(), "Signed in as "+email) {
		t.Fatalf("occ login: %s %s", login.stdout.String(), login.stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(home, "occ", "sessions", "*.json"))
	if len(files) != 1 {
		t.Fatalf("session files %v", files)
	}
	if info, err := os.Stat(files[0]); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("session file mode %v %v", info.Mode(), err)
	}
	return files[0]
}
