package simulated

import (
	"context"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/driver"
)

// CodeRevisionNotReady is the ActivationPendingError code for activating a revision that is not
// prepared and ready.
const CodeRevisionNotReady = "REVISION_NOT_READY"

// CodeStopFailed is the RetryableError code of a stop failed by FailStops.
const CodeStopFailed = "SIMULATED_STOP_FAILED"

// Options are the Go-only knobs of a simulated driver.
type Options struct {
	// Now is the clock readiness delays are measured with; nil means time.Now.
	Now func() time.Time
	// OnCall, when set, is called synchronously each time a call enters, before faults apply and
	// without the driver's lock held: it may inject faults or inspect the world, and blocking in it
	// blocks the call (the call's context is checked right after it returns).
	OnCall func(Call)
}

// Call identifies one call that entered the driver.
type Call struct {
	Op Op
	// Target is the Namespace, revision or Agent id; "" for Preflight.
	Target string
}

// Revision phases (RevisionState.Phase).
const (
	PhasePrepared = "prepared"
	PhaseStopped  = "stopped"
	PhaseRetired  = "retired"
)

// NamespaceState is a snapshot of one simulated Namespace.
type NamespaceState struct {
	Namespace driver.Namespace
	Ready     bool // the ready delay elapsed (as last observed)
	Deleting  bool // a delete started and has not finished
}

// RevisionState is a snapshot of one simulated revision runtime.
type RevisionState struct {
	Revision driver.Revision
	Phase    string // PhasePrepared | PhaseStopped | PhaseRetired
	Ready    bool   // prepared and the ready delay elapsed (as last observed)
	Routed   bool   // the Agent's traffic goes to this revision
}

type nsState struct {
	ns          driver.Namespace
	ensuredAt   time.Time
	ready       bool
	deleteStart time.Time // zero when no delete started
}

type revState struct {
	rev        driver.Revision
	phase      string
	preparedAt time.Time
	ready      bool
}

type callKey struct {
	op     Op
	target string
}

// Driver is the simulated Compute Driver. It is safe for concurrent use.
type Driver struct {
	id     string
	cfg    Config
	now    func() time.Time
	onCall func(Call)

	mu         sync.Mutex
	namespaces map[string]*nsState
	revisions  map[string]*revState
	routed     map[string]string // agent id → revision id
	faults     map[faultKey][]*faultEntry
	calls      map[callKey]int
	history    []Call                   // the latest calls that entered (at most maxHistory), in order
	readyAfter map[string]int           // revision id → not-ready observations before it may be ready
	yieldStops map[string]int           // revision id → yielding stops that still end early
	failStops  map[string]int           // revision id → stops that still fail
	changed    chan struct{}            // closed and replaced whenever a call enters
	runtimes   map[string]*simRuntime   // revision id → scripted runtime (runtime.go)
	workspaces map[string]*simWorkspace // agent id → what its workspace would hold
}

// simWorkspace is an Agent's simulated workspace: the initial files written into it and whether
// they were applied (the marker a real driver leaves, so they are never written twice).
type simWorkspace struct {
	files   map[string]string
	applied bool
}

var (
	_ driver.Compute                  = (*Driver)(nil)
	_ driver.Preflighter              = (*Driver)(nil)
	_ driver.Activator                = (*Driver)(nil)
	_ driver.ActivationOrderer        = (*Driver)(nil)
	_ driver.AgentBinder              = (*Driver)(nil)
	_ driver.RuntimeCredentialDeleter = (*Driver)(nil)
	_ driver.ExclusiveReplacement     = (*Driver)(nil)
	_ driver.Maintainer               = (*Driver)(nil)
	_ driver.HarnessAuthSupport       = (*Driver)(nil)
	_ driver.RuntimeDescriber         = (*Driver)(nil)
	_ driver.RuntimeLogReader         = (*Driver)(nil)
	_ driver.RuntimeDiagnoser         = (*Driver)(nil)
	_ driver.RuntimeImageReader       = (*Driver)(nil)
)

