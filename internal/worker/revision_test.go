package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/wait"
)

func (h *harness) activationAudits(rev string) int {
	return h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.lifecycle.activate' AND resource_id = $1`, rev)
}

func (h *harness) evidence(key, code string) int {
	return h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'reconcile' AND details->>'workId' = $1 AND details->>'reasonCode' = $2`, key, code)
}

func (h *harness) resultData(key string) map[string]any {
	h.t.Helper()
	raw := h.scalar(`SELECT result_data::text FROM occ.controller_work WHERE idempotency_key = $1`, key)
	if raw == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		h.t.Fatal(err)
	}
	return m
}

func waitCalls(t *testing.T, sim *simulated.Driver, op simulated.Op, target string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sim.WaitCalls(ctx, op, target, n); err != nil {
		t.Fatalf("waiting for %d %s calls on %s: %v", n, op, target, err)
	}
}

func TestStopAdmittedDuringPreparationPreventsActivation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	rev := newRevisionID()
	release := make(chan struct{})
	sim.InjectRevision(rev, simulated.Block(release).On(simulated.OpPrepareRevision).Once())
	f.deployAs(h.admin, rev, f.spec())
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	waitCalls(t, sim, simulated.OpPrepareRevision, rev, 1)
	stopKey := f.stop(h.admin)
	close(release)

	if st, code := h.waitWork(platform.RevisionWorkKey(rev)); st != queue.StateSucceeded || code != "REVISION_STOPPED" {
		t.Fatalf("deploy: %s %s", st, code)
	}
	if st, code := h.waitWork(stopKey); st != queue.StateSucceeded || code != "AGENT_ALREADY_STOPPED" {
		t.Fatalf("stop: %s %s", st, code)
	}
	if h.activationAudits(rev) != 0 || f.active() != "" || sim.Calls(simulated.OpActivateRevision, rev) != 0 {
		t.Fatal("a stopped candidate was activated")
	}
	// Both passes stop the candidate.
	if n := sim.Calls(simulated.OpStopRevision, rev); n != 2 {
		t.Fatalf("%d stops of the candidate", n)
	}
	if st, _ := sim.Revision(rev); st.Phase != simulated.PhaseStopped || sim.RoutedRevision(f.id) != "" {
		t.Fatalf("candidate %+v", st)
	}
}

func TestReplacementFailingAfterPublicationStaysActive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))

	rev2 := newRevisionID()
	sim.InjectRevision(rev2, simulated.Fault{Err: &driver.ActivationFailedError{Code: "AGENT_GATEWAY_UNAUTHORIZED"}}.On(simulated.OpActivateRevision))
	f.deployAs(h.admin, rev2, f.spec())
	if st, code := h.waitWork(platform.RevisionWorkKey(rev2)); st != queue.StateFailedPermanent || code != "AGENT_GATEWAY_UNAUTHORIZED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	// No rollback: the published replacement stays the active revision.
	if f.active() != rev2 {
		t.Fatalf("active %q, want the failed replacement %s", f.active(), rev2)
	}
	if h.activationAudits(rev2) != 0 {
		t.Fatal("a failed activation was audited as an activation")
	}
}

func TestClaimLostDuringRetirementKeepsTheReplacementAndAuditsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	// Two attempts: the takeover below spends the last one, so recovery grants the published
	// deployment its one extra attempt (ACTIVE_REVISION_RECOVERY).
	w := h.startAgentWorker(workerOptions{sim: sim, lease: 2 * time.Second, maxAttempts: 2}, nil, nil)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))

	release := make(chan struct{})
	defer close(release)
	sim.InjectRevision(rev1, simulated.Block(release).On(simulated.OpRetireRevision).Once())
	rev2 := newRevisionID()
	key := platform.RevisionWorkKey(rev2)
	f.deployAs(h.admin, rev2, f.spec())
	waitCalls(t, sim, simulated.OpRetireRevision, rev1, 1)
	// Another worker recovered and re-claimed the work while the retirement was in flight.
	if _, err := h.owner.Exec(ctx, `UPDATE occ.controller_work SET claim_token = gen_random_uuid(), attempt_count = 2,
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
	if f.active() != rev2 || h.workState(key) != queue.StateClaimed || h.activationAudits(rev2) != 0 {
		t.Fatalf("after the lost claim: active %q state %s audits %d", f.active(), h.workState(key), h.activationAudits(rev2))
	}
	// The usurper's lease runs out; recovery requeues and the already-active path finishes.
	if _, err := h.owner.Exec(ctx, `UPDATE occ.controller_work SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE idempotency_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	if st, code := h.waitWork(key); st != queue.StateSucceeded || code != "REVISION_ALREADY_ACTIVE" {
		t.Fatalf("recovered: %s %s", st, code)
	}
	if f.active() != rev2 || h.activationAudits(rev2) != 1 {
		t.Fatalf("active %q, %d activation audits", f.active(), h.activationAudits(rev2))
	}
	if h.evidence(key, queue.CodeActiveRevisionRecovery) != 1 {
		t.Fatal("recovery did not grant ACTIVE_REVISION_RECOVERY")
	}
	if st, _ := sim.Revision(rev1); st.Phase != simulated.PhaseRetired {
		t.Fatalf("predecessor %s", st.Phase)
	}
	if sim.RoutedRevision(f.id) != rev2 {
		t.Fatal("the replacement lost its route")
	}
}

func TestConvergenceDeadlineFailsTheDeploymentWithoutActivating(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	// Never ready, with runtime evidence that does not end the deployment by itself.
	slow := h.newAgent(ns)
	rev := newRevisionID()
	sim.InjectRevision(rev, simulated.RuntimeFailure("GATEWAY_WARMING").On(simulated.OpPrepareRevision))
	slow.deployAs(h.admin, rev, slow.spec())
	// A dependency that stays unavailable ends with its own code.
	cut := h.newAgent(ns)
	cutRev := newRevisionID()
	sim.InjectRevision(cutRev, simulated.Transient(driver.DependencyKubernetesAPI, driver.CodeKubernetesAPIUnavailable).On(simulated.OpPrepareRevision))
	cut.deployAs(h.admin, cutRev, cut.spec())
	h.startAgentWorker(workerOptions{sim: sim, convergence: 1200 * time.Millisecond}, nil, nil)

	key := platform.RevisionWorkKey(rev)
	if st, code := h.waitWork(key); st != queue.StateFailedPermanent || code != "CONVERGENCE_DEADLINE_EXCEEDED" {
		t.Fatalf("deadline: %s %s", st, code)
	}
	data := h.resultData(key)
	rf, _ := data["runtimeFailure"].(map[string]any)
	if data["timeoutMs"] != float64(1200) || len(data) != 2 || rf["code"] != "GATEWAY_WARMING" || rf["cause"] != nil {
		t.Fatalf("result data %v", data)
	}
	if sim.Calls(simulated.OpPrepareRevision, rev) < 2 {
		t.Fatal("the deadline fired before any pending recheck")
	}
	if h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, key) != 1 {
		t.Fatal("pending passes spent attempts")
	}
	if slow.active() != "" || sim.Calls(simulated.OpActivateRevision, rev) != 0 || h.activationAudits(rev) != 0 {
		t.Fatal("an expired deployment was activated")
	}
	if st, code := h.waitWork(platform.RevisionWorkKey(cutRev)); st != queue.StateFailedPermanent || code != driver.CodeKubernetesAPIUnavailable {
		t.Fatalf("dependency deadline: %s %s", st, code)
	}
	if h.resultData(platform.RevisionWorkKey(cutRev)) != nil {
		t.Fatal("a dependency deadline stored result data")
	}
}

func TestHeldRuntimeFailuresEndTheDeploymentAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	want := map[string]string{
		driver.RuntimeAuthenticationFailed: "RUNTIME_AUTHENTICATION_FAILED",
		driver.RuntimeModelProbeCPUStarved: "RUNTIME_CPU_STARVED",
		driver.RuntimeModelProbeTimeout:    "RUNTIME_MODEL_PROBE_TIMEOUT",
		driver.RuntimeModelProbeFailed:     "RUNTIME_MODEL_PROBE_FAILED",
		driver.RuntimeLoginFailed:          "RUNTIME_LOGIN_FAILED",
		driver.RuntimeUnavailable:          "RUNTIME_STARTUP_FAILED",
		driver.RuntimeIncompatibleResponse: "RUNTIME_STARTUP_FAILED",
	}
	keys := map[string]string{}
	for runtimeCode := range want {
		f := h.newAgent(ns)
		rev := newRevisionID()
		sim.InjectRevision(rev, simulated.RuntimeFailure(runtimeCode).On(simulated.OpPrepareRevision))
		f.deployAs(h.admin, rev, f.spec())
		keys[runtimeCode] = platform.RevisionWorkKey(rev)
	}
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	for runtimeCode, key := range keys {
		st, code := h.waitWork(key)
		if st != queue.StateFailedPermanent || code != want[runtimeCode] {
			t.Errorf("%s: %s %s", runtimeCode, st, code)
		}
		if n := h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, key); n != 1 {
			t.Errorf("%s: ended at attempt %d", runtimeCode, n)
		}
		data := h.resultData(key)
		if runtimeCode == driver.RuntimeModelProbeFailed {
			rf, _ := data["runtimeFailure"].(map[string]any)
			cause, _ := rf["cause"].(map[string]any)
			if len(data) != 1 || rf["code"] != driver.RuntimeModelProbeFailed || cause["kind"] != driver.CauseProbeStatus {
				t.Errorf("model probe failure data %v", data)
			}
		} else if data != nil {
			t.Errorf("%s: result data %v", runtimeCode, data)
		}
	}
	if sim.Calls(simulated.OpActivateRevision, "") != 0 {
		t.Fatal("a failed runtime was activated")
	}
}

func TestRedeployingTwiceQuicklyNeverLeavesBothActive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	rev1 := newRevisionID()
	sim.ReadyAfterObservations(rev1, 1) // the first deployment is still converging when the second arrives
	f.deployAs(h.admin, rev1, f.spec())
	rev2 := f.deploy(h.admin)
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)

	_, code1 := h.waitWork(platform.RevisionWorkKey(rev1))
	if st, code := h.waitWork(platform.RevisionWorkKey(rev2)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	if f.active() != rev2 || sim.RoutedRevision(f.id) != rev2 {
		t.Fatalf("active %q routed %q", f.active(), sim.RoutedRevision(f.id))
	}
	st1, _ := sim.Revision(rev1)
	switch code1 {
	case "REVISION_SUPERSEDED":
		if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.lifecycle.supersede' AND resource_id = $1`, rev1); n != 1 {
			t.Fatalf("%d supersede audits", n)
		}
		if st1.Phase == simulated.PhasePrepared {
			t.Fatal("the superseded revision still runs")
		}
	case "REVISION_ACTIVATED":
		if st1.Phase != simulated.PhaseRetired {
			t.Fatalf("the older revision was activated and not retired: %s", st1.Phase)
		}
	default:
		t.Fatalf("rev1 ended %s", code1)
	}
	// The pointer only ever named one revision at a time and ends on the newest; the older one never
	// kept running next to it.
	if n := h.count(`SELECT count(*) FROM occ.agent_revisions WHERE agent_id = $1`, f.id); n != 2 {
		t.Fatalf("%d revisions", n)
	}
	t.Logf("older deployment ended %s (phase %s)", code1, st1.Phase)
}

func TestActiveRevisionChangedIsACountedRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev2 := newRevisionID()
	var once sync.Once
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{OnCall: func(c simulated.Call) {
		if c.Op == simulated.OpPrepareRevision && c.Target == rev2 {
			// The pointer moves between the pass's read and its commit.
			once.Do(func() {
				if _, err := h.owner.Exec(ctx, `UPDATE occ.agents SET active_revision_id = NULL WHERE id = $1`, f.id); err != nil {
					t.Error(err)
				}
			})
		}
	}})
	w := h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))
	f.deployAs(h.admin, rev2, f.spec())
	key := platform.RevisionWorkKey(rev2)
	if st, code := h.waitWork(key); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	if h.evidence(key, "ACTIVE_REVISION_CHANGED") != 1 {
		t.Fatal("no ACTIVE_REVISION_CHANGED evidence")
	}
	if n := h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, key); n != 2 {
		t.Fatalf("attempt %d: the lost race must spend an attempt", n)
	}
	wait.Eventually(t, wait.Short, "the lost race logged as a retry", func() bool {
		for _, ev := range w.logs.Events("worker.completed") {
			if ev["workId"] == key && ev["code"] == "ACTIVE_REVISION_CHANGED" && ev["outcome"] == "retry" {
				return true
			}
		}
		return false
	})
	if f.active() != rev2 || h.activationAudits(rev2) != 1 {
		t.Fatalf("active %q, %d activation audits", f.active(), h.activationAudits(rev2))
	}
}

func TestTransientDependencyWaitsWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	rev := newRevisionID()
	sim.InjectRevision(rev, simulated.Fault{Err: &driver.TransientDependencyError{Dependency: driver.DependencyAgentGateway,
		Code: driver.CodeAgentGatewayUnavailable, Status: 503, Reason: driver.TransientUnavailable}}.On(simulated.OpPrepareRevision).For(3))
	f.deployAs(h.admin, rev, f.spec())
	w := h.startAgentWorker(workerOptions{sim: sim, maxAttempts: 2}, nil, nil)
	key := platform.RevisionWorkKey(rev)
	if st, code := h.waitWork(key); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("%s %s", st, code)
	}
	if n := h.count(`SELECT attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, key); n != 1 {
		t.Fatalf("attempt %d after three transient waits", n)
	}
	if h.evidence(key, driver.CodeAgentGatewayUnavailable) != 1 {
		t.Fatal("transient wait evidence missing (or repeated)")
	}
	var pending, done map[string]any
	wait.Eventually(t, wait.Short, "the successful pass logged", func() bool {
		pending, done = nil, nil
		for _, ev := range w.logs.Events("worker.completed") {
			if ev["workId"] != key {
				continue
			}
			if ev["outcome"] == "pending" && pending == nil {
				pending = ev
			}
			if ev["outcome"] == "success" {
				done = ev
			}
		}
		return done != nil
	})
	if pending["code"] != driver.CodeAgentGatewayUnavailable || pending["dependency"] != driver.DependencyAgentGateway ||
		pending["cause"] != driver.TransientUnavailable || pending["agentId"] != f.id || pending["revisionId"] != rev ||
		pending["status"] != float64(503) {
		t.Fatalf("pending completion %v", pending)
	}
	if done["deployPasses"] != float64(4) {
		t.Fatalf("final completion %v", done)
	}
}

// capturing records the dispatch contexts the worker hands to Compute.
type capturing struct {
	*simulated.Driver
	mu       sync.Mutex
	contexts map[string]driver.RevisionContext
}

func (c *capturing) PrepareRevision(ctx context.Context, rev driver.Revision, rc driver.RevisionContext) (driver.RevisionReadiness, error) {
	c.mu.Lock()
	c.contexts[rev.ID] = rc
	c.mu.Unlock()
	return c.Driver.PrepareRevision(ctx, rev, rc)
}

func TestSecretsAreReauthorizedForActorAndAgentAndPassedByReference(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	apiKey, token := "sec_a1111111-1111-4111-8111-111111111111", "sec_b2222222-2222-4222-8222-222222222222"
	for _, id := range []string{apiKey, token} {
		name, uid := "s-"+id[4:12], "uid-"+id[4:12]
		h.fx.SecretRow(store.SecretRow{ID: id, NamespaceID: ns, Name: name, BackendNamespaceName: strPtr("occ-tenant"),
			BackendName: &name, BackendKey: strPtr("value"), BackendUID: &uid})
	}
	spec := f.spec()
	spec.HarnessAuth = platform.HarnessAuth{Method: platform.HarnessAuthAPIKey, Source: &platform.Ref{Kind: platform.RefKindSecret, NamespaceID: ns, ID: apiKey}}
	spec.SecretDriverID = "secret-filesystem"
	spec.SecretBindings = map[string]platform.SecretBinding{
		"GITHUB_TOKEN": {Source: platform.Ref{Kind: platform.RefKindSecret, NamespaceID: ns, ID: token}, Delivery: platform.SecretDelivery{Type: "env"}},
	}
	sim := &capturing{Driver: simulated.New("compute-simulated", simulated.Config{}, simulated.Options{}), contexts: map[string]driver.RevisionContext{}}
	h.startAgentWorker(workerOptions{sim: sim.Driver}, sim, nil)

	// The Agent's own principal may not use the Secrets yet: refused before any effect.
	denied := f.deploy(h.admin, spec)
	if st, code := h.waitWork(platform.RevisionWorkKey(denied)); st != queue.StateFailedPermanent || code != "AUTHORIZATION_DENIED" {
		t.Fatalf("%s %s", st, code)
	}
	if n := h.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND action = 'openclaw.agents.deploy'
	   AND details->'__occAuditMetadata'->'authorization'->>'principalId' = $1`, f.spn); n != 1 {
		t.Fatalf("%d denial audits naming the Agent principal", n)
	}
	if sim.Calls(simulated.OpPrepareRevision, denied) != 0 {
		t.Fatal("Compute was called for a refused revision")
	}

	h.grant(ns, f.spn, "secret", "", "operate")
	rev := f.deploy(h.admin, spec)
	if st, code := h.waitWork(platform.RevisionWorkKey(rev)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("%s %s", st, code)
	}
	sim.mu.Lock()
	rc := sim.contexts[rev]
	sim.mu.Unlock()
	if rc.HarnessAuth == nil || rc.HarnessAuth.Method != platform.HarnessAuthAPIKey || rc.HarnessAuth.SecretID != apiKey ||
		rc.HarnessAuth.Ref == nil || rc.HarnessAuth.Ref.Name != "s-"+apiKey[4:12] || rc.HarnessAuth.Ref.UID != "uid-"+apiKey[4:12] {
		t.Fatalf("harness auth %+v", rc.HarnessAuth)
	}
	if len(rc.SecretEnvironment) != 1 || rc.SecretEnvironment[0].Name != "GITHUB_TOKEN" || rc.SecretEnvironment[0].SecretID != token ||
		rc.SecretEnvironment[0].Ref.NamespaceName != "occ-tenant" {
		t.Fatalf("secret environment %+v", rc.SecretEnvironment)
	}

	// A bound Secret whose backend location is incomplete is unavailable. store never writes such a
	// locator, so the damage is SQL.
	h.exec(`UPDATE occ.secrets SET backend_uid = '' WHERE id = $1`, token)
	broken := f.deploy(h.admin, spec)
	if _, code := h.waitWork(platform.RevisionWorkKey(broken)); code != "SECRET_BINDING_UNAVAILABLE" {
		t.Fatalf("incomplete secret: %s", code)
	}
}

