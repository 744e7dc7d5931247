// Command scalecheck seeds one Installation at scale (10 000 Namespaces, 100 000 Agents, 200 000
// access bindings, 1 000 000 terminal work rows with their evidence) and measures the hot paths
// through OCC's own packages: IAM decisions, list queries, the worker's claim, complete and
// recovery statements, the backlog metric and the evidence lookup. Every hot statement is
// captured with auto_explain (ANALYZE, BUFFERS) as the application role runs it; the command
// fails, naming the operation, if a plan scans a large table sequentially.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/bench/internal/figures"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/metrics"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

const (
	database  = "occ_scale"
	ownerRole = "occ_scale_owner"
	appRole   = "occ_app"
	password  = "occ-scale"
)

// largeTables may never be read by a Seq Scan in a hot plan.
var largeTables = []string{"controller_work", "audit_events", "agents", "agent_revisions",
	"iam_access_bindings", "iam_identities", "namespaces", "agent_lifecycle"}

type config struct {
	databaseURL string
	iterations  int
	namespaces  int
	agentsPerNS int
	bindings    int
	terminal    int
	plansOut    string
	keep        bool
	jsonOut     string // -json: figures for cmd/benchall
}

func main() {
	var c config
	flag.StringVar(&c.databaseURL, "database-url", "", "superuser URL of an existing server (default: a private server)")
	flag.IntVar(&c.iterations, "n", 300, "measured iterations per operation")
	flag.IntVar(&c.namespaces, "namespaces", 10000, "Namespaces")
	flag.IntVar(&c.agentsPerNS, "agents-per-namespace", 10, "Agents per Namespace")
	flag.IntVar(&c.bindings, "bindings", 200000, "access bindings in total")
	flag.IntVar(&c.terminal, "terminal-work", 1000000, "terminal controller_work rows (each with one evidence row)")
	flag.StringVar(&c.plansOut, "plans", "", "write every captured plan in full to this file")
	flag.BoolVar(&c.keep, "keep", false, "keep database occ_scale (with -database-url only)")
	flag.StringVar(&c.jsonOut, "json", "", "also write the figures as JSON to this file (for cmd/benchall)")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	failures, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalecheck:", err)
		os.Exit(1)
	}
	if len(failures) > 0 {
		fmt.Fprintln(os.Stderr, "\nscalecheck: FAIL: sequential scan of a large table in:")
		for _, f := range failures {
			fmt.Fprintln(os.Stderr, "  -", f)
		}
		os.Exit(2)
	}
	fmt.Println("\nscalecheck: OK: no hot plan scans a large table sequentially")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func withUser(raw, role, database string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	if role != "" {
		u.User = url.UserPassword(role, password)
	}
	u.Path = "/" + database
	return u.String()
}

