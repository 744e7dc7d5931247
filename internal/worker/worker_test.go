package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/faultnet"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/logbuf"
	"github.com/openclaw/occ/internal/testkit/pgtest"
	"github.com/openclaw/occ/internal/testkit/wait"
	"github.com/openclaw/occ/internal/worker"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type harness struct {
	t            *testing.T
	db           *pgtest.Database
	app, owner   *pgxpool.Pool
	fx           *fixture.Factory // writes through app, as the API does
	installation string
	admin        string
	defaultNS    string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	conn, err := pgx.Connect(ctx, db.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	res, err := bootstrap.Run(ctx, conn, settings.Bootstrap{
		Mode: settings.Development, ServiceKeyFile: filepath.Join(t.TempDir(), "key.json"),
		AdminEmail: "admin@openclaw.local", DevPassword: "openclaw-development-password",
		InstallationName: "Worker Test", Source: settings.SourceDevelopment,
	})
	if err != nil {
		t.Fatal(err)
	}
	app := db.App(t)
	return &harness{t: t, db: db, app: app, owner: db.Owner(t), fx: fixture.New(t, app), installation: res.Attempt.InstallationID,
		admin: res.Attempt.PrincipalID, defaultNS: res.Attempt.DefaultNamespaceID}
}

type workerOptions struct {
	url         string
	lease       time.Duration
	concurrency int
	maxAttempts int
	convergence time.Duration
	sim         *simulated.Driver
	// secretDriverID is the worker's selected Secret Driver (agent tests).
	secretDriverID string
	// compute replaces the simulated driver (a wrapper around it); metrics records passes.
	compute driver.Compute
	metrics worker.Recorder
}

type runningWorker struct {
	sim  *simulated.Driver
	logs *logbuf.Buffer
	stop func()
}

func (h *harness) start(o workerOptions) *runningWorker {
	h.t.Helper()
	if o.url == "" {
		o.url = h.db.AppURL
	}
	if o.lease == 0 {
		o.lease = 3 * time.Second
	}
	if o.concurrency == 0 {
		o.concurrency = 4
	}
	if o.maxAttempts == 0 {
		o.maxAttempts = 5
	}
	if o.convergence == 0 {
		o.convergence = 15 * time.Minute
	}
	if o.sim == nil {
		o.sim = simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	}
	if o.compute == nil {
		o.compute = o.sim
	}
	pool := pgtest.Pool(h.t, o.url)
	logs := &logbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := worker.New(worker.Config{
		Pool: pool, Queue: queue.New(pool, queue.Options{MaxAttempts: o.maxAttempts, LeaseDuration: o.lease, Jitter: func() float64 { return 0 }}),
		Compute: o.compute, IAMDriverID: bootstrap.IAMDriverID, SecretDriverID: o.secretDriverID, InstallationID: h.installation,
		Concurrency: o.concurrency, PollInterval: 20 * time.Millisecond, ConvergenceTimeout: o.convergence,
		DatabaseTimeout: 5 * time.Second, Logger: obs.NewLogger(logs, "occ-worker", slog.LevelDebug), Metrics: o.metrics,
		Notifications: worker.Listen(ctx, pool, obs.NewLogger(logs, "occ-worker", slog.LevelDebug)),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				h.t.Error("worker did not stop")
			}
		})
	}
	h.t.Cleanup(stop)
	return &runningWorker{sim: o.sim, logs: logs, stop: stop}
}

func (h *harness) scalar(sql string, args ...any) string {
	h.t.Helper()
	var v *string
	if err := h.owner.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil && err != pgx.ErrNoRows {
		h.t.Fatalf("%s: %v", sql, err)
	}
	if v == nil {
		return ""
	}
	return *v
}

func (h *harness) nsStatus(ns string) string {
	return h.scalar(`SELECT status FROM occ.namespaces WHERE id = $1`, ns)
}

func (h *harness) workState(key string) queue.State {
	return queue.State(h.scalar(`SELECT state FROM occ.controller_work WHERE idempotency_key = $1`, key))
}

