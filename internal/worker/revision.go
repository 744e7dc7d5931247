package worker

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Revision result codes (worker-lifecycle §4.3).
const (
	codeRevisionActivated            = "REVISION_ACTIVATED"
	codeRevisionAlreadyActive        = "REVISION_ALREADY_ACTIVE"
	codeRevisionSuperseded           = "REVISION_SUPERSEDED"
	codeRevisionStopped              = "REVISION_STOPPED"
	codeRevisionIncomplete           = "REVISION_INCOMPLETE"
	codeRevisionUnschedulable        = "REVISION_UNSCHEDULABLE"
	codeWorkspaceNodePending         = "WORKSPACE_NODE_PENDING"
	codeFinalizationIncomplete       = "REVISION_FINALIZATION_INCOMPLETE"
	codeBindingIncomplete            = "COMPUTE_BINDING_INCOMPLETE"
	codeActiveRevisionChanged        = "ACTIVE_REVISION_CHANGED"
	codeNamespaceNotReady            = "NAMESPACE_NOT_READY"
	codeInvalidAdmittedRevision      = "INVALID_ADMITTED_REVISION"
	codeHarnessDescriptorMismatch    = "HARNESS_DESCRIPTOR_MISMATCH"
	codeInvalidAgentPrincipal        = "INVALID_AGENT_PRINCIPAL"
	codeHarnessAuthRequired          = "HARNESS_AUTH_REQUIRED"
	codeInvalidHarnessAuth           = "INVALID_HARNESS_AUTH"
	codeInvalidSecretBindings        = "INVALID_SECRET_BINDINGS"
	codeSecretDriverMismatch         = "SECRET_DRIVER_MISMATCH"
	codeSecretBindingUnavailable     = "SECRET_BINDING_UNAVAILABLE"
	codeHarnessAuthSourceUnavailable = "HARNESS_AUTH_SOURCE_UNAVAILABLE"
	codeRuntimeModelProbeFailed      = "RUNTIME_MODEL_PROBE_FAILED"
)

// heldRuntimeFailures maps the runtime failures that end a deployment at once (§3.7.2 step 2).
// Other runtime codes keep it pending.
var heldRuntimeFailures = map[string]string{
	driver.RuntimeAuthenticationFailed: "RUNTIME_AUTHENTICATION_FAILED",
	driver.RuntimeModelProbeCPUStarved: "RUNTIME_CPU_STARVED",
	driver.RuntimeModelProbeTimeout:    "RUNTIME_MODEL_PROBE_TIMEOUT",
	driver.RuntimeModelProbeFailed:     codeRuntimeModelProbeFailed,
	driver.RuntimeLoginFailed:          "RUNTIME_LOGIN_FAILED",
	driver.RuntimeUnavailable:          "RUNTIME_STARTUP_FAILED",
	driver.RuntimeIncompatibleResponse: "RUNTIME_STARTUP_FAILED",
}

// ---- deploy timing (worker.completed fields of deploy passes; this process only) ----

type deployTiming struct {
	passes       int
	prepare      time.Duration
	firstUnready time.Time
	firstReady   time.Time
	activated    time.Time
}

// timingStore holds the deploy timing of the worker's 256 most recent deploy work items.
type timingStore struct {
	mu sync.Mutex // guards the timings' fields
	m  *boundedMap[*deployTiming]
}

func newTimingStore() *timingStore { return &timingStore{m: newBoundedMap[*deployTiming](256)} }

func (s *timingStore) get(key string) *deployTiming {
	return s.m.getOrSet(key, func() *deployTiming { return &deployTiming{} })
}

