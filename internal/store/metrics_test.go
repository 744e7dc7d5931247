package store_test

import (
	"context"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// backlogWorld writes Namespaces, Agents, revisions and work rows as the application role.
type backlogWorld struct {
	t       *testing.T
	app     *pgxpool.Pool
	fx      *fixture.Factory
	ns      string
	pending int64
}

func newBacklogWorld(t *testing.T, app *pgxpool.Pool) *backlogWorld {
	fx := fixture.New(t, app)
	return &backlogWorld{t: t, app: app, fx: fx, ns: fx.Namespace().ID}
}

func (w *backlogWorld) exec(sql string, args ...any) {
	w.t.Helper()
	if _, err := w.app.Exec(context.Background(), sql, args...); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
}

// agent creates an Agent and n revisions; it returns the Agent id and the revision ids.
func (w *backlogWorld) agent(revisions int) (string, []string) {
	w.t.Helper()
	a := w.fx.Agent(store.AgentRow{NamespaceID: w.ns})
	var revs []string
	for range revisions {
		revs = append(revs, w.fx.Revision(a, nil).ID)
	}
	return a.ID, revs
}

func (w *backlogWorld) set(agent, desired, status string, active *string) {
	w.t.Helper()
	w.exec(`UPDATE occ.agents SET desired_runtime_state = $2, status = $3, active_revision_id = $4 WHERE id = $1`,
		agent, desired, status, active)
}

// work inserts one work row in state; reason is the terminal reason code; age backdates created_at.
func (w *backlogWorld) work(key string, agent, rev, agentTarget, nsTarget *string, state, reason string, age time.Duration) {
	w.t.Helper()
	var reasonArg *string
	if reason != "" {
		reasonArg = &reason
	}
	w.exec(`
INSERT INTO occ.controller_work (idempotency_key, namespace_id, agent_id, revision_id, actor_id, namespace_target,
  agent_target, state, claim_token, lease_expires_at, completed_at, reason_code, created_at)
VALUES ($1, $2, $3, $4, 'prn_metrics', $5, $6, $7::text,
  CASE WHEN $7::text = 'claimed' THEN gen_random_uuid() END,
  CASE WHEN $7::text = 'claimed' THEN clock_timestamp() + interval '1 minute' END,
  CASE WHEN $7::text IN ('succeeded', 'failed_permanent') THEN clock_timestamp() END,
  $8, clock_timestamp() - make_interval(secs => $9))`,
		key, w.ns, agent, rev, nsTarget, agentTarget, state, reasonArg, age.Seconds())
	if state == "queued" || state == "claimed" {
		w.pending++
	}
}

func (w *backlogWorld) deploy(agent, rev, state, reason string) {
	w.work(platform.RevisionWorkKey(rev), &agent, &rev, nil, nil, state, reason, 0)
}

func (w *backlogWorld) stop(agent, target, state, reason string, age time.Duration) {
	key := platform.AgentDeleteWorkKey(agent)
	if target == platform.AgentTargetStopped {
		key = platform.AgentStopWorkKey(agent, id("op"))
	}
	w.work(key, &agent, nil, &target, nil, state, reason, age)
}

func backlogPtr(s string) *string { return &s }

func TestWorkBacklogEmpty(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	b, err := store.WorkBacklog(context.Background(), db.App(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"draft": 0, "deploying": 0, "running": 0, "stopping": 0, "stopped": 0, "failed": 0}
	if b.Pending != 0 || b.OldestPendingAgeSeconds != 0 || !maps.Equal(b.Agents, want) {
		t.Fatalf("%+v", b)
	}
}

func TestWorkBacklogLifecycleStates(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	w := newBacklogWorld(t, db.App(t))
	want := map[string]int64{}
	expect := func(state string) { want[state]++ }

	// Namespace ensure, pending for an hour: the oldest pending work.
	w.work("namespace:"+w.ns+":reconcile:ready", nil, nil, nil, backlogPtr("ready"), "queued", "", time.Hour)

	w.agent(0) // never deployed
	expect("draft")

	a, r := w.agent(1) // first deployment queued
	w.set(a, "running", "active", nil)
	w.deploy(a, r[0], "queued", "")
	expect("deploying")

	a, _ = w.agent(1) // deployment admitted, work not written yet (provisioning)
	w.set(a, "running", "active", nil)
	expect("deploying")

	a, r = w.agent(1) // active
	w.set(a, "running", "active", &r[0])
	w.deploy(a, r[0], "succeeded", "REVISION_ACTIVATED")
	expect("running")

	a, r = w.agent(2) // replacement in progress
	w.set(a, "running", "active", &r[0])
	w.deploy(a, r[0], "succeeded", "REVISION_ACTIVATED")
	w.deploy(a, r[1], "claimed", "")
	expect("deploying")

	a, r = w.agent(2) // replacement failed: no rollback, counted as failed
	w.set(a, "running", "active", &r[0])
	w.deploy(a, r[0], "succeeded", "REVISION_ALREADY_ACTIVE")
	w.deploy(a, r[1], "failed_permanent", "AUTHORIZATION_DENIED")
	expect("failed")

	a, r = w.agent(1) // first deployment failed
	w.set(a, "running", "active", nil)
	w.deploy(a, r[0], "failed_permanent", "CONVERGENCE_DEADLINE_EXCEEDED")
	expect("failed")

	a, r = w.agent(1) // completed without activation
	w.set(a, "running", "active", nil)
	w.deploy(a, r[0], "succeeded", "REVISION_STOPPED")
	expect("failed")

	a, r = w.agent(1) // stop queued
	w.set(a, "stopped", "active", &r[0])
	w.deploy(a, r[0], "succeeded", "REVISION_ACTIVATED")
	w.stop(a, "stopped", "queued", "", 0)
	expect("stopping")

	a, r = w.agent(1) // stopped; an older stop failed, the latest succeeded
	w.set(a, "stopped", "active", nil)
	w.deploy(a, r[0], "succeeded", "REVISION_ACTIVATED")
	w.stop(a, "stopped", "failed_permanent", "STOP_FAILED", time.Minute)
	w.stop(a, "stopped", "succeeded", "AGENT_STOPPED", 0)
	expect("stopped")

	a, r = w.agent(1) // the latest stop failed
	w.set(a, "stopped", "active", &r[0])
	w.deploy(a, r[0], "succeeded", "REVISION_ACTIVATED")
	w.stop(a, "stopped", "failed_permanent", "STOP_FAILED", 0)
	expect("failed")

	a, _ = w.agent(1) // deleting, delete work running
	w.set(a, "stopped", "deleting", nil)
	w.stop(a, "deleted", "claimed", "", 0)
	expect("stopping")

	a, _ = w.agent(0) // deleting, delete work failed
	w.set(a, "stopped", "deleting", nil)
	w.stop(a, "deleted", "failed_permanent", "AGENT_DELETE_FAILED", 0)
	expect("failed")

	for _, s := range store.AgentLifecycleStates() {
		want[s] += 0
	}
	b, err := store.WorkBacklog(context.Background(), db.App(t))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(b.Agents, want) {
		t.Errorf("agents %v, want %v", b.Agents, want)
	}
	if recounted, err := store.RecountAgentStates(context.Background(), db.App(t)); err != nil || !maps.Equal(recounted, want) {
		t.Errorf("recount %v (%v), want %v", recounted, err, want)
	}
	checkFolded(t, context.Background(), db.App(t), db.Owner(t))
	if b.Pending != w.pending {
		t.Errorf("pending %d, want %d", b.Pending, w.pending)
	}
	if b.OldestPendingAgeSeconds < 3600 || b.OldestPendingAgeSeconds > 3600+600 {
		t.Errorf("oldest pending age %v", b.OldestPendingAgeSeconds)
	}
}

// backlogTracer counts the statements sent on a connection.
type backlogTracer struct{ n atomic.Int64 }

func (c *backlogTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *backlogTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func TestWorkPendingAndAgentStatesAreOneReadOnlyStatementEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	cc, err := pgx.ParseConfig(db.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	tracer := &backlogTracer{}
	cc.Tracer = tracer
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	before := tracer.n.Load()
	if _, _, err := store.WorkPending(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if n := tracer.n.Load() - before; n != 1 {
		t.Fatalf("WorkPending sent %d statements, want 1", n)
	}
	before = tracer.n.Load()
	if _, err := store.AgentStates(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if n := tracer.n.Load() - before; n != 1 {
		t.Fatalf("AgentStates sent %d statements, want 1", n)
	}
}