func (h *harness) count(sql string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.owner.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		h.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func readyKey(ns string) string { return "namespace:" + ns + ":reconcile:ready" }

// createNamespace admits a Namespace as the administrator, as the API does.
func (h *harness) createNamespace(name string) string {
	h.t.Helper()
	ns := h.fx.NamespaceNamed(platform.NewID(platform.PrefixNamespace), name).ID
	h.fx.Enqueue(fixture.NamespaceWork(ns, platform.NamespaceTargetReady, h.admin))
	return ns
}

func TestEnsureMakesTheDefaultNamespaceReady(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w := h.start(workerOptions{})
	wait.Eventually(t, wait.Short, "default namespace ready", func() bool { return h.nsStatus(h.defaultNS) == "ready" })
	wait.Eventually(t, wait.Short, "work succeeded", func() bool { return h.workState(readyKey(h.defaultNS)) == "succeeded" })
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.namespaces.lifecycle.ensure' AND resource_id = $1 AND outcome = 'success'`, h.defaultNS); n != 1 {
		t.Fatalf("%d lifecycle audits", n)
	}
	if st, ok := w.sim.Namespace(h.defaultNS); !ok || !st.Ready {
		t.Fatalf("simulated namespace %+v", st)
	}
	wait.Eventually(t, wait.Short, "worker.completed", func() bool { return len(w.logs.Events("worker.completed")) > 0 })
	ev := w.logs.Events("worker.completed")[0]
	if ev["code"] != "NAMESPACE_RECONCILED" || ev["outcome"] != "success" || ev["operation"] != "namespace.ensure" ||
		ev["workId"] != readyKey(h.defaultNS) || ev["attempt"] != float64(1) || ev["namespaceId"] != h.defaultNS {
		t.Fatalf("worker.completed %v", ev)
	}
	if started := w.logs.Events("worker.started"); len(started) != 1 || started[0]["computeDriverId"] != "compute-simulated" {
		t.Fatalf("worker.started %v", started)
	}
}

func TestPendingNamespaceConvergesWithoutSpendingAttemptsAndAuditsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	sim.InjectNamespace(h.defaultNS, simulated.NotReady("waiting for the network").On(simulated.OpEnsureNamespace).For(4))
	h.start(workerOptions{sim: sim, maxAttempts: 2})
	wait.Eventually(t, wait.Medium, "ready after pending passes", func() bool { return h.nsStatus(h.defaultNS) == "ready" })
	if calls := sim.Calls(simulated.OpEnsureNamespace, h.defaultNS); calls != 5 {
		t.Fatalf("%d ensure calls", calls)
	}
	// Four identical pending observations: one pending audit and one evidence row, then success.
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.namespaces.lifecycle.ensure' AND resource_id = $1`, h.defaultNS); n != 2 {
		t.Fatalf("%d lifecycle audits, want 2", n)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'reconcile' AND details->>'workId' = $1 AND details->>'reasonCode' = 'NAMESPACE_INCOMPLETE'`, readyKey(h.defaultNS)); n != 1 {
		t.Fatalf("%d pending evidence rows, want 1", n)
	}
}

func TestClaimLostInsideEnsurePublishesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	release := make(chan struct{})
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	sim.InjectNamespace(h.defaultNS, simulated.Block(release).On(simulated.OpEnsureNamespace).Once())
	w := h.start(workerOptions{sim: sim, lease: 2 * time.Second})
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sim.WaitCalls(waitCtx, simulated.OpEnsureNamespace, h.defaultNS, 1); err != nil {
		t.Fatal(err)
	}
	// Another worker recovered and re-claimed the work: new token, attempt 2.
	key := readyKey(h.defaultNS)
	if _, err := h.owner.Exec(ctx, `UPDATE occ.controller_work SET claim_token = gen_random_uuid(), attempt_count = 2,
	   lease_expires_at = clock_timestamp() + interval '1 hour' WHERE idempotency_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, wait.Short, "CLAIM_LOST", func() bool { return len(w.logs.Events("worker.error")) > 0 })
	close(release)
	lost := w.logs.Events("worker.error")[0]
	if lost["code"] != "CLAIM_LOST" || lost["cause"] != worker.CauseRenewalRefused || lost["workId"] != key {
		t.Fatalf("worker.error %v", lost)
	}
	if h.nsStatus(h.defaultNS) != "provisioning" || h.workState(key) != "claimed" ||
		h.count(`SELECT count(*) FROM occ.audit_events WHERE action LIKE 'openclaw.namespaces.lifecycle%'`) != 0 ||
		h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, key) != 2 {
		t.Fatal("a lost claim published something")
	}
	// The usurper's lease runs out; recovery requeues the work and a fresh claim converges.
	if _, err := h.owner.Exec(ctx, `UPDATE occ.controller_work SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE idempotency_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, wait.Short, "convergence after recovery", func() bool { return h.nsStatus(h.defaultNS) == "ready" })
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.namespaces.lifecycle.ensure'`); n != 1 {
		t.Fatalf("%d lifecycle audits, want exactly 1", n)
	}
}