func (s *timingStore) update(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

func millis(d time.Duration) int64 { return max(d, 0).Milliseconds() }

// attrs are the deploy timing fields of worker.completed for t.
func (s *timingStore) attrs(t *deployTiming, work queue.Work) []any {
	var out []any
	s.update(func() {
		var wait time.Duration
		switch {
		case t.firstUnready.IsZero():
		case !t.firstReady.IsZero():
			wait = t.firstReady.Sub(t.firstUnready)
		default:
			wait = time.Since(t.firstUnready)
		}
		out = []any{"deployPasses", t.passes, "prepareMs", millis(t.prepare), "readinessWaitMs", millis(wait),
			"elapsedMs", millis(time.Since(work.CreatedAt))}
		if !t.activated.IsZero() && !t.firstReady.IsZero() {
			out = append(out, "activationMs", millis(t.activated.Sub(t.firstReady)))
		}
	})
	return out
}

// ---- revision result ----

// revisionResult is what a deploy pass decided before (and between) its finalizations.
type revisionResult struct {
	result
	data           json.RawMessage        // result data of a terminal transition
	runtimeFailure *driver.RuntimeFailure // evidence of a pending readiness observation
	transient      bool                   // pending on a transient dependency (its code at the deadline)
	readiness      bool                   // pending on readiness (recheck cadence)
	warnings       []driver.PluginWarning

	publish    bool    // prepared and ready: compare-and-set the pointer from expected
	expected   *string // the pointer as read before preparing
	activation bool    // complete as an activation: pointer check and the one activation audit
	superseded bool    // a newer revision is active
	activeID   *string // the active revision that superseded the candidate

	// stops (worker-lifecycle §3.7.4)
	refused         *string       // pending REFUSED_CANDIDATE_STOP_PENDING: the refusal kept for the stop
	stopYielded     bool          // the refused candidate's stop yielded
	stopDuration    time.Duration // how long the failed refused-candidate stop took
	recheck         time.Duration // the refused-candidate stop recheck
	refusedStopped  bool          // the refused candidate's stop already ran in this pass
	yielded         bool          // the pass ends pending because a stop yielded
	predecessor     bool          // that stop was a predecessor's
	noDeadline      bool          // an Agent stop wait: the convergence deadline does not apply
	held, expired   bool          // a held runtime failure, the convergence deadline
	predecessorStop string        // the cause of a predecessor stop that still fails (log only)

	// set by the finalization transaction
	published       bool // the pointer now names the candidate; the work is not complete yet
	stopAfterCommit bool // the Agent was stopped between readiness and publication
}

// deployPass carries one deploy pass's reads.
type deployPass struct {
	w         *Worker
	a         *activeClaim
	work      queue.Work
	timing    *deployTiming
	ns        store.NamespaceRow
	agent     store.WorkerAgent
	revisions []agentRevision
	candidate agentRevision
	rc        driver.RevisionContext

	loaded        bool               // the Namespace, Agent and candidate were read
	exclusive     bool               // Compute requires stopped predecessors for the candidate
	prepared      bool               // this pass called PrepareRevision for the candidate
	latest        *store.WorkAttempt // the work's latest evidence
	storedRefusal *string            // the refusal wait the evidence stores
	refusal       *string            // that wait after re-decision (nil once lifted)
}

// revisionPass is the deploy pass of `agent_revision:<rev>:reconcile` (worker-lifecycle §3.7,
// with exclusive replacement and refused-candidate stops, without repository, credential-source,
// plugin-provisioning and sandbox branches).
func (w *Worker) revisionPass(a *activeClaim) (result, passReport, error) {
	p := &deployPass{w: w, a: a, work: a.claim.Work, timing: w.timings.get(a.claim.Work.Key)}
	p.w.timings.update(func() { p.timing.passes++ })
	r, err := p.decide()
	if err == nil {
		err = p.finish(&r)
	}
	rep := passReport{attrs: p.w.timings.attrs(p.timing, p.work), yielded: r.yielded, predecessor: r.predecessor}
	if r.refused != nil {
		rep.attrs = append(rep.attrs, "refusal", *r.refused)
	}
	if r.predecessorStop != "" {
		rep.attrs = append(rep.attrs, "predecessorStop", r.predecessorStop)
	}
	return r.result, rep, err
}

func (p *deployPass) permanent(code string) revisionResult {
	return revisionResult{result: permanent(code)}
}

// failure maps an error of the pass (§3.7 step 19) and keeps the HTTP answer that caused it for
// the log. A lost claim is returned as the error.
func (p *deployPass) failure(err error) (revisionResult, error) {
	r, ferr := p.classifyFailure(err)
	if ferr == nil {
		r.withHTTPStatus(err)
	}
	return r, ferr
}

func (p *deployPass) classifyFailure(err error) (revisionResult, error) {
	if errors.Is(err, errClaimLost) {
		return revisionResult{}, errClaimLost
	}
	var (
		transient   *driver.TransientDependencyError
		failed      *driver.ActivationFailedError
		invalid     *driver.InvalidObservationError
		predecessor *predecessorStopError
	)
	switch {
	case driver.IsStopYielded(err) && errors.As(err, &predecessor):
		// An earlier revision is still terminating: wait on the readiness cadence, within the deadline.
		return revisionResult{result: result{outcome: outcomePending, code: codePredecessorStopYielded, cause: driver.ErrorClass(err)},
			readiness: true, yielded: true, predecessor: true}, nil
	case driver.IsStopYielded(err):
		// The stopped Agent's runtime is still terminating: run again after the other work.
		return revisionResult{result: result{outcome: outcomePending, code: codeAgentStopYielded, cause: driver.ErrorClass(err)},
			readiness: true, yielded: true, noDeadline: true}, nil
	case errors.As(err, &transient):
		cause := transient.Reason
		if cause == "" {
			cause = driver.ErrorClass(err)
		}
		return revisionResult{result: result{outcome: outcomePending, code: queue.SafeCode(transient.Code), cause: cause,
			dependency: transient.Dependency, status: transient.Status}, transient: true}, nil
	case errors.As(err, &failed):
		return revisionResult{result: result{outcome: outcomePermanent, code: queue.SafeCode(failed.Code), cause: driver.ErrorClass(err)}}, nil
	case errors.As(err, &invalid):
		return revisionResult{result: result{outcome: outcomePermanent, code: codeInvalidObservation, cause: driver.ErrorClass(err)}}, nil
	case driver.IsPermanent(err) && driver.Code(err) != "":
		// A refusal the driver calls permanent (configuration, ownership, an unsupported method):
		// repeating cannot fix it.
		return revisionResult{result: result{outcome: outcomePermanent, code: queue.SafeCode(driver.Code(err)), cause: driver.ErrorClass(err)}}, nil
	}
	return revisionResult{result: dependencyFailure(err)}, nil
}

// activeFailure maps an error of the already-active path and of after-commit activation: the
// pointer names the candidate, so anything but a definitive activation failure keeps it pending.
func (p *deployPass) activeFailure(err error) (revisionResult, error) {
	if errors.Is(err, errClaimLost) {
		return revisionResult{}, errClaimLost
	}
	var (
		failed    *driver.ActivationFailedError
		invalid   *driver.InvalidObservationError
		transient *driver.TransientDependencyError
		pending   *driver.ActivationPendingError
	)
	switch {
	case errors.As(err, &failed), errors.As(err, &invalid), driver.IsStopYielded(err):
		return p.failure(err)
	case errors.As(err, &transient):
		return p.failure(err)
	case errors.As(err, &pending):
		return revisionResult{result: result{outcome: outcomePending, code: queue.SafeCode(pending.Code), cause: driver.ErrorClass(err)}}, nil
	}
	return revisionResult{result: result{outcome: outcomePending, code: codeFinalizationIncomplete, cause: driver.ErrorClass(err)}}, nil
}

func (p *deployPass) decide() (revisionResult, error) {
	w, a, work := p.w, p.a, p.work
	ctx := a.ctx
	if work.AgentID == nil || work.RevisionID == nil || work.AgentTarget != nil || work.NamespaceTarget != nil {
		return p.permanent(codeInvalidTarget), nil
	}
	// The stored refusal wait is read first: a failing read below must not turn it into a retry.
	if err := p.readRefusalWait(); err != nil {
		return revisionResult{}, err
	}
	ns, err := store.GetNamespaceRow(ctx, w.pool, work.NamespaceID)
	var agent store.WorkerAgent
	if err == nil {
		agent, err = store.ReadWorkerAgent(ctx, w.pool, work.NamespaceID, *work.AgentID)
	}
	var rows []store.WorkerRevision
	if err == nil {
		rows, err = store.ListWorkerRevisions(ctx, w.pool, work.NamespaceID, agent.ID)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return p.permanent(codeInvalidRevisionOwner), nil
	case err != nil && p.refusal != nil:
		return refusedWait(*p.refusal, err), nil
	case err != nil:
		return p.failure(err)
	}
	p.ns, p.agent = ns, agent
	var candidate, previous *agentRevision
	for _, row := range rows {
		r := agentRevision{row: row}
		if row.ID == *work.RevisionID {
			spec, err := platform.DecodeRevisionSpec(row.AdmittedSpec)
			if err != nil {
				return p.permanent(codeInvalidAdmittedRevision), nil
			}
			r.spec = spec
			candidate = &r
		} else {
			_ = json.Unmarshal(row.AdmittedSpec, &r.spec)
		}
		p.revisions = append(p.revisions, r)
		if agent.ActiveRevisionID != nil && row.ID == *agent.ActiveRevisionID {
			previous = &p.revisions[len(p.revisions)-1]
		}
	}
	if candidate == nil {
		return p.permanent(codeInvalidRevisionOwner), nil
	}
	p.candidate = *candidate
	p.loaded = true
	p.exclusive = w.exclusiveFor(*candidate)
	if agent.ActiveRevisionID != nil && *agent.ActiveRevisionID == candidate.row.ID {
		p.storedRefusal, p.refusal = nil, nil // the active revision is not a refused candidate
	}
	spec := candidate.spec
	pinned, known := platform.PinnedHarnesses[spec.Harness.Mode]
	switch {
	case ns.DeletedAt != nil || ns.Status != store.NamespaceReady:
		return p.permanent(codeNamespaceNotReady), nil
	case !candidate.ownedBy(agent) || spec.Harness.Mode != agent.ExecutionMode:
		return p.permanent(codeInvalidAdmittedRevision), nil
	case !known || pinned != spec.Harness:
		return p.permanent(codeHarnessDescriptorMismatch), nil
	case !w.ownsCompute(spec.Compute):
		return p.permanent(codeComputeDriverMismatch), nil
	case agent.ActiveRevisionID != nil && previous == nil:
		return p.permanent(codeInvalidActiveRevision), nil
	}

	if r, done, err := p.authorize(); err != nil || done {
		return r, err
	}
	if err := p.redecideRefusal(); err != nil {
		return p.failure(err)
	}

	candidateRev := candidate.driverRevision()
	alreadyActive := agent.ActiveRevisionID != nil && *agent.ActiveRevisionID == candidate.row.ID
	if agent.DesiredRuntimeState != store.RuntimeRunning {
		// Stopped before (or while) this revision was deployed: it never activates.
		if err := w.bindAgent(a, ns, agent); err != nil {
			return p.failure(err)
		}
		if err := w.stopRevision(a, candidateRev, true); err != nil {
			return p.failure(err)
		}
		if agent.ActiveRevisionID == nil || alreadyActive {
			if err := p.retireEarlier(); err != nil {
				return p.failure(err)
			}
		}
		return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionStopped}}, nil
	}

	// Exclusive supersession: a later exclusive revision exists; nothing is prepared. A refused
	// candidate whose stop is still pending is stopped first.
	if p.exclusive && p.laterExclusive() {
		if p.storedRefusal != nil && !w.stopped.recent(candidate.row.ID) {
			if err := p.stopRefusedCandidate(); err != nil {
				if errors.Is(err, errClaimLost) {
					return revisionResult{}, errClaimLost
				}
				return refusedWait(*p.storedRefusal, err), nil
			}
		}
		return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionSuperseded}, superseded: true,
			activeID: agent.ActiveRevisionID}, nil
	}
	// A stored refusal that still stands: stop the candidate, then publish the refusal.
	if p.refusal != nil {
		if previous != nil && previous.row.Number >= candidate.row.Number {
			return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionSuperseded}, superseded: true,
				activeID: agent.ActiveRevisionID}, nil
		}
		if err := p.stopRefusedCandidate(); err != nil {
			if errors.Is(err, errClaimLost) {
				return revisionResult{}, errClaimLost
			}
			return refusedWait(*p.refusal, err), nil
		}
		return p.refusalResult(*p.refusal), nil
	}

	if r, done := p.resolveContext(); done {
		return r, nil
	}
	if err := w.bindAgent(a, ns, agent); err != nil {
		if alreadyActive && !errors.Is(err, errClaimLost) {
			return revisionResult{result: result{outcome: outcomePending, code: codeBindingIncomplete, cause: driver.ErrorClass(err)}}, nil
		}
		return p.failure(err)
	}

	if alreadyActive {
		// Recovery after the pointer was published (a lost claim, a failed activation or
		// retirement): finish activating; never roll back.
		obs, err := p.prepare()
		if err != nil {
			return p.activeFailure(err)
		}
		if !obs.Ready {
			return p.pendingReadiness(obs), nil
		}
		if err := p.activateAfterCommit(); err != nil {
			return p.activeFailure(err)
		}
		if err := p.retireEarlier(); err != nil {
			return p.activeFailure(err)
		}
		p.w.timings.update(func() { p.timing.activated = time.Now() })
		return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionAlreadyActive}, activation: true, warnings: obs.Warnings}, nil
	}
	if previous != nil && previous.row.Number >= candidate.row.Number {
		return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionSuperseded}, superseded: true,
			activeID: agent.ActiveRevisionID}, nil
	}

	obs, err := p.prepare()
	if err != nil {
		return p.failure(err)
	}
	if !obs.Ready {
		return p.pendingReadiness(obs), nil
	}
	// Ready: a stop admitted while preparing wins over activation.
	current, err := store.ReadWorkerAgent(ctx, w.pool, work.NamespaceID, agent.ID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return p.permanent(codeInvalidRevisionOwner), nil
		}
		return p.failure(err)
	}
	if current.DesiredRuntimeState != store.RuntimeRunning {
		if err := w.stopRevision(a, candidateRev, true); err != nil {
			return p.failure(err)
		}
		return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionStopped}}, nil
	}
	if act, ok := w.cfg.Compute.(driver.Activator); ok && driver.ActivationOrder(w.cfg.Compute) == driver.ActivationBeforeCommit {
		if err := w.effect(a, func(ctx context.Context) error { return act.ActivateRevision(ctx, candidateRev, p.rc) }); err != nil {
			return p.failure(err)
		}
	}
	return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionActivated}, publish: true,
		expected: agent.ActiveRevisionID, warnings: obs.Warnings}, nil
}

