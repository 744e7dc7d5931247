package worker

import (
	"encoding/json"
	"regexp"
	"sort"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Revision result codes.
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

// deployPass is one deploy pass of `agent_revision:<rev>:reconcile`: its snapshot, and what its
// effects learned (prepared, the dispatch context).
type deployPass struct {
	w      *Worker
	a      *activeClaim
	work   queue.Work
	timing *deployTiming
	deploySnapshot
	prepared bool // this pass called PrepareRevision for the candidate
}

// deploySnapshot is what a deploy pass reads before its first effect; planDeploy decides on it
// alone.
type deploySnapshot struct {
	work queue.Work
	// readErr is a failed read of the Namespace, the Agent or its revisions (store.ErrNotFound when
	// one of them is gone).
	readErr     error
	ns          store.NamespaceRow
	agent       store.WorkerAgent
	revisions   []agentRevision
	candidate   agentRevision
	previous    *agentRevision // the revision the active pointer names, if it is one of the Agent's
	undecodable bool           // the candidate's admitted snapshot does not decode strictly

	loaded          bool // the Namespace, Agent and candidate were read
	exclusive       bool // Compute requires stopped predecessors for the candidate
	laterExclusive  bool // a later revision of this Compute, also exclusive, exists
	ownsCompute     bool // the candidate is pinned to this worker's Compute
	recentlyStopped bool // this process stopped the candidate within its re-stop window

	latest        *store.WorkAttempt // the work's latest evidence
	storedRefusal *string            // the refusal wait the evidence stores
	refusal       *string            // that wait after re-decision (nil once lifted)

	authorization verdict // the re-authorization of the actor and the Agent's principal
	redecideErr   error   // the refusal's re-decision could not read the database clock
	dispatch      verdict // the dispatch context (rc), by reference only
	rc            driver.RevisionContext
}

// verdict is a check read into the snapshot: ended says the pass ends with r (or err).
type verdict struct {
	ended bool
	r     revisionResult
	err   error
}

// revisionPass is the deploy pass of `agent_revision:<rev>:reconcile`, with exclusive replacement
// and refused-candidate stops (repository, credential-source, plugin-provisioning and sandbox
// branches are not part of revisions yet).
func (w *Worker) revisionPass(a *activeClaim) (result, passReport, error) {
	p := &deployPass{w: w, a: a, work: a.claim.Work, timing: w.timings.get(a.claim.Work.Key)}
	p.w.timings.update(func() { p.timing.passes++ })
	r, err := p.plan()
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

// plan loads the snapshot, plans the step and runs it.
func (p *deployPass) plan() (revisionResult, error) {
	if err := p.load(); err != nil {
		return revisionResult{}, err
	}
	return p.run(planDeploy(&p.deploySnapshot))
}

// load reads the snapshot. It reads only what the plan can consult: nothing past a failed read or
// check. Its only error is a stored refusal that cannot be read (the claim is left to lease
// recovery); every other failure is in the snapshot.
func (p *deployPass) load() error {
	w, ctx, work := p.w, p.a.ctx, p.work
	p.deploySnapshot.work = work
	if !revisionTarget(work) {
		return nil
	}
	// The stored refusal wait is read first: a failing read below must not turn it into a retry.
	if err := p.readRefusalWait(); err != nil {
		return err
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
	if err != nil {
		p.readErr = err
		return nil
	}
	p.ns, p.agent = ns, agent
	if !p.readRevisions(rows) {
		return nil
	}
	p.loaded = true
	p.exclusive = w.exclusiveFor(p.candidate)
	p.laterExclusive = p.hasLaterExclusive()
	p.ownsCompute = w.ownsCompute(p.candidate.spec.Compute)
	p.recentlyStopped = w.stopped.recent(p.candidate.row.ID)
	if p.alreadyActive() {
		p.storedRefusal, p.refusal = nil, nil // the active revision is not a refused candidate
	}
	if planGuards(&p.deploySnapshot) != nil {
		return nil
	}
	if p.authorization = p.authorize(); p.authorization.ended {
		return nil
	}
	p.redecideErr = p.redecideRefusal()
	p.dispatch = p.resolveContext()
	return nil
}

// readRevisions decodes the Agent's revisions: the candidate strictly, the others leniently. It
// reports whether the candidate was found and decoded.
func (p *deployPass) readRevisions(rows []store.WorkerRevision) bool {
	found := false
	for _, row := range rows {
		r := agentRevision{row: row}
		if row.ID == *p.work.RevisionID {
			spec, err := platform.DecodeRevisionSpec(row.AdmittedSpec)
			if err != nil {
				p.undecodable = true
				return false
			}
			r.spec = spec
			p.candidate, found = r, true
		} else {
			_ = json.Unmarshal(row.AdmittedSpec, &r.spec)
		}
		p.revisions = append(p.revisions, r)
		if p.agent.ActiveRevisionID != nil && row.ID == *p.agent.ActiveRevisionID {
			previous := r
			p.previous = &previous
		}
	}
	return found
}

// readRefusalWait reads the work's latest evidence and the refusal wait it stores, if any.
func (p *deployPass) readRefusalWait() error {
	latest, err := p.w.q.LatestAttempt(p.a.ctx, p.work.Key, nil)
	if err != nil {
		return &refusalUnavailableError{err: err}
	}
	p.latest = latest
	switch {
	case latest == nil:
	case latest.Refusal != nil && (latest.Code == codeRefusedCandidateStopPending || latest.Code == queue.CodeLeaseExpired):
		refusal := *latest.Refusal
		p.storedRefusal, p.refusal = &refusal, &refusal
	case latest.Code == queue.CodeLeaseExpired:
		// Lease recovery does not carry the refusal into its evidence: look behind it.
		refusal, err := store.RefusalBeforeLeaseExpiry(p.a.ctx, p.w.pool, p.work.Key)
		if err != nil {
			return &refusalUnavailableError{err: err}
		}
		p.storedRefusal, p.refusal = refusal, refusal
	}
	return nil
}

// redecideRefusal re-decides a stored refusal this pass decides again (its checks passed):
// lifted, unless the convergence deadline passed since admission.
func (p *deployPass) redecideRefusal() error {
	if p.refusal == nil || !redecidedRefusals[*p.refusal] {
		return nil
	}
	now, err := store.DatabaseNow(p.a.ctx, p.w.pool)
	if err != nil {
		return err
	}
	p.refusal = redecide(p.refusal, now.Sub(p.work.CreatedAt) >= p.w.cfg.ConvergenceTimeout)
	return nil
}

// authorize re-authorizes the original actor and the Agent's principal against the current policy.
func (p *deployPass) authorize() verdict {
	r, ended, err := p.authorizeChecks()
	return verdict{ended: ended, r: r, err: err}
}

// authorizeChecks runs the re-authorization checks in order; done is true when the pass ends with r.
func (p *deployPass) authorizeChecks() (r revisionResult, done bool, err error) {
	w, work := p.w, p.work
	ctx := p.a.ctx
	spec := p.candidate.spec
	nsID := work.NamespaceID
	check := func(req iam.Request) (revisionResult, bool, error) {
		d, err := w.reauthorize(ctx, req)
		if err != nil {
			r, err := deployFailure(err)
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
		r, err := deployFailure(err)
		return r, true, err
	}
	if !ok {
		return permanentResult(codeInvalidAgentPrincipal), true, nil
	}
	if r, done, err := check(iam.Request{PrincipalID: work.ActorID, Action: iam.ActionRead,
		Resource: iam.Resource{Kind: iam.KindConfiguration, ID: spec.ConfigurationID, NamespaceID: &nsID}}); done {
		return r, true, err
	}
	if code := checkHarnessAuth(spec, nsID); code != "" {
		return permanentResult(code), true, nil
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
// never their values.
func (p *deployPass) resolveContext() verdict {
	r, ended := p.resolveChecks()
	return verdict{ended: ended, r: r}
}

// resolveChecks resolves the Secrets in order; done is true when the pass ends with r.
func (p *deployPass) resolveChecks() (revisionResult, bool) {
	spec := p.candidate.spec
	nsID := p.work.NamespaceID
	secrets, err := store.ListWorkerSecrets(p.a.ctx, p.w.pool, secretIDs(spec))
	if err != nil {
		r, _ := deployFailure(err)
		return r, true
	}
	complete := func(s store.WorkerSecret) bool {
		return s.NamespaceID == nsID && s.BackendNamespaceName != "" && s.BackendName != "" && s.BackendKey != "" && s.BackendUID != ""
	}
	ref := func(s store.WorkerSecret) driver.SecretRef {
		return driver.SecretRef{NamespaceName: s.BackendNamespaceName, Name: s.BackendName, Key: s.BackendKey, UID: s.BackendUID}
	}
	if len(spec.SecretBindings) > 0 && spec.SecretDriverID == "" {
		return permanentResult(codeSecretDriverMismatch), true
	}
	if len(spec.SecretRefs()) > 0 && p.w.cfg.SecretDriverID != "" && spec.SecretDriverID != p.w.cfg.SecretDriverID {
		return permanentResult(codeSecretDriverMismatch), true
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
			return permanentResult(codeSecretBindingUnavailable), true
		}
		rc.SecretEnvironment = append(rc.SecretEnvironment, driver.SecretEnvironmentRef{Name: name, SecretID: s.ID, Ref: ref(s)})
	}
	auth := spec.HarnessAuth
	rc.HarnessAuth = &driver.HarnessAuthRef{Method: auth.Method}
	if auth.Source != nil {
		s, ok := secrets[auth.Source.ID]
		switch {
		case ok && (spec.SecretDriverID == "" || s.DriverID != spec.SecretDriverID):
			return permanentResult(codeSecretDriverMismatch), true
		case !ok || !complete(s):
			return permanentResult(codeHarnessAuthSourceUnavailable), true
		}
		r := ref(s)
		rc.HarnessAuth.SecretID, rc.HarnessAuth.Ref = s.ID, &r
	}
	p.rc = rc
	return revisionResult{}, false
}

// exclusiveFor reports whether Compute requires stopped predecessors for rev.
func (w *Worker) exclusiveFor(r agentRevision) bool {
	ex, ok := w.cfg.Compute.(driver.ExclusiveReplacement)
	return ok && ex.RequiresStoppedPredecessors(r.driverRevision())
}

// hasLaterExclusive reports whether a later revision of this Compute, also exclusive, exists.
func (p *deployPass) hasLaterExclusive() bool {
	for _, r := range p.revisions {
		if r.row.Number > p.candidate.row.Number && p.w.ownsCompute(r.spec.Compute) && p.w.exclusiveFor(r) {
			return true
		}
	}
	return false
}
