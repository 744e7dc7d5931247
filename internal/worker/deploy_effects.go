package worker

import (
	"context"
	"errors"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/store"
)

// The Compute effects of a deploy pass that more than one phase performs: the executor (run), the
// rules that settle a result, and the work after publication. Each runs under the claim.

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

// stopPredecessors stops every earlier revision (failed candidates included) that was not stopped
// within its re-stop window. A failed or yielded stop is a *predecessorStopError: the
// candidate is never prepared next to a live predecessor.
func (p *deployPass) stopPredecessors(yield bool) error {
	for _, r := range p.earlier() {
		if p.w.stopped.recent(r.row.ID) {
			continue
		}
		if err := p.w.stopRevision(p.a, r.driverRevision(), yield); err != nil {
			if errors.Is(err, errClaimLost) {
				return errClaimLost
			}
			return &predecessorStopError{err: err}
		}
		p.w.stopped.record(r.row.ID, p.w.q.LeaseDuration())
	}
	return nil
}

// forgetPredecessors clears the records of the earlier revisions, so the next pass sweeps again.
func (p *deployPass) forgetPredecessors() {
	for _, r := range p.earlier() {
		p.w.stopped.forget(r.row.ID)
	}
}

// stopRefusedCandidate stops the candidate before its refusal is published, so that a refused
// deployment never stays the only runtime. It skips when the stop does not apply. A
// failed or yielded stop is a *refusedStopError; a lost claim is errClaimLost.
func (p *deployPass) stopRefusedCandidate() error {
	if !p.loaded {
		return nil // the candidate was never read: nothing of it reached Compute through this work
	}
	c := p.candidate
	switch {
	case p.ns.DeletedAt != nil || p.ns.Status != store.NamespaceReady:
		return nil
	case !c.ownedBy(p.agent) || !p.w.ownsCompute(c.spec.Compute):
		return nil
	case p.agent.ActiveRevisionID != nil && *p.agent.ActiveRevisionID == c.row.ID:
		return nil // the active revision is not a candidate
	}
	if !p.exclusive {
		if p.agent.ActiveRevisionID != nil {
			return nil // the candidate may share the active revision's route
		}
		if !p.prepared && p.storedRefusal == nil && p.latest == nil {
			return nil // the candidate never reached Compute
		}
	}
	started := time.Now()
	err := p.w.bindAgent(p.a, p.ns, p.agent)
	if err == nil {
		err = p.w.stopRevision(p.a, c.driverRevision(), true)
	}
	if err != nil {
		if errors.Is(err, errClaimLost) {
			return errClaimLost
		}
		return &refusedStopError{err: err, duration: min(time.Since(started), maxRefusedRecheck/4)}
	}
	p.w.stopped.forget(c.row.ID)
	p.w.stopped.record(c.row.ID, p.w.q.LeaseDuration())
	return nil
}

// earlier lists the revisions of this Compute numbered below the candidate, newest first.
func (p *deployPass) earlier() []agentRevision {
	var out []agentRevision
	for i := len(p.revisions) - 1; i >= 0; i-- {
		r := p.revisions[i]
		if r.row.Number < p.candidate.row.Number && p.w.ownsCompute(r.spec.Compute) {
			out = append(out, r)
		}
	}
	return out
}
