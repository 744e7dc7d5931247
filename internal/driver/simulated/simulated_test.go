package simulated_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/builtin"
	"github.com/openclaw/occ/internal/driver/drivertest"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/testkit/testclock"
)

// inspected adds the contract suite's Inspector to a simulated driver.
type inspected struct{ *simulated.Driver }

func (d inspected) NamespaceCopies(_ context.Context, ns driver.Namespace) (int, error) {
	if s, ok := d.Namespace(ns.ID); ok && !s.Deleting {
		return 1, nil
	}
	return 0, nil
}

func TestContract(t *testing.T) {
	t.Parallel()
	drivertest.RunComputeContract(t, func(t *testing.T) driver.Compute {
		c, err := builtin.NewCompute(simulated.Name, "compute-simulated", map[string]any{}, driver.Environment{})
		if err != nil {
			t.Fatal(err)
		}
		return inspected{c.(*simulated.Driver)}
	})
}

// TestContractWithDelays runs the contract with real-time readiness delays, so observations go
// through the pending states before they converge.
func TestContractWithDelays(t *testing.T) {
	t.Parallel()
	drivertest.RunComputeContract(t, func(t *testing.T) driver.Compute {
		return inspected{simulated.New("compute-simulated", simulated.Config{
			NamespaceReadyAfter:   20 * time.Millisecond,
			NamespaceDeletedAfter: 20 * time.Millisecond,
			RevisionReadyAfter:    20 * time.Millisecond,
		}, simulated.Options{})}
	})
}

// newDriver returns a driver whose readiness delays run on a manual clock.
func newDriver(t *testing.T, cfg simulated.Config) (*simulated.Driver, *testclock.Clock) {
	t.Helper()
	clk := testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return simulated.New("compute-simulated", cfg, simulated.Options{Now: clk.Now}), clk
}

func ensure(t *testing.T, d *simulated.Driver, ns driver.Namespace) driver.NamespaceObservation {
	t.Helper()
	obs, err := d.EnsureNamespace(context.Background(), ns)
	if err != nil {
		t.Fatalf("EnsureNamespace: %v", err)
	}
	if err := driver.CheckEnsureObservation(ns.ID, obs); err != nil {
		t.Fatalf("EnsureNamespace observation: %v", err)
	}
	return obs
}

func remove(t *testing.T, d *simulated.Driver, ns driver.Namespace) driver.NamespaceObservation {
	t.Helper()
	obs, err := d.DeleteNamespace(context.Background(), ns)
	if err != nil {
		t.Fatalf("DeleteNamespace: %v", err)
	}
	if err := driver.CheckDeleteObservation(ns.ID, obs); err != nil {
		t.Fatalf("DeleteNamespace observation: %v", err)
	}
	return obs
}

func TestReadinessDelaysUseTheInjectedClock(t *testing.T) {
	t.Parallel()
	d, clk := newDriver(t, simulated.Config{NamespaceReadyAfter: time.Minute, NamespaceDeletedAfter: time.Minute, RevisionReadyAfter: time.Hour})
	ns := drivertest.NewNamespace()

	if obs := ensure(t, d, ns); *obs.Ready || obs.Failure != "" || obs.Reason == "" {
		t.Fatalf("first ensure = %+v, want pending with a reason", obs)
	}
	clk.Advance(59 * time.Second)
	if obs := ensure(t, d, ns); *obs.Ready {
		t.Fatal("ready before the delay elapsed")
	}
	clk.Advance(time.Second)
	if obs := ensure(t, d, ns); !*obs.Ready {
		t.Fatal("not ready once the delay elapsed")
	}

	rev := drivertest.NewRevision(d, ns.ID)
	r, err := d.PrepareRevision(context.Background(), rev, driver.RevisionContext{})
	if err != nil || r.Ready {
		t.Fatalf("first prepare = %+v, %v; want not ready", r, err)
	}
	if err := driver.CheckRevisionReadiness(rev, r); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if r, err := d.PrepareRevision(context.Background(), rev, driver.RevisionContext{}); err != nil || !r.Ready {
		t.Fatalf("prepare after the delay = %+v, %v; want ready", r, err)
	}

	if obs := remove(t, d, ns); *obs.Deleted {
		t.Fatal("deleted before the delay elapsed")
	}
	if s, ok := d.Namespace(ns.ID); !ok || !s.Deleting {
		t.Fatalf("Namespace state during deletion = %+v, %v", s, ok)
	}
	clk.Advance(time.Minute)
	if obs := remove(t, d, ns); !*obs.Deleted {
		t.Fatal("not deleted once the delay elapsed")
	}
	if _, ok := d.Namespace(ns.ID); ok {
		t.Fatal("deleted Namespace still in the world")
	}
	if _, ok := d.Revision(rev.ID); ok {
		t.Fatal("the deleted Namespace's revision is still in the world")
	}
}

