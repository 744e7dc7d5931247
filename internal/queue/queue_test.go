package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func ptr[T any](v T) *T { return &v }

func zero() float64 { return 0 }

type env struct {
	t     *testing.T
	app   *pgxpool.Pool
	owner *pgxpool.Pool
	q     *queue.Queue
	actor string
}

func newEnv(t *testing.T, o queue.Options) *env {
	t.Helper()
	db := pgtest.New(t)
	app := db.App(t)
	if o.Jitter == nil {
		o.Jitter = zero
	}
	return &env{t: t, app: app, owner: db.Owner(t), q: queue.New(app, o), actor: "prn_" + uuid.NewString()}
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.app.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) namespace(status string) string {
	e.t.Helper()
	return fixture.New(e.t, e.app).NamespaceIn(status).ID
}

// agent creates an Agent (with its principal and Configuration) and one revision in ns.
func (e *env) agent(ns string) (agent, rev string) {
	e.t.Helper()
	fx := fixture.New(e.t, e.app)
	a := fx.Agent(store.AgentRow{NamespaceID: ns})
	return a.ID, fx.Revision(a, nil).ID
}

func (e *env) enqueueNamespace(ns, target string) queue.Work {
	e.t.Helper()
	w, err := queue.Enqueue(context.Background(), e.app, queue.EnqueueWork{
		Key: platform.NamespaceWorkKey(ns, target), NamespaceID: ns, ActorID: e.actor, NamespaceTarget: &target})
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func (e *env) enqueueRevision(ns, agent, rev string) queue.Work {
	e.t.Helper()
	w, err := queue.Enqueue(context.Background(), e.app, queue.EnqueueWork{
		Key: platform.RevisionWorkKey(rev), NamespaceID: ns, ActorID: e.actor, AgentID: &agent, RevisionID: &rev})
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func (e *env) claimOne() queue.Claim {
	e.t.Helper()
	claims, err := e.q.Claim(context.Background(), 1)
	if err != nil || len(claims) != 1 {
		e.t.Fatalf("claim: %v %v", claims, err)
	}
	return claims[0]
}

// expire moves a claim's lease into the past (as the owner: the application role may do the
// same through its column grant, but this is test scaffolding, not application behaviour).
func (e *env) expire(key string) {
	e.t.Helper()
	if _, err := e.owner.Exec(context.Background(), `UPDATE occ.controller_work SET lease_expires_at = clock_timestamp() - interval '1 second'
	   WHERE idempotency_key = $1`, key); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) makeAvailable(key string) {
	e.t.Helper()
	e.exec(`UPDATE occ.controller_work SET available_at = clock_timestamp() WHERE idempotency_key = $1`, key)
}

type evidence struct {
	code, outcome string
	attempt       int
	final         bool
	actor         string
}

func (e *env) evidence(key string) []evidence {
	e.t.Helper()
	rows, err := e.app.Query(context.Background(), `SELECT details->>'reasonCode', outcome, (details->>'attemptCount')::int,
	  coalesce((details->>'final')::boolean, false), actor_id FROM occ.audit_events
	  WHERE action = 'reconcile' AND details->>'workId' = $1 ORDER BY occurred_at, id`, key)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (evidence, error) {
		var v evidence
		err := r.Scan(&v.code, &v.outcome, &v.attempt, &v.final, &v.actor)
		return v, err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) work(key string) queue.Work {
	e.t.Helper()
	w, err := e.q.Find(context.Background(), key)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func TestEnqueueDistinctTargetsAndDeduplication(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{})
	ns := e.namespace("provisioning")
	ready := e.enqueueNamespace(ns, "ready")
	deleted := e.enqueueNamespace(ns, "deleted")
	if ready.Key == deleted.Key {
		t.Fatal("ready and deleted targets share a row")
	}
	again := e.enqueueNamespace(ns, "ready")
	if again.Key != ready.Key || !again.CreatedAt.Equal(ready.CreatedAt) {
		t.Fatalf("re-enqueue returned another row: %+v", again)
	}

	target := "ready"
	_, err := queue.Enqueue(ctx, e.app, queue.EnqueueWork{Key: ready.Key, NamespaceID: ns, ActorID: "prn_someone-else", NamespaceTarget: &target})
	if !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("different actor: %v", err)
	}
	other := e.namespace("provisioning")
	_, err = queue.Enqueue(ctx, e.app, queue.EnqueueWork{Key: ready.Key, NamespaceID: other, ActorID: e.actor, NamespaceTarget: &target})
	if !errors.Is(err, queue.ErrConflict) {
		t.Fatalf("different owner: %v", err)
	}

	// A finished row is a receipt: enqueue returns it and it does not run again.
	c := e.claimOne()
	if _, err := e.q.Complete(ctx, e.app, c, "NAMESPACE_RECONCILED", nil); err != nil {
		t.Fatal(err)
	}
	receipt, err := queue.Enqueue(ctx, e.app, queue.EnqueueWork{Key: c.Work.Key, NamespaceID: ns, ActorID: e.actor, NamespaceTarget: c.Work.NamespaceTarget})
	if err != nil || receipt.State != queue.StateSucceeded {
		t.Fatalf("receipt: %+v %v", receipt, err)
	}

	for _, bad := range []queue.EnqueueWork{
		{Key: "", NamespaceID: ns, ActorID: e.actor, NamespaceTarget: &target},
		{Key: "x", NamespaceID: ns, ActorID: e.actor},
		{Key: "agent_revision:rev_x:repository_cleanup:abc", NamespaceID: ns, ActorID: e.actor, NamespaceTarget: &target},
		{Key: "x", NamespaceID: ns, ActorID: e.actor, RevisionID: ptr("rev_x")},
		{Key: "x", NamespaceID: ns, ActorID: e.actor, AgentID: ptr("agt_x")},
	} {
		if _, err := queue.Enqueue(ctx, e.app, bad); !errors.Is(err, queue.ErrInvalidWork) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// claimAll claims whatever else is claimable so it does not interfere.
func (e *env) claimAll() []queue.Claim {
	e.t.Helper()
	claims, err := e.q.Claim(context.Background(), 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return claims
}

func TestClaimFencesCompletionAndWritesEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{LeaseDuration: time.Minute})
	ns := e.namespace("provisioning")
	w := e.enqueueNamespace(ns, "ready")
	c := e.claimOne()
	if c.Work.Key != w.Key || c.Attempt() != 1 || c.Work.State != queue.StateClaimed {
		t.Fatalf("claim %+v", c)
	}
	if len(e.claimAll()) != 0 {
		t.Fatal("claimed a row twice")
	}
	stale := c
	stale.Token = uuid.New()
	if _, err := e.q.Complete(ctx, e.app, stale, "", nil); !errors.Is(err, queue.ErrClaimLost) {
		t.Fatalf("complete with a foreign token: %v", err)
	}
	done, err := e.q.Complete(ctx, e.app, c, "", nil)
	if err != nil || done.State != queue.StateSucceeded || *done.ReasonCode != queue.CodeReconcileSucceeded || done.ClaimToken != nil {
		t.Fatalf("complete: %+v %v", done, err)
	}
	if _, err := e.q.Complete(ctx, e.app, c, "", nil); !errors.Is(err, queue.ErrClaimLost) {
		t.Fatalf("second complete: %v", err)
	}
	if ev := e.evidence(w.Key); len(ev) != 1 || ev[0].code != "RECONCILE_SUCCEEDED" || ev[0].outcome != "success" || ev[0].attempt != 1 || ev[0].actor != e.actor {
		t.Fatalf("evidence %+v", ev)
	}
}

func TestExpiredClaimCannotPublish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{})
	ns := e.namespace("provisioning")
	e.enqueueNamespace(ns, "ready")
	c := e.claimOne()
	e.expire(c.Work.Key)
	for name, op := range map[string]func() error{
		"complete": func() error { _, err := e.q.Complete(ctx, e.app, c, "", nil); return err },
		"defer": func() error {
			_, err := e.q.Defer(ctx, e.app, c, "NAMESPACE_INCOMPLETE", queue.DeferOptions{})
			return err
		},
		"retry": func() error { _, err := e.q.Retry(ctx, e.app, c, "DEPENDENCY_UNAVAILABLE"); return err },
		"fail":  func() error { _, err := e.q.Fail(ctx, e.app, c, "INVALID_TARGET", nil); return err },
		"renew": func() error { _, err := e.q.RenewOne(ctx, e.app, c); return err },
	} {
		if err := op(); !errors.Is(err, queue.ErrClaimLost) {
			t.Errorf("%s after expiry: %v", name, err)
		}
	}
	if ev := e.evidence(c.Work.Key); len(ev) != 0 {
		t.Fatalf("evidence written by a lost claim: %+v", ev)
	}
}

func TestTransactionalFencing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{})
	ns := e.namespace("provisioning")
	e.enqueueNamespace(ns, "ready")
	c := e.claimOne()
	// The Namespace mutation, the completion and its evidence roll back together.
	err := pgx.BeginFunc(ctx, e.app, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE occ.namespaces SET status = 'ready' WHERE id = $1`, ns); err != nil {
			return err
		}
		if _, err := e.q.Complete(ctx, tx, c, "NAMESPACE_RECONCILED", nil); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatal(err)
	}
	var status string
	_ = e.app.QueryRow(ctx, `SELECT status FROM occ.namespaces WHERE id = $1`, ns).Scan(&status)
	if status != "provisioning" || e.work(c.Work.Key).State != queue.StateClaimed || len(e.evidence(c.Work.Key)) != 0 {
		t.Fatalf("rollback leaked: status %s, work %s", status, e.work(c.Work.Key).State)
	}
}

func TestDeferRefundsAttemptAndDeduplicatesEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{MaxAttempts: 2})
	ns := e.namespace("provisioning")
	w := e.enqueueNamespace(ns, "ready")
	for range 5 {
		c := e.claimOne()
		if c.Attempt() != 1 {
			t.Fatalf("attempt %d after defers", c.Attempt())
		}
		d, err := e.q.Defer(ctx, e.app, c, "NAMESPACE_INCOMPLETE", queue.DeferOptions{})
		if err != nil || d.AttemptCount != 0 || d.State != queue.StateQueued {
			t.Fatalf("defer: %+v %v", d, err)
		}
		e.makeAvailable(w.Key)
	}
	if ev := e.evidence(w.Key); len(ev) != 1 || ev[0].code != "NAMESPACE_INCOMPLETE" || ev[0].outcome != "success" {
		t.Fatalf("repeated defers wrote %+v", ev)
	}
	c := e.claimOne()
	if _, err := e.q.Defer(ctx, e.app, c, "NAMESPACE_INCOMPLETE", queue.DeferOptions{RepeatEvidence: true}); err != nil {
		t.Fatal(err)
	}
	if ev := e.evidence(w.Key); len(ev) != 2 {
		t.Fatalf("repeat evidence: %+v", ev)
	}
	delay := 10 * time.Minute
	e.makeAvailable(w.Key)
	c = e.claimOne()
	d, err := e.q.Defer(ctx, e.app, c, "OTHER_WAIT", queue.DeferOptions{Delay: &delay, SkipEvidence: true})
	if err != nil || time.Until(d.AvailableAt) < 9*time.Minute {
		t.Fatalf("explicit delay: %v %v", d.AvailableAt, err)
	}
	if ev := e.evidence(w.Key); len(ev) != 2 {
		t.Fatalf("skipped evidence written: %+v", ev)
	}
}

func TestRetryExhaustsIntoFailedPermanent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{MaxAttempts: 1})
	ns := e.namespace("provisioning")
	w := e.enqueueNamespace(ns, "ready")
	c := e.claimOne()
	r, err := e.q.Retry(ctx, e.app, c, "dependency unavailable!")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != queue.StateFailedPermanent || *r.ReasonCode != "DEPENDENCY_UNAVAILABLE_" {
		t.Fatalf("retry at the limit: %+v", r)
	}
	// The ready-target Namespace work failed: a still-provisioning Namespace fails with it.
	var status string
	_ = e.app.QueryRow(ctx, `SELECT status FROM occ.namespaces WHERE id = $1`, ns).Scan(&status)
	if status != "failed" {
		t.Fatalf("namespace %s", status)
	}
	if ev := e.evidence(w.Key); len(ev) != 1 || !ev[0].final || ev[0].outcome != "failure" {
		t.Fatalf("evidence %+v", ev)
	}
}

func TestRetryBacksOffWithFullJitter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{MaxAttempts: 5, Jitter: func() float64 { return 0.5 }})
	ns := e.namespace("provisioning")
	w := e.enqueueNamespace(ns, "ready")
	for attempt := 1; attempt <= 3; attempt++ {
		c := e.claimOne()
		before := time.Now()
		r, err := e.q.Retry(ctx, e.app, c, "DEPENDENCY_UNAVAILABLE")
		if err != nil || r.State != queue.StateQueued || r.AttemptCount != attempt {
			t.Fatalf("retry %d: %+v %v", attempt, r, err)
		}
		want := queue.Backoff(attempt, 0.5)
		if got := r.AvailableAt.Sub(before); got < want-time.Second || got > want+time.Second {
			t.Fatalf("attempt %d: delay %v, want about %v", attempt, got, want)
		}
		e.makeAvailable(w.Key)
	}
	if queue.Backoff(40, 1) != queue.MaxBackoff || queue.Backoff(1, 1) != time.Second || queue.Backoff(3, 0) != 0 {
		t.Fatal("backoff bounds")
	}
}

func TestResultDataShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{})
	ns := e.namespace("ready")
	agent, rev := e.agent(ns)
	e.enqueueRevision(ns, agent, rev)
	c := e.claimOne()
	if _, err := e.q.Complete(ctx, e.app, c, "REVISION_ACTIVATED", json.RawMessage(`{"warnings":[{"code":"BAD","pluginId":"p"}]}`)); !errors.Is(err, queue.ErrInvalidResult) {
		t.Fatalf("bad warnings: %v", err)
	}
	if _, err := e.q.Fail(ctx, e.app, c, "CONVERGENCE_DEADLINE_EXCEEDED", json.RawMessage(`{"timeoutMs":900000,"cause":{}}`)); !errors.Is(err, queue.ErrInvalidResult) {
		t.Fatalf("deadline with cause: %v", err)
	}
	done, err := e.q.Fail(ctx, e.app, c, "CONVERGENCE_DEADLINE_EXCEEDED", json.RawMessage(`{"timeoutMs":900000}`))
	if err != nil || string(done.ResultData) != `{"timeoutMs": 900000}` {
		t.Fatalf("deadline: %s %v", done.ResultData, err)
	}
}

func TestNamespaceWorkDoesNotBlockRevisionsAndLanesAreExclusive(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{})
	ns := e.namespace("ready")
	agentA, revA := e.agent(ns)
	agentB, revB := e.agent(ns)
	e.enqueueNamespace(ns, "deleted")
	e.enqueueRevision(ns, agentA, revA)
	e.enqueueRevision(ns, agentB, revB)
	stop := "stopped"
	if _, err := queue.Enqueue(context.Background(), e.app, queue.EnqueueWork{Key: "agent:" + agentA + ":reconcile:stopped:" + uuid.NewString(),
		NamespaceID: ns, ActorID: e.actor, AgentID: &agentA, AgentTarget: &stop}); err != nil {
		t.Fatal(err)
	}
	claims := e.claimAll()
	lanes := map[string]bool{}
	for _, c := range claims {
		lane := c.Work.NamespaceID
		if c.Work.AgentID != nil {
			lane = *c.Work.AgentID
		}
		if lanes[lane] {
			t.Fatalf("two claims in lane %s", lane)
		}
		lanes[lane] = true
	}
	if len(claims) != 3 || !lanes[ns] || !lanes[agentA] || !lanes[agentB] {
		t.Fatalf("claimed %d rows in lanes %v", len(claims), lanes)
	}
	waiting, err := e.q.ClaimableWorkWaiting(context.Background())
	if err != nil || waiting {
		t.Fatalf("the claimed lane's stop counts as waiting: %v %v", waiting, err)
	}
}

func TestConcurrentClaimersNeverShareALane(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{})
	ns := e.namespace("ready")
	const agents = 6
	for range agents {
		agent, rev := e.agent(ns)
		e.enqueueRevision(ns, agent, rev)
		stop := "stopped"
		if _, err := queue.Enqueue(ctx, e.app, queue.EnqueueWork{Key: "agent:" + agent + ":reconcile:stopped:" + uuid.NewString(),
			NamespaceID: ns, ActorID: e.actor, AgentID: &agent, AgentTarget: &stop}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	held := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := queue.New(e.app, queue.Options{Jitter: zero})
			for range 20 {
				claims, err := q.Claim(ctx, 2)
				if err != nil {
					errs <- err
					return
				}
				for _, c := range claims {
					mu.Lock()
					if other, ok := held[*c.Work.AgentID]; ok {
						errs <- errors.New("lane " + *c.Work.AgentID + " held by " + other + " and " + c.Work.Key)
					}
					held[*c.Work.AgentID] = c.Work.Key
					mu.Unlock()
				}
				// Lanes stay claimed in the database until completion; release them from the
				// test's view first, so a later claim of the lane is legitimate.
				for _, c := range claims {
					mu.Lock()
					delete(held, *c.Work.AgentID)
					mu.Unlock()
					if _, err := q.Complete(ctx, e.app, c, "", nil); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var left int
	_ = e.app.QueryRow(ctx, `SELECT count(*) FROM occ.controller_work WHERE state <> 'succeeded'`).Scan(&left)
	if left != 0 {
		t.Fatalf("%d rows not processed", left)
	}
}

func TestRecoverStaleRequeuesThenExhausts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{MaxAttempts: 2})
	ns := e.namespace("provisioning")
	nsWork := e.enqueueNamespace(ns, "ready")
	nsReady := e.namespace("ready")
	agent, rev := e.agent(nsReady)
	revWork := e.enqueueRevision(nsReady, agent, rev)

	first := e.claimAll()
	if len(first) != 2 {
		t.Fatalf("claimed %d", len(first))
	}
	for _, c := range first {
		e.expire(c.Work.Key)
	}
	s, err := e.q.RecoverStale(ctx)
	if err != nil || s.Recovered != 2 || s.Requeued != 2 {
		t.Fatalf("recovery: %+v %v", s, err)
	}
	// The old token is rejected after recovery.
	if _, err := e.q.Complete(ctx, e.app, first[0], "", nil); !errors.Is(err, queue.ErrClaimLost) {
		t.Fatalf("old token: %v", err)
	}
	second := e.claimAll()
	if len(second) != 2 || second[0].Attempt() != 2 {
		t.Fatalf("second claims: %+v", second)
	}
	for _, c := range second {
		e.expire(c.Work.Key)
	}
	s, err = e.q.RecoverStale(ctx)
	if err != nil || s.FailedPermanent != 2 {
		t.Fatalf("exhausting recovery: %+v %v", s, err)
	}
	for _, key := range []string{nsWork.Key, revWork.Key} {
		w := e.work(key)
		ev := e.evidence(key)
		if w.State != queue.StateFailedPermanent || *w.ReasonCode != queue.CodeLeaseExpired ||
			len(ev) != 2 || ev[0].code != "LEASE_EXPIRED" || ev[0].final || !ev[1].final || ev[1].actor != e.actor {
			t.Fatalf("%s: %+v evidence %+v", key, w, ev)
		}
	}
	var status string
	_ = e.app.QueryRow(ctx, `SELECT status FROM occ.namespaces WHERE id = $1`, ns).Scan(&status)
	if status != "failed" {
		t.Fatalf("provisioning namespace after exhausted recovery: %s", status)
	}
	// Batch recovery counted each claim once: one evidence row per item per round.
	var rows int
	_ = e.app.QueryRow(ctx, `SELECT count(*) FROM occ.audit_events WHERE action = 'reconcile'`).Scan(&rows)
	if rows != 4 {
		t.Fatalf("%d evidence rows", rows)
	}
}

func TestRecoverExhaustedQueuedLeavesReadyNamespacesAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{MaxAttempts: 3})
	provisioning := e.namespace("provisioning")
	ready := e.namespace("ready")
	deleting := e.namespace("deleting")
	for _, ns := range []string{provisioning, ready, deleting} {
		w := e.enqueueNamespace(ns, "ready")
		// An operator lowered the budget below what the row already spent.
		if _, err := e.owner.Exec(ctx, `UPDATE occ.controller_work SET attempt_count = 5 WHERE idempotency_key = $1`, w.Key); err != nil {
			t.Fatal(err)
		}
	}
	s, err := e.q.RecoverStale(ctx)
	if err != nil || s.ExhaustedQueued != 3 {
		t.Fatalf("%+v %v", s, err)
	}
	for ns, want := range map[string]string{provisioning: "failed", ready: "ready", deleting: "deleting"} {
		var status string
		_ = e.app.QueryRow(ctx, `SELECT status FROM occ.namespaces WHERE id = $1`, ns).Scan(&status)
		if status != want {
			t.Errorf("namespace %s: %s, want %s", ns, status, want)
		}
	}
	var reason string
	_ = e.app.QueryRow(ctx, `SELECT details->>'reasonCode' FROM occ.audit_events WHERE action = 'reconcile' LIMIT 1`).Scan(&reason)
	if reason != queue.CodeMaxAttemptsExhausted {
		t.Fatalf("evidence %s", reason)
	}
}

func TestRecoveryIsAtomicWithTheNamespaceSideEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{MaxAttempts: 1})
	ns := e.namespace("provisioning")
	w := e.enqueueNamespace(ns, "ready")
	c := e.claimOne()
	e.expire(c.Work.Key)
	// Another transaction holds the Namespace row: recovery under a lock timeout commits nothing.
	blocker, err := e.owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blocker.Exec(ctx, `SELECT 1 FROM occ.namespaces WHERE id = $1 FOR UPDATE`, ns); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, e.app, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
			return err
		}
		_, err := queue.New(tx, queue.Options{MaxAttempts: 1, Jitter: zero}).RecoverStale(ctx)
		return err
	})
	_ = blocker.Rollback(ctx)
	if err == nil {
		t.Fatal("recovery did not time out on the locked namespace")
	}
	if got := e.work(w.Key); got.State != queue.StateClaimed || len(e.evidence(w.Key)) != 0 {
		t.Fatalf("partial recovery: %+v", got)
	}
	// Inside a caller's transaction that rolls back, nothing persists either.
	_ = pgx.BeginFunc(ctx, e.app, func(tx pgx.Tx) error {
		if _, err := queue.New(tx, queue.Options{MaxAttempts: 1, Jitter: zero}).RecoverStale(ctx); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if got := e.work(w.Key); got.State != queue.StateClaimed {
		t.Fatalf("rolled-back recovery persisted: %+v", got)
	}
}

func TestActiveRevisionRecoveryGrantsOneExtraAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{MaxAttempts: 1})
	ns := e.namespace("ready")
	agent, rev := e.agent(ns)
	w := e.enqueueRevision(ns, agent, rev)
	// The deployment published its pointer, then lost its final claim.
	e.exec(`UPDATE occ.agents SET active_revision_id = $2, desired_runtime_state = 'running' WHERE id = $1`, agent, rev)
	c := e.claimOne()
	e.expire(c.Work.Key)
	if _, err := e.q.RecoverStale(ctx); err != nil {
		t.Fatal(err)
	}
	got := e.work(w.Key)
	if got.State != queue.StateQueued || got.AttemptCount != 0 {
		t.Fatalf("recovering activation: %+v", got)
	}
	e.makeAvailable(w.Key)
	c = e.claimOne()
	e.expire(c.Work.Key)
	if _, err := e.q.RecoverStale(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.work(w.Key); got.State != queue.StateFailedPermanent {
		t.Fatalf("second loss must fail: %+v", got)
	}
	ev := e.evidence(w.Key)
	if len(ev) != 2 || ev[0].code != queue.CodeActiveRevisionRecovery || ev[1].code != queue.CodeLeaseExpired {
		t.Fatalf("evidence %+v", ev)
	}
}

func TestRenewExtendsOwnedLeasesInOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{LeaseDuration: 2 * time.Second})
	ns := e.namespace("ready")
	var claims []queue.Claim
	for range 3 {
		agent, rev := e.agent(ns)
		e.enqueueRevision(ns, agent, rev)
	}
	claims = e.claimAll()
	if len(claims) != 3 {
		t.Fatalf("claimed %d", len(claims))
	}
	e.expire(claims[0].Work.Key)
	renewed, err := e.q.Renew(ctx, nil, claims)
	if err != nil {
		t.Fatal(err)
	}
	if _, lost := renewed[claims[0].Work.Key]; lost || len(renewed) != 2 {
		t.Fatalf("renewed %v", renewed)
	}
	for _, c := range claims[1:] {
		if !renewed[c.Work.Key].After(c.LeaseExpiresAt) {
			t.Fatalf("lease of %s not extended", c.Work.Key)
		}
	}
}

func TestNotifyOnEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{})
	conn, err := e.app.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+store.WorkNotifyChannel); err != nil {
		t.Fatal(err)
	}
	ns := e.namespace("provisioning")
	w := e.enqueueNamespace(ns, "ready")
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := conn.Conn().WaitForNotification(waitCtx)
	if err != nil || n.Payload != w.Key {
		t.Fatalf("notification %+v %v", n, err)
	}
	e.enqueueNamespace(ns, "ready") // a duplicate does not notify
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if n, err := conn.Conn().WaitForNotification(short); err == nil {
		t.Fatalf("duplicate enqueue notified: %+v", n)
	}
}

func TestSafeCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "UNKNOWN_FAILURE", "ok": "OK", "a-b c": "A_B_C",
		"x" + string(make([]byte, 70)): "X" + "________________________________________________________________"[:63]} {
		if got := queue.SafeCode(in); got != want {
			t.Errorf("SafeCode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTransitionManyFencesAndReportsEachItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, queue.Options{MaxAttempts: 1})
	var claims []queue.Claim
	for range 5 {
		e.enqueueNamespace(e.namespace("provisioning"), "ready")
		claims = append(claims, e.claimOne())
	}
	lost := claims[1]
	lost.Token = uuid.New()
	e.expire(claims[2].Work.Key)
	reqs := []queue.TransitionRequest{
		{Claim: claims[0], To: queue.TransitionComplete, Code: "NAMESPACE_RECONCILED"},
		{Claim: lost, To: queue.TransitionComplete},
		{Claim: claims[2], To: queue.TransitionFail, Code: "INVALID_TARGET"},
		{Claim: claims[3], To: queue.TransitionRetry, Code: "DEPENDENCY_UNAVAILABLE"},
		{Claim: claims[4], To: queue.TransitionFail, Code: "CONVERGENCE_DEADLINE_EXCEEDED", Result: json.RawMessage(`{"timeoutMs":1,"cause":{}}`)},
	}
	res, err := e.q.TransitionMany(ctx, e.app, reqs)
	if err != nil || len(res) != len(reqs) {
		t.Fatalf("transition many: %d results, %v", len(res), err)
	}
	if res[0].Err != nil || res[0].Work.State != queue.StateSucceeded || *res[0].Work.ReasonCode != "NAMESPACE_RECONCILED" {
		t.Errorf("complete: %+v", res[0])
	}
	for _, i := range []int{1, 2} {
		if !errors.Is(res[i].Err, queue.ErrClaimLost) {
			t.Errorf("item %d: want a lost claim, got %+v", i, res[i])
		}
	}
	// The attempt limit is 1: the retry ends failed_permanent and fails its Namespace with it.
	if res[3].Err != nil || res[3].Work.State != queue.StateFailedPermanent {
		t.Errorf("retry at the limit: %+v", res[3])
	}
	var status string
	if err := e.app.QueryRow(ctx, `SELECT status FROM occ.namespaces WHERE id = $1`, claims[3].Work.NamespaceID).Scan(&status); err != nil || status != "failed" {
		t.Errorf("namespace of the exhausted retry: %s %v", status, err)
	}
	if !errors.Is(res[4].Err, queue.ErrInvalidResult) || e.work(claims[4].Work.Key).State != queue.StateClaimed {
		t.Errorf("invalid result: %+v", res[4])
	}
	// Evidence: one row per applied transition, none for the refused ones.
	for i, want := range []int{1, 0, 0, 1, 0} {
		if ev := e.evidence(claims[i].Work.Key); len(ev) != want {
			t.Errorf("item %d: %d evidence rows, want %d: %+v", i, len(ev), want, ev)
		}
	}
	// The claim refused for its result still holds: it can publish a valid one.
	if _, err := e.q.Fail(ctx, e.app, claims[4], "CONVERGENCE_DEADLINE_EXCEEDED", json.RawMessage(`{"timeoutMs":1}`)); err != nil {
		t.Fatal(err)
	}
}
