package worker

import (
	"errors"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// The deploy pass is a planner and an executor: load reads a deploySnapshot (deploy.go), planDeploy
// (here, pure) picks one deployStep, and run (deploy_exec.go) performs that step's effects under
// the claim. settle (deploy_settle.go) completes the step's result, and finish (deploy_finalize.go)
// publishes it.

// deployStep is one of the closed set of things a deploy pass can do.
type deployStep interface{ deployStep() }

// stepEnd ends the pass with a result decided before any effect: a failed check, a refusal of the
// re-authorization, a failed read.
type stepEnd struct {
	r   revisionResult
	err error
}

// stepStopStoppedAgent stops the candidate of an Agent that was stopped before (or while) this
// revision was deployed; it never activates. retireEarlier retires the earlier revisions too,
// when nothing else is active.
type stepStopStoppedAgent struct{ retireEarlier bool }

// stepSupersede ends the deployment as superseded by a later revision, without preparing it.
// stopRefused first stops a candidate whose refused-candidate stop is still pending (a failed
// stop keeps waiting with refusal); bind first hands the Agent to Compute.
type stepSupersede struct {
	stopRefused bool
	refusal     string
	bind        bool
}

// stepStopRefused stops a candidate whose stored refusal still stands, then publishes the refusal.
type stepStopRefused struct{ refusal string }

// stepFinishActivation finishes activating a candidate the pointer already names (recovery after
// publication): prepare again, activate, retire the predecessors; never roll back.
type stepFinishActivation struct{}

// stepPrepareAndPublish prepares the candidate under the claim and, once it is ready, publishes it
// as the active revision (or stops it when the Agent was stopped meanwhile).
type stepPrepareAndPublish struct{}

func (stepEnd) deployStep()               {}
func (stepStopStoppedAgent) deployStep()  {}
func (stepSupersede) deployStep()         {}
func (stepStopRefused) deployStep()       {}
func (stepFinishActivation) deployStep()  {}
func (stepPrepareAndPublish) deployStep() {}

// planDeploy decides a deploy pass from its snapshot alone: the checks that end it before any
// effect, in order, then the step the Agent's state calls for.
func planDeploy(s *deploySnapshot) deployStep {
	if step := planChecks(s); step != nil {
		return step
	}
	return planLifecycle(s)
}

// planChecks returns the stepEnd of the first check that fails, or nil.
func planChecks(s *deploySnapshot) deployStep {
	if !revisionTarget(s.work) {
		return endWith(permanentResult(codeInvalidTarget))
	}
	switch {
	case errors.Is(s.readErr, store.ErrNotFound):
		return endWith(permanentResult(codeInvalidRevisionOwner))
	case s.readErr != nil && s.refusal != nil:
		// A stored refusal wait is never turned into a retry by a failing read.
		return endWith(refusedWait(*s.refusal, s.readErr))
	case s.readErr != nil:
		r, err := deployFailure(s.readErr)
		return stepEnd{r: r, err: err}
	case s.undecodable:
		return endWith(permanentResult(codeInvalidAdmittedRevision))
	case !s.loaded:
		return endWith(permanentResult(codeInvalidRevisionOwner)) // the candidate is not the Agent's
	}
	if step := planGuards(s); step != nil {
		return step
	}
	if s.authorization.ended {
		return stepEnd{r: s.authorization.r, err: s.authorization.err}
	}
	if s.redecideErr != nil {
		r, err := deployFailure(s.redecideErr)
		return stepEnd{r: r, err: err}
	}
	return nil
}

// planGuards checks the loaded candidate against its Namespace, Agent, Harness pin and Compute.
func planGuards(s *deploySnapshot) deployStep {
	spec := s.candidate.spec
	pinned, known := platform.PinnedHarnesses[spec.Harness.Mode]
	switch {
	case s.ns.DeletedAt != nil || s.ns.Status != store.NamespaceReady:
		return endWith(permanentResult(codeNamespaceNotReady))
	case !s.candidate.ownedBy(s.agent) || spec.Harness.Mode != s.agent.ExecutionMode:
		return endWith(permanentResult(codeInvalidAdmittedRevision))
	case !known || pinned != spec.Harness:
		return endWith(permanentResult(codeHarnessDescriptorMismatch))
	case !s.ownsCompute:
		return endWith(permanentResult(codeComputeDriverMismatch))
	case s.agent.ActiveRevisionID != nil && s.previous == nil:
		return endWith(permanentResult(codeInvalidActiveRevision))
	}
	return nil
}

// planLifecycle picks the step for a candidate that passed every check.
func planLifecycle(s *deploySnapshot) deployStep {
	alreadyActive := s.alreadyActive()
	newerActive := s.previous != nil && s.previous.row.Number >= s.candidate.row.Number
	switch {
	case s.agent.DesiredRuntimeState != store.RuntimeRunning:
		return stepStopStoppedAgent{retireEarlier: s.agent.ActiveRevisionID == nil || alreadyActive}
	case s.exclusive && s.laterExclusive:
		// Exclusive supersession: a later exclusive revision exists. A refused candidate whose stop
		// is pending is stopped first, unless this process stopped it within its re-stop window.
		st := stepSupersede{}
		if s.storedRefusal != nil && !s.recentlyStopped {
			st.stopRefused, st.refusal = true, *s.storedRefusal
		}
		return st
	case s.refusal != nil && newerActive:
		return stepSupersede{}
	case s.refusal != nil:
		return stepStopRefused{refusal: *s.refusal}
	case s.dispatch.ended:
		return stepEnd{r: s.dispatch.r, err: s.dispatch.err}
	case alreadyActive:
		return stepFinishActivation{}
	case newerActive:
		return stepSupersede{bind: true}
	}
	return stepPrepareAndPublish{}
}

func endWith(r revisionResult) stepEnd { return stepEnd{r: r} }

// revisionTarget reports whether the work has the shape of revision work: an Agent and a revision,
// no Namespace or Agent target.
func revisionTarget(w queue.Work) bool {
	return w.AgentID != nil && w.RevisionID != nil && w.AgentTarget == nil && w.NamespaceTarget == nil
}

// redecidedRefusals are the refusals a pass decides again on every pass: a stored refusal wait
// with one of them is lifted once the refusal no longer stands.
var redecidedRefusals = map[string]bool{
	codeActorRevoked: true, codeAuthorizationDenied: true, codeInvalidAgentPrincipal: true,
	codeHarnessAuthRequired: true, codeInvalidHarnessAuth: true, codeInvalidSecretBindings: true,
	"BACKEND_UNAVAILABLE": true, "HARNESS_AUTH_SOURCE_CHANGED": true, "SERVICE_ACCOUNT_BACKEND_MISMATCH": true,
}

// redecide is a stored refusal after this pass decided it again (its checks passed): lifted (nil),
// unless the convergence deadline passed since admission: then CONVERGENCE_DEADLINE_EXCEEDED.
// Refusals the pass does not decide again stay.
func redecide(refusal *string, overdue bool) *string {
	if refusal == nil || !redecidedRefusals[*refusal] {
		return refusal
	}
	if overdue {
		code := codeDeadlineExceeded
		return &code
	}
	return nil
}

func (s *deploySnapshot) alreadyActive() bool {
	return s.agent.ActiveRevisionID != nil && *s.agent.ActiveRevisionID == s.candidate.row.ID
}