func TestNamespaceFaults(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, simulated.Config{})
	ns := drivertest.NewNamespace()
	boom := errors.New("raw failure")

	d.InjectNamespace(ns.ID, simulated.Permanent("SIM_PERMANENT", "The simulated Namespace is refused.").On(simulated.OpEnsureNamespace).Once())
	d.InjectNamespace(ns.ID, simulated.Retryable("SIM_RETRY", "Try again.").On(simulated.OpEnsureNamespace).Once())
	d.InjectNamespace(ns.ID, simulated.Transient(driver.DependencyKubernetesAPI, driver.CodeKubernetesAPIUnavailable).On(simulated.OpEnsureNamespace).Once())
	d.InjectNamespace(ns.ID, simulated.Error(boom).On(simulated.OpEnsureNamespace).Once())
	d.InjectNamespace(ns.ID, simulated.NotReady("Still waiting.").On(simulated.OpEnsureNamespace).Once())

	if obs := ensure(t, d, ns); obs.Failure != driver.FailurePermanent || obs.Reason != "The simulated Namespace is refused." {
		t.Fatalf("permanent fault: %+v", obs)
	}
	if obs := ensure(t, d, ns); obs.Failure != driver.FailureRetryable || obs.Reason != "Try again." {
		t.Fatalf("retryable fault: %+v", obs)
	}
	if obs := ensure(t, d, ns); obs.Failure != driver.FailureRetryable || obs.Reason == "" {
		t.Fatalf("transient fault: %+v", obs)
	}
	if _, err := d.EnsureNamespace(context.Background(), ns); !errors.Is(err, boom) {
		t.Fatalf("raw fault: %v", err)
	}
	if obs := ensure(t, d, ns); *obs.Ready || obs.Failure != "" || obs.Reason != "Still waiting." {
		t.Fatalf("not-ready fault: %+v", obs)
	}
	if obs := ensure(t, d, ns); !*obs.Ready || obs.Failure != "" {
		t.Fatalf("after the faults: %+v", obs)
	}
	if got := d.Calls(simulated.OpEnsureNamespace, ns.ID); got != 6 {
		t.Fatalf("Calls = %d, want 6", got)
	}

	// A fault restricted to delete leaves ensure alone; Times counts down.
	d.InjectNamespace(ns.ID, simulated.Permanent("SIM_DELETE", "No.").On(simulated.OpDeleteNamespace).For(2))
	if obs := ensure(t, d, ns); !*obs.Ready {
		t.Fatal("a delete fault affected ensure")
	}
	for range 2 {
		if obs := remove(t, d, ns); obs.Failure != driver.FailurePermanent {
			t.Fatalf("delete fault: %+v", obs)
		}
	}
	if obs := remove(t, d, ns); !*obs.Deleted {
		t.Fatalf("after the delete faults: %+v", obs)
	}

	// Without Times a fault stays until ClearFaults.
	d.InjectNamespace(ns.ID, simulated.Retryable("SIM", "r"))
	for range 3 {
		if obs := ensure(t, d, ns); obs.Failure != driver.FailureRetryable {
			t.Fatalf("persistent fault: %+v", obs)
		}
	}
	d.ClearFaults()
	if obs := ensure(t, d, ns); !*obs.Ready {
		t.Fatalf("after ClearFaults: %+v", obs)
	}
}