func TestRevisionChecksRefuseBeforeAnyEffect(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	cases := []struct {
		want   string
		mutate func(f *agentFixture, s *platform.RevisionSpec)
	}{
		{"COMPUTE_DRIVER_MISMATCH", func(_ *agentFixture, s *platform.RevisionSpec) {
			s.Compute = platform.ComputeSelection{ID: "compute-kubernetes", Implementation: "kubernetes"}
		}},
		{"HARNESS_DESCRIPTOR_MISMATCH", func(_ *agentFixture, s *platform.RevisionSpec) { s.Harness.Version = "1999.1.0" }},
		{"INVALID_ADMITTED_REVISION", func(_ *agentFixture, s *platform.RevisionSpec) {
			s.ServicePrincipalID = "spn_00000000-0000-4000-8000-000000000000"
		}},
		// A snapshot without Harness authentication does not decode: the worker never acts on it.
		{"INVALID_ADMITTED_REVISION", func(_ *agentFixture, s *platform.RevisionSpec) { s.HarnessAuth = platform.HarnessAuth{} }},
		{"INVALID_HARNESS_AUTH", func(_ *agentFixture, s *platform.RevisionSpec) { s.HarnessAuth.Method = "oauth" }},
		{"INVALID_SECRET_BINDINGS", func(f *agentFixture, s *platform.RevisionSpec) {
			s.SecretBindings = map[string]platform.SecretBinding{"TOKEN": {Source: platform.Ref{Kind: platform.RefKindSecret, NamespaceID: "ns_other", ID: "sec_x"},
				Delivery: platform.SecretDelivery{Type: "env"}}}
		}},
	}
	keys := map[string]string{}
	for _, c := range cases {
		f := h.newAgent(ns)
		s := f.spec()
		c.mutate(f, &s)
		keys[platform.RevisionWorkKey(f.deploy(h.admin, s))] = c.want
	}
	// A Namespace that is not ready refuses deployments.
	pending := h.fx.NamespaceNamed(platform.NewID(platform.PrefixNamespace), "not-ready").ID
	nf := h.newAgent(pending)
	keys[platform.RevisionWorkKey(nf.deploy(h.admin))] = "NAMESPACE_NOT_READY"
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	for key, want := range keys {
		if st, code := h.waitWork(key); st != queue.StateFailedPermanent || code != want {
			t.Errorf("%s: %s %s, want %s", key, st, code, want)
		}
	}
	if n := sim.Calls(simulated.OpPrepareRevision, ""); n != 0 {
		t.Fatalf("%d prepares for refused revisions", n)
	}
}

