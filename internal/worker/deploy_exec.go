package worker

import (
	"context"
	"errors"
	"regexp"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// run performs the effects of one planned step under the claim and returns the step's result.
func (p *deployPass) run(step deployStep) (revisionResult, error) {
	switch st := step.(type) {
	case stepEnd:
		return st.r, st.err
	case stepStopStoppedAgent:
		return p.stopStoppedAgent(st)
	case stepSupersede:
		return p.supersede(st)
	case stepStopRefused:
		return p.stopRefused(st)
	case stepFinishActivation:
		return p.finishActivation()
	case stepPrepareAndPublish:
		return p.prepareAndPublish()
	}
	return revisionResult{}, errors.New("worker: unknown deploy step")
}

// stopStoppedAgent stops the candidate of a stopped Agent (REVISION_STOPPED).
func (p *deployPass) stopStoppedAgent(st stepStopStoppedAgent) (revisionResult, error) {
	if err := p.w.bindAgent(p.a, p.ns, p.agent); err != nil {
		return deployFailure(err)
	}
	if err := p.w.stopRevision(p.a, p.candidate.driverRevision(), true); err != nil {
		return deployFailure(err)
	}
	if st.retireEarlier {
		if err := p.retireEarlier(); err != nil {
			return deployFailure(err)
		}
	}
	return revisionResult{result: success(codeRevisionStopped)}, nil
}

// supersede ends the deployment as REVISION_SUPERSEDED.
func (p *deployPass) supersede(st stepSupersede) (revisionResult, error) {
	if st.stopRefused {
		if err := p.stopRefusedCandidate(); err != nil {
			if errors.Is(err, errClaimLost) {
				return revisionResult{}, errClaimLost
			}
			return refusedWait(st.refusal, err), nil
		}
	}
	if st.bind {
		if err := p.w.bindAgent(p.a, p.ns, p.agent); err != nil {
			return deployFailure(err)
		}
	}
	return p.superseded(), nil
}

func (p *deployPass) superseded() revisionResult {
	return revisionResult{result: success(codeRevisionSuperseded),
		publication: publication{superseded: true, activeID: p.agent.ActiveRevisionID}}
}

// stopRefused stops the refused candidate, then publishes its refusal; a stop that did not finish
// keeps waiting with the refusal.
func (p *deployPass) stopRefused(st stepStopRefused) (revisionResult, error) {
	if err := p.stopRefusedCandidate(); err != nil {
		if errors.Is(err, errClaimLost) {
			return revisionResult{}, errClaimLost
		}
		return refusedWait(st.refusal, err), nil
	}
	return p.refusalResult(st.refusal), nil
}

// finishActivation is the recovery after the pointer was published (a lost claim, a failed
// activation or retirement): prepare again, activate, retire; the pointer is never rolled back.
func (p *deployPass) finishActivation() (revisionResult, error) {
	if err := p.w.bindAgent(p.a, p.ns, p.agent); err != nil {
		if !errors.Is(err, errClaimLost) {
			return revisionResult{result: result{outcome: outcomePending, code: codeBindingIncomplete, cause: driver.ErrorClass(err)}}, nil
		}
		return deployFailure(err)
	}
	obs, err := p.prepare()
	if err != nil {
		return activeFailure(err)
	}
	if !obs.Ready {
		return p.pendingReadiness(obs), nil
	}
	if err := p.activateAfterCommit(); err != nil {
		return activeFailure(err)
	}
	if err := p.retireEarlier(); err != nil {
		return activeFailure(err)
	}
	p.w.timings.update(func() { p.timing.activated = time.Now() })
	return revisionResult{result: success(codeRevisionAlreadyActive), warnings: obs.Warnings,
		publication: publication{activation: true}}, nil
}

// prepareAndPublish prepares the candidate; once it is ready, a stop admitted while preparing wins
// over activation, otherwise the candidate is published (activated first by a before-commit
// driver).
func (p *deployPass) prepareAndPublish() (revisionResult, error) {
	w, a := p.w, p.a
	if err := w.bindAgent(a, p.ns, p.agent); err != nil {
		return deployFailure(err)
	}
	obs, err := p.prepare()
	if err != nil {
		return deployFailure(err)
	}
	if !obs.Ready {
		return p.pendingReadiness(obs), nil
	}
	current, err := store.ReadWorkerAgent(a.ctx, w.pool, p.work.NamespaceID, p.agent.ID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return permanentResult(codeInvalidRevisionOwner), nil
		}
		return deployFailure(err)
	}
	rev := p.candidate.driverRevision()
	if current.DesiredRuntimeState != store.RuntimeRunning {
		if err := w.stopRevision(a, rev, true); err != nil {
			return deployFailure(err)
		}
		return revisionResult{result: success(codeRevisionStopped)}, nil
	}
	if act, ok := w.cfg.Compute.(driver.Activator); ok && driver.ActivationOrder(w.cfg.Compute) == driver.ActivationBeforeCommit {
		if err := w.effect(a, func(ctx context.Context) error { return act.ActivateRevision(ctx, rev, p.rc) }); err != nil {
			return deployFailure(err)
		}
	}
	return revisionResult{result: success(codeRevisionActivated), warnings: obs.Warnings,
		publication: publication{publish: true, expected: p.agent.ActiveRevisionID}}, nil
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
	r := revisionResult{result: result{outcome: outcomePending, code: code}, waiting: waiting{readiness: true}}
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

// permanentResult is a permanent failure with code.
func permanentResult(code string) revisionResult { return revisionResult{result: permanent(code)} }

// deployFailure maps an error of the pass and keeps the HTTP answer that caused it for the log. A
// lost claim is returned as the error.
func deployFailure(err error) (revisionResult, error) {
	r, ferr := classifyFailure(err)
	if ferr == nil {
		r.withHTTPStatus(err)
	}
	return r, ferr
}

func classifyFailure(err error) (revisionResult, error) {
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
			waiting: waiting{readiness: true}, stops: stops{yielded: true, predecessor: true}}, nil
	case driver.IsStopYielded(err):
		// The stopped Agent's runtime is still terminating: run again after the other work.
		return revisionResult{result: result{outcome: outcomePending, code: codeAgentStopYielded, cause: driver.ErrorClass(err)},
			waiting: waiting{readiness: true, noDeadline: true}, stops: stops{yielded: true}}, nil
	case errors.As(err, &transient):
		cause := transient.Reason
		if cause == "" {
			cause = driver.ErrorClass(err)
		}
		return revisionResult{result: result{outcome: outcomePending, code: queue.SafeCode(transient.Code), cause: cause,
			dependency: transient.Dependency, status: transient.Status}, waiting: waiting{transient: true}}, nil
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
func activeFailure(err error) (revisionResult, error) {
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
		return deployFailure(err)
	case errors.As(err, &transient):
		return deployFailure(err)
	case errors.As(err, &pending):
		return revisionResult{result: result{outcome: outcomePending, code: queue.SafeCode(pending.Code), cause: driver.ErrorClass(err)}}, nil
	}
	return revisionResult{result: result{outcome: outcomePending, code: codeFinalizationIncomplete, cause: driver.ErrorClass(err)}}, nil
}