// relayURL routes a connection URL through a relay.
func relayURL(t *testing.T, raw string) (string, *faultnet.Relay) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	relay := faultnet.Start(t, u.Host)
	u.Host = relay.Addr()
	return u.String(), relay
}

func TestStalledConnectionAbandonsTheEffectWhenTheLeaseEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	through, relay := relayURL(t, h.db.AppURL)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	sim.InjectNamespace(h.defaultNS, simulated.Hang().On(simulated.OpEnsureNamespace).Once())
	lease := 1500 * time.Millisecond
	w := h.start(workerOptions{url: through, sim: sim, lease: lease})
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sim.WaitCalls(waitCtx, simulated.OpEnsureNamespace, h.defaultNS, 1); err != nil {
		t.Fatal(err)
	}
	stalled := time.Now()
	relay.Stall()
	wait.Eventually(t, wait.Short, "CLAIM_LOST after the lease", func() bool { return len(w.logs.Events("worker.error")) > 0 })
	if waited := time.Since(stalled); waited > lease+time.Second {
		t.Fatalf("effect abandoned %v after the stall, lease %v", waited, lease)
	}
	lost := w.logs.Events("worker.error")[0]
	if lost["code"] != "CLAIM_LOST" || (lost["cause"] != worker.CauseLeaseLapsed && lost["cause"] != worker.CauseRenewalFailed) {
		t.Fatalf("worker.error %v", lost)
	}
	w.stop()
	relay.Resume()
	if h.nsStatus(h.defaultNS) != "provisioning" || h.count(`SELECT count(*) FROM occ.audit_events WHERE action LIKE 'openclaw.namespaces.lifecycle%'`) != 0 {
		t.Fatal("the stalled worker published")
	}
	// A healthy worker recovers the expired claim and converges.
	h.start(workerOptions{})
	wait.Eventually(t, wait.Medium, "recovery by another worker", func() bool { return h.nsStatus(h.defaultNS) == "ready" })
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'reconcile' AND details->>'workId' = $1 AND details->>'reasonCode' = 'LEASE_EXPIRED'`, readyKey(h.defaultNS)); n != 1 {
		t.Fatalf("%d LEASE_EXPIRED evidence rows", n)
	}
}

func TestLateRenewalStopsTheWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	through, relay := relayURL(t, h.db.AppURL)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	sim.InjectNamespace(h.defaultNS, simulated.Hang().On(simulated.OpEnsureNamespace).Once())
	lease := 1500 * time.Millisecond
	w := h.start(workerOptions{url: through, sim: sim, lease: lease, concurrency: 1})
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sim.WaitCalls(waitCtx, simulated.OpEnsureNamespace, h.defaultNS, 1); err != nil {
		t.Fatal(err)
	}
	// Renewals still reach the database and succeed there; their answers are held past the lease.
	relay.StallDownstream()
	wait.Eventually(t, wait.Short, "lease lapse", func() bool { return len(w.logs.Events("worker.error")) > 0 })
	relay.Resume()
	defer func() {
		if t.Failed() {
			t.Log(w.logs.Events(""))
		}
	}()
	wait.Eventually(t, wait.Short, "claim-renewal-warning", func() bool { return len(w.logs.Events("worker.claim-renewal-warning")) > 0 })
	warn := w.logs.Events("worker.claim-renewal-warning")[0]
	if warn["severity"] != "WARN" || warn["code"] != worker.CauseRenewalLate || warn["workId"] != readyKey(h.defaultNS) {
		t.Fatalf("warning %v", warn)
	}
	if d, ok := warn["durationMs"].(float64); !ok || d < float64(lease.Milliseconds())/3 {
		t.Fatalf("durationMs %v", warn["durationMs"])
	}
}

func TestDistinctLanesProgressInParallelAcrossWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	nsA, nsB := h.createNamespace("team-a"), h.createNamespace("team-b")
	release := make(chan struct{})
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	for _, ns := range []string{nsA, nsB, h.defaultNS} {
		sim.InjectNamespace(ns, simulated.Block(release).On(simulated.OpEnsureNamespace).Once())
	}
	// Two workers (one pass each) share one simulated world: three lanes, so at most two passes
	// can be inside EnsureNamespace at once, each in its own lane.
	h.start(workerOptions{sim: sim, concurrency: 1})
	h.start(workerOptions{sim: sim, concurrency: 1})
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	entered := 0
	wait.Eventually(t, wait.Short, "two lanes inside the driver at once", func() bool {
		entered = 0
		for _, ns := range []string{nsA, nsB, h.defaultNS} {
			entered += sim.Calls(simulated.OpEnsureNamespace, ns)
		}
		return entered >= 2
	})
	claimed := h.count(`SELECT count(*) FROM occ.controller_work WHERE state = 'claimed'`)
	if claimed != 2 {
		t.Fatalf("%d claims while two passes are blocked", claimed)
	}
	close(release)
	for _, ns := range []string{nsA, nsB, h.defaultNS} {
		wait.Eventually(t, wait.Medium, "namespace "+ns+" ready", func() bool { return h.nsStatus(ns) == "ready" })
	}
	_ = waitCtx
}

func TestDeleteTombstonesTheNamespaceAndRemovesItsPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	w := h.start(workerOptions{})
	ns := h.createNamespace("short-lived")
	wait.Eventually(t, wait.Short, "ready", func() bool { return h.nsStatus(ns) == "ready" })
	h.fx.Role("role-ns", ns, [2]string{"read", "agent"})
	h.fx.Binding(store.IAMBinding{ID: "binding-ns", NamespaceID: &ns, IdentitySubjectID: &h.admin, RoleID: "role-ns"})
	// store writes no Restrictions, so this one stays SQL (docs/development.md).
	if _, err := h.app.Exec(ctx, `INSERT INTO occ.iam_restrictions (id, namespace_id, action, resource_kind)
	   VALUES ('restriction-ns', $1, 'read', 'agent')`, ns); err != nil {
		t.Fatal(err)
	}
	if err := store.SetNamespaceStatus(ctx, h.app, ns, store.NamespaceDeleting); err != nil {
		t.Fatal(err)
	}
	h.fx.Enqueue(fixture.NamespaceWork(ns, platform.NamespaceTargetDeleted, h.admin))
	wait.Eventually(t, wait.Short, "tombstone", func() bool {
		return h.scalar(`SELECT deleted_at::text FROM occ.namespaces WHERE id = $1`, ns) != ""
	})
	if h.count(`SELECT count(*) FROM occ.iam_access_bindings WHERE namespace_id = $1`, ns)+
		h.count(`SELECT count(*) FROM occ.iam_roles WHERE namespace_id = $1`, ns)+
		h.count(`SELECT count(*) FROM occ.iam_restrictions WHERE namespace_id = $1`, ns) != 0 {
		t.Fatal("namespace policy survived the tombstone")
	}
	details := h.scalar(`SELECT details::text FROM occ.audit_events WHERE action = 'openclaw.namespaces.lifecycle.delete' AND resource_id = $1`, ns)
	if !strings.Contains(details, "binding-ns") || !strings.Contains(details, "role-ns") {
		t.Fatalf("delete audit details %s", details)
	}
	if _, ok := w.sim.Namespace(ns); ok {
		t.Fatal("simulated namespace survived")
	}
}

func TestRevokedActorFailsTheNamespaceWithADenialAudit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	stranger := h.fx.Principal()
	ns := h.fx.NamespaceNamed(platform.NewID(platform.PrefixNamespace), "unauthorized").ID
	h.fx.Enqueue(fixture.NamespaceWork(ns, platform.NamespaceTargetReady, stranger))
	w := h.start(workerOptions{})
	wait.Eventually(t, wait.Short, "failed namespace", func() bool { return h.nsStatus(ns) == "failed" })
	if reason := h.scalar(`SELECT reason_code FROM occ.controller_work WHERE idempotency_key = $1`, readyKey(ns)); reason != "AUTHORIZATION_DENIED" {
		t.Fatalf("reason %s", reason)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND action = 'openclaw.namespaces.create' AND actor_id = $1 AND outcome = 'denied'`, stranger); n != 1 {
		t.Fatalf("%d denial audits", n)
	}
	if w.sim.Calls(simulated.OpEnsureNamespace, ns) != 0 {
		t.Fatal("Compute was called for a denied actor")
	}
	// An actor whose identity is gone is ACTOR_REVOKED.
	gone := h.fx.NamespaceNamed(platform.NewID(platform.PrefixNamespace), "orphan").ID
	h.fx.Enqueue(fixture.NamespaceWork(gone, platform.NamespaceTargetReady, platform.NewID(platform.PrefixPrincipal)))
	wait.Eventually(t, wait.Short, "ACTOR_REVOKED", func() bool {
		return h.scalar(`SELECT reason_code FROM occ.controller_work WHERE idempotency_key = $1`, readyKey(gone)) == "ACTOR_REVOKED"
	})
}