func TestHangReturnsPromptlyOnCancel(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, simulated.Config{})
	ns := drivertest.NewNamespace()
	rev := drivertest.NewRevision(d, ns.ID)
	d.InjectNamespace(ns.ID, simulated.Hang())
	d.InjectRevision(rev.ID, simulated.Hang())

	calls := map[simulated.Op]func(ctx context.Context) error{
		simulated.OpEnsureNamespace: func(ctx context.Context) error { _, err := d.EnsureNamespace(ctx, ns); return err },
		simulated.OpDeleteNamespace: func(ctx context.Context) error { _, err := d.DeleteNamespace(ctx, ns); return err },
		simulated.OpPrepareRevision: func(ctx context.Context) error {
			_, err := d.PrepareRevision(ctx, rev, driver.RevisionContext{})
			return err
		},
		simulated.OpActivateRevision: func(ctx context.Context) error { return d.ActivateRevision(ctx, rev, driver.RevisionContext{}) },
		simulated.OpStopRevision:     func(ctx context.Context) error { return d.StopRevision(ctx, rev, driver.StopOptions{}) },
		simulated.OpRetireRevision:   func(ctx context.Context) error { return d.RetireRevision(ctx, rev) },
	}
	for op, call := range calls {
		t.Run(string(op), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			waitCtx, waitCancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer waitCancel()
			target := ns.ID
			if op != simulated.OpEnsureNamespace && op != simulated.OpDeleteNamespace {
				target = rev.ID
			}
			if err := d.WaitCalls(waitCtx, op, target, 1); err != nil {
				t.Fatalf("the call never entered: %v", err)
			}
			select {
			case err := <-done:
				t.Fatalf("a hanging call returned before cancellation: %v", err)
			default:
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("hanging call returned %v, want context.Canceled", err)
				}
			case <-waitCtx.Done():
				t.Fatal("hanging call did not return after cancellation")
			}
		})
	}
}

func TestBlockAndDelay(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, simulated.Config{})
	ns := drivertest.NewNamespace()
	release := make(chan struct{})
	d.InjectNamespace(ns.ID, simulated.Block(release).Once())

	done := make(chan driver.NamespaceObservation, 1)
	go func() {
		obs, _ := d.EnsureNamespace(context.Background(), ns)
		done <- obs
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.WaitCalls(ctx, simulated.OpEnsureNamespace, "", 1); err != nil {
		t.Fatal(err)
	}
	close(release)
	select {
	case obs := <-done:
		if !*obs.Ready {
			t.Fatalf("released call = %+v, want ready", obs)
		}
	case <-ctx.Done():
		t.Fatal("released call did not return")
	}

	// A long delay still ends with the context.
	d.InjectNamespace(ns.ID, simulated.Delay(time.Hour).Once())
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if _, err := d.EnsureNamespace(dctx, ns); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delayed call = %v, want context.DeadlineExceeded", err)
	}
	// A short delay completes the call.
	d.InjectNamespace(ns.ID, simulated.Delay(time.Millisecond).Once())
	if obs := ensure(t, d, ns); !*obs.Ready {
		t.Fatalf("after a short delay: %+v", obs)
	}
}