func run(ctx context.Context, c config) ([]string, error) {
	adminURL := c.databaseURL
	if adminURL == "" {
		logf("starting a private PostgreSQL server")
		u, stop, err := pgtest.StartServer(ctx, pgtest.ServerOptions{})
		if err != nil {
			return nil, err
		}
		defer stop()
		adminURL, c.keep = u, true
	}
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	var version string
	_ = admin.QueryRow(ctx, `SELECT current_setting('server_version') || ', shared_buffers=' || current_setting('shared_buffers')
  || ', fsync=' || current_setting('fsync') || ', work_mem=' || current_setting('work_mem')`).Scan(&version)
	logf("server: PostgreSQL %s", version)
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN CREATEDB PASSWORD '%s'`, ownerRole, password),
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, appRole, password),
		`DROP DATABASE IF EXISTS ` + database + ` WITH (FORCE)`,
		`CREATE DATABASE ` + database + ` OWNER ` + ownerRole,
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil && !store.AlreadyExists(err) {
			return nil, err
		}
	}
	if !c.keep {
		defer func() {
			_, _ = admin.Exec(context.WithoutCancel(ctx), `DROP DATABASE IF EXISTS `+database+` WITH (FORCE)`)
		}()
	}

	owner, err := pgx.Connect(ctx, withUser(adminURL, ownerRole, database))
	if err != nil {
		return nil, err
	}
	defer owner.Close(context.WithoutCancel(ctx))
	start := time.Now()
	if _, err := store.Migrate(ctx, owner, appRole, nil); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var applied []string
	rows, _ := owner.Query(ctx, `SELECT name FROM occ.schema_migrations ORDER BY version`)
	applied, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	logf("migrated (%s) in %.1fs", strings.Join(applied, ", "), time.Since(start).Seconds())
	start = time.Now()
	if err := seed(ctx, owner, c); err != nil {
		return nil, err
	}
	logf("seeded in %.1fs", time.Since(start).Seconds())
	var sizes string
	_ = owner.QueryRow(ctx, `SELECT format('namespaces=%s agents=%s agent_revisions=%s iam_identities=%s iam_access_bindings=%s controller_work=%s (queued %s) audit_events=%s',
  (SELECT count(*) FROM occ.namespaces), (SELECT count(*) FROM occ.agents), (SELECT count(*) FROM occ.agent_revisions),
  (SELECT count(*) FROM occ.iam_identities), (SELECT count(*) FROM occ.iam_access_bindings),
  (SELECT count(*) FROM occ.controller_work), (SELECT count(*) FROM occ.controller_work WHERE state = 'queued'),
  (SELECT count(*) FROM occ.audit_events))`).Scan(&sizes)
	logf("rows: %s", sizes)

	fx, err := loadFixture(ctx, owner)
	if err != nil {
		return nil, err
	}

	app, err := pgxpool.New(ctx, withUser(adminURL, appRole, database))
	if err != nil {
		return nil, err
	}
	defer app.Close()
	// The explain pool: one superuser connection that loads auto_explain, then becomes the
	// application role, so the plans are the ones the application gets (prepared statements
	// included: each operation runs 8 times, past PostgreSQL's switch to a generic plan).
	ecfg, err := pgxpool.ParseConfig(withUser(adminURL, "", database))
	if err != nil {
		return nil, err
	}
	ecfg.MaxConns = 1
	plans := &planSink{}
	ecfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { plans.add(n.Message) }
	ecfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on;
SET auto_explain.log_timing = on; SET auto_explain.log_nested_statements = off; SET auto_explain.log_level = notice;
SET client_min_messages = notice; SET ROLE `+appRole)
		return err
	}
	explain, err := pgxpool.NewWithConfig(ctx, ecfg)
	if err != nil {
		return nil, err
	}
	defer explain.Close()

	var results []result
	var failures []string
	var planLog strings.Builder
	flushPlans := func() {
		if c.plansOut != "" {
			_ = os.WriteFile(c.plansOut, []byte(planLog.String()), 0o644)
		}
	}
	for _, op := range operations(fx) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Plans first (on the explain connection), then the timing on the app pool.
		plans.reset()
		var opErr error
		for i := range 8 {
			if opErr = op.run(ctx, explain, i); opErr != nil {
				break
			}
		}
		captured := plans.take()
		fmt.Fprintf(&planLog, "===== %s: %d plans\n", op.name, len(captured))
		seqs := map[string]bool{}
		var summary []string
		for _, p := range captured {
			fmt.Fprintf(&planLog, "%s\n\n", p)
			for _, t := range seqScans(p) {
				if !slices.Contains(op.allowSeq, t) {
					seqs[t] = true
				}
			}
		}
		if len(captured) > 0 {
			summary = planSummary(captured)
		}
		r := result{name: op.name, plan: summary}
		for t := range seqs {
			r.seq = append(r.seq, t)
		}
		sort.Strings(r.seq)
		if len(r.seq) > 0 {
			failures = append(failures, fmt.Sprintf("%s: Seq Scan on %s", op.name, strings.Join(r.seq, ", ")))
		}
		flushPlans()
		timing := app
		if op.metrics {
			mp, err := metrics.NewPool(withUser(adminURL, appRole, database))
			if err != nil {
				return nil, err
			}
			defer mp.Close()
			timing = mp
		}
		for i := range 5 {
			if opErr != nil {
				break
			}
			opErr = op.run(ctx, timing, i)
		}
		n := c.iterations
		if op.iterations > 0 {
			n = min(n, op.iterations)
		}
		for i := range n {
			if opErr != nil {
				break
			}
			t0 := time.Now()
			opErr = op.run(ctx, timing, i)
			r.samples = append(r.samples, time.Since(t0))
		}
		if opErr != nil {
			r.err = opErr.Error()
			failures = append(failures, fmt.Sprintf("%s: error: %v", op.name, opErr))
		}
		results = append(results, r)
		logf("measured %s: median %s", op.name, fmtDur(percentile(r.samples, 0.5)))
	}
	flushPlans()
	printReport(results)
	return failures, writeFigures(c, results, failures)
}

