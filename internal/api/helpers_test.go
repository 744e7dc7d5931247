package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/logbuf"
	"github.com/openclaw/occ/internal/testkit/pgtest"
	"github.com/openclaw/occ/internal/testkit/testclock"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	testSecret   = "openclaw-test-auth-secret-at-least-32-characters"
	testOrigin   = "http://127.0.0.1:3000"
	adminEmail   = "admin@openclaw.local"
	adminPass    = "openclaw-development-password"
	iamDriverID  = "native-iam"
	otherOrigin  = "http://evil.example"
	jsonType     = "application/json"
	defaultLimit = 64 << 10
)

// readPool opens the read-only pool an API server beside pool needs (api.ReadPoolConfig).
func readPool(t testing.TB, pool *pgxpool.Pool) *pgxpool.Pool {
	read, err := pgxpool.NewWithConfig(context.Background(), api.ReadPoolConfig(pool.Config()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(read.Close)
	return read
}

// env is one bootstrapped Installation served in-process.
type env struct {
	t              *testing.T
	db             *pgtest.Database
	app            *pgxpool.Pool
	appRead        *pgxpool.Pool // the app role's read-only sessions (api.ReadPoolConfig)
	owner          *pgxpool.Pool
	server         *api.Server
	http           *httptest.Server
	url            string           // the listener's base URL, known before the server starts
	clock          *testclock.Clock // the sign-in limiter's clock
	logs           *logbuf.Buffer
	installationID string
	adminKey       string
	adminKeyID     string
	adminSP        string
	adminPrincipal string
	adminAccount   string
	defaultNS      string
	metrics        *recorder
	storageRoot    string
	// responses collects every response body; secretValues every Secret value the test sent.
	responses    *logbuf.Buffer
	secretMu     sync.Mutex
	secretValues []string
}

type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) ObserveRequest(route, method string, status int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, method+" "+route)
}

func (r *recorder) routes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// envOption adjusts the server configuration; it may read the bootstrapped env.
type envOption func(*env, *api.Config)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	result := runBootstrap(t, db, keyFile)
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc bootstrap.KeyFile
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	e := &env{
		t: t, db: db, app: db.App(t), owner: db.Owner(t),
		clock: testclock.New(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)), logs: &logbuf.Buffer{},
		installationID: doc.Meta.InstallationID, adminKey: doc.Data.Key, adminKeyID: doc.Data.ID,
		adminSP: doc.Data.ServicePrincipalID, adminPrincipal: result.Attempt.PrincipalID, adminAccount: result.Attempt.AccountID,
		defaultNS: result.Attempt.DefaultNamespaceID, metrics: &recorder{},
	}
	e.appRead = readPool(t, e.app)
	cfg := api.Config{
		Pool: e.app, ReadPool: e.appRead, Mode: settings.Development, AuthSecret: testSecret, AuthBaseURL: testOrigin,
		IAMDriverID: iamDriverID, AdoptsExistingNamespaces: true, Now: e.clock.Now, Metrics: e.metrics,
		Logger: obs.NewLogger(e.logs, "occ-api", slog.LevelInfo),
	}
	e.storageRoot = t.TempDir()
	e.responses = &logbuf.Buffer{}
	t.Cleanup(e.scanForSecretValues)
	cfg.Compute, cfg.Configurations, cfg.Secrets = testDrivers(t, e.storageRoot)
	// The listener exists before the server, so options can name the API's own address
	// (a provider's callback URL).
	e.http = httptest.NewUnstartedServer(nil)
	e.url = "http://" + e.http.Listener.Addr().String()
	for _, o := range opts {
		o(e, &cfg)
	}
	e.server, err = api.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.http.Config.Handler = e.server
	e.http.Start()
	t.Cleanup(e.http.Close)
	return e
}