// authorize reauthorizes the original actor and the Agent's principal (§3.8). done is true when
// the pass ends with r.
func (p *deployPass) authorize() (r revisionResult, done bool, err error) {
	w, work := p.w, p.work
	ctx := p.a.ctx
	spec := p.candidate.spec
	nsID := work.NamespaceID
	check := func(req iam.Request) (revisionResult, bool, error) {
		d, err := w.reauthorize(ctx, req)
		if err != nil {
			r, err := p.failure(err)
			return r, true, err
		}
		if d != nil {
			return revisionResult{result: result{outcome: outcomePermanent, code: d.code, denial: d}}, true, nil
		}
		return revisionResult{}, false, nil
	}
	if r, done, err := check(iam.Request{PrincipalID: work.ActorID, Action: iam.ActionDeploy, Resource: agentResource(nsID, p.agent.ID)}); done {
		return r, true, err
	}
	ok, err := store.AgentPrincipalValid(ctx, w.pool, spec.ServicePrincipalID, store.AgentKey{NamespaceID: nsID, AgentID: p.agent.ID})
	if err != nil {
		r, err := p.failure(err)
		return r, true, err
	}
	if !ok {
		return p.permanent(codeInvalidAgentPrincipal), true, nil
	}
	if r, done, err := check(iam.Request{PrincipalID: work.ActorID, Action: iam.ActionRead,
		Resource: iam.Resource{Kind: iam.KindConfiguration, ID: spec.ConfigurationID, NamespaceID: &nsID}}); done {
		return r, true, err
	}
	if code := checkHarnessAuth(spec, nsID); code != "" {
		return p.permanent(code), true, nil
	}
	// Every consumed Secret needs operate for both the actor and the Agent's own principal.
	for _, id := range secretIDs(spec) {
		for _, principal := range []string{work.ActorID, spec.ServicePrincipalID} {
			if r, done, err := check(iam.Request{PrincipalID: principal, Action: iam.ActionOperate,
				Resource: iam.Resource{Kind: iam.KindSecret, ID: id, NamespaceID: &nsID}}); done {
				return r, true, err
			}
		}
	}
	return revisionResult{}, false, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// checkHarnessAuth checks the shape of the admitted Harness authentication and Secret bindings.
func checkHarnessAuth(spec platform.RevisionSpec, nsID string) string {
	auth := spec.HarnessAuth
	switch auth.Method {
	case "":
		return codeHarnessAuthRequired
	case platform.HarnessAuthRuntime:
		if auth.Source != nil {
			return codeInvalidHarnessAuth
		}
	case platform.HarnessAuthAPIKey, platform.HarnessAuthCodexPAT:
		if auth.Source == nil || auth.Source.Kind != platform.RefKindSecret || auth.Source.NamespaceID != nsID || auth.Source.ID == "" {
			return codeInvalidHarnessAuth
		}
	default:
		return codeInvalidHarnessAuth
	}
	for name, b := range spec.SecretBindings {
		if !envName.MatchString(name) || b.Source.Kind != platform.RefKindSecret || b.Source.NamespaceID != nsID ||
			b.Source.ID == "" || b.Delivery.Type != "env" {
			return codeInvalidSecretBindings
		}
	}
	return ""
}

// secretIDs lists the Secrets a revision consumes, sorted and without duplicates.
func secretIDs(spec platform.RevisionSpec) []string {
	seen := map[string]bool{}
	var out []string
	for _, ref := range spec.SecretRefs() {
		if !seen[ref.ID] {
			seen[ref.ID] = true
			out = append(out, ref.ID)
		}
	}
	sort.Strings(out)
	return out
}

// resolveContext builds the dispatch context: references to the Secrets' backend locations,
// never their values (§3.7 step 14).
func (p *deployPass) resolveContext() (revisionResult, bool) {
	spec := p.candidate.spec
	nsID := p.work.NamespaceID
	secrets, err := store.ListWorkerSecrets(p.a.ctx, p.w.pool, secretIDs(spec))
	if err != nil {
		r, _ := p.failure(err)
		return r, true
	}
	complete := func(s store.WorkerSecret) bool {
		return s.NamespaceID == nsID && s.BackendNamespaceName != "" && s.BackendName != "" && s.BackendKey != "" && s.BackendUID != ""
	}
	ref := func(s store.WorkerSecret) driver.SecretRef {
		return driver.SecretRef{NamespaceName: s.BackendNamespaceName, Name: s.BackendName, Key: s.BackendKey, UID: s.BackendUID}
	}
	if len(spec.SecretBindings) > 0 && spec.SecretDriverID == "" {
		return p.permanent(codeSecretDriverMismatch), true
	}
	if len(spec.SecretRefs()) > 0 && p.w.cfg.SecretDriverID != "" && spec.SecretDriverID != p.w.cfg.SecretDriverID {
		return p.permanent(codeSecretDriverMismatch), true
	}
	names := make([]string, 0, len(spec.SecretBindings))
	for name := range spec.SecretBindings {
		names = append(names, name)
	}
	sort.Strings(names)
	var rc driver.RevisionContext
	for _, name := range names {
		s, ok := secrets[spec.SecretBindings[name].Source.ID]
		if !ok || !complete(s) || s.DriverID != spec.SecretDriverID {
			return p.permanent(codeSecretBindingUnavailable), true
		}
		rc.SecretEnvironment = append(rc.SecretEnvironment, driver.SecretEnvironmentRef{Name: name, SecretID: s.ID, Ref: ref(s)})
	}
	auth := spec.HarnessAuth
	rc.HarnessAuth = &driver.HarnessAuthRef{Method: auth.Method}
	if auth.Source != nil {
		s, ok := secrets[auth.Source.ID]
		switch {
		case ok && (spec.SecretDriverID == "" || s.DriverID != spec.SecretDriverID):
			return p.permanent(codeSecretDriverMismatch), true
		case !ok || !complete(s):
			return p.permanent(codeHarnessAuthSourceUnavailable), true
		}
		r := ref(s)
		rc.HarnessAuth.SecretID, rc.HarnessAuth.Ref = s.ID, &r
	}
	p.rc = rc
	return revisionResult{}, false
}

var pluginIDPattern = regexp.MustCompile(`^[A-Za-z0-9._~:@-]{1,253}$`)

// prepare calls PrepareRevision under the claim, validates the observation and records the
// deploy timing.
func (p *deployPass) prepare() (driver.RevisionReadiness, error) {
	rev := p.candidate.driverRevision()
	var obs driver.RevisionReadiness
	p.w.stopped.forget(rev.ID) // the candidate runs (again)
	if p.exclusive {
		// Exclusive replacement: never prepare the candidate next to a live predecessor.
		if err := p.stopPredecessors(true); err != nil {
			return obs, err
		}
	}
	p.prepared = true
	started := time.Now()
	err := p.w.effect(p.a, func(ctx context.Context) error {
		var err error
		obs, err = p.w.cfg.Compute.PrepareRevision(ctx, rev, p.rc)
		return err
	})
	observed := time.Now()
	p.w.timings.update(func() { p.timing.prepare += observed.Sub(started) })
	if err != nil {
		if p.exclusive {
			p.forgetPredecessors() // the next pass sweeps again
		}
		p.logPrepareFailure(err)
		return obs, err
	}
	if err := driver.CheckRevisionReadiness(rev, obs); err != nil {
		return obs, err
	}
	for _, warning := range obs.Warnings {
		if !pluginIDPattern.MatchString(warning.PluginID) {
			return obs, &driver.InvalidObservationError{Reason: "a plugin warning has an invalid plugin id"}
		}
	}
	p.w.timings.update(func() {
		switch {
		case obs.Ready && p.timing.firstReady.IsZero():
			p.timing.firstReady = observed
		case !obs.Ready && p.timing.firstUnready.IsZero():
			p.timing.firstUnready = observed
		}
	})
	return obs, nil
}

// logPrepareFailure writes worker.compute-prepare-failed with the driver's diagnostic code and
// stage when the Compute Driver describes its failures; a lost claim or an ended pass is not a
// driver failure.
func (p *deployPass) logPrepareFailure(err error) {
	d, ok := p.w.cfg.Compute.(driver.PrepareFailureDescriber)
	if !ok || errors.Is(err, errClaimLost) || driver.IsContextError(err) {
		return
	}
	code, stage := d.DescribePrepareFailure(err)
	rev := p.candidate.driverRevision()
	p.w.log.Error("worker.compute-prepare-failed", "namespaceId", p.work.NamespaceID, "agentId", rev.AgentID,
		"revisionId", rev.ID, "workId", p.work.Key, "attempt", p.a.claim.Attempt(),
		"code", queue.SafeCode(code), "stage", queue.SafeCode(stage), "errorClass", driver.ErrorClass(err))
}

// pendingReadiness is the pending result of a not-ready observation.
func (p *deployPass) pendingReadiness(obs driver.RevisionReadiness) revisionResult {
	code := codeRevisionIncomplete
	switch obs.PendingReason {
	case driver.PendingWorkloadUnschedulable:
		code = codeRevisionUnschedulable
	case driver.PendingWorkspaceNode:
		code = codeWorkspaceNodePending
	}
	r := revisionResult{result: result{outcome: outcomePending, code: code}, readiness: true}
	if validRuntimeFailure(obs.RuntimeFailure) {
		r.runtimeFailure = obs.RuntimeFailure
	}
	return r
}

var runtimeToken = regexp.MustCompile(`^[A-Za-z0-9._~:@-]{1,64}$`)
var checkedAtPattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$`)

// validRuntimeFailure accepts only evidence the work row may store.
func validRuntimeFailure(f *driver.RuntimeFailure) bool {
	if !driver.ValidRuntimeFailure(f) || !runtimeToken.MatchString(f.Component) || !runtimeToken.MatchString(f.Check) ||
		!checkedAtPattern.MatchString(f.CheckedAt) {
		return false
	}
	if _, err := time.Parse(time.RFC3339Nano, f.CheckedAt); err != nil {
		return false
	}
	if c := f.Cause; c != nil && (!runtimeToken.MatchString(c.Kind) || len([]rune(c.Detail)) > 256) {
		return false
	}
	return true
}

func runtimeFailureJSON(f *driver.RuntimeFailure, withCause bool) map[string]any {
	m := map[string]any{"component": f.Component, "check": f.Check, "checkedAt": f.CheckedAt, "code": f.Code}
	if withCause && f.Cause != nil {
		cause := map[string]any{"kind": f.Cause.Kind}
		if f.Cause.Detail != "" {
			cause["detail"] = f.Cause.Detail
		}
		m["cause"] = cause
	}
	return m
}

// activateAfterCommit routes traffic to the published candidate when the driver stages routing
// after the commit.
func (p *deployPass) activateAfterCommit() error {
	act, ok := p.w.cfg.Compute.(driver.Activator)
	if !ok || driver.ActivationOrder(p.w.cfg.Compute) != driver.ActivationAfterCommit {
		return nil
	}
	rev := p.candidate.driverRevision()
	return p.w.effect(p.a, func(ctx context.Context) error { return act.ActivateRevision(ctx, rev, p.rc) })
}

// retireEarlier retires every revision of this Compute numbered below the candidate.
func (p *deployPass) retireEarlier() error {
	for i := len(p.revisions) - 1; i >= 0; i-- {
		r := p.revisions[i]
		if r.row.Number >= p.candidate.row.Number || !p.w.ownsCompute(r.spec.Compute) {
			continue
		}
		rev := r.driverRevision()
		if err := p.w.effect(p.a, func(ctx context.Context) error { return p.w.cfg.Compute.RetireRevision(ctx, rev) }); err != nil {
			return err
		}
	}
	return nil
}

// finish runs the finalization transaction and, after a publication, activation and retirement
// with the completion transaction (§3.7.2).
func (p *deployPass) finish(r *revisionResult) error {
	if lost, _ := p.a.state(); lost {
		return errClaimLost
	}
	if err := p.finalize(r); err != nil {
		return err
	}
	switch {
	case r.stopAfterCommit:
		rev := p.candidate.driverRevision()
		err := p.w.stopRevision(p.a, rev, true)
		next := revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionStopped}}
		if err != nil {
			if next, err = p.failure(err); err != nil {
				return err
			}
		}
		*r = next
		return p.finalize(r)
	case r.published:
		next, err := p.afterPublication(r.warnings)
		if err != nil {
			return err
		}
		*r = next
		if err := p.finalize(r); err != nil {
			return err
		}
		if r.outcome == outcomeSuccess && r.code == codeRevisionActivated {
			p.w.observeOperation(operationDeploy, p.work)
		}
	case r.outcome == outcomeSuccess && r.code == codeRevisionAlreadyActive:
		p.w.observeOperation(operationDeploy, p.work)
	}
	return nil
}

// afterPublication activates the published candidate and retires its predecessors, unless the
// Agent was stopped meanwhile (§3.7.2 step 9).
func (p *deployPass) afterPublication(warnings []driver.PluginWarning) (revisionResult, error) {
	w := p.w
	rev := p.candidate.driverRevision()
	current, err := store.ReadWorkerAgent(p.a.ctx, w.pool, p.work.NamespaceID, p.agent.ID)
	if err != nil {
		return p.activeFailure(err)
	}
	if current.DesiredRuntimeState != store.RuntimeRunning {
		if err := w.stopRevision(p.a, rev, true); err != nil {
			return p.activeFailure(err)
		}
		if err := p.retireEarlier(); err != nil {
			return p.activeFailure(err)
		}
		return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionStopped}}, nil
	}
	if err := p.activateAfterCommit(); err != nil {
		return p.activeFailure(err)
	}
	if err := p.retireEarlier(); err != nil {
		return p.activeFailure(err)
	}
	p.w.timings.update(func() { p.timing.activated = time.Now() })
	return revisionResult{result: result{outcome: outcomeSuccess, code: codeRevisionActivated}, activation: true,
		warnings: warnings, expected: p.agent.ActiveRevisionID}, nil
}

// readinessRecheck is the readiness recheck cadence: min(5 s, max(500 ms, age/40)).
func readinessRecheck(age time.Duration) time.Duration {
	ms := math.Round(float64(age.Milliseconds()) / 40)
	return time.Duration(min(5000, max(500, ms))) * time.Millisecond
}

func (p *deployPass) finalize(r *revisionResult) error {
	if err := p.settle(r); err != nil {
		return err
	}
	return p.w.finalize(p.a, func(ctx context.Context, tx txDB) error { return p.finalizeTx(ctx, tx, r) })
}

// finalizeTx is one finalization transaction of a deploy pass (§3.7.2 step 8); it begins with the
// claim's renewal (w.finalize).
func (p *deployPass) finalizeTx(ctx context.Context, tx txDB, r *revisionResult) error {
	w, a, work := p.w, p.a, p.work
	now, err := store.DatabaseNow(ctx, tx)
	if err != nil {
		return err
	}
	age := now.Sub(work.CreatedAt) // held failures and the deadline were settled before (settle)

	switch {
	case r.superseded:
		if err := p.appendRevisionAudit(ctx, tx, "openclaw.agents.lifecycle.supersede", r, map[string]any{"activeRevisionId": r.activeID}); err != nil {
			return err
		}
	case r.publish:
		agent, ok, err := p.lockAgent(ctx, tx)
		switch {
		case err != nil:
			return err
		case !ok || !samePointer(agent.ActiveRevisionID, r.expected):
			*r = revisionResult{result: result{outcome: outcomeRetry, code: codeActiveRevisionChanged}}
		case agent.DesiredRuntimeState != store.RuntimeRunning:
			r.stopAfterCommit = true
			return nil // the candidate is stopped after this commit; the work completes then
		default:
			set, err := store.SetActiveRevisionIfUnchanged(ctx, tx, store.AgentKey{NamespaceID: work.NamespaceID, AgentID: agent.ID}, r.expected, p.candidate.row.ID)
			if err != nil {
				return err
			}
			if !set {
				*r = revisionResult{result: result{outcome: outcomeRetry, code: codeActiveRevisionChanged}}
				break
			}
			r.published = true
			notePointer(ctx, agent.ID, r.expected, p.candidate.row.ID, true)
			return nil // the pointer is published first; activation completes the work
		}
	case r.activation:
		agent, ok, err := p.lockAgent(ctx, tx)
		switch {
		case err != nil:
			return err
		case !ok || agent.ActiveRevisionID == nil || *agent.ActiveRevisionID != p.candidate.row.ID:
			*r = revisionResult{result: result{outcome: outcomeRetry, code: codeActiveRevisionChanged}}
		default:
			details := map[string]any{}
			if r.expected != nil {
				details["previousRevisionId"] = *r.expected
			}
			if err := p.appendRevisionAudit(ctx, tx, "openclaw.agents.lifecycle.activate", r, details); err != nil {
				return err
			}
			if len(r.warnings) > 0 {
				ws := make([]map[string]string, len(r.warnings))
				for i, wn := range r.warnings {
					ws[i] = map[string]string{"code": wn.Code, "pluginId": wn.PluginID}
				}
				r.data, _ = json.Marshal(map[string]any{"warnings": ws})
			}
		}
	}
	if r.denial != nil {
		if err := w.appendDenial(ctx, tx, a, "openclaw.agents.deploy", agentResource(work.NamespaceID, *work.AgentID), r.denial); err != nil {
			return err
		}
	}

	exhausted := r.outcome == outcomeRetry && a.claim.Attempt() >= w.q.MaxAttempts()
	switch {
	case r.outcome == outcomeSuccess:
		_, err = w.q.Complete(ctx, tx, a.claim, r.code, r.data)
	case r.outcome == outcomePending && r.refused != nil:
		// No deadline and no attempt limit; every wait is evidence, so its count survives a restart.
		d := r.recheck
		_, err = w.q.Defer(ctx, tx, a.claim, r.code, queue.DeferOptions{Delay: &d, RepeatEvidence: true,
			Refusal: r.refused, StopYielded: r.stopYielded})
	case r.outcome == outcomePending:
		o := queue.DeferOptions{}
		if r.readiness || r.transient {
			d := readinessRecheck(age)
			o.Delay = &d
		}
		_, err = w.q.Defer(ctx, tx, a.claim, r.code, o)
	case r.outcome == outcomePermanent || exhausted:
		_, err = w.q.Fail(ctx, tx, a.claim, r.code, r.data)
	default:
		_, err = w.q.Retry(ctx, tx, a.claim, r.code)
	}
	return err
}

// lockAgent locks the Namespace, then the Agent (the lock order of every finalization); ok is
// false when either is gone or the Agent's principal changed.
func (p *deployPass) lockAgent(ctx context.Context, tx txDB) (store.WorkerAgent, bool, error) {
	ns, err := store.LockNamespace(ctx, tx, p.work.NamespaceID)
	var agent store.WorkerAgent
	if err == nil {
		agent, err = store.LockWorkerAgent(ctx, tx, p.work.NamespaceID, p.agent.ID)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return agent, false, nil
	case err != nil:
		return agent, false, err
	}
	return agent, ns.DeletedAt == nil && agent.ServicePrincipalID == p.agent.ServicePrincipalID, nil
}

func samePointer(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// appendRevisionAudit writes a lifecycle audit of the candidate revision.
func (p *deployPass) appendRevisionAudit(ctx context.Context, tx txDB, action string, r *revisionResult, details map[string]any) error {
	work := p.work
	nsID := work.NamespaceID
	details["computeDriverId"] = p.w.cfg.Compute.ID()
	details["reasonCode"] = r.code
	details["workId"] = work.Key
	details["attemptCount"] = p.a.claim.Attempt()
	_, err := p.w.audit.Append(ctx, tx, audit.Event{
		Kind: audit.KindMutation, ActorID: work.ActorID, NamespaceID: &nsID, Action: action,
		Resource: audit.Resource{Kind: iam.KindAgentRevision, ID: p.candidate.row.ID, NamespaceID: &nsID},
		Outcome:  audit.OutcomeSuccess, ReasonCode: r.code, Details: details,
	})
	return err
}