// --- fixture -----------------------------------------------------------------------------------

type fixture struct {
	heavy, light     string // human principals with many and with few bindings
	heavyTargets     []target
	lightTarget      target
	agentPrincipals  []target // an Agent's own principal and its Agent
	namespaces       []string
	middleName       string
	terminalKeys     []string
	reasonCodes      []string
	workKeysWithCode []string
}

type target struct {
	principal, namespace, agent string
}

func loadFixture(ctx context.Context, db *pgx.Conn) (fixture, error) {
	var f fixture
	if err := db.QueryRow(ctx, `SELECT (SELECT id FROM s_prn WHERE h = 1), (SELECT id FROM s_prn WHERE h = 2),
  (SELECT name FROM occ.namespaces ORDER BY name OFFSET (SELECT count(*) / 2 FROM occ.namespaces) LIMIT 1)`).Scan(&f.heavy, &f.light, &f.middleName); err != nil {
		return f, err
	}
	collect := func(sql string, args ...any) ([]target, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (target, error) {
			var t target
			return t, r.Scan(&t.principal, &t.namespace, &t.agent)
		})
	}
	var err error
	// The heavy principal asks about random Agents: some it holds exactly, all through a Namespace.
	if f.heavyTargets, err = collect(`SELECT $1::text, namespace_id, id FROM occ.agents  ORDER BY random() LIMIT 500`, f.heavy); err != nil {
		return f, err
	}
	lt, err := collect(`SELECT $1::text, b.namespace_id, b.resource_id FROM occ.iam_access_bindings b
 WHERE b.identity_subject_id = $1 AND b.resource_kind = 'agent'`, f.light)
	if err != nil || len(lt) != 1 {
		return f, fmt.Errorf("light target: %v (%d)", err, len(lt))
	}
	f.lightTarget = lt[0]
	if f.agentPrincipals, err = collect(`SELECT service_principal_id, namespace_id, id FROM occ.agents  ORDER BY random() LIMIT 500`); err != nil {
		return f, err
	}
	rows, _ := db.Query(ctx, `SELECT id FROM occ.namespaces  ORDER BY random() LIMIT 500`)
	if f.namespaces, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return f, err
	}
	rows, _ = db.Query(ctx, `SELECT idempotency_key FROM occ.controller_work TABLESAMPLE SYSTEM (1)
 WHERE state IN ('succeeded', 'failed_permanent') LIMIT 500`)
	if f.terminalKeys, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return f, err
	}
	if len(f.heavyTargets) == 0 || len(f.agentPrincipals) == 0 || len(f.namespaces) == 0 || len(f.terminalKeys) == 0 {
		return f, errors.New("fixture: empty sample")
	}
	return f, nil
}

// --- operations ----------------------------------------------------------------------------------

type operation struct {
	name       string
	iterations int      // cap on measured iterations (0: -n)
	allowSeq   []string // large tables this operation reads in full by design
	// metrics: timed on the worker's metrics pool (metrics.NewPool: one connection, 1.5 s
	// statement timeout, read-only, its session settings), as the worker's /metrics runs it.
	metrics bool
	run     func(ctx context.Context, db *pgxpool.Pool, i int) error
}