func TestStopAdmittedAfterPublicationRetiresThePredecessor(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	rev1 := f.deploy(h.admin)
	h.waitWork(platform.RevisionWorkKey(rev1))

	// rev2 is published and activated; its retirement of rev1 is held, then fails once.
	release := make(chan struct{})
	fault := simulated.Retryable("ENGINE_BUSY", "busy")
	fault.Release = release
	sim.InjectRevision(rev1, fault.On(simulated.OpRetireRevision).Once())
	rev2 := f.deploy(h.admin)
	waitCalls(t, sim, simulated.OpRetireRevision, rev1, 1)
	if f.active() != rev2 {
		t.Fatalf("active %q before retirement, want the published %s", f.active(), rev2)
	}
	stopKey := f.stop(h.admin)
	close(release)

	if st, code := h.waitWork(platform.RevisionWorkKey(rev2)); st != queue.StateSucceeded || code != "REVISION_STOPPED" {
		t.Fatalf("rev2: %s %s", st, code)
	}
	if st, code := h.waitWork(stopKey); st != queue.StateSucceeded || code != "AGENT_STOPPED" {
		t.Fatalf("stop: %s %s", st, code)
	}
	if f.active() != "" || h.activationAudits(rev2) != 0 {
		t.Fatalf("active %q, %d activation audits", f.active(), h.activationAudits(rev2))
	}
	if sim.Calls(simulated.OpRetireRevision, rev1) < 2 {
		t.Fatal("the failed retirement was not retried")
	}
	for _, rev := range []string{rev1, rev2} {
		if st, _ := sim.Revision(rev); st.Phase == simulated.PhasePrepared {
			t.Fatalf("%s still runs", rev)
		}
	}
}

