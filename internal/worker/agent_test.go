package worker_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/wait"
	"github.com/openclaw/occ/internal/worker"
)

// ---- fixtures: what the Agents API would write, through the application role ----

// recorder is a worker.Recorder that keeps what it was told.
type recorder struct {
	mu         sync.Mutex
	operations []string
}

func (r *recorder) ObserveAttempt(string, string, time.Duration) {}

func (r *recorder) ObserveAgentOperation(op string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.operations = append(r.operations, op)
}

func (r *recorder) ops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.operations...)
}

// startAgentWorker starts a worker like harness.start, with a metrics recorder and a Compute that
// may wrap the simulated driver.
func (h *harness) startAgentWorker(o workerOptions, compute driver.Compute, rec worker.Recorder) *runningWorker {
	h.t.Helper()
	o.compute, o.metrics = compute, rec
	return h.start(o)
}

func (h *harness) exec(sql string, args ...any) {
	h.t.Helper()
	if _, err := h.app.Exec(context.Background(), sql, args...); err != nil {
		h.t.Fatalf("%s: %v", sql, err)
	}
}

// readyNamespace creates a Namespace that is already ready (its provisioning is not under test).
func (h *harness) readyNamespace() string {
	h.t.Helper()
	return h.fx.NamespaceIn(string(store.NamespaceReady)).ID
}

type agentFixture struct {
	h                *harness
	row              store.AgentRow
	ns, id, spn, cfg string
	revisions        []string
}

// newAgent creates an embedded Agent with its service principal and Configuration, as the API
// does.
func (h *harness) newAgent(ns string) *agentFixture {
	h.t.Helper()
	a := h.fx.Agent(store.AgentRow{NamespaceID: ns})
	return &agentFixture{h: h, row: a, ns: ns, id: a.ID, spn: a.ServicePrincipalID, cfg: a.ConfigurationID}
}

// spec is the admitted snapshot of a runtime-authenticated embedded OpenClaw revision.
func (f *agentFixture) spec() platform.RevisionSpec {
	return platform.RevisionSpec{
		ConfigurationID: f.cfg, ConfigurationKind: "agent", ConfigurationGeneration: 1,
		Configuration:      json.RawMessage(`{"agents":{}}`),
		Harness:            platform.PinnedHarnesses[platform.ExecutionEmbedded],
		Compute:            platform.ComputeSelection{ID: "compute-simulated", Implementation: "simulated"},
		ServicePrincipalID: f.spn, HarnessAuth: platform.HarnessAuth{Method: platform.HarnessAuthRuntime},
	}
}

// deploy admits a revision as the API does: the next revision, desired running and the deploy
// work, in one transaction.
func (f *agentFixture) deploy(actor string, spec ...platform.RevisionSpec) string {
	f.h.t.Helper()
	s := f.spec()
	if len(spec) > 0 {
		s = spec[0]
	}
	return f.deployAs(actor, newRevisionID(), s)
}

func newRevisionID() string { return "rev_" + uuid.NewString() }

// deployAs admits revision rev (an id chosen in advance, so faults can target it first).
func (f *agentFixture) deployAs(actor, rev string, s platform.RevisionSpec) string {
	f.h.t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		f.h.t.Fatal(err)
	}
	f.admit(func(ctx context.Context, fx *fixture.Factory, tx pgx.Tx) (fixture.Work, error) {
		r := fx.RevisionAs(f.row, rev, raw)
		_, err := store.SetAgentDesiredState(ctx, tx, store.SetAgentDesiredStateParams{
			NamespaceID: f.ns, AgentID: f.id, State: platform.RuntimeRunning})
		return fixture.RevisionWork(r, actor), err
	})
	f.revisions = append(f.revisions, rev)
	return rev
}

// stop admits a stop request: desired stopped and a new stop work item.
func (f *agentFixture) stop(actor string) string {
	f.h.t.Helper()
	work := fixture.AgentStopWork(f.row, uuid.NewString(), actor)
	f.admit(func(ctx context.Context, _ *fixture.Factory, tx pgx.Tx) (fixture.Work, error) {
		_, err := store.SetAgentDesiredState(ctx, tx, store.SetAgentDesiredStateParams{
			NamespaceID: f.ns, AgentID: f.id, State: platform.RuntimeStopped})
		return work, err
	})
	return work.Key()
}

