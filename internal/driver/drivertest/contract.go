// Package drivertest holds the contract every Compute Driver implementation must pass, run from
// each implementation's tests:
//
//	func TestContract(t *testing.T) {
//		drivertest.RunComputeContract(t, func(t *testing.T) driver.Compute { return newDriver(t) })
//	}
//
// The suite only uses the public contract of package driver. It creates Namespaces with fresh ids
// and deletes them again when each subtest ends.
package drivertest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
)

// ConvergenceTimeout bounds how long the suite waits for a Namespace to become ready or deleted.
const ConvergenceTimeout = 60 * time.Second

// promptly bounds how long a call with an ended context may take before the suite calls it hung.
const promptly = 10 * time.Second

// Inspector is optionally implemented by the driver under test (or by a test wrapper around it) so
// that the suite can see the world behind the observations.
type Inspector interface {
	// NamespaceCopies reports how many copies of ns's infrastructure exist: 0 when absent, 1 when
	// present once (for docker: networks with the Namespace's network name).
	NamespaceCopies(ctx context.Context, ns driver.Namespace) (int, error)
}

// RunComputeContract runs the shared Compute contract against drivers built by newDriver, one per
// subtest. Subtests run in parallel.
func RunComputeContract(t *testing.T, newDriver func(t *testing.T) driver.Compute) {
	t.Helper()
	subtests := []struct {
		name string
		run  func(t *testing.T, c driver.Compute)
	}{
		{"Identity", testIdentity},
		{"EnsureConvergesToReady", testEnsureConverges},
		{"EnsureIsIdempotent", testEnsureIdempotent},
		{"ConcurrentEnsureConvergesOnOneCopy", testConcurrentEnsure},
		{"DeleteReportsDeletedAndIsIdempotent", testDeleteIdempotent},
		{"DeleteUnknownNamespaceSucceeds", testDeleteUnknown},
		{"EndedContextAbortsPromptly", testEndedContext},
		{"ObservationsNameOnlyTheirNamespace", testNoForeignIDs},
		{"StopAndRetireOfUnknownRevisionsAreNoOps", testStopRetireUnknown},
		{"PrepareRevisionAnswersForItsRevision", testPrepareAnswer},
	}
	for _, st := range subtests {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			c := newDriver(t)
			if c == nil {
				t.Fatal("newDriver returned nil")
			}
			st.run(t, c)
		})
	}
}

// NewNamespace returns a Namespace with a fresh id (ns_<uuid>) and a name derived from it.
func NewNamespace() driver.Namespace {
	u := uuid.NewString()
	return driver.Namespace{ID: "ns_" + u, Name: "contract-" + u[:8]}
}

// NewRevision returns revision 1 of a fresh Agent in namespaceID, pinned to c, embedded OpenClaw
// with runtime Harness authentication.
func NewRevision(c driver.Compute, namespaceID string) driver.Revision {
	return driver.Revision{
		ID:                 "rev_" + uuid.NewString(),
		NamespaceID:        namespaceID,
		AgentID:            "agt_" + uuid.NewString(),
		Number:             1,
		ExecutionMode:      driver.ExecutionEmbedded,
		Harness:            driver.Harness{ID: "openclaw", Version: "1.0.0", Mode: driver.ExecutionEmbedded},
		Compute:            driver.ComputeRef{ID: c.ID(), Implementation: c.Implementation()},
		ServicePrincipalID: "spn_" + uuid.NewString(),
		HarnessAuthMethod:  driver.HarnessAuthRuntime,
		Spec:               []byte(`{}`),
		CreatedAt:          time.Now().UTC(),
	}
}