func runBootstrap(t *testing.T, db *pgtest.Database, keyFile string) bootstrap.Result {
	t.Helper()
	ctx := context.Background()
	cfg, err := settings.LoadBootstrap(settings.MapLookup(map[string]string{
		"NODE_ENV": "development", "OCC_DATABASE_URL": db.AppURL, "OCC_BOOTSTRAP_SERVICE_KEY_FILE": keyFile,
	}))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	result, err := bootstrap.Run(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return result
}

// req describes one request.
type req struct {
	method, path string
	body         any    // marshalled to JSON unless raw is set
	raw          []byte // a literal body
	contentType  string // default application/json when a body is sent
	key          string
	cookie       string
	origin       string
	header       map[string]string
}

type resp struct {
	status int
	header http.Header
	raw    []byte
	doc    map[string]any
}

func (r resp) data() map[string]any {
	m, _ := r.doc["data"].(map[string]any)
	return m
}

func (r resp) list() []any {
	l, _ := r.doc["data"].([]any)
	return l
}

func (r resp) errCode() string {
	e, _ := r.doc["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (r resp) details() []map[string]any {
	e, _ := r.doc["error"].(map[string]any)
	list, _ := e["details"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, d := range list {
		out = append(out, d.(map[string]any))
	}
	return out
}

func (r resp) hasDetail(path, code string) bool {
	for _, d := range r.details() {
		if d["path"] == path && d["code"] == code {
			return true
		}
	}
	return false
}

func (e *env) do(r req) resp {
	e.t.Helper()
	if m, ok := r.body.(map[string]any); ok && strings.Contains(r.path, "/secrets") {
		if v, ok := m["value"].(string); ok && v != "" {
			e.secretMu.Lock()
			e.secretValues = append(e.secretValues, v)
			e.secretMu.Unlock()
		}
	}
	out := doHTTP(e.t, e.http.URL, r)
	_, _ = e.responses.Write(append(out.raw, '\n'))
	return out
}

func doHTTP(t testing.TB, base string, r req) resp {
	t.Helper()
	var body io.Reader
	if r.raw != nil {
		body = bytes.NewReader(r.raw)
	} else if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		ct := r.contentType
		if ct == "" {
			ct = jsonType
		}
		hr.Header.Set("Content-Type", ct)
	}
	if r.key != "" {
		hr.Header.Set("x-api-key", r.key)
	}
	if r.cookie != "" {
		hr.Header.Set("Cookie", auth.CookieName+"="+r.cookie)
	}
	if r.origin != "" {
		hr.Header.Set("Origin", r.origin)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{status: res.StatusCode, header: res.Header, raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &out.doc)
	}
	return out
}

func (e *env) expect(r resp, status int) resp {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// count runs a count(*) query as the owner.
func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.owner.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) exec(query string, args ...any) {
	e.t.Helper()
	if _, err := e.owner.Exec(context.Background(), query, args...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) denials() int {
	return e.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial'`)
}

// createNamespace creates a Namespace with the admin key and returns its id.
func (e *env) createNamespace(name string) string {
	e.t.Helper()
	r := e.expect(e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, body: map[string]any{"name": name}}), 201)
	return r.data()["id"].(string)
}

// identity is a test caller: a ServicePrincipal with a key, or a human with a session.
type identity struct {
	id     string
	key    string
	cookie string
	// account is the account id of a human.
	account string
}

func (i identity) apply(r req) req {
	r.key, r.cookie = i.key, i.cookie
	if i.cookie != "" && r.origin == "" {
		r.origin = testOrigin
	}
	return r
}

// newServicePrincipal creates a ServicePrincipal (scoped to namespace when not empty) with a key,
// directly in storage, without any grant.
func (e *env) newServicePrincipal(namespace string) identity {
	e.t.Helper()
	ctx := context.Background()
	id := "spn_" + uuid.NewString()
	var ns *string
	if namespace != "" {
		ns = &namespace
	}
	if err := store.InsertIAMIdentity(ctx, e.owner, store.IAMIdentity{ID: id, Kind: iam.IdentityKindServicePrincipal, NamespaceID: ns}); err != nil {
		e.t.Fatal(err)
	}
	secret, err := auth.NewServiceKey()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := store.IssueServiceKey(ctx, e.owner, store.ServiceKey{ID: "key_" + uuid.NewString(), Hash: secret.Hash,
		Start: secret.Start, ServicePrincipalID: id, InstallationID: e.installationID, NamespaceID: ns, Name: "test",
		CreatedBy: e.adminSP}, time.Hour); err != nil {
		e.t.Fatal(err)
	}
	return identity{id: id, key: secret.Plaintext}
}

// grant binds a new Role with exactly perms to subject, on one exact resource (kind/id) or, with
// an empty kind, across the Installation; namespace scopes the Role and binding when not empty.
func (e *env) grant(subject string, namespace, kind, id string, perms ...iam.Permission) string {
	e.t.Helper()
	ctx := context.Background()
	roleID := "role_" + uuid.NewString()
	var ns *string
	if namespace != "" {
		ns = &namespace
	}
	pairs := make([][2]string, len(perms))
	for i, p := range perms {
		pairs[i] = [2]string{p.Action, p.ResourceKind}
	}
	if err := store.InsertIAMRole(ctx, e.owner, roleID, ns, nil, pairs); err != nil {
		e.t.Fatal(err)
	}
	b := store.IAMBinding{ID: "binding_" + uuid.NewString(), NamespaceID: ns, IdentitySubjectID: &subject, RoleID: roleID}
	if kind != "" {
		b.ResourceKind, b.ResourceID = &kind, &id
	}
	if err := store.InsertIAMBinding(ctx, e.owner, b); err != nil {
		e.t.Fatal(err)
	}
	return b.ID
}

func perm(action, kind string) iam.Permission {
	return iam.Permission{Action: action, ResourceKind: kind}
}

// newHuman creates a password account (no grants) and signs it in.
func (e *env) newHuman(email string) identity {
	e.t.Helper()
	ctx := context.Background()
	accountID := "usr_" + uuid.NewString()
	principalID := "prn_" + uuid.NewString()
	issuer := auth.Issuer(e.installationID)
	if err := store.InsertIAMIdentity(ctx, e.owner, store.IAMIdentity{ID: principalID, Kind: iam.IdentityKindPrincipal, Issuer: &issuer, Subject: &accountID}); err != nil {
		e.t.Fatal(err)
	}
	hash, err := auth.HashPassword("a-long-test-password")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := store.InsertAccount(ctx, e.owner, store.Account{ID: accountID, Email: email, Name: "Test", PrincipalID: principalID}, hash); err != nil {
		e.t.Fatal(err)
	}
	return identity{id: principalID, account: accountID, cookie: e.signIn(email, "a-long-test-password")}
}

// signIn signs in and returns the session cookie's value.
func (e *env) signIn(email, password string) string {
	e.t.Helper()
	r := e.expect(e.do(req{method: "POST", path: "/api/auth/sign-in/email", body: map[string]any{"email": email, "password": password}}), 200)
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == auth.CookieName {
			return c.Value
		}
	}
	e.t.Fatalf("no session cookie in %v", r.header)
	return ""
}

// logEvents decodes the API's log lines.
func (e *env) logEvents() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			e.t.Fatalf("not a JSON line: %q", line)
		}
		out = append(out, m)
	}
	return out
}

type apiConfig = api.Config

func ctxb() context.Context { return context.Background() }

// pgtestAdmin is a superuser pool on the test's database, for fault injection.
func pgtestAdmin(t *testing.T, e *env) *pgxpool.Pool { return pgtest.Pool(t, e.db.AdminURL) }