// New returns a simulated driver selected as id. Empty Config fields take their defaults.
func New(id string, cfg Config, opts Options) *Driver {
	if cfg.StoppedPredecessors == "" {
		cfg.StoppedPredecessors = StoppedPredecessorsNever
	}
	if cfg.ActivationOrder == "" {
		cfg.ActivationOrder = driver.ActivationAfterCommit
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Driver{
		id:         id,
		cfg:        cfg,
		now:        now,
		onCall:     opts.OnCall,
		namespaces: make(map[string]*nsState),
		revisions:  make(map[string]*revState),
		routed:     make(map[string]string),
		faults:     make(map[faultKey][]*faultEntry),
		calls:      make(map[callKey]int),
		readyAfter: make(map[string]int),
		yieldStops: make(map[string]int),
		failStops:  make(map[string]int),
		changed:    make(chan struct{}),
		workspaces: make(map[string]*simWorkspace),
	}
}

// WorkspaceFiles returns a copy of the files the driver wrote into the Agent's workspace from
// initial workspace files, and whether it applied any.
func (d *Driver) WorkspaceFiles(agentID string) (map[string]string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, ok := d.workspaces[agentID]
	if !ok {
		return nil, false
	}
	return maps.Clone(w.files), w.applied
}

// EditWorkspaceFile stands in for the Agent changing a file of its workspace.
func (d *Driver) EditWorkspaceFile(agentID, name, content string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.workspaces[agentID]
	if w == nil {
		w = &simWorkspace{files: map[string]string{}}
		d.workspaces[agentID] = w
	}
	w.files[name] = content
}

// applyWorkspaceFiles writes the revision's initial files that are absent, once per Agent, as the
// Kubernetes driver's init container does. The caller holds d.mu.
func (d *Driver) applyWorkspaceFiles(rev driver.Revision) {
	if len(rev.InitialWorkspaceFiles) == 0 {
		return
	}
	w := d.workspaces[rev.AgentID]
	if w == nil {
		w = &simWorkspace{files: map[string]string{}}
		d.workspaces[rev.AgentID] = w
	}
	if w.applied {
		return
	}
	for _, name := range driver.WorkspaceFileNames {
		content, ok := rev.InitialWorkspaceFiles[name]
		if _, exists := w.files[name]; ok && !exists {
			w.files[name] = content
		}
	}
	w.applied = true
}

// ID implements driver.Compute.
func (d *Driver) ID() string { return d.id }

// Implementation implements driver.Compute.
func (d *Driver) Implementation() string { return Name }

// ---- faults and calls ----

// InjectNamespace adds a fault for calls on Namespace id.
func (d *Driver) InjectNamespace(id string, f Fault) { d.inject(faultKey{targetNamespace, id}, f) }

// InjectRevision adds a fault for calls on revision id.
func (d *Driver) InjectRevision(id string, f Fault) { d.inject(faultKey{targetRevision, id}, f) }

// InjectAgent adds a fault for BindAgent and DeleteAgentRuntimeCredentials on Agent id.
func (d *Driver) InjectAgent(id string, f Fault) { d.inject(faultKey{targetAgent, id}, f) }

// InjectPreflight adds a fault for Preflight.
func (d *Driver) InjectPreflight(f Fault) { d.inject(faultKey{targetPreflight, ""}, f) }

// ClearFaults removes every fault.
func (d *Driver) ClearFaults() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = make(map[faultKey][]*faultEntry)
}

func (d *Driver) inject(k faultKey, f Fault) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults[k] = append(d.faults[k], &faultEntry{fault: f, remaining: f.Times})
}

// Calls returns how many op calls entered for target; target "" counts every target.
func (d *Driver) Calls(op Op, target string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[callKey{op, target}]
}

// maxHistory bounds History, so a long-running demo does not grow without limit.
const maxHistory = 10_000

