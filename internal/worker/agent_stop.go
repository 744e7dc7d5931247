package worker

import (
	"context"
	"errors"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// The Agent stop pass is a planner and an executor: loadStop reads a stopSnapshot, planStop (pure)
// returns the cleanup set or the result that ends the pass, and runStop stops the set under the
// claim. finalizeStop (agent.go) publishes.

// stopDecision is what the stop pass decided before its finalization.
type stopDecision struct {
	result
	principal string // the Agent's service principal as read
	stopped   string // the active revision the pass stopped: the compare-and-clear target
	yielded   bool   // a stop yielded while the runtime terminates: AGENT_STOP_YIELDED
}

// agentStopPass stops every runtime of the Agent admitted before the stop, then clears the active
// pointer if it still names the stopped active revision.
func (w *Worker) agentStopPass(a *activeClaim) (result, passReport, error) {
	s := w.loadStop(a)
	d, err := w.runStop(a, s, planStop(s))
	if err != nil {
		return d.result, passReport{}, err
	}
	err = w.finalize(a, func(ctx context.Context, tx txDB) error { return w.finalizeStop(ctx, tx, a, &d) })
	if err == nil && d.outcome == outcomeSuccess && d.code != codeStopSuperseded {
		w.observeOperation(operationStop, a.claim.Work)
	}
	rep := w.exhaustedReport(a, d.result)
	rep.yielded = d.yielded
	return d.result, rep, err
}

// stopSnapshot is what the stop pass reads before its first effect.
type stopSnapshot struct {
	work queue.Work
	// ended is the result of a read or re-authorization that ends the pass before the plan.
	ended     *result
	readErr   error // a failed read of the Namespace, the Agent or its revisions
	principal string
	ns        store.NamespaceRow
	agent     store.WorkerAgent
	revisions []agentRevision
	owned     map[string]bool // revision id → pinned to this worker's Compute
}

// loadStop reads the Agent, re-authorizes the actor (first, so that a driver failure later is a
// retry and not a denial), then reads the Namespace, the Agent again and its revisions.
func (w *Worker) loadStop(a *activeClaim) *stopSnapshot {
	ctx, work := a.ctx, a.claim.Work
	s := &stopSnapshot{work: work}
	end := func(r result) *stopSnapshot { s.ended = &r; return s }
	if !agentTarget(work, queue.AgentStopped) {
		return end(permanent(codeInvalidTarget))
	}
	agent, err := store.ReadWorkerAgent(ctx, w.pool, work.NamespaceID, *work.AgentID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return end(permanent(codeInvalidAgentOwner))
	case err != nil:
		return end(dependencyFailure(err))
	}
	den, err := w.reauthorize(ctx, iam.Request{PrincipalID: work.ActorID, Action: iam.ActionOperate,
		Resource: agentResource(work.NamespaceID, agent.ID)})
	switch {
	case err != nil:
		return end(dependencyFailure(err))
	case den != nil:
		return end(result{outcome: outcomePermanent, code: den.code, denial: den})
	}
	s.principal = agent.ServicePrincipalID
	s.ns, err = store.GetNamespaceRow(ctx, w.pool, work.NamespaceID)
	if err == nil {
		s.agent, err = store.ReadWorkerAgent(ctx, w.pool, work.NamespaceID, agent.ID)
	}
	var rows []store.WorkerRevision
	if err == nil {
		rows, err = store.ListWorkerRevisions(ctx, w.pool, work.NamespaceID, agent.ID)
	}
	s.readErr = err
	s.revisions = lenientRevisions(rows)
	s.owned = map[string]bool{}
	for _, r := range s.revisions {
		s.owned[r.row.ID] = w.ownsCompute(r.spec.Compute)
	}
	return s
}

// stopPlan is either the result that ends the pass (end) or the cleanup set to stop, with the
// active revision among it (the pointer to clear).
type stopPlan struct {
	end    *result
	set    []agentRevision
	active string
}

// planStop decides the stop pass from its snapshot alone.
func planStop(s *stopSnapshot) stopPlan {
	end := func(r result) stopPlan { return stopPlan{end: &r} }
	switch {
	case s.ended != nil:
		return stopPlan{end: s.ended}
	case errors.Is(s.readErr, store.ErrNotFound) || (s.readErr == nil && (s.ns.DeletedAt != nil || s.agent.ServicePrincipalID != s.principal)):
		return end(permanent(codeInvalidAgentOwner))
	case s.readErr != nil:
		return end(dependencyFailure(s.readErr))
	case s.agent.DesiredRuntimeState != store.RuntimeStopped:
		return end(success(codeStopSuperseded)) // a later deploy won
	}
	var active *agentRevision
	if s.agent.ActiveRevisionID != nil {
		for i := range s.revisions {
			if s.revisions[i].row.ID == *s.agent.ActiveRevisionID {
				active = &s.revisions[i]
			}
		}
		switch {
		case active == nil:
			return end(permanent(codeInvalidActiveRevision))
		case active.row.AdmittedAt.After(s.work.CreatedAt):
			return end(success(codeStopSuperseded))
		case !s.owned[active.row.ID]:
			return end(permanent(codeComputeDriverMismatch))
		}
	}
	p := stopPlan{set: s.cleanupSet(active)}
	for _, r := range p.set {
		if !r.ownedBy(s.agent) {
			return end(permanent(codeInvalidRevisionOwner))
		}
	}
	if active != nil {
		p.active = active.row.ID
	}
	return p
}

// cleanupSet is the active revision first, then every other revision of this Compute admitted
// before the stop (failed candidates, predecessors whose retirement failed), newest first.
func (s *stopSnapshot) cleanupSet(active *agentRevision) []agentRevision {
	var set []agentRevision
	if active != nil {
		set = append(set, *active)
	}
	for i := len(s.revisions) - 1; i >= 0; i-- {
		r := s.revisions[i]
		if (active != nil && r.row.ID == active.row.ID) || !s.owned[r.row.ID] || r.row.AdmittedAt.After(s.work.CreatedAt) {
			continue
		}
		set = append(set, r)
	}
	return set
}

// runStop stops the planned cleanup set under the claim, re-reading the desired state before
// every stop: a deploy admitted meanwhile wins.
func (w *Worker) runStop(a *activeClaim, s *stopSnapshot, p stopPlan) (stopDecision, error) {
	d := stopDecision{principal: s.principal}
	if p.end != nil {
		d.result = *p.end
		return d, nil
	}
	if len(p.set) > 0 {
		if err := w.bindAgent(a, s.ns, s.agent); err != nil {
			return d, claimLostOr(err, &d.result)
		}
	}
	for _, r := range p.set {
		current, err := store.ReadWorkerAgent(a.ctx, w.pool, s.work.NamespaceID, s.agent.ID)
		switch {
		case errors.Is(err, store.ErrNotFound) || (err == nil && current.ServicePrincipalID != s.principal):
			d.result = permanent(codeInvalidAgentOwner)
			return d, nil
		case err != nil:
			return d, claimLostOr(err, &d.result)
		case current.DesiredRuntimeState != store.RuntimeStopped:
			d.result = success(codeStopSuperseded)
			return d, nil
		}
		if err := w.stopRevision(a, r.driverRevision(), true); err != nil {
			if driver.IsStopYielded(err) {
				// The runtime is still terminating: wait, without spending the attempt, and run again
				// after the other work. The stops done so far are repeated (they are idempotent).
				d.result = result{outcome: outcomePending, code: codeAgentStopYielded, cause: driver.ErrorClass(err)}
				d.yielded = true
				return d, nil
			}
			return d, claimLostOr(err, &d.result)
		}
	}
	d.result = success(codeAgentAlreadyStopped)
	if p.active != "" {
		d.code, d.stopped = codeAgentStopped, p.active
	}
	return d, nil
}