// Poll calls fn until it reports done, fails, or timeout passes; between calls it waits a short,
// growing interval on a timer. It is the suite's only way of waiting for a condition.
func Poll(ctx context.Context, timeout time.Duration, fn func(ctx context.Context) (done bool, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	wait := 5 * time.Millisecond
	for {
		done, err := fn(ctx)
		if err != nil || done {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		wait = min(wait*2, 250*time.Millisecond)
	}
}

// EnsureReady calls EnsureNamespace until it reports Ready, checking every observation; a
// permanent failure or an invalid observation fails the test. The Namespace is deleted when the
// test ends.
func EnsureReady(t *testing.T, c driver.Compute, ns driver.Namespace) driver.NamespaceObservation {
	t.Helper()
	t.Cleanup(func() { cleanupNamespace(t, c, ns) })
	obs, err := converge(c.EnsureNamespace, driver.CheckEnsureObservation, ns)
	if err != nil {
		t.Fatalf("EnsureNamespace(%s) did not converge to Ready: %v (last reason %q)", ns.ID, err, obs.Reason)
	}
	return obs
}

// DeleteUntilDeleted calls DeleteNamespace until it reports Deleted, checking every observation.
func DeleteUntilDeleted(t *testing.T, c driver.Compute, ns driver.Namespace) driver.NamespaceObservation {
	t.Helper()
	obs, err := converge(c.DeleteNamespace, driver.CheckDeleteObservation, ns)
	if err != nil {
		t.Fatalf("DeleteNamespace(%s) did not converge to Deleted: %v (last reason %q)", ns.ID, err, obs.Reason)
	}
	return obs
}

// converge repeats a Namespace operation until its observation is complete (Ready or Deleted).
// An error, an invalid observation or a permanent failure ends it; a retryable failure is retried,
// as the worker would. It returns the last valid observation.
func converge(
	call func(context.Context, driver.Namespace) (driver.NamespaceObservation, error),
	check func(string, driver.NamespaceObservation) error,
	ns driver.Namespace,
) (driver.NamespaceObservation, error) {
	var last driver.NamespaceObservation
	err := Poll(context.Background(), ConvergenceTimeout, func(ctx context.Context) (bool, error) {
		obs, err := call(ctx, ns)
		if err != nil {
			return false, err
		}
		if err := check(ns.ID, obs); err != nil {
			return false, err
		}
		last = obs
		if obs.Failure == driver.FailurePermanent {
			return false, errors.New("permanent failure")
		}
		return obs.Failure == "" && ((obs.Ready != nil && *obs.Ready) || (obs.Deleted != nil && *obs.Deleted)), nil
	})
	return last, err
}

func cleanupNamespace(t *testing.T, c driver.Compute, ns driver.Namespace) {
	_ = Poll(context.Background(), ConvergenceTimeout, func(ctx context.Context) (bool, error) {
		obs, err := c.DeleteNamespace(ctx, ns)
		if err != nil || obs.Failure == driver.FailurePermanent {
			t.Logf("cleanup of %s: error class %s, failure %q", ns.ID, driver.ErrorClass(err), obs.Failure)
			return true, nil
		}
		return obs.Deleted != nil && *obs.Deleted, nil
	})
}

func copies(t *testing.T, c driver.Compute, ns driver.Namespace) (int, bool) {
	t.Helper()
	in, ok := c.(Inspector)
	if !ok {
		return 0, false
	}
	n, err := in.NamespaceCopies(context.Background(), ns)
	if err != nil {
		t.Fatalf("NamespaceCopies(%s): %v", ns.ID, err)
	}
	return n, true
}

func testIdentity(t *testing.T, c driver.Compute) {
	if c.ID() == "" || c.Implementation() == "" {
		t.Fatalf("ID() = %q, Implementation() = %q; both must be set", c.ID(), c.Implementation())
	}
}

func testEnsureConverges(t *testing.T, c driver.Compute) {
	ns := NewNamespace()
	obs := EnsureReady(t, c, ns)
	if obs.Failure != "" {
		t.Fatalf("ready observation carries failure %q", obs.Failure)
	}
	if n, ok := copies(t, c, ns); ok && n != 1 {
		t.Fatalf("after ensure: %d copies of the Namespace, want 1", n)
	}
}

func testEnsureIdempotent(t *testing.T, c driver.Compute) {
	ns := NewNamespace()
	EnsureReady(t, c, ns)
	for i := range 3 {
		obs, err := c.EnsureNamespace(context.Background(), ns)
		if err != nil {
			t.Fatalf("repeated ensure %d: %v", i, err)
		}
		if err := driver.CheckEnsureObservation(ns.ID, obs); err != nil {
			t.Fatalf("repeated ensure %d: %v", i, err)
		}
		if !*obs.Ready || obs.Failure != "" {
			t.Fatalf("repeated ensure %d of a ready Namespace: ready %v failure %q reason %q", i, *obs.Ready, obs.Failure, obs.Reason)
		}
	}
	if n, ok := copies(t, c, ns); ok && n != 1 {
		t.Fatalf("after repeated ensures: %d copies of the Namespace, want 1", n)
	}
}

func testConcurrentEnsure(t *testing.T, c driver.Compute) {
	ns := NewNamespace()
	t.Cleanup(func() { cleanupNamespace(t, c, ns) })
	const callers = 4
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := converge(c.EnsureNamespace, driver.CheckEnsureObservation, ns)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent ensure: %v", err)
		}
	}
	if n, ok := copies(t, c, ns); ok && n != 1 {
		t.Fatalf("after concurrent ensures: %d copies of the Namespace, want 1", n)
	}
}

func testDeleteIdempotent(t *testing.T, c driver.Compute) {
	ns := NewNamespace()
	EnsureReady(t, c, ns)
	DeleteUntilDeleted(t, c, ns)
	for i := range 2 {
		obs, err := c.DeleteNamespace(context.Background(), ns)
		if err != nil {
			t.Fatalf("repeated delete %d: %v", i, err)
		}
		if err := driver.CheckDeleteObservation(ns.ID, obs); err != nil {
			t.Fatalf("repeated delete %d: %v", i, err)
		}
		if !*obs.Deleted || obs.Failure != "" {
			t.Fatalf("repeated delete %d of a deleted Namespace: deleted %v failure %q", i, *obs.Deleted, obs.Failure)
		}
	}
	if n, ok := copies(t, c, ns); ok && n != 0 {
		t.Fatalf("after delete: %d copies of the Namespace, want 0", n)
	}
}

