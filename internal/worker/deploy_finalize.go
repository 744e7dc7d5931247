package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// finish runs the finalization transaction and, after a publication, activation and retirement
// with the completion transaction.
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
		next := revisionResult{result: success(codeRevisionStopped)}
		if err != nil {
			if next, err = deployFailure(err); err != nil {
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
// Agent was stopped meanwhile.
func (p *deployPass) afterPublication(warnings []driver.PluginWarning) (revisionResult, error) {
	w := p.w
	rev := p.candidate.driverRevision()
	current, err := store.ReadWorkerAgent(p.a.ctx, w.pool, p.work.NamespaceID, p.agent.ID)
	if err != nil {
		return activeFailure(err)
	}
	if current.DesiredRuntimeState != store.RuntimeRunning {
		if err := w.stopRevision(p.a, rev, true); err != nil {
			return activeFailure(err)
		}
		if err := p.retireEarlier(); err != nil {
			return activeFailure(err)
		}
		return revisionResult{result: success(codeRevisionStopped)}, nil
	}
	if err := p.activateAfterCommit(); err != nil {
		return activeFailure(err)
	}
	if err := p.retireEarlier(); err != nil {
		return activeFailure(err)
	}
	p.w.timings.update(func() { p.timing.activated = time.Now() })
	return revisionResult{result: success(codeRevisionActivated), warnings: warnings,
		publication: publication{activation: true, expected: p.agent.ActiveRevisionID}}, nil
}

func (p *deployPass) finalize(r *revisionResult) error {
	if err := p.settle(r); err != nil {
		return err
	}
	return p.w.finalize(p.a, func(ctx context.Context, tx txDB) error { return p.finalizeTx(ctx, tx, r) })
}

// finalizeTx is one finalization transaction of a deploy pass; it begins with the claim's renewal
// (w.finalize). It publishes what the result intends, audits a denial, then makes the queue
// transition, unless the publication leaves the work to a later transaction.
func (p *deployPass) finalizeTx(ctx context.Context, tx txDB, r *revisionResult) error {
	age := p.a.txClock().Sub(p.work.CreatedAt) // held failures and the deadline were settled before (settle)
	if done, err := p.publishTx(ctx, tx, r); err != nil || done {
		return err
	}
	if r.denial != nil {
		if err := p.w.appendDenial(ctx, tx, p.a, "openclaw.agents.deploy", agentResource(p.work.NamespaceID, *p.work.AgentID), r.denial); err != nil {
			return err
		}
	}
	return p.transitionTx(ctx, tx, r, age)
}

// publishTx writes the publication r intends: the supersession audit, the compare-and-set of the
// pointer, or the activation audit. done is true when the work is completed by a later
// transaction (the pointer was published, or the candidate is stopped after this commit).
func (p *deployPass) publishTx(ctx context.Context, tx txDB, r *revisionResult) (done bool, err error) {
	switch {
	case r.superseded:
		return false, p.appendRevisionAudit(ctx, tx, "openclaw.agents.lifecycle.supersede", r, map[string]any{"activeRevisionId": r.activeID})
	case r.publish:
		return p.publishPointer(ctx, tx, r)
	case r.activation:
		return false, p.completeActivation(ctx, tx, r)
	}
	return false, nil
}

// publishPointer compare-and-sets the Agent's pointer from the value read before preparing to the
// candidate; the pointer is published first, activation completes the work.
func (p *deployPass) publishPointer(ctx context.Context, tx txDB, r *revisionResult) (bool, error) {
	agent, ok, err := p.lockAgent(ctx, tx)
	switch {
	case err != nil:
		return false, err
	case !ok || !samePointer(agent.ActiveRevisionID, r.expected):
		*r = revisionResult{result: result{outcome: outcomeRetry, code: codeActiveRevisionChanged}}
		return false, nil
	case agent.DesiredRuntimeState != store.RuntimeRunning:
		r.stopAfterCommit = true
		return true, nil // the candidate is stopped after this commit; the work completes then
	}
	set, err := store.SetActiveRevisionIfUnchanged(ctx, tx, store.AgentKey{NamespaceID: p.work.NamespaceID, AgentID: agent.ID}, r.expected, p.candidate.row.ID)
	if err != nil {
		return false, err
	}
	if !set {
		*r = revisionResult{result: result{outcome: outcomeRetry, code: codeActiveRevisionChanged}}
		return false, nil
	}
	r.published = true
	p.w.hooks.pointer(p.a, agent.ID, r.expected, p.candidate.row.ID, true)
	return true, nil
}

// completeActivation checks that the pointer still names the candidate and writes the one
// activation audit, with the plugin warnings as result data.
func (p *deployPass) completeActivation(ctx context.Context, tx txDB, r *revisionResult) error {
	agent, ok, err := p.lockAgent(ctx, tx)
	switch {
	case err != nil:
		return err
	case !ok || agent.ActiveRevisionID == nil || *agent.ActiveRevisionID != p.candidate.row.ID:
		*r = revisionResult{result: result{outcome: outcomeRetry, code: codeActiveRevisionChanged}}
		return nil
	}
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
	return nil
}

// transitionTx makes the queue transition of r. Refused-candidate stop waits have no deadline and
// no attempt limit, and every such wait is evidence, so its count survives a restart.
func (p *deployPass) transitionTx(ctx context.Context, tx txDB, r *revisionResult, age time.Duration) error {
	w, a := p.w, p.a
	var err error
	switch {
	case r.outcome == outcomeSuccess:
		_, err = w.complete(ctx, tx, a, r.code, r.data)
	case r.outcome == outcomePending && r.refused != nil:
		d := r.recheck
		_, err = w.deferWork(ctx, tx, a, r.code, queue.DeferOptions{Delay: &d, RepeatEvidence: true,
			Refusal: r.refused, StopYielded: r.stopYielded})
	case r.outcome == outcomePending:
		o := queue.DeferOptions{}
		if r.readiness || r.transient {
			d := readinessRecheck(age)
			o.Delay = &d
		}
		_, err = w.deferWork(ctx, tx, a, r.code, o)
	case r.outcome == outcomePermanent || w.exhausted(a, r.result):
		_, err = w.fail(ctx, tx, a, r.code, r.data)
	default:
		_, err = w.retry(ctx, tx, a, r.code)
	}
	return err
}

// lockAgent locks the Namespace FOR SHARE, then the Agent FOR UPDATE (the lock order of every
// finalization); ok is false when either is gone or the Agent's principal changed.
func (p *deployPass) lockAgent(ctx context.Context, tx txDB) (store.WorkerAgent, bool, error) {
	ns, err := store.ShareNamespace(ctx, tx, p.work.NamespaceID)
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
	_, err := p.w.audit.Append(ctx, tx.AtCommit(), audit.Event{
		Kind: audit.KindMutation, ActorID: work.ActorID, NamespaceID: &nsID, Action: action,
		Resource: audit.Resource{Kind: iam.KindAgentRevision, ID: p.candidate.row.ID, NamespaceID: &nsID},
		Outcome:  audit.OutcomeSuccess, ReasonCode: r.code, Details: details,
	})
	return err
}