func TestRevisionLifecycleAndFaults(t *testing.T) {
	t.Parallel()
	d, clk := newDriver(t, simulated.Config{RevisionReadyAfter: time.Second})
	ns := drivertest.NewNamespace()
	ensure(t, d, ns)
	rev := drivertest.NewRevision(d, ns.ID)
	ctx := context.Background()

	if err := d.ActivateRevision(ctx, rev, driver.RevisionContext{}); driver.Code(err) != simulated.CodeRevisionNotReady {
		t.Fatalf("activating an unprepared revision: %v", err)
	}
	if r, err := d.PrepareRevision(ctx, rev, driver.RevisionContext{}); err != nil || r.Ready {
		t.Fatalf("prepare = %+v, %v", r, err)
	}
	if err := d.ActivateRevision(ctx, rev, driver.RevisionContext{}); driver.Code(err) != simulated.CodeRevisionNotReady {
		t.Fatalf("activating a revision that is not ready: %v", err)
	}
	clk.Advance(time.Second)
	if r, err := d.PrepareRevision(ctx, rev, driver.RevisionContext{}); err != nil || !r.Ready {
		t.Fatalf("prepare after the delay = %+v, %v", r, err)
	}
	for range 2 {
		if err := d.ActivateRevision(ctx, rev, driver.RevisionContext{}); err != nil {
			t.Fatalf("activate: %v", err)
		}
	}
	if got := d.RoutedRevision(rev.AgentID); got != rev.ID {
		t.Fatalf("RoutedRevision = %q", got)
	}
	if err := d.StopRevision(ctx, rev, driver.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, _ := d.Revision(rev.ID); s.Phase != simulated.PhaseStopped || s.Routed || s.Ready {
		t.Fatalf("after stop: %+v", s)
	}
	if err := d.RetireRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if err := d.StopRevision(ctx, rev, driver.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, _ := d.Revision(rev.ID); s.Phase != simulated.PhaseRetired {
		t.Fatalf("after retire and stop: %+v", s)
	}

	// Deactivation withdraws only the revision's own route.
	rev2 := drivertest.NewRevision(d, ns.ID)
	rev2.AgentID = rev.AgentID
	rev2.Number = 2
	clk.Advance(time.Second)
	if _, err := d.PrepareRevision(ctx, rev2, driver.RevisionContext{}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if r, _ := d.PrepareRevision(ctx, rev2, driver.RevisionContext{}); !r.Ready {
		t.Fatal("rev2 not ready")
	}
	if err := d.ActivateRevision(ctx, rev2, driver.RevisionContext{}); err != nil {
		t.Fatal(err)
	}
	if err := d.DeactivateRevision(ctx, rev); err != nil || d.RoutedRevision(rev.AgentID) != rev2.ID {
		t.Fatalf("deactivating another revision changed the route: %v", err)
	}
	if err := d.DeactivateRevision(ctx, rev2); err != nil || d.RoutedRevision(rev.AgentID) != "" {
		t.Fatalf("deactivate: %v", err)
	}

	// Faults on revisions are returned as errors.
	rev3 := drivertest.NewRevision(d, ns.ID)
	d.InjectRevision(rev3.ID, simulated.Transient(driver.DependencyAgentGateway, driver.CodeAgentGatewayUnavailable).On(simulated.OpPrepareRevision).Once())
	d.InjectRevision(rev3.ID, simulated.RuntimeFailure(driver.RuntimeModelProbeFailed).Once())
	d.InjectRevision(rev3.ID, simulated.Pending(driver.PendingWorkloadUnschedulable).Once())
	d.InjectRevision(rev3.ID, simulated.Fault{Err: &driver.ActivationPendingError{Code: "WORKSPACE_NODE_PENDING"}}.On(simulated.OpActivateRevision).Once())
	var transient *driver.TransientDependencyError
	if _, err := d.PrepareRevision(ctx, rev3, driver.RevisionContext{}); !errors.As(err, &transient) || transient.Code != driver.CodeAgentGatewayUnavailable {
		t.Fatalf("transient fault: %v", err)
	}
	r, err := d.PrepareRevision(ctx, rev3, driver.RevisionContext{})
	if err != nil || r.Ready || r.RuntimeFailure == nil || r.RuntimeFailure.Code != driver.RuntimeModelProbeFailed || !driver.ValidRuntimeFailure(r.RuntimeFailure) {
		t.Fatalf("runtime failure fault: %+v, %v", r, err)
	}
	if r, err := d.PrepareRevision(ctx, rev3, driver.RevisionContext{}); err != nil || r.Ready || r.PendingReason != driver.PendingWorkloadUnschedulable {
		t.Fatalf("pending fault: %+v, %v", r, err)
	}
	if err := d.ActivateRevision(ctx, rev3, driver.RevisionContext{}); driver.Code(err) != "WORKSPACE_NODE_PENDING" {
		t.Fatalf("activation fault: %v", err)
	}
}

func TestRevisionRefusals(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, simulated.Config{})
	ns := drivertest.NewNamespace()
	ctx := context.Background()

	foreign := drivertest.NewRevision(d, ns.ID)
	foreign.Compute = driver.ComputeRef{ID: "compute-kubernetes", Implementation: "kubernetes"}
	if _, err := d.PrepareRevision(ctx, foreign, driver.RevisionContext{}); driver.Code(err) != driver.CodeComputeDriverMismatch || !driver.IsPermanent(err) {
		t.Fatalf("foreign pin: %v", err)
	}
	unknownAuth := drivertest.NewRevision(d, ns.ID)
	unknownAuth.HarnessAuthMethod = "carrier_pigeon"
	if _, err := d.PrepareRevision(ctx, unknownAuth, driver.RevisionContext{}); driver.Code(err) != driver.CodeHarnessAuthenticationUnsupported {
		t.Fatalf("unknown harness auth: %v", err)
	}
	for _, m := range []string{driver.HarnessAuthRuntime, driver.HarnessAuthAPIKey, driver.HarnessAuthCodexPAT} {
		if !driver.SupportsHarnessAuth(d, m) {
			t.Errorf("simulated does not support %s", m)
		}
	}
}

func TestCapabilitiesFollowConfiguration(t *testing.T) {
	t.Parallel()
	embedded := driver.Revision{ExecutionMode: driver.ExecutionEmbedded}
	dedicated := driver.Revision{ExecutionMode: driver.ExecutionDedicated}
	cases := []struct {
		mode                string
		embedded, dedicated bool
	}{
		{simulated.StoppedPredecessorsNever, false, false},
		{simulated.StoppedPredecessorsDedicated, false, true},
		{simulated.StoppedPredecessorsAlways, true, true},
	}
	for _, tc := range cases {
		c, err := builtin.NewCompute(simulated.Name, "s", map[string]any{"stoppedPredecessors": tc.mode}, driver.Environment{})
		if err != nil {
			t.Fatal(err)
		}
		ex := c.(driver.ExclusiveReplacement)
		if ex.RequiresStoppedPredecessors(embedded) != tc.embedded || ex.RequiresStoppedPredecessors(dedicated) != tc.dedicated {
			t.Errorf("stoppedPredecessors %s: wrong answers", tc.mode)
		}
	}
	c, err := builtin.NewCompute(simulated.Name, "s", map[string]any{"maintenanceIntervalMs": 60000, "activationOrder": "beforeCommit"}, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	if c.(driver.Maintainer).MaintenanceInterval() != time.Minute || driver.ActivationOrder(c) != driver.ActivationBeforeCommit {
		t.Fatal("maintenance interval or activation order not applied")
	}
}

func TestConfigurationAndProduction(t *testing.T) {
	t.Parallel()
	cfg, err := simulated.ParseConfig(map[string]any{"namespaceReadyAfterMs": float64(1500), "revisionReadyAfterMs": 2})
	if err != nil {
		t.Fatal(err)
	}
	want := simulated.Config{
		NamespaceReadyAfter: 1500 * time.Millisecond, RevisionReadyAfter: 2 * time.Millisecond,
		StoppedPredecessors: simulated.StoppedPredecessorsNever, ActivationOrder: driver.ActivationAfterCommit,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("ParseConfig = %+v, want %+v", cfg, want)
	}
	var ce *driver.ConfigurationError
	if _, err := simulated.ParseConfig(map[string]any{"namespaceReadyAfterMs": -1, "bogus": 1}); !errors.As(err, &ce) || len(ce.Details) != 2 {
		t.Fatalf("invalid configuration: %v", err)
	}
	if _, err := simulated.Factory("s", map[string]any{}, driver.Environment{Production: true}); driver.Code(err) != driver.CodeDriverUnavailableInProduction {
		t.Fatalf("Factory in production: %v", err)
	}
	if _, err := builtin.NewCompute(simulated.Name, "s", map[string]any{}, driver.Environment{Production: true}); driver.Code(err) != driver.CodeDriverUnavailableInProduction {
		t.Fatalf("NewCompute in production: %v", err)
	}
}

func TestOnCallHookAndWaitCalls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []simulated.Call
	d := simulated.New("s", simulated.Config{}, simulated.Options{OnCall: func(c simulated.Call) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c)
	}})
	ns := drivertest.NewNamespace()
	ctx := context.Background()

	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = d.EnsureNamespace(ctx, ns)
		}()
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.WaitCalls(wctx, simulated.OpEnsureNamespace, ns.ID, n); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := d.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([]simulated.Call(nil), seen...)
	mu.Unlock()
	if len(got) != n+1 || got[n] != (simulated.Call{Op: simulated.OpPreflight}) {
		t.Fatalf("hook saw %d calls: %+v", len(got), got)
	}
	if d.Calls(simulated.OpEnsureNamespace, "") != n || len(d.NamespaceIDs()) != 1 {
		t.Fatalf("Calls = %d, NamespaceIDs = %v", d.Calls(simulated.OpEnsureNamespace, ""), d.NamespaceIDs())
	}

	d.InjectPreflight(simulated.Fault{Err: &driver.PreflightError{Code: "SIM_DOWN", Host: "sim"}})
	if _, err := d.Preflight(ctx); driver.Code(err) != "SIM_DOWN" {
		t.Fatalf("preflight fault: %v", err)
	}
	agent := driver.AgentRef{NamespaceID: ns.ID, AgentID: "agt_x"}
	d.InjectAgent(agent.AgentID, simulated.Retryable("SIM_BIND", "r").On(simulated.OpBindAgent).Once())
	if err := d.BindAgent(ctx, ns, agent); driver.Code(err) != "SIM_BIND" {
		t.Fatalf("bind fault: %v", err)
	}
	if err := d.BindAgent(ctx, ns, agent); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteAgentRuntimeCredentials(ctx, agent); err != nil || d.Calls(simulated.OpDeleteAgentRuntimeCredentials, agent.AgentID) != 1 {
		t.Fatalf("DeleteAgentRuntimeCredentials: %v", err)
	}
}

