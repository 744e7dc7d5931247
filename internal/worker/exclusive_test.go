package worker_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// exclusiveSim is a simulated driver that requires stopped predecessors for every revision.
func exclusiveSim(opts simulated.Options) *simulated.Driver {
	return simulated.New("compute-simulated", simulated.Config{StoppedPredecessors: simulated.StoppedPredecessorsAlways}, opts)
}

// completions returns the worker.completed lines of one work item, in order.
func (w *runningWorker) completions(key string) []map[string]any {
	var out []map[string]any
	for _, ev := range w.logs.Events("worker.completed") {
		if ev["workId"] == key {
			out = append(out, ev)
		}
	}
	return out
}

// waitCompletion waits for the worker.completed line of key with code (it follows the commit).
func (w *runningWorker) waitCompletion(t *testing.T, key, code string) map[string]any {
	t.Helper()
	var line map[string]any
	wait.Eventually(t, wait.Medium, "the "+code+" line of "+key, func() bool {
		for _, ev := range w.completions(key) {
			if ev["code"] == code {
				line = ev
				return true
			}
		}
		return false
	})
	return line
}

func (w *runningWorker) linesWithCode(key, code string) []map[string]any {
	var out []map[string]any
	for _, ev := range w.completions(key) {
		if ev["code"] == code {
			out = append(out, ev)
		}
	}
	return out
}

func (h *harness) attempts(key string) int {
	return h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, key)
}

// callIndex is the position of the first (or last) call op on target in the history, -1 if none.
func callIndex(history []simulated.Call, op simulated.Op, target string, last bool) int {
	at := -1
	for i, c := range history {
		if c.Op == op && c.Target == target {
			at = i
			if !last {
				return at
			}
		}
	}
	return at
}

func TestExclusiveRedeployStopsThePredecessorBeforePreparing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev1, rev2 := newRevisionID(), newRevisionID()
	var (
		sim     *simulated.Driver
		mu      sync.Mutex
		overlap []string
	)
	// Whenever a revision is prepared or activated, no other revision of the Agent may run.
	sim = exclusiveSim(simulated.Options{OnCall: func(c simulated.Call) {
		if c.Op != simulated.OpPrepareRevision && c.Op != simulated.OpActivateRevision {
			return
		}
		for _, other := range []string{rev1, rev2} {
			if st, ok := sim.Revision(other); ok && other != c.Target && st.Phase == simulated.PhasePrepared {
				mu.Lock()
				overlap = append(overlap, string(c.Op)+" "+c.Target+" while "+other+" runs")
				mu.Unlock()
			}
		}
	}})
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	f.deployAs(h.admin, rev1, f.spec())
	if st, code := h.waitWork(platform.RevisionWorkKey(rev1)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("rev1: %s %s", st, code)
	}
	f.deployAs(h.admin, rev2, f.spec())
	if st, code := h.waitWork(platform.RevisionWorkKey(rev2)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	history := sim.History()
	stop, prepare := callIndex(history, simulated.OpStopRevision, rev1, false), callIndex(history, simulated.OpPrepareRevision, rev2, false)
	if stop < 0 || prepare < 0 || stop > prepare {
		t.Fatalf("predecessor stop at %d, candidate prepared at %d: %v", stop, prepare, history)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(overlap) != 0 {
		t.Fatalf("two revisions ran at once: %v", overlap)
	}
	if f.active() != rev2 || sim.RoutedRevision(f.id) != rev2 {
		t.Fatalf("active %q routed %q", f.active(), sim.RoutedRevision(f.id))
	}
	if st, _ := sim.Revision(rev1); st.Phase != simulated.PhaseRetired {
		t.Fatalf("predecessor %s", st.Phase)
	}
}

func TestPredecessorStopYieldWaitsWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	sim := exclusiveSim(simulated.Options{})
	w := h.startAgentWorker(workerOptions{sim: sim, maxAttempts: 2}, nil, nil)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))

	sim.YieldStops(rev1, 3) // the predecessor's Pods take three passes to terminate
	rev2 := newRevisionID()
	key := platform.RevisionWorkKey(rev2)
	f.deployAs(h.admin, rev2, f.spec())
	done := w.waitCompletion(t, key, "REVISION_ACTIVATED")
	if st, code := h.waitWork(key); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	if n := h.attempts(key); n != 1 {
		t.Fatalf("attempt %d after three yields", n)
	}
	if h.evidence(key, "PREDECESSOR_STOP_YIELDED") != 1 {
		t.Fatal("yield evidence missing (or repeated)")
	}
	// Only the first yield is logged (the others came within a minute), with the count so far; the
	// next other line carries the total.
	yields := w.linesWithCode(key, "PREDECESSOR_STOP_YIELDED")
	if len(yields) != 1 || yields[0]["outcome"] != "pending" || yields[0]["stopYields"] != float64(1) ||
		yields[0]["cause"] != "StopYieldedError" {
		t.Fatalf("yield lines %v", yields)
	}
	if done["stopYields"] != float64(3) || done["deployPasses"] != float64(4) {
		t.Fatalf("completion %v", done)
	}
	history := sim.History()
	if n := sim.Calls(simulated.OpStopRevision, rev1); n != 4 {
		t.Fatalf("%d stops of the predecessor, want three yields and one stop", n)
	}
	if last, prepare := callIndex(history, simulated.OpStopRevision, rev1, true), callIndex(history, simulated.OpPrepareRevision, rev2, false); prepare < last {
		t.Fatalf("the candidate was prepared (%d) before its predecessor stopped (%d)", prepare, last)
	}
	if f.active() != rev2 || sim.RoutedRevision(f.id) != rev2 {
		t.Fatalf("active %q routed %q", f.active(), sim.RoutedRevision(f.id))
	}
}