func TestBeforeCommitDriverIsActivatedBeforeThePointerIsPublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	pointerAtActivation := make(chan string, 4)
	sim := simulated.New("compute-simulated", simulated.Config{ActivationOrder: driver.ActivationBeforeCommit}, simulated.Options{
		OnCall: func(c simulated.Call) {
			if c.Op == simulated.OpActivateRevision {
				var p *string
				if err := h.owner.QueryRow(ctx, `SELECT active_revision_id FROM occ.agents WHERE id = $1`, f.id).Scan(&p); err != nil {
					t.Error(err)
				}
				v := ""
				if p != nil {
					v = *p
				}
				pointerAtActivation <- v
			}
		}})
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	rev := f.deploy(h.admin)
	if st, code := h.waitWork(platform.RevisionWorkKey(rev)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("%s %s", st, code)
	}
	if got := <-pointerAtActivation; got != "" {
		t.Fatalf("pointer %q when a before-commit driver activated", got)
	}
	if len(pointerAtActivation) != 0 || f.active() != rev || sim.RoutedRevision(f.id) != rev || h.activationAudits(rev) != 1 {
		t.Fatalf("active %q routed %q", f.active(), sim.RoutedRevision(f.id))
	}
}

func TestRevisionAdmittedForAnotherSecretDriverIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	apiKey := "sec_c3333333-3333-4333-8333-333333333333"
	h.fx.SecretRow(store.SecretRow{ID: apiKey, NamespaceID: ns, Name: "openai", BackendNamespaceName: strPtr("occ-tenant"),
		BackendName: strPtr("openai"), BackendKey: strPtr("value"), BackendUID: strPtr("uid-1")})
	h.grant(ns, f.spn, "secret", "", "operate")
	spec := f.spec()
	spec.HarnessAuth = platform.HarnessAuth{Method: platform.HarnessAuthAPIKey, Source: &platform.Ref{Kind: platform.RefKindSecret, NamespaceID: ns, ID: apiKey}}
	spec.SecretDriverID = "secret-filesystem"
	// This worker selected another Secret Driver: it cannot vouch for the admitted references.
	w := h.startAgentWorker(workerOptions{secretDriverID: "secret-kubernetes"}, nil, nil)
	rev := f.deploy(h.admin, spec)
	if st, code := h.waitWork(platform.RevisionWorkKey(rev)); st != queue.StateFailedPermanent || code != "SECRET_DRIVER_MISMATCH" {
		t.Fatalf("%s %s", st, code)
	}
	if w.sim.Calls(simulated.OpPrepareRevision, rev) != 0 {
		t.Fatal("Compute was called for a revision of another Secret Driver")
	}
}