func TestHistoryRecordsEffectsInOrderAndReadinessAfterObservations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	rev := driver.Revision{ID: "rev_1", NamespaceID: "ns_1", AgentID: "agt_1", Number: 1,
		Compute: driver.ComputeRef{ID: "compute-simulated", Implementation: simulated.Name}}
	d.ReadyAfterObservations(rev.ID, 2)
	for i, want := range []bool{false, false, true} {
		r, err := d.PrepareRevision(ctx, rev, driver.RevisionContext{})
		if err != nil || r.Ready != want {
			t.Fatalf("observation %d: ready %v err %v, want %v", i+1, r.Ready, err, want)
		}
	}
	if err := d.StopRevision(ctx, rev, driver.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.RetireRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	want := []simulated.Call{
		{Op: simulated.OpPrepareRevision, Target: "rev_1"}, {Op: simulated.OpPrepareRevision, Target: "rev_1"},
		{Op: simulated.OpPrepareRevision, Target: "rev_1"}, {Op: simulated.OpStopRevision, Target: "rev_1"},
		{Op: simulated.OpRetireRevision, Target: "rev_1"},
	}
	if got := d.History(); !reflect.DeepEqual(got, want) {
		t.Fatalf("history %v", got)
	}
}

func TestYieldStopsAndFailStopsAreRecordedInHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	yielding := driver.StopOptions{Yield: true}
	d := simulated.New("compute-simulated", simulated.Config{}, simulated.Options{})
	rev := driver.Revision{ID: "rev_1", NamespaceID: "ns_1", AgentID: "agt_1", Number: 1,
		Compute: driver.ComputeRef{ID: "compute-simulated", Implementation: simulated.Name}}
	if _, err := d.PrepareRevision(ctx, rev, driver.RevisionContext{}); err != nil {
		t.Fatal(err)
	}
	if err := d.ActivateRevision(ctx, rev, driver.RevisionContext{}); err != nil {
		t.Fatal(err)
	}
	d.FailStops(rev.ID, 1)
	d.YieldStops(rev.ID, 2)
	err := d.StopRevision(ctx, rev, yielding)
	if driver.Code(err) != simulated.CodeStopFailed || driver.IsPermanent(err) {
		t.Fatalf("failing stop: %v", err)
	}
	if st, _ := d.Revision(rev.ID); st.Phase != simulated.PhasePrepared || !st.Routed {
		t.Fatalf("a failed stop changed the world: %+v", st)
	}
	err = d.StopRevision(ctx, rev, yielding)
	if !driver.IsStopYielded(err) || driver.Code(err) != driver.CodeComputeStopYielded || driver.ErrorClass(err) != "StopYieldedError" {
		t.Fatalf("yielding stop: %v (class %s)", err, driver.ErrorClass(err))
	}
	if st, _ := d.Revision(rev.ID); st.Phase != simulated.PhasePrepared || st.Routed {
		t.Fatalf("a yielded stop keeps the runtime terminating without its route: %+v", st)
	}
	// A stop that does not allow a yield waits the termination out.
	if err := d.StopRevision(ctx, rev, driver.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	if st, _ := d.Revision(rev.ID); st.Phase != simulated.PhaseStopped {
		t.Fatalf("full-wait stop: %+v", st)
	}
	if err := d.StopRevision(ctx, rev, yielding); err != nil {
		t.Fatalf("the full wait cleared the remaining yields: %v", err)
	}
	if n := d.Calls(simulated.OpStopRevision, rev.ID); n != 4 {
		t.Fatalf("%d stop calls", n)
	}
	var stops int
	for _, c := range d.History() {
		if c.Op == simulated.OpStopRevision && c.Target == rev.ID {
			stops++
		}
	}
	if stops != 4 {
		t.Fatalf("history holds %d stops", stops)
	}
	waiting := func(context.Context) bool { return true }
	if yielding.ShouldYield(ctx) || !(driver.StopOptions{Yield: true, OtherWorkWaiting: waiting}).ShouldYield(ctx) {
		t.Fatal("ShouldYield does not follow the hook")
	}
	if (driver.StopOptions{OtherWorkWaiting: waiting}).ShouldYield(ctx) {
		t.Fatal("ShouldYield without a yield allowed")
	}
}