// History returns the calls that entered the driver (at most the latest 10 000), in the order
// they entered (Preflight included): the order of the simulated world's effects.
func (d *Driver) History() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.history...)
}

// ReadyAfterObservations makes revision id report not ready for its next n PrepareRevision
// observations (counted from now); after them the revision is ready as usual (RevisionReadyAfter
// still applies). It replaces an earlier setting for the same revision.
func (d *Driver) ReadyAfterObservations(id string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.readyAfter[id] = n
}

// YieldStops makes the next n StopRevision calls on revision id that allow a yield
// (driver.StopOptions.Yield) end early with *driver.StopYieldedError: the route is withdrawn but the
// runtime keeps running, as workloads that are still terminating. A stop that does not allow a
// yield waits the termination out: it clears the remaining yields and stops the revision. Failing
// stops (FailStops) come first. It replaces an earlier setting for the same revision; n <= 0 clears
// it.
func (d *Driver) YieldStops(id string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	setCount(d.yieldStops, id, n)
}

// FailStops makes the next n StopRevision calls on revision id fail with a *driver.RetryableError
// (CodeStopFailed) and change nothing. It replaces an earlier setting; n <= 0 clears it.
func (d *Driver) FailStops(id string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	setCount(d.failStops, id, n)
}

func setCount(m map[string]int, id string, n int) {
	if n <= 0 {
		delete(m, id)
		return
	}
	m[id] = n
}

