package api_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
)

// statementLog records the SQL of every round trip its pools make: a statement, or a batch as
// "batch:" and the SQL of its statements, one per line.
type statementLog struct {
	mu  sync.Mutex
	sql []string
}

func (l *statementLog) add(sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql = append(l.sql, strings.Join(strings.Fields(sql), " "))
}

func (l *statementLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.sql
	l.sql = nil
	return out
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(d.SQL)
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	l.add("batch:")
	return ctx
}

func (l *statementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql[len(l.sql)-1] += "\n  " + strings.Join(strings.Fields(d.SQL), " ")
}

func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// newTracedEnv is newEnv whose API pools record every round trip in the returned log.
func newTracedEnv(t *testing.T) (*env, *statementLog) {
	log := &statementLog{}
	e := newEnv(t, func(e *env, c *api.Config) {
		c.Pool = tracedPool(t, e.app.Config(), log)
		c.ReadPool = tracedPool(t, api.ReadPoolConfig(e.app.Config()), log)
	})
	return e, log
}

func tracedPool(t *testing.T, cfg *pgxpool.Config, log *statementLog) *pgxpool.Pool {
	cfg.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// An authorized read with a service key this process admitted before is one round trip: the key,
// the path Namespace, the identity and the policy epoch in one pipeline (decisions 47, 48). No
// BEGIN and no COMMIT (decision 45); the policy itself is read only while no decision made under
// the current epoch is at hand (decision 42).
func TestAuthorizedReadIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	e, log := newTracedEnv(t)
	path := "/namespaces/" + e.defaultNS
	e.expect(e.admin("GET", path, nil), 200)
	log.take()
	e.expect(e.admin("GET", path, nil), 200)
	sent := log.take()
	all := strings.Join(sent, "\n")
	if len(sent) != 1 || !strings.HasPrefix(sent[0], "batch:\n  SELECT k.id") || !strings.Contains(sent[0], "FROM occ.namespaces n") ||
		!strings.Contains(sent[0], "occ.iam_identities i ON i.id") {
		t.Fatalf("GET %s: want the key, the Namespace and the identity in one pipeline:\n%s", path, all)
	}
	if strings.Contains(strings.ToLower(all), "begin") || strings.Contains(strings.ToLower(all), "commit") {
		t.Errorf("GET %s opened a transaction:\n%s", path, all)
	}
}

// A remembered service key is read again by every request: once expired or revoked, it is refused
// (401) by the next request, before a refusal of the request itself (400) and before its
// identity, its Namespace or its transaction answer anything (decision 48).
func TestRememberedKeyIsConfirmedByEveryRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reader := e.newServicePrincipal("")
	e.grant(reader.id, "", "", "", perm("read", iam.KindNamespace), perm("read", iam.KindAgent),
		perm("create", iam.KindConfiguration))
	ns, agents := "/namespaces/"+e.defaultNS, "/namespaces/"+e.defaultNS+"/agents"
	configurations := ns + "/configurations"
	missing := "/namespaces/" + platform.NewID(platform.PrefixNamespace)
	get := func(path string) resp { return e.do(reader.apply(req{method: "GET", path: path})) }
	create := func(body any) resp { return e.do(reader.apply(req{method: "POST", path: configurations, body: body})) }
	valid := map[string]any{"kind": "agent", "values": map[string]any{}}
	e.expect(get(ns), 200)
	e.expect(get(agents), 200)
	if r := get(agents + "?limit=abc"); r.status != 400 {
		t.Fatalf("a bad query with a live key: %d, want 400", r.status)
	}
	if r := get(missing); r.status != 404 {
		t.Fatalf("a missing Namespace with a live key: %d, want 404", r.status)
	}
	e.expect(create(valid), 201)
	if r := create(map[string]any{"kind": 7}); r.status != 400 {
		t.Fatalf("a bad body with a live key: %d, want 400", r.status)
	}
	created := e.count(`SELECT count(*) FROM occ.configurations`)

	// Each probe finds the key remembered (a refused key is forgotten), then expired.
	hash := auth.HashServiceKey(reader.key)
	expired := func() {
		t.Helper()
		e.exec(`UPDATE occ.service_keys SET expires_at = clock_timestamp() + interval '1 hour' WHERE key_hash = $1`, hash)
		e.expect(get(ns), 200)
		e.exec(`UPDATE occ.service_keys SET created_at = clock_timestamp() - interval '2 hours',
  expires_at = clock_timestamp() - interval '1 second' WHERE key_hash = $1`, hash)
	}
	for _, path := range []string{ns, agents, agents + "?limit=abc", missing} {
		expired()
		if r := get(path); r.status != 401 || r.errCode() != "UNAUTHENTICATED" {
			t.Errorf("GET %s with an expired key: %d %s, want 401", path, r.status, r.errCode())
		}
	}
	for _, body := range []any{valid, map[string]any{"kind": 7}} {
		expired()
		if r := create(body); r.status != 401 {
			t.Errorf("POST %s %v with an expired key: %d, want 401", configurations, body, r.status)
		}
	}
	if n := e.count(`SELECT count(*) FROM occ.configurations`); n != created {
		t.Errorf("an expired key created a Configuration: %d, want %d", n, created)
	}

	expired()
	e.exec(`UPDATE occ.service_keys SET expires_at = clock_timestamp() + interval '1 hour' WHERE key_hash = $1`, hash)
	e.expect(get(ns), 200)
	e.exec(`DELETE FROM occ.service_keys WHERE key_hash = $1`, hash)
	if r := get(ns); r.status != 401 {
		t.Errorf("GET %s with a revoked key: %d, want 401", ns, r.status)
	}
}