// remove admits the deletion: deleting, desired stopped and the deletion work item.
func (f *agentFixture) remove(actor string) string {
	f.h.t.Helper()
	work := fixture.AgentDeleteWork(f.row, actor)
	f.admit(func(ctx context.Context, _ *fixture.Factory, tx pgx.Tx) (fixture.Work, error) {
		_, err := store.MarkAgentDeleting(ctx, tx, f.ns, f.id)
		return work, err
	})
	return work.Key()
}

// admit changes the Agent and enqueues the work change returns in one transaction, as the API
// does.
func (f *agentFixture) admit(change func(ctx context.Context, fx *fixture.Factory, tx pgx.Tx) (fixture.Work, error)) {
	f.h.t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, f.h.app, func(tx pgx.Tx) error {
		fx := fixture.New(f.h.t, tx)
		work, err := change(ctx, fx, tx)
		if err != nil {
			return err
		}
		fx.Enqueue(work)
		return nil
	})
	if err != nil {
		f.h.t.Fatal(err)
	}
}

func (f *agentFixture) active() string {
	return f.h.scalar(`SELECT active_revision_id FROM occ.agents WHERE id = $1`, f.id)
}

func (h *harness) reason(key string) string {
	return h.scalar(`SELECT reason_code FROM occ.controller_work WHERE idempotency_key = $1`, key)
}

// waitWork waits until the work item is terminal and returns its state and reason.
func (h *harness) waitWork(key string) (queue.State, string) {
	h.t.Helper()
	wait.Eventually(h.t, wait.Medium, "work "+key+" terminal", func() bool {
		s := h.workState(key)
		return s == queue.StateSucceeded || s == queue.StateFailedPermanent
	})
	return h.workState(key), h.reason(key)
}

// grant binds principal to a Namespace Role with the given permissions on one exact resource (or
// the whole Namespace when resourceID is "").
func (h *harness) grant(ns, principal, kind, resourceID string, actions ...string) string {
	h.t.Helper()
	permissions := make([][2]string, len(actions))
	for i, a := range actions {
		permissions[i] = [2]string{a, kind}
	}
	b := store.IAMBinding{NamespaceID: &ns, IdentitySubjectID: &principal, RoleID: h.fx.Role("", ns, permissions...)}
	if resourceID != "" {
		b.ResourceKind, b.ResourceID = &kind, &resourceID
	}
	return h.fx.Binding(b)
}

// principal creates a human principal without any grant.
func (h *harness) principal() string {
	h.t.Helper()
	return h.fx.Principal()
}

// effects lists the simulated driver's revision and credential effects, in order, as "Op target".
func effects(sim *simulated.Driver, agent string, revisions ...string) []string {
	var out []string
	for _, c := range sim.History() {
		switch c.Op {
		case simulated.OpPrepareRevision, simulated.OpStopRevision, simulated.OpRetireRevision, simulated.OpActivateRevision:
			if slices.Contains(revisions, c.Target) {
				out = append(out, string(c.Op)+" "+c.Target)
			}
		case simulated.OpDeleteAgentRuntimeCredentials:
			if c.Target == agent {
				out = append(out, string(c.Op))
			}
		}
	}
	return out
}

// ---- Agent stop and delete ----

func TestAgentFullLifecycleDeployStopDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	rec := &recorder{}
	w := h.startAgentWorker(workerOptions{}, nil, rec)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	// The Agent's principal holds a grant that must disappear with it.
	spBinding := h.grant(ns, f.spn, "secret", "", "operate")

	rev := f.deploy(h.admin)
	if st, code := h.waitWork(platform.RevisionWorkKey(rev)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("deploy: %s %s", st, code)
	}
	if f.active() != rev || w.sim.RoutedRevision(f.id) != rev {
		t.Fatalf("active %q routed %q, want %s", f.active(), w.sim.RoutedRevision(f.id), rev)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.lifecycle.activate' AND resource_id = $1`, rev); n != 1 {
		t.Fatalf("%d activation audits", n)
	}

	stopKey := f.stop(h.admin)
	if st, code := h.waitWork(stopKey); st != queue.StateSucceeded || code != "AGENT_STOPPED" {
		t.Fatalf("stop: %s %s", st, code)
	}
	if f.active() != "" {
		t.Fatal("the active pointer survived the stop")
	}
	if h.count(`SELECT count(*) FROM occ.agent_revisions WHERE id = $1`, rev) != 1 {
		t.Fatal("the stop removed the revision")
	}
	if st, _ := w.sim.Revision(rev); st.Phase != simulated.PhaseStopped {
		t.Fatalf("revision phase %s after stop", st.Phase)
	}

	delKey := f.remove(h.admin)
	wait.Eventually(t, wait.Medium, "agent removed", func() bool {
		return h.count(`SELECT count(*) FROM occ.agents WHERE id = $1`, f.id) == 0
	})
	for what, n := range map[string]int{
		"revisions": h.count(`SELECT count(*) FROM occ.agent_revisions WHERE agent_id = $1`, f.id),
		"principal": h.count(`SELECT count(*) FROM occ.iam_identities WHERE id = $1`, f.spn),
		"bindings":  h.count(`SELECT count(*) FROM occ.iam_access_bindings WHERE id = $1 OR identity_subject_id = $2`, spBinding, f.spn),
		"work":      h.count(`SELECT count(*) FROM occ.controller_work WHERE agent_id = $1 OR idempotency_key IN ($2, $3)`, f.id, delKey, stopKey),
	} {
		if n != 0 {
			t.Errorf("%d %s left after deletion", n, what)
		}
	}
	if h.count(`SELECT count(*) FROM occ.configurations WHERE id = $1`, f.cfg) != 1 {
		t.Error("the Namespace's Configuration did not survive the Agent")
	}
	var codes []string
	rows, err := h.owner.Query(context.Background(), `SELECT details->>'reasonCode' FROM occ.audit_events
	  WHERE resource_id = $1 AND action IN ('openclaw.agents.lifecycle.stop', 'openclaw.agents.lifecycle.delete') ORDER BY occurred_at`, f.id)
	if err != nil {
		t.Fatal(err)
	}
	codes, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(codes, ",") != "AGENT_STOPPED,AGENT_DELETED" {
		t.Fatalf("lifecycle audits %v", codes)
	}
	got := effects(w.sim, f.id, rev)
	want := []string{"PrepareRevision " + rev, "ActivateRevision " + rev, "StopRevision " + rev, "RetireRevision " + rev, "DeleteAgentRuntimeCredentials"}
	if !slices.Equal(got, want) {
		t.Fatalf("effects %v, want %v", got, want)
	}
	wait.Eventually(t, wait.Short, "three agent operation durations", func() bool { return len(rec.ops()) == 3 })
	if ops := rec.ops(); !slices.Equal(ops, []string{"deploy", "stop", "delete"}) {
		t.Fatalf("agent operations %v", ops)
	}
	// worker.completed of the three passes.
	wait.Eventually(t, wait.Short, "three agent completions", func() bool {
		n := 0
		for _, ev := range w.logs.Events("worker.completed") {
			if ev["agentId"] == f.id {
				n++
			}
		}
		return n == 3
	})
	for _, ev := range w.logs.Events("worker.completed") {
		if ev["agentId"] != f.id {
			continue
		}
		switch ev["operation"] {
		case "agent_revision.reconcile":
			if ev["revisionId"] != rev || ev["code"] != "REVISION_ACTIVATED" || ev["deployPasses"] != float64(1) ||
				ev["prepareMs"] == nil || ev["readinessWaitMs"] == nil || ev["activationMs"] == nil || ev["elapsedMs"] == nil {
				t.Errorf("deploy completion %v", ev)
			}
		case "agent.stop", "agent.delete":
			if ev["outcome"] != "success" || ev["deployPasses"] != nil {
				t.Errorf("lifecycle completion %v", ev)
			}
		}
	}
}