func operations(f fixture) []operation {
	authz := func(t target, action string) func(ctx context.Context, db *pgxpool.Pool) error {
		return func(ctx context.Context, db *pgxpool.Pool) error {
			ns := t.namespace
			_, err := iam.NewNative("native", iam.StoreSource{DB: db}).Authorize(ctx, iam.Request{
				PrincipalID: t.principal, Action: action,
				Resource: iam.Resource{Kind: "agent", ID: t.agent, NamespaceID: &ns}})
			return err
		}
	}
	var qmu sync.Mutex
	claimComplete := func(limit int) func(ctx context.Context, db *pgxpool.Pool, i int) error {
		return func(ctx context.Context, db *pgxpool.Pool, i int) error {
			qmu.Lock()
			defer qmu.Unlock()
			q := queue.New(db, queue.Options{})
			claims, err := q.Claim(ctx, limit)
			if err != nil {
				return err
			}
			if len(claims) == 0 {
				return errors.New("queue ran dry")
			}
			for _, c := range claims {
				if _, err := q.Complete(ctx, db, c, "", nil); err != nil {
					return err
				}
			}
			return nil
		}
	}
	pick := func(s []target, i int) target { return s[(i*7919+rand.IntN(3))%len(s)] }
	return []operation{
		{name: "Authorize heavy (30 000 bindings)", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			return authz(pick(f.heavyTargets, i), "read")(ctx, db)
		}},
		{name: "Authorize light (2 bindings)", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			return authz(f.lightTarget, "read")(ctx, db)
		}},
		{name: "Authorize Agent principal", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			return authz(pick(f.agentPrincipals, i), "read")(ctx, db)
		}},
		{name: "ListNamespaces first page (50)", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			_, err := store.ListNamespaces(ctx, db, "", 50)
			return err
		}},
		{name: "ListNamespaces middle page (50)", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			_, err := store.ListNamespaces(ctx, db, f.middleName, 50)
			return err
		}},
		{name: "ListAgents of a Namespace (50)", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			_, err := store.ListAgents(ctx, db, f.namespaces[i%len(f.namespaces)], nil, 50)
			return err
		}},
		{name: "Claim(1) + Complete", run: claimComplete(1)},
		{name: "Claim(16) + 16 x Complete", iterations: 150, run: claimComplete(16)},
		{name: "RecoverStale", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			_, err := queue.New(db, queue.Options{}).RecoverStale(ctx)
			return err
		}},
		{name: "LatestWorkAttempt", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			_, err := store.LatestWorkAttempt(ctx, db, f.terminalKeys[i%len(f.terminalKeys)], nil)
			return err
		}},
		{name: "WorkPending (metrics pool, every scrape)", metrics: true,
			run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
				_, _, err := store.WorkPending(ctx, db)
				return err
			}},
		{name: "AgentStates (metrics pool, every scrape)", metrics: true,
			run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
				_, err := store.AgentStates(ctx, db)
				return err
			}},
		{name: "FoldAgentLifecycle (worker, every second)", run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
			_, err := store.FoldAgentLifecycle(ctx, db)
			return err
		}},
		{name: "RecountAgentStates (what a scrape cost before decision 41)", iterations: 10,
			// The recount derives every Agent's state: it reads all of occ.agents by design.
			allowSeq: []string{"agents"},
			run: func(ctx context.Context, db *pgxpool.Pool, i int) error {
				_, err := store.RecountAgentStates(ctx, db)
				return err
			}},
	}
}

// --- plans ---------------------------------------------------------------------------------------

type planSink struct {
	mu    sync.Mutex
	plans []string
}

func (s *planSink) add(msg string) {
	if !strings.Contains(msg, "plan:") {
		return
	}
	s.mu.Lock()
	s.plans = append(s.plans, msg)
	s.mu.Unlock()
}
func (s *planSink) reset() { s.mu.Lock(); s.plans = nil; s.mu.Unlock() }
func (s *planSink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.plans
	s.plans = nil
	return p
}

var (
	seqRe   = regexp.MustCompile(`Seq Scan on (\w+)`)
	scanRe  = regexp.MustCompile(`(Index Only Scan|Index Scan Backward|Index Scan|Bitmap Index Scan|Seq Scan)(?: using (\w+))? on (\w+)|Bitmap Index Scan on (\w+)`)
	bufRe   = regexp.MustCompile(`Buffers: shared (hit=\d+)?\s*(read=\d+)?`)
	durRe   = regexp.MustCompile(`duration: ([0-9.]+) ms`)
	queryRe = regexp.MustCompile(`Query Text:\s*(.*)`)
)