func testDeleteUnknown(t *testing.T, c driver.Compute) {
	obs := DeleteUntilDeleted(t, c, NewNamespace())
	if obs.Failure != "" {
		t.Fatalf("delete of an unknown Namespace: failure %q", obs.Failure)
	}
}

// callPromptly runs fn in a goroutine and fails the test if it does not return within promptly.
func callPromptly(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	timer := time.NewTimer(promptly)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Fatalf("%s did not return within %s of its context ending", what, promptly)
		return nil
	}
}

func testEndedContext(t *testing.T, c driver.Compute) {
	ns := NewNamespace()
	rev := NewRevision(c, ns.ID)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()

	calls := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"EnsureNamespace", func(ctx context.Context) error { _, err := c.EnsureNamespace(ctx, ns); return err }},
		{"DeleteNamespace", func(ctx context.Context) error { _, err := c.DeleteNamespace(ctx, ns); return err }},
		{"PrepareRevision", func(ctx context.Context) error {
			_, err := c.PrepareRevision(ctx, rev, driver.RevisionContext{})
			return err
		}},
		{"StopRevision", func(ctx context.Context) error { return c.StopRevision(ctx, rev, driver.StopOptions{}) }},
		{"RetireRevision", func(ctx context.Context) error { return c.RetireRevision(ctx, rev) }},
	}
	for _, call := range calls {
		for _, ended := range []struct {
			ctx  context.Context
			want error
		}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
			err := callPromptly(t, call.name, func() error { return call.fn(ended.ctx) })
			if !errors.Is(err, ended.want) {
				t.Errorf("%s with an ended context: error class %s, want errors.Is(err, %v)", call.name, driver.ErrorClass(err), ended.want)
			}
		}
	}
	if n, ok := copies(t, c, ns); ok && n != 0 {
		t.Fatalf("a cancelled ensure left %d copies of the Namespace", n)
	}
}

func testNoForeignIDs(t *testing.T, c driver.Compute) {
	a, b := NewNamespace(), NewNamespace()
	for _, pair := range [][2]driver.Namespace{{a, b}, {b, a}} {
		own, other := pair[0], pair[1]
		obs := EnsureReady(t, c, own)
		checkNoForeign(t, "ensure", own, other, obs)
	}
	for _, pair := range [][2]driver.Namespace{{a, b}, {b, a}} {
		own, other := pair[0], pair[1]
		obs := DeleteUntilDeleted(t, c, own)
		checkNoForeign(t, "delete", own, other, obs)
	}
}

func checkNoForeign(t *testing.T, op string, own, other driver.Namespace, obs driver.NamespaceObservation) {
	t.Helper()
	if obs.NamespaceID != own.ID {
		t.Fatalf("%s of %s observed Namespace %q", op, own.ID, obs.NamespaceID)
	}
	if strings.Contains(obs.Reason, other.ID) || strings.Contains(obs.Reason, other.ID[len("ns_"):]) {
		t.Fatalf("%s of %s: the reason names another Namespace", op, own.ID)
	}
}

// yieldAlways allows a stop to yield and says other work is always waiting.
var yieldAlways = driver.StopOptions{Yield: true, OtherWorkWaiting: func(context.Context) bool { return true }}

func testStopRetireUnknown(t *testing.T, c driver.Compute) {
	ns := NewNamespace()
	EnsureReady(t, c, ns)
	for _, rev := range []driver.Revision{NewRevision(c, ns.ID), NewRevision(c, NewNamespace().ID)} {
		for i := range 2 {
			if err := c.StopRevision(context.Background(), rev, driver.StopOptions{}); err != nil {
				t.Fatalf("StopRevision of an unknown revision (call %d): %v", i, err)
			}
			// Nothing terminates, so a stop that may yield has no reason to.
			if err := c.StopRevision(context.Background(), rev, yieldAlways); err != nil {
				t.Fatalf("yielding StopRevision of an unknown revision (call %d): %v", i, err)
			}
			if err := c.RetireRevision(context.Background(), rev); err != nil {
				t.Fatalf("RetireRevision of an unknown revision (call %d): %v", i, err)
			}
		}
	}
}

func testPrepareAnswer(t *testing.T, c driver.Compute) {
	ns := NewNamespace()
	EnsureReady(t, c, ns)
	rev := NewRevision(c, ns.ID)
	t.Cleanup(func() { _ = c.RetireRevision(context.Background(), rev) })
	r, err := c.PrepareRevision(context.Background(), rev, driver.RevisionContext{})
	if err != nil {
		if driver.Code(err) == "" {
			t.Fatalf("PrepareRevision failed with an untyped error (class %s)", driver.ErrorClass(err))
		}
		return
	}
	if err := driver.CheckRevisionReadiness(rev, r); err != nil {
		t.Fatalf("PrepareRevision: %v", err)
	}
}