func TestConvergenceDeadlineFailsPendingNamespace(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	sim.InjectNamespace(h.defaultNS, simulated.NotReady("never ready").On(simulated.OpEnsureNamespace))
	h.start(workerOptions{sim: sim, convergence: time.Millisecond})
	wait.Eventually(t, wait.Short, "deadline", func() bool { return h.nsStatus(h.defaultNS) == "failed" })
	if reason := h.scalar(`SELECT reason_code FROM occ.controller_work WHERE idempotency_key = $1`, readyKey(h.defaultNS)); reason != "CONVERGENCE_DEADLINE_EXCEEDED" {
		t.Fatalf("reason %s", reason)
	}
}

func TestRetryableFailuresExhaustIntoFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	sim.InjectNamespace(h.defaultNS, simulated.Retryable("NETWORK_BUSY", "the network is busy").On(simulated.OpEnsureNamespace))
	w := h.start(workerOptions{sim: sim, maxAttempts: 3})
	wait.Eventually(t, wait.Medium, "failed after retries", func() bool { return h.nsStatus(h.defaultNS) == "failed" })
	if calls := sim.Calls(simulated.OpEnsureNamespace, h.defaultNS); calls != 3 {
		t.Fatalf("%d calls for 3 attempts", calls)
	}
	// worker.completed is logged after the finalization commits: wait for the third line.
	wait.Eventually(t, wait.Short, "three worker.completed lines", func() bool { return len(w.logs.Events("worker.completed")) >= 3 })
	var outcomes []string
	for _, ev := range w.logs.Events("worker.completed") {
		outcomes = append(outcomes, fmt.Sprint(ev["outcome"]))
	}
	if strings.Join(outcomes, ",") != "retry,retry,retry" {
		t.Fatalf("outcomes %v", outcomes)
	}
}

func TestShutdownInterruptsTheHangingPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	sim.InjectNamespace(h.defaultNS, simulated.Hang().On(simulated.OpEnsureNamespace))
	w := h.start(workerOptions{sim: sim})
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sim.WaitCalls(waitCtx, simulated.OpEnsureNamespace, h.defaultNS, 1); err != nil {
		t.Fatal(err)
	}
	w.stop()
	var names []string
	for _, ev := range w.logs.Events("") {
		if n := fmt.Sprint(ev["event"]); n == "worker.pass-interrupted" || n == "worker.stopped" || n == "worker.error" {
			names = append(names, n)
		}
	}
	if strings.Join(names, ",") != "worker.pass-interrupted,worker.stopped" {
		t.Fatalf("shutdown events %v", names)
	}
	interrupted := w.logs.Events("worker.pass-interrupted")[0]
	if interrupted["cause"] != "WorkerStopping" || interrupted["workId"] != readyKey(h.defaultNS) {
		t.Fatalf("%v", interrupted)
	}
	if h.workState(readyKey(h.defaultNS)) != "claimed" {
		t.Fatal("the interrupted claim was released instead of left to lease recovery")
	}
}

// TestWorkerFoldsAgentLifecycleChanges: the worker folds the Agents' lifecycle changes into the
// occ_agents counters about once a second; a fold that fails is reported and retried.
func TestWorkerFoldsAgentLifecycleChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.fx.Agent(store.AgentRow{NamespaceID: h.defaultNS})
	if _, err := h.owner.Exec(context.Background(), `REVOKE DELETE ON occ.agent_lifecycle_changes FROM `+pgtest.AppRole); err != nil {
		t.Fatal(err)
	}
	w := h.start(workerOptions{})
	wait.Eventually(t, wait.Short, "a failed fold reported", func() bool {
		for _, ev := range w.logs.Events("worker.error") {
			if ev["code"] == "AGENT_COUNTS_UNAVAILABLE" {
				return true
			}
		}
		return false
	})
	if _, err := h.owner.Exec(context.Background(), `GRANT DELETE ON occ.agent_lifecycle_changes TO `+pgtest.AppRole); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, wait.Short, "the Agent folded", func() bool {
		return h.count(`SELECT count(*) FROM occ.agent_lifecycle_changes`) == 0 &&
			h.scalar(`SELECT lifecycle_state FROM occ.agent_lifecycle WHERE agent_id = $1`, a.ID) == "draft"
	})
	if n := h.count(`SELECT agents FROM occ.agent_lifecycle_counts WHERE lifecycle_state = 'draft'`); n != 1 {
		t.Fatalf("%d draft Agents counted", n)
	}
}