func seqScans(plan string) []string {
	var out []string
	for _, m := range seqRe.FindAllStringSubmatch(plan, -1) {
		if slices.Contains(largeTables, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// planSummary: per distinct statement of the last execution round, its duration, its top-level
// buffers and the access paths it used.
func planSummary(plans []string) []string {
	var out []string
	seen := map[string]bool{}
	for i := len(plans) - 1; i >= 0; i-- {
		p := plans[i]
		q := ""
		if m := queryRe.FindStringSubmatch(p); m != nil {
			q = strings.Join(strings.Fields(m[1]), " ")
		}
		// identify the statement by its text head
		key := q
		if len(key) > 60 {
			key = key[:60]
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		dur, buf := "", ""
		if m := durRe.FindStringSubmatch(p); m != nil {
			dur = m[1] + " ms"
		}
		if m := bufRe.FindStringSubmatch(p); m != nil {
			buf = strings.TrimSpace(m[1] + " " + m[2])
		}
		paths := map[string]bool{}
		for _, m := range scanRe.FindAllStringSubmatch(p, -1) {
			switch {
			case m[4] != "":
				paths["BitmapIdx "+m[4]] = true
			case m[1] == "Seq Scan":
				paths["SEQ "+m[3]] = true
			case m[2] == "":
				paths[strings.ReplaceAll(m[1], " Scan", "")+" "+m[3]] = true
			default:
				paths[strings.ReplaceAll(m[1], " Scan", "")+" "+m[2]] = true
			}
		}
		var ps []string
		for k := range paths {
			ps = append(ps, k)
		}
		sort.Strings(ps)
		head := q
		if len(head) > 70 {
			head = head[:70] + "…"
		}
		out = append(out, fmt.Sprintf("%-9s %-22s %s\n        [%s]", dur, buf, head, strings.Join(ps, ", ")))
	}
	slices.Reverse(out)
	return out
}

// --- report --------------------------------------------------------------------------------------

type result struct {
	name    string
	samples []time.Duration
	plan    []string
	seq     []string
	err     string
}

func percentile(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c[min(len(c)-1, int(p*float64(len(c))))]
}

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// writeFigures writes each operation's median and p99, and the plan check, for cmd/benchall (-json).
func writeFigures(c config, results []result, failures []string) error {
	size := fmt.Sprintf("%d Namespaces", c.namespaces)
	rep := figures.Report{Tool: "scalecheck", Notes: []string{fmt.Sprintf(
		"namespaces=%d agents=%d bindings=%d terminal-work=%d n=%d", c.namespaces, c.namespaces*c.agentsPerNS, c.bindings, c.terminal, c.iterations)}}
	for _, r := range results {
		if len(r.samples) == 0 {
			continue
		}
		rep.Add("scalecheck "+r.name+" median ("+size+")", figures.Ms(percentile(r.samples, 0.5)), "ms")
		rep.Add("scalecheck "+r.name+" p99 ("+size+")", figures.Ms(percentile(r.samples, 0.99)), "ms")
	}
	rep.Add("scalecheck plans scanning a large table sequentially, or failed ("+size+")", float64(len(failures)), "operations")
	return rep.Write(c.jsonOut)
}

func printReport(results []result) {
	fmt.Printf("\n%-36s %6s %10s %10s %10s  %s\n", "operation", "n", "median", "p99", "max", "seq scan of a large table")
	for _, r := range results {
		seq := "none"
		if len(r.seq) > 0 {
			seq = "FAIL: " + strings.Join(r.seq, ", ")
		}
		if r.err != "" {
			seq += " ERROR: " + r.err
		}
		if len(r.samples) == 0 {
			r.samples = []time.Duration{0}
		}
		fmt.Printf("%-36s %6d %10s %10s %10s  %s\n", r.name, len(r.samples), fmtDur(percentile(r.samples, 0.5)),
			fmtDur(percentile(r.samples, 0.99)), fmtDur(slices.Max(r.samples)), seq)
	}
	fmt.Println("\nPlans (auto_explain, ANALYZE + BUFFERS, last execution of each statement as the application role):")
	for _, r := range results {
		fmt.Printf("\n%s\n", r.name)
		for _, p := range r.plan {
			fmt.Printf("  %s\n", p)
		}
	}
}