func TestAgentStopYieldWaitsThenStops(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	sim := exclusiveSim(simulated.Options{})
	w := h.startAgentWorker(workerOptions{sim: sim, maxAttempts: 2}, nil, nil)
	rev := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev))

	sim.YieldStops(rev, 2)
	key := f.stop(h.admin)
	done := w.waitCompletion(t, key, "AGENT_STOPPED")
	if st, code := h.waitWork(key); st != queue.StateSucceeded || code != "AGENT_STOPPED" {
		t.Fatalf("stop: %s %s", st, code)
	}
	if n := h.attempts(key); n != 1 {
		t.Fatalf("attempt %d after two yields", n)
	}
	if h.evidence(key, "AGENT_STOP_YIELDED") != 1 {
		t.Fatal("yield evidence missing (or repeated)")
	}
	yields := w.linesWithCode(key, "AGENT_STOP_YIELDED")
	if len(yields) != 1 || yields[0]["outcome"] != "pending" || yields[0]["stopYields"] != float64(1) {
		t.Fatalf("yield lines %v", yields)
	}
	if done["stopYields"] != float64(2) {
		t.Fatalf("completion %v", done)
	}
	if sim.Calls(simulated.OpStopRevision, rev) != 3 || f.active() != "" {
		t.Fatalf("%d stops, active %q", sim.Calls(simulated.OpStopRevision, rev), f.active())
	}
	if st, _ := sim.Revision(rev); st.Phase != simulated.PhaseStopped {
		t.Fatalf("revision %s", st.Phase)
	}
	// Only one lifecycle audit: the waits are not terminal.
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.lifecycle.stop' AND details->>'workId' = $1`, key); n != 1 {
		t.Fatalf("%d stop audits", n)
	}
}