func TestStopAndDeleteAfterRevocationFailWithoutEffects(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w := h.startAgentWorker(workerOptions{}, nil, nil)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev := f.deploy(h.admin)
	if st, code := h.waitWork(platform.RevisionWorkKey(rev)); st != queue.StateSucceeded {
		t.Fatalf("deploy: %s %s", st, code)
	}
	// An operator held operate and delete on the Agent; the grant is revoked after admission, in
	// the admitting transaction, so that no worker can see the work while the grant still exists.
	operator := h.principal()
	binding := h.grant(ns, operator, "agent", f.id, "operate", "delete")
	work := fixture.AgentStopWork(f.row, uuid.NewString(), operator)
	f.admit(func(ctx context.Context, _ *fixture.Factory, tx pgx.Tx) (fixture.Work, error) {
		if _, err := store.SetAgentDesiredState(ctx, tx, store.SetAgentDesiredStateParams{
			NamespaceID: f.ns, AgentID: f.id, State: platform.RuntimeStopped}); err != nil {
			return work, err
		}
		_, err := store.DeleteBinding(ctx, tx, binding)
		return work, err
	})
	stopKey := work.Key()
	if st, code := h.waitWork(stopKey); st != queue.StateFailedPermanent || code != "AUTHORIZATION_DENIED" {
		t.Fatalf("stop: %s %s", st, code)
	}
	if n := h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, stopKey); n != 1 {
		t.Fatalf("stop failed at attempt %d", n)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND action = 'openclaw.agents.stop'
	   AND actor_id = $1 AND details->>'reasonCode' = 'AUTHORIZATION_DENIED'`, operator); n != 1 {
		t.Fatalf("%d stop denial audits", n)
	}
	if f.active() != rev || w.sim.Calls(simulated.OpStopRevision, rev) != 0 {
		t.Fatal("a denied stop had an effect")
	}

	delKey := f.remove(operator)
	if st, code := h.waitWork(delKey); st != queue.StateFailedPermanent || code != "AUTHORIZATION_DENIED" {
		t.Fatalf("delete: %s %s", st, code)
	}
	if n := h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, delKey); n != 1 {
		t.Fatalf("delete failed at attempt %d", n)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND action = 'openclaw.agents.delete' AND actor_id = $1`, operator); n != 1 {
		t.Fatalf("%d delete denial audits", n)
	}
	if h.scalar(`SELECT status FROM occ.agents WHERE id = $1`, f.id) != "deleting" || f.active() != rev ||
		w.sim.Calls(simulated.OpRetireRevision, rev) != 0 || w.sim.Calls(simulated.OpDeleteAgentRuntimeCredentials, f.id) != 0 {
		t.Fatal("a denied deletion had an effect")
	}

	// Takeover: the administrator retries the failed deletion through the SQL function.
	var requeued bool
	if err := h.app.QueryRow(context.Background(), `SELECT occ.retry_failed_agent_deletion($1, $2, $3, $4)`, ns, f.id, operator, h.admin).Scan(&requeued); err != nil || !requeued {
		t.Fatalf("retry: %v %v", requeued, err)
	}
	wait.Eventually(t, wait.Medium, "agent removed after takeover", func() bool {
		return h.count(`SELECT count(*) FROM occ.agents WHERE id = $1`, f.id) == 0
	})
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.lifecycle.delete' AND resource_id = $1
	   AND details->>'reasonCode' = 'AGENT_DELETED' AND actor_id = $2`, f.id, h.admin); n != 1 {
		t.Fatalf("%d deletion audits by the new actor", n)
	}
}

func TestDeletionRetriesAFailedRetirementThenFinishes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	w := h.startAgentWorker(workerOptions{sim: sim, maxAttempts: 2}, nil, nil)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev))
	// A refused HTTP request, as the Kubernetes driver reports a 403: the log keeps its status and
	// Status reason.
	forbidden := &driver.RetryableError{Code: "KUBERNETES_API_REJECTED", Reason: "A Kubernetes API request failed with HTTP status 403.",
		Status: 403, StatusReason: "Forbidden"}
	sim.InjectRevision(rev, simulated.Fault{Err: forbidden}.On(simulated.OpRetireRevision).For(2))
	delKey := f.remove(h.admin)
	if st, code := h.waitWork(delKey); st != queue.StateFailedPermanent || code != "DEPENDENCY_UNAVAILABLE" {
		t.Fatalf("delete: %s %s", st, code)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.lifecycle.delete' AND resource_id = $1 AND outcome = 'failure'`, f.id); n != 1 {
		t.Fatalf("%d terminal failure audits", n)
	}
	var last map[string]any
	wait.Eventually(t, wait.Short, "the exhausted attempt logged", func() bool {
		for _, ev := range w.logs.Events("worker.completed") {
			if ev["operation"] == "agent.delete" && ev["attempt"] == float64(2) {
				last = ev
			}
		}
		return last != nil
	})
	if last["outcome"] != "permanent" || last["result"] != "retry" || last["code"] != "DEPENDENCY_UNAVAILABLE" ||
		last["status"] != float64(403) || last["reason"] != "Forbidden" {
		t.Fatalf("exhausted deletion logged %v", last)
	}
	// The initiator retries; the retirement now succeeds.
	var requeued bool
	if err := h.app.QueryRow(context.Background(), `SELECT occ.retry_failed_agent_deletion($1, $2, $3, $3)`, ns, f.id, h.admin).Scan(&requeued); err != nil || !requeued {
		t.Fatalf("retry: %v %v", requeued, err)
	}
	wait.Eventually(t, wait.Medium, "agent removed", func() bool {
		return h.count(`SELECT count(*) FROM occ.agents WHERE id = $1`, f.id) == 0
	})
}