// WaitCalls blocks until at least n op calls entered for target ("" = any target) or ctx ends.
func (d *Driver) WaitCalls(ctx context.Context, op Op, target string, n int) error {
	for {
		d.mu.Lock()
		count, changed := d.calls[callKey{op, target}], d.changed
		d.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// enter records the call, runs the hook, takes the matching fault and performs its waits. It
// returns the fault to apply (zero when none) or the context error.
func (d *Driver) enter(ctx context.Context, op Op, k faultKey) (Fault, error) {
	d.mu.Lock()
	d.calls[callKey{op, k.id}]++
	if len(d.history) == maxHistory {
		d.history = append(d.history[:0:0], d.history[maxHistory/2:]...)
	}
	d.history = append(d.history, Call{Op: op, Target: k.id})
	if k.id != "" {
		d.calls[callKey{op, ""}]++
	}
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()

	if d.onCall != nil {
		d.onCall(Call{Op: op, Target: k.id})
	}
	if err := ctx.Err(); err != nil {
		return Fault{}, err
	}
	f := d.takeFault(op, k)
	if f.Hang {
		<-ctx.Done()
		return Fault{}, ctx.Err()
	}
	if f.Release != nil {
		select {
		case <-f.Release:
		case <-ctx.Done():
			return Fault{}, ctx.Err()
		}
	}
	if op != OpPreflight {
		f.Delay += d.cfg.CallDelay
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return Fault{}, ctx.Err()
		}
	}
	return f, nil
}

func (d *Driver) takeFault(op Op, k faultKey) Fault {
	d.mu.Lock()
	defer d.mu.Unlock()
	list := d.faults[k]
	for i, e := range list {
		if e.fault.Op != "" && e.fault.Op != op {
			continue
		}
		if e.fault.Times > 0 {
			e.remaining--
			if e.remaining <= 0 {
				d.faults[k] = append(list[:i:i], list[i+1:]...)
			}
		}
		return e.fault
	}
	return Fault{}
}

// ---- world inspection ----

// Namespace returns the state of Namespace id, if the simulated world holds it.
func (d *Driver) Namespace(id string) (NamespaceState, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.namespaces[id]
	if !ok {
		return NamespaceState{}, false
	}
	return NamespaceState{Namespace: s.ns, Ready: s.ready, Deleting: !s.deleteStart.IsZero()}, true
}

// NamespaceIDs returns the ids of the Namespaces the world holds, sorted.
func (d *Driver) NamespaceIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.namespaces))
	for id := range d.namespaces {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Revision returns the state of revision id, if the world holds it.
func (d *Driver) Revision(id string) (RevisionState, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.revisions[id]
	if !ok {
		return RevisionState{}, false
	}
	return RevisionState{Revision: s.rev, Phase: s.phase, Ready: s.ready, Routed: d.routed[s.rev.AgentID] == id}, true
}

// RoutedRevision returns the revision Agent agentID's traffic goes to, "" when none.
func (d *Driver) RoutedRevision(agentID string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.routed[agentID]
}

// ---- driver.Compute ----

// EnsureNamespace implements driver.Compute.
func (d *Driver) EnsureNamespace(ctx context.Context, ns driver.Namespace) (driver.NamespaceObservation, error) {
	f, err := d.enter(ctx, OpEnsureNamespace, faultKey{targetNamespace, ns.ID})
	if err != nil {
		return driver.NamespaceObservation{}, err
	}
	if f.Err != nil {
		if f.Raw {
			return driver.NamespaceObservation{}, f.Err
		}
		return driver.NamespaceEnsureFailed(ns.ID, f.Err), nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	s, ok := d.namespaces[ns.ID]
	if !ok || !s.deleteStart.IsZero() {
		s = &nsState{ns: ns, ensuredAt: now}
		d.namespaces[ns.ID] = s
	}
	if !s.ready && now.Sub(s.ensuredAt) >= d.cfg.NamespaceReadyAfter {
		s.ready = true
	}
	switch {
	case f.NotReady:
		return driver.NamespacePending(ns.ID, f.Reason), nil
	case !s.ready:
		return driver.NamespacePending(ns.ID, "The simulated Namespace is still provisioning."), nil
	}
	return driver.NamespaceReady(ns.ID), nil
}

// DeleteNamespace implements driver.Compute.
func (d *Driver) DeleteNamespace(ctx context.Context, ns driver.Namespace) (driver.NamespaceObservation, error) {
	f, err := d.enter(ctx, OpDeleteNamespace, faultKey{targetNamespace, ns.ID})
	if err != nil {
		return driver.NamespaceObservation{}, err
	}
	if f.Err != nil {
		if f.Raw {
			return driver.NamespaceObservation{}, f.Err
		}
		return driver.NamespaceDeleteFailed(ns.ID, f.Err), nil
	}
	if f.NotReady {
		return driver.NamespaceDeleting(ns.ID, f.Reason), nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.namespaces[ns.ID]
	if !ok {
		return driver.NamespaceDeleted(ns.ID), nil
	}
	now := d.now()
	if s.deleteStart.IsZero() {
		s.deleteStart = now
	}
	if now.Sub(s.deleteStart) < d.cfg.NamespaceDeletedAfter {
		return driver.NamespaceDeleting(ns.ID, "The simulated Namespace is still being torn down."), nil
	}
	delete(d.namespaces, ns.ID)
	for id, r := range d.revisions {
		if r.rev.NamespaceID == ns.ID {
			if d.routed[r.rev.AgentID] == id {
				delete(d.routed, r.rev.AgentID)
			}
			delete(d.revisions, id)
		}
	}
	return driver.NamespaceDeleted(ns.ID), nil
}

// enterRevision enters a revision operation: faults first (an injected error is returned as is),
// then the Compute pin, which must name this driver.
func (d *Driver) enterRevision(ctx context.Context, op Op, rev driver.Revision) (Fault, error) {
	f, err := d.enter(ctx, op, faultKey{targetRevision, rev.ID})
	if err != nil {
		return Fault{}, err
	}
	if f.Err != nil {
		return Fault{}, f.Err
	}
	if rev.Compute.ID != d.id || rev.Compute.Implementation != Name {
		return Fault{}, &driver.PermanentError{Code: driver.CodeComputeDriverMismatch, Reason: "The revision is pinned to another Compute Driver."}
	}
	return f, nil
}

// PrepareRevision implements driver.Compute.
func (d *Driver) PrepareRevision(ctx context.Context, rev driver.Revision, _ driver.RevisionContext) (driver.RevisionReadiness, error) {
	f, err := d.enterRevision(ctx, OpPrepareRevision, rev)
	if err != nil {
		return driver.RevisionReadiness{}, err
	}
	if rev.HarnessAuthMethod != "" && !d.SupportsHarnessAuth(rev.HarnessAuthMethod) {
		return driver.RevisionReadiness{}, &driver.UnsupportedError{Code: driver.CodeHarnessAuthenticationUnsupported, Reason: "The simulated Compute Driver does not know this Harness authentication method."}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	s, ok := d.revisions[rev.ID]
	if !ok || s.phase != PhasePrepared {
		s = &revState{rev: rev, phase: PhasePrepared, preparedAt: now}
		d.revisions[rev.ID] = s
	}
	d.applyWorkspaceFiles(rev)
	if !s.ready && now.Sub(s.preparedAt) >= d.cfg.RevisionReadyAfter {
		s.ready = true
	}
	out := driver.RevisionReadiness{
		NamespaceID: rev.NamespaceID, AgentID: rev.AgentID, RevisionID: rev.ID,
		Ready:    s.ready,
		Warnings: append([]driver.PluginWarning(nil), f.Warnings...),
	}
	if f.RuntimeFailure != "" {
		out.Ready = false
		out.RuntimeFailure = &driver.RuntimeFailure{
			Component: "harness", Check: "model_probe",
			CheckedAt: now.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			Code:      f.RuntimeFailure,
		}
		if f.RuntimeFailure == driver.RuntimeModelProbeFailed {
			out.RuntimeFailure.Cause = &driver.RuntimeFailureCause{Kind: driver.CauseProbeStatus}
		}
	}
	if f.NotReady {
		out.Ready = false
	}
	if n, ok := d.readyAfter[rev.ID]; ok {
		if n <= 1 {
			delete(d.readyAfter, rev.ID)
		} else {
			d.readyAfter[rev.ID] = n - 1
		}
		if n > 0 {
			out.Ready = false
		}
	}
	if !out.Ready {
		out.PendingReason = f.PendingReason
	}
	return out, nil
}

// StopRevision implements driver.Compute: the runtime stops and loses its route; unknown
// revisions are a no-op.
//
// YieldStops and FailStops adjust it per revision: a failing stop changes nothing; a yielding stop
// withdraws the route, keeps the runtime (its workloads are still terminating) and returns
// *driver.StopYieldedError.
func (d *Driver) StopRevision(ctx context.Context, rev driver.Revision, opts driver.StopOptions) error {
	if _, err := d.enterRevision(ctx, OpStopRevision, rev); err != nil {
		return err
	}
	d.mu.Lock()
	if n := d.failStops[rev.ID]; n > 0 {
		countDown(d.failStops, rev.ID)
		d.mu.Unlock()
		return &driver.RetryableError{Code: CodeStopFailed, Reason: "The simulated stop failed."}
	}
	if n := d.yieldStops[rev.ID]; n > 0 {
		if opts.Yield {
			countDown(d.yieldStops, rev.ID)
			if d.routed[rev.AgentID] == rev.ID {
				delete(d.routed, rev.AgentID)
			}
			d.mu.Unlock()
			return &driver.StopYieldedError{Reason: "The simulated workloads are still terminating."}
		}
		delete(d.yieldStops, rev.ID) // a full wait outlasts the termination
	}
	d.mu.Unlock()
	return d.apply(rev, PhaseStopped)
}

func countDown(m map[string]int, id string) {
	if m[id] <= 1 {
		delete(m, id)
	} else {
		m[id]--
	}
}

// RetireRevision implements driver.Compute: like StopRevision, and the revision is retired for
// good.
func (d *Driver) RetireRevision(ctx context.Context, rev driver.Revision) error {
	return d.halt(ctx, OpRetireRevision, rev, PhaseRetired)
}

func (d *Driver) halt(ctx context.Context, op Op, rev driver.Revision, phase string) error {
	if _, err := d.enterRevision(ctx, op, rev); err != nil {
		return err
	}
	return d.apply(rev, phase)
}

// apply moves a known revision to phase (a retired revision stays retired) and withdraws its route.
func (d *Driver) apply(rev driver.Revision, phase string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.revisions[rev.ID]
	if !ok {
		return nil
	}
	if s.phase != PhaseRetired {
		s.phase = phase
	}
	s.ready = false
	if d.routed[rev.AgentID] == rev.ID {
		delete(d.routed, rev.AgentID)
	}
	return nil
}

// ---- optional capabilities ----

// Preflight implements driver.Preflighter.
func (d *Driver) Preflight(ctx context.Context) ([]driver.PreflightWarning, error) {
	f, err := d.enter(ctx, OpPreflight, faultKey{targetPreflight, ""})
	if err != nil {
		return nil, err
	}
	return nil, f.Err
}

// ActivateRevision implements driver.Activator: it routes the Agent to rev, which must be prepared
// and ready (ActivationPendingError REVISION_NOT_READY otherwise). Idempotent.
func (d *Driver) ActivateRevision(ctx context.Context, rev driver.Revision, _ driver.RevisionContext) error {
	if _, err := d.enterRevision(ctx, OpActivateRevision, rev); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.revisions[rev.ID]
	if !ok || s.phase != PhasePrepared || !s.ready {
		return &driver.ActivationPendingError{Code: CodeRevisionNotReady}
	}
	d.routed[rev.AgentID] = rev.ID
	return nil
}

// DeactivateRevision implements driver.Activator: rev loses the Agent's route if it has it.
func (d *Driver) DeactivateRevision(ctx context.Context, rev driver.Revision) error {
	if _, err := d.enterRevision(ctx, OpDeactivateRevision, rev); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.routed[rev.AgentID] == rev.ID {
		delete(d.routed, rev.AgentID)
	}
	return nil
}

// ActivationOrder implements driver.ActivationOrderer.
func (d *Driver) ActivationOrder() string { return d.cfg.ActivationOrder }

// BindAgent implements driver.AgentBinder (a recorded no-op unless a fault says otherwise).
func (d *Driver) BindAgent(ctx context.Context, _ driver.Namespace, agent driver.AgentRef) error {
	f, err := d.enter(ctx, OpBindAgent, faultKey{targetAgent, agent.AgentID})
	if err != nil {
		return err
	}
	return f.Err
}

// DeleteAgentRuntimeCredentials implements driver.RuntimeCredentialDeleter (a recorded no-op
// unless a fault says otherwise).
func (d *Driver) DeleteAgentRuntimeCredentials(ctx context.Context, agent driver.AgentRef) error {
	f, err := d.enter(ctx, OpDeleteAgentRuntimeCredentials, faultKey{targetAgent, agent.AgentID})
	if err != nil {
		return err
	}
	if f.Err == nil {
		d.mu.Lock()
		delete(d.workspaces, agent.AgentID) // the workspace goes with the Agent's storage
		d.mu.Unlock()
	}
	return f.Err
}

// RequiresStoppedPredecessors implements driver.ExclusiveReplacement.
func (d *Driver) RequiresStoppedPredecessors(rev driver.Revision) bool {
	switch d.cfg.StoppedPredecessors {
	case StoppedPredecessorsAlways:
		return true
	case StoppedPredecessorsDedicated:
		return rev.ExecutionMode == driver.ExecutionDedicated
	}
	return false
}

// MaintenanceInterval implements driver.Maintainer.
func (d *Driver) MaintenanceInterval() time.Duration { return d.cfg.MaintenanceInterval }

// SupportsHarnessAuth implements driver.HarnessAuthSupport: every Harness authentication method in
// scope.
func (d *Driver) SupportsHarnessAuth(method string) bool {
	switch method {
	case driver.HarnessAuthRuntime, driver.HarnessAuthAPIKey, driver.HarnessAuthCodexPAT:
		return true
	}
	return false
}