// A write route's BEGIN, service key and path Namespace travel with its identity lookup, and its
// audit row with its COMMIT. A deploy also reads its Agent in that first round trip, reuses the
// decisions of the deploy before (it keeps the policy) and sends its revision, desired state and
// work together: four round trips, fourteen before (decisions 46 to 49).
func TestWriteRouteSendsBeginAndCommitWithStatements(t *testing.T) {
	t.Parallel()
	e, log := newTracedEnv(t)
	base, agents := e.deployableAgents("trips", 1)
	agent := agents[0]
	e.expect(e.admin("POST", base+"/agents/"+agent+"/deploy", nil), 202)
	log.take()
	e.expect(e.admin("POST", base+"/agents/"+agent+"/deploy", nil), 202)
	sent := log.take()
	all := strings.Join(sent, "\n")
	first, last := sent[0], sent[len(sent)-1]
	if !strings.HasPrefix(first, "batch:\n  BEGIN\n  SELECT set_config('occ.iam_policy_kept', 'on', true)\n  SELECT k.id") || !strings.Contains(first, "FOR SHARE\n  SELECT a.id") || !strings.Contains(first, "FOR UPDATE\n  SELECT e.epoch, i.id") {
		t.Errorf("the transaction's first round trip is not BEGIN, the key, the Namespace, the Agent and the identity lookup:\n%s", first)
	}
	if !strings.HasPrefix(last, "batch:\n  INSERT INTO occ.audit_events") || !strings.HasSuffix(last, "\n  COMMIT") {
		t.Errorf("the transaction's last round trip is not its audit row with COMMIT:\n%s", last)
	}
	if len(sent) != 4 {
		t.Errorf("a deploy made %d round trips, want 4:\n%s", len(sent), all)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1`, api.ActionAgentsDeploy); n != 2 {
		t.Errorf("%d deploy audit events, want 2", n)
	}
}

// The read pool's sessions refuse what a READ ONLY transaction refused: writes and row locks.
func TestReadPoolRefusesWritesAndRowLocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for _, sql := range []string{
		`UPDATE occ.namespaces SET name = name WHERE id = $1`,
		`SELECT id FROM occ.namespaces WHERE id = $1 FOR SHARE`,
	} {
		_, err := e.appRead.Exec(ctx, sql, e.defaultNS)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "25006" {
			t.Errorf("%s on the read pool: %v, want SQLSTATE 25006 (read_only_sql_transaction)", sql, err)
		}
	}
}

// A server given a read pool whose sessions can write does not start.
func TestNewRefusesAWritableReadPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := api.New(context.Background(), api.Config{Pool: e.app, ReadPool: e.app, IAMDriverID: iamDriverID})
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("api.New with a writable read pool: %v", err)
	}
}

// A read-only route runs outside a transaction, so it must not ask for a row lock.
func TestReadRoutesTakeNoRowLocks(t *testing.T) {
	for _, r := range api.Routes() {
		if r.Tx == api.TxRead && r.NamespaceLock != store.NoLock {
			t.Errorf("%s %s is a read route with a Namespace row lock", r.Method, r.Path)
		}
	}
}

// A route that keeps the policy reuses decisions, and a revocation still takes effect at the next
// request: a caller whose grant is removed between two deploys of the same Agent is refused the
// second (decisions 42, 49).
func TestKeptPolicyRouteRefusesAtOnceAfterRevocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, agents := e.deployableAgents("kept", 1)
	agent := agents[0]
	deployer := e.newServicePrincipal("")
	binding := e.grant(deployer.id, "", "", "", perm(iam.ActionDeploy, iam.KindAgent), perm("read", iam.KindConfiguration))
	deploy := func() resp {
		return e.do(deployer.apply(req{method: "POST", path: base + "/agents/" + agent + "/deploy"}))
	}
	e.expect(deploy(), 202)
	e.expect(deploy(), 202)
	e.exec(`DELETE FROM occ.iam_access_bindings WHERE id = $1`, binding)
	if r := deploy(); r.status != 403 {
		t.Fatalf("a deploy after its grant was removed: %d, want 403", r.status)
	}
}

// Creating a Namespace keeps the policy and sends the Namespace with its work: three round trips,
// eight before (decisions 46 to 49).
func TestCreateNamespaceIsThreeRoundTrips(t *testing.T) {
	t.Parallel()
	e, log := newTracedEnv(t)
	e.expect(e.admin("POST", "/namespaces", map[string]any{"name": "trips-one"}), 201)
	log.take()
	e.expect(e.admin("POST", "/namespaces", map[string]any{"name": "trips-two"}), 201)
	sent := log.take()
	if len(sent) != 3 || !strings.Contains(sent[1], "INSERT INTO occ.namespaces") || !strings.Contains(sent[1], "INSERT INTO occ.controller_work") {
		t.Errorf("creating a Namespace made %d round trips, want 3, the second with the Namespace and its work:\n%s",
			len(sent), strings.Join(sent, "\n"))
	}
	if r := e.admin("POST", "/namespaces", map[string]any{"name": "trips-two"}); r.status != 409 {
		t.Errorf("a taken name: %d, want 409", r.status)
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work w JOIN occ.namespaces n ON n.id = w.namespace_id WHERE n.name LIKE 'trips-%'`); n != 2 {
		t.Errorf("%d work items for the two Namespaces, want 2", n)
	}
}