func TestRefusedCandidateStopPendingUntilTheStopSucceeds(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	sim := exclusiveSim(simulated.Options{})
	w := h.startAgentWorker(workerOptions{sim: sim, maxAttempts: 2}, nil, nil)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))

	// The candidate starts, then Compute refuses it for good; its stop fails twice.
	rev2 := newRevisionID()
	const refusal = "SIMULATED_PLACEMENT_REFUSED"
	sim.InjectRevision(rev2, simulated.NotReady("").On(simulated.OpPrepareRevision).Once())
	sim.InjectRevision(rev2, simulated.Permanent(refusal, "The simulated placement was refused.").On(simulated.OpPrepareRevision).Once())
	sim.FailStops(rev2, 2)
	key := platform.RevisionWorkKey(rev2)
	f.deployAs(h.admin, rev2, f.spec())

	if st, code := h.waitWork(key); st != queue.StateFailedPermanent || code != refusal {
		t.Fatalf("rev2: %s %s", st, code)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'reconcile' AND details->>'workId' = $1
	   AND details->>'reasonCode' = 'REFUSED_CANDIDATE_STOP_PENDING' AND details->>'refusal' = $2 AND details->'stopYielded' IS NULL`, key, refusal); n != 2 {
		t.Fatalf("%d refused-stop waits recorded, want one per failed stop", n)
	}
	if n := h.attempts(key); n != 1 {
		t.Fatalf("attempt %d: the stop waits must not spend attempts", n)
	}
	w.waitCompletion(t, key, refusal)
	waits := w.linesWithCode(key, "REFUSED_CANDIDATE_STOP_PENDING")
	if len(waits) != 2 {
		for _, ev := range w.logs.Events("") {
			if ev["workId"] == key {
				t.Logf("line of %s: %v", key, ev)
			}
		}
		t.Fatalf("%d wait lines", len(waits))
	}
	for _, ev := range waits {
		if ev["outcome"] != "pending" || ev["refusal"] != refusal || ev["cause"] != simulated.CodeStopFailed || ev["stopYields"] != nil {
			t.Fatalf("wait line %v", ev)
		}
	}
	if n := sim.Calls(simulated.OpStopRevision, rev2); n != 3 {
		t.Fatalf("%d stops of the refused candidate", n)
	}
	if st, _ := sim.Revision(rev2); st.Phase != simulated.PhaseStopped {
		t.Fatalf("refused candidate %s", st.Phase)
	}
	// The pointer never moved to the refused candidate; its predecessor was stopped before it started.
	if f.active() != rev1 || sim.RoutedRevision(f.id) != "" || h.activationAudits(rev2) != 0 {
		t.Fatalf("active %q routed %q", f.active(), sim.RoutedRevision(f.id))
	}
	if st, _ := sim.Revision(rev1); st.Phase != simulated.PhaseStopped {
		t.Fatalf("predecessor %s", st.Phase)
	}
}

func TestFailedDeploymentAddsPredecessorStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev1 := newRevisionID()
	var (
		sim   *simulated.Driver
		mu    sync.Mutex
		stops int
		armed bool
	)
	sim = exclusiveSim(simulated.Options{OnCall: func(c simulated.Call) {
		if c.Op != simulated.OpStopRevision || c.Target != rev1 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		stops++
		if stops == 2 && armed {
			sim.FailStops(rev1, 100) // after the first yield, the predecessor's stop keeps failing
		}
	}})
	w := h.startAgentWorker(workerOptions{sim: sim, maxAttempts: 2}, nil, nil)
	f.deployAs(h.admin, rev1, f.spec())
	h.waitWork(platform.RevisionWorkKey(rev1))

	mu.Lock()
	armed, stops = true, 0
	mu.Unlock()
	sim.YieldStops(rev1, 1)
	rev2 := f.deploy(h.admin)
	key := platform.RevisionWorkKey(rev2)
	if st, code := h.waitWork(key); st != queue.StateFailedPermanent || code != "DEPENDENCY_UNAVAILABLE" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	w.waitCompletion(t, key, "DEPENDENCY_UNAVAILABLE")
	lines := w.completions(key)
	wait.Eventually(t, wait.Short, "three passes logged", func() bool { lines = w.completions(key); return len(lines) == 3 })
	codes := []string{}
	for _, ev := range lines {
		codes = append(codes, ev["code"].(string))
	}
	if !slices.Equal(codes, []string{"PREDECESSOR_STOP_YIELDED", "DEPENDENCY_UNAVAILABLE", "DEPENDENCY_UNAVAILABLE"}) {
		t.Fatalf("codes %v", codes)
	}
	// The first retry is the next other line after the yield: it carries stopYields; the failed
	// deployment tried to finish the stop and says why it still fails.
	if lines[1]["stopYields"] != float64(1) || lines[1]["predecessorStop"] != nil {
		t.Fatalf("retry line %v", lines[1])
	}
	last := lines[2]
	if last["predecessorStop"] != simulated.CodeStopFailed || last["stopYields"] != nil {
		t.Fatalf("final line %v", last)
	}
	mu.Lock()
	defer mu.Unlock()
	// One yield, one failed sweep per retry, and the finishing stop with the full wait.
	if stops != 4 {
		t.Fatalf("%d predecessor stops", stops)
	}
	if sim.Calls(simulated.OpPrepareRevision, rev2) != 0 {
		t.Fatal("the candidate was prepared next to a live predecessor")
	}
}

func TestLiftedRefusalContinuesTheDeployment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	user := h.principal()
	deployGrant := h.grant(ns, user, "agent", f.id, "deploy")
	h.grant(ns, user, "configuration", f.cfg, "read")
	rev2 := newRevisionID()
	var (
		revoke, regrant sync.Once
		role            string
	)
	sim := exclusiveSim(simulated.Options{OnCall: func(c simulated.Call) {
		switch {
		case c.Op == simulated.OpPrepareRevision && c.Target == rev2:
			// The actor loses deploy while the candidate starts: the next pass refuses it.
			revoke.Do(func() {
				if err := h.owner.QueryRow(ctx, `DELETE FROM occ.iam_access_bindings WHERE id = $1 RETURNING role_id`, deployGrant).Scan(&role); err != nil {
					t.Error(err)
				}
			})
		case c.Op == simulated.OpStopRevision && c.Target == rev2:
			// ... and gets it back while the refused candidate's stop is failing.
			regrant.Do(func() {
				if _, err := h.owner.Exec(ctx, `INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
				   VALUES ('binding_' || gen_random_uuid()::text, $1, $2, $3, 'agent', $4)`, ns, user, role, f.id); err != nil {
					t.Error(err)
				}
			})
		}
	}})
	w := h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))

	sim.ReadyAfterObservations(rev2, 1)
	sim.FailStops(rev2, 1)
	key := platform.RevisionWorkKey(rev2)
	f.deployAs(user, rev2, f.spec())
	if st, code := h.waitWork(key); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	wait := w.waitCompletion(t, key, "REFUSED_CANDIDATE_STOP_PENDING")
	if wait["refusal"] != "AUTHORIZATION_DENIED" || wait["outcome"] != "pending" {
		t.Fatalf("wait line %v", wait)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'reconcile' AND details->>'workId' = $1
	   AND details->>'refusal' = 'AUTHORIZATION_DENIED'`, key); n != 1 {
		t.Fatalf("%d refusal waits recorded", n)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND action = 'openclaw.agents.deploy' AND actor_id = $1`, user); n != 1 {
		t.Fatalf("%d denial audits", n)
	}
	// The lifted refusal let the candidate start again and activate.
	if f.active() != rev2 || sim.RoutedRevision(f.id) != rev2 || h.activationAudits(rev2) != 1 {
		t.Fatalf("active %q routed %q", f.active(), sim.RoutedRevision(f.id))
	}
}

func TestDedicatedModeLeavesEmbeddedRevisionsShared(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns) // embedded: not exclusive under stoppedPredecessors dedicated
	sim := simulated.New("compute-simulated", simulated.Config{StoppedPredecessors: simulated.StoppedPredecessorsDedicated}, simulated.Options{})
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))
	rev2 := f.deploy(h.admin)
	if st, code := h.waitWork(platform.RevisionWorkKey(rev2)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	if n := sim.Calls(simulated.OpStopRevision, rev1); n != 0 {
		t.Fatalf("%d stops of a shared predecessor", n)
	}
	if got, want := effects(sim, f.id, rev1, rev2), []string{"PrepareRevision " + rev1, "ActivateRevision " + rev1,
		"PrepareRevision " + rev2, "ActivateRevision " + rev2, "RetireRevision " + rev1}; !slices.Equal(got, want) {
		t.Fatalf("effects %v, want %v", got, want)
	}
}

func TestRefusedStopWaitSurvivesALostClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	sim := exclusiveSim(simulated.Options{})
	w := h.startAgentWorker(workerOptions{sim: sim, lease: 2 * time.Second}, nil, nil)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))

	const refusal = "SIMULATED_PLACEMENT_REFUSED"
	rev2 := newRevisionID()
	key := platform.RevisionWorkKey(rev2)
	sim.InjectRevision(rev2, simulated.Permanent(refusal, "The simulated placement was refused.").On(simulated.OpPrepareRevision).Once())
	sim.FailStops(rev2, 1)
	f.deployAs(h.admin, rev2, f.spec())
	w.waitCompletion(t, key, "REFUSED_CANDIDATE_STOP_PENDING")

	// The next stop hangs while another worker takes the claim over; then that claim expires too.
	release := make(chan struct{})
	defer close(release)
	sim.InjectRevision(rev2, simulated.Block(release).On(simulated.OpStopRevision).Once())
	waitCalls(t, sim, simulated.OpStopRevision, rev2, 2)
	if _, err := h.owner.Exec(ctx, `UPDATE occ.controller_work SET claim_token = gen_random_uuid(),
	   lease_expires_at = clock_timestamp() + interval '1 hour' WHERE idempotency_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, wait.Short, "CLAIM_LOST", func() bool {
		for _, ev := range w.logs.Events("worker.error") {
			if ev["code"] == "CLAIM_LOST" && ev["workId"] == key {
				return true
			}
		}
		return false
	})
	if _, err := h.owner.Exec(ctx, `UPDATE occ.controller_work SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE idempotency_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	// Recovery writes LEASE_EXPIRED without the refusal; the wait behind it still holds: the
	// candidate is stopped and the refusal published, it is never prepared again.
	if st, code := h.waitWork(key); st != queue.StateFailedPermanent || code != refusal {
		t.Fatalf("rev2: %s %s", st, code)
	}
	if h.evidence(key, queue.CodeLeaseExpired) != 1 {
		t.Fatal("no LEASE_EXPIRED evidence")
	}
	if n := sim.Calls(simulated.OpPrepareRevision, rev2); n != 1 {
		t.Fatalf("%d preparations of the refused candidate", n)
	}
	if f.active() != rev1 || h.activationAudits(rev2) != 0 {
		t.Fatalf("active %q", f.active())
	}
}