func TestStopCleansUpEarlierRevisionsAndNotLaterOnes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	w := h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))
	// rev2 is a failed candidate: the driver refused it while preparing.
	rev2 := f.deploy(h.admin)
	sim.InjectRevision(rev2, simulated.Permanent("IMAGE_REFUSED", "refused").On(simulated.OpPrepareRevision))
	if st, code := h.waitWork(platform.RevisionWorkKey(rev2)); st != queue.StateFailedPermanent || code != "IMAGE_REFUSED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	stopKey := f.stop(h.admin)
	if st, code := h.waitWork(stopKey); st != queue.StateSucceeded || code != "AGENT_STOPPED" {
		t.Fatalf("stop: %s %s", st, code)
	}
	// The active rev1 is stopped first, then the failed candidate rev2.
	got := effects(w.sim, f.id, rev1, rev2)
	stops := slices.DeleteFunc(got, func(s string) bool { return !strings.HasPrefix(s, "StopRevision") })
	if !slices.Equal(stops, []string{"StopRevision " + rev1, "StopRevision " + rev2}) {
		t.Fatalf("stops %v", stops)
	}
	if f.active() != "" {
		t.Fatal("pointer kept")
	}
	// A second stop finds nothing active.
	again := f.stop(h.admin)
	if _, code := h.waitWork(again); code != "AGENT_ALREADY_STOPPED" {
		t.Fatalf("second stop %s", code)
	}
	// A deploy admitted after a stop, before the stop ran, supersedes it: nothing is stopped.
	rev3 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev3))
	w.stop()
	late := f.stop(h.admin)
	rev4 := f.deploy(h.admin)
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	if st, code := h.waitWork(late); st != queue.StateSucceeded || code != "STOP_SUPERSEDED" {
		t.Fatalf("late stop: %s %s", st, code)
	}
	if st, code := h.waitWork(platform.RevisionWorkKey(rev4)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("rev4: %s %s", st, code)
	}
	if f.active() != rev4 || sim.Calls(simulated.OpStopRevision, rev3) != 0 {
		t.Fatalf("active %s, rev3 stopped %d times", f.active(), sim.Calls(simulated.OpStopRevision, rev3))
	}
}

func TestFailedStopRetriesTheIdempotentStops(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	w := h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev))
	release := make(chan struct{})
	fault := simulated.Retryable("ENGINE_BUSY", "busy")
	fault.Release = release
	sim.InjectRevision(rev, fault.On(simulated.OpStopRevision).Once())
	key := f.stop(h.admin)
	waitCalls(t, sim, simulated.OpStopRevision, rev, 1)
	close(release)
	wait.Eventually(t, wait.Short, "the failed stop retried", func() bool { return h.evidence(key, "DEPENDENCY_UNAVAILABLE") == 1 })
	if st, code := h.waitWork(key); st != queue.StateSucceeded || code != "AGENT_STOPPED" {
		t.Fatalf("%s %s", st, code)
	}
	if n := h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, key); n != 2 {
		t.Fatalf("stopped at attempt %d", n)
	}
	if f.active() != "" || sim.Calls(simulated.OpStopRevision, rev) != 2 {
		t.Fatal("stop did not converge")
	}
	wait.Eventually(t, wait.Short, "the retry logged", func() bool {
		for _, ev := range w.logs.Events("worker.completed") {
			if ev["workId"] == key && ev["outcome"] == "retry" && ev["cause"] == "RetryableError" {
				return true
			}
		}
		return false
	})
}