// TestInitialWorkspaceFilesRecorded: the driver records what it would write into the Agent's
// workspace: the first revision's files once, never over a file the Agent has, and nothing again
// after the Agent changed them; deleting the Agent's runtime forgets the workspace.
func TestInitialWorkspaceFilesRecorded(t *testing.T) {
	t.Parallel()
	d, _ := newDriver(t, simulated.Config{})
	ns := drivertest.NewNamespace()
	ctx := context.Background()
	if _, err := d.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	rev1 := drivertest.NewRevision(d, ns.ID)
	if _, ok := d.WorkspaceFiles(rev1.AgentID); ok {
		t.Fatal("a workspace before any prepare")
	}
	rev1.InitialWorkspaceFiles = map[string]string{"AGENTS.md": "Answer.\n", "USER.md": "", "SOUL.md": "calm"}
	d.EditWorkspaceFile(rev1.AgentID, "SOUL.md", "the Agent's own") // present before the first run
	for range 2 {
		if _, err := d.PrepareRevision(ctx, rev1, driver.RevisionContext{}); err != nil {
			t.Fatal(err)
		}
	}
	files, applied := d.WorkspaceFiles(rev1.AgentID)
	if !applied || len(files) != 3 || files["AGENTS.md"] != "Answer.\n" || files["USER.md"] != "" || files["SOUL.md"] != "the Agent's own" {
		t.Fatalf("workspace %v (applied %v)", files, applied)
	}
	d.EditWorkspaceFile(rev1.AgentID, "AGENTS.md", "edited")
	again := rev1
	again.ID, again.Number = "rev_"+uuid.NewString(), 2
	if _, err := d.PrepareRevision(ctx, again, driver.RevisionContext{}); err != nil {
		t.Fatal(err)
	}
	if files, _ := d.WorkspaceFiles(rev1.AgentID); files["AGENTS.md"] != "edited" {
		t.Fatalf("applied twice: %v", files)
	}
	if err := d.DeleteAgentRuntimeCredentials(ctx, driver.AgentRef{NamespaceID: ns.ID, AgentID: rev1.AgentID}); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.WorkspaceFiles(rev1.AgentID); ok {
		t.Fatal("the workspace outlived the Agent")
	}
}