func strPtr(s string) *string { return &s }

// TestInitialWorkspaceFilesReachTheDriver: the files of the first revision's snapshot reach the
// Compute Driver's prepare, which applies them before activation; a later revision without files
// leaves the Agent's edits alone.
func TestInitialWorkspaceFilesReachTheDriver(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ns := h.readyNamespace()
	f := h.newAgent(ns)
	sim := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	first := f.spec()
	first.InitialWorkspaceFiles = map[string]string{"AGENTS.md": "Answer.\n", "USER.md": ""}
	rev1 := f.deploy(h.admin, first)
	h.startAgentWorker(workerOptions{sim: sim}, nil, nil)
	if st, code := h.waitWork(platform.RevisionWorkKey(rev1)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("deploy 1: %s %s", st, code)
	}
	files, applied := sim.WorkspaceFiles(f.id)
	if !applied || len(files) != 2 || files["AGENTS.md"] != "Answer.\n" || files["USER.md"] != "" {
		t.Fatalf("workspace after revision 1: %v (applied %v)", files, applied)
	}
	sim.EditWorkspaceFile(f.id, "AGENTS.md", "edited")
	rev2 := f.deploy(h.admin)
	if st, code := h.waitWork(platform.RevisionWorkKey(rev2)); st != queue.StateSucceeded || code != "REVISION_ACTIVATED" {
		t.Fatalf("deploy 2: %s %s", st, code)
	}
	if files, _ := sim.WorkspaceFiles(f.id); files["AGENTS.md"] != "edited" {
		t.Fatalf("revision 2 rewrote the workspace: %v", files)
	}
}
