package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Agent stop and delete result codes.
const (
	codeInvalidAgentOwner        = "INVALID_AGENT_OWNER"
	codeInvalidAgentState        = "INVALID_AGENT_STATE"
	codeInvalidActiveRevision    = "INVALID_ACTIVE_REVISION"
	codeInvalidRevisionOwner     = "INVALID_REVISION_OWNER"
	codeComputeDriverMismatch    = driver.CodeComputeDriverMismatch
	codeAgentStopped             = "AGENT_STOPPED"
	codeAgentAlreadyStopped      = "AGENT_ALREADY_STOPPED"
	codeStopSuperseded           = "STOP_SUPERSEDED"
	codeAgentDeleted             = "AGENT_DELETED"
	codeRepositoryCleanupPending = "REPOSITORY_CLEANUP_PENDING"
)

// Agent operations of occ_agent_operation_duration_seconds.
const (
	operationDeploy = "deploy"
	operationStop   = "stop"
	operationDelete = "delete"
)

// agentRevision is one revision row with its admitted snapshot. Stop and delete decode the snapshot
// leniently (they must be able to clean up whatever was admitted); deploy decodes it strictly.
type agentRevision struct {
	row  store.WorkerRevision
	spec platform.RevisionSpec
}

func lenientRevisions(rows []store.WorkerRevision) []agentRevision {
	out := make([]agentRevision, len(rows))
	for i, r := range rows {
		out[i].row = r
		_ = json.Unmarshal(r.AdmittedSpec, &out[i].spec) // an unreadable snapshot owns nothing
	}
	return out
}

// driverRevision is the snapshot a Compute Driver realizes.
func (r agentRevision) driverRevision() driver.Revision {
	return r.spec.DriverRevision(platform.RevisionRef{ID: r.row.ID, NamespaceID: r.row.NamespaceID, AgentID: r.row.AgentID,
		Number: r.row.Number, AdmittedAt: r.row.AdmittedAt})
}

// ownedBy reports whether the revision belongs to the Agent: same Namespace, Agent and service
// principal.
func (r agentRevision) ownedBy(a store.WorkerAgent) bool {
	return r.row.NamespaceID == a.NamespaceID && r.row.AgentID == a.ID && r.spec.ServicePrincipalID == a.ServicePrincipalID
}

// ownsCompute reports whether a revision pinned to c is this worker's to act on.
func (w *Worker) ownsCompute(c platform.ComputeSelection) bool {
	return c.ID == w.cfg.Compute.ID() && c.Implementation == w.cfg.Compute.Implementation()
}

func agentRef(a store.WorkerAgent) driver.AgentRef {
	return driver.AgentRef{NamespaceID: a.NamespaceID, AgentID: a.ID, ServicePrincipalID: a.ServicePrincipalID}
}

func namespaceRef(ns store.NamespaceRow) driver.Namespace {
	return driver.Namespace{ID: ns.ID, Name: ns.Name, ExistingNamespace: ns.ExistingNamespace}
}

// bindAgent hands the approved Agent to a Compute Driver that wants it before revision work.
func (w *Worker) bindAgent(a *activeClaim, ns store.NamespaceRow, agent store.WorkerAgent) error {
	binder, ok := w.cfg.Compute.(driver.AgentBinder)
	if !ok {
		return nil
	}
	return w.effect(a, func(ctx context.Context) error { return binder.BindAgent(ctx, namespaceRef(ns), agentRef(agent)) })
}

// agentResource is the audit and IAM reference of an Agent.
func agentResource(nsID, agentID string) iam.Resource {
	return iam.Resource{Kind: iam.KindAgent, ID: agentID, NamespaceID: &nsID}
}

// appendDenial writes the authorization_denial audit of a refused reauthorization.
func (w *Worker) appendDenial(ctx context.Context, tx txDB, a *activeClaim, action string, resource iam.Resource, d *denial) error {
	work := a.claim.Work
	nsID := work.NamespaceID
	_, err := w.audit.Append(ctx, tx.AtCommit(), audit.Event{
		Kind: audit.KindAuthorizationDenial, ActorID: work.ActorID, NamespaceID: &nsID, Action: action,
		Resource:    audit.Resource{Kind: resource.Kind, ID: resource.ID, NamespaceID: &nsID},
		Outcome:     audit.OutcomeDenied,
		IAMDriverID: w.cfg.IAMDriverID,
		Authorization: &audit.Authorization{PrincipalID: d.request.PrincipalID, Action: d.request.Action,
			Resource: audit.Resource{Kind: d.request.Resource.Kind, ID: d.request.Resource.ID, NamespaceID: d.request.Resource.NamespaceID}},
		DecisionReason: d.decision.Reason,
		ReasonCode:     d.code,
		Details:        map[string]any{"workId": work.Key, "attemptCount": a.claim.Attempt(), "reasonCode": d.code},
	})
	return err
}

// appendAgentLifecycle writes a lifecycle audit of an Agent (stop or a failed deletion).
func (w *Worker) appendAgentLifecycle(ctx context.Context, tx txDB, a *activeClaim, action string, r result, details map[string]any) error {
	work := a.claim.Work
	nsID := work.NamespaceID
	if details == nil {
		details = map[string]any{}
	}
	details["computeDriverId"] = w.cfg.Compute.ID()
	details["reasonCode"] = r.code
	details["workId"] = work.Key
	details["attemptCount"] = a.claim.Attempt()
	outcome := audit.OutcomeSuccess
	if r.outcome != outcomeSuccess {
		outcome = audit.OutcomeFailure
	}
	_, err := w.audit.Append(ctx, tx.AtCommit(), audit.Event{
		Kind: audit.KindMutation, ActorID: work.ActorID, NamespaceID: &nsID, Action: action,
		Resource: audit.Resource{Kind: iam.KindAgent, ID: *work.AgentID, NamespaceID: &nsID},
		Outcome:  outcome, ReasonCode: r.code, Details: details,
	})
	return err
}

// observeOperation records occ_agent_operation_duration_seconds from the work's admission.
func (w *Worker) observeOperation(op string, work queue.Work) {
	if w.cfg.Metrics != nil {
		w.cfg.Metrics.ObserveAgentOperation(op, time.Since(work.CreatedAt))
	}
}

// ---- Agent stop: finalization (the plan and its run are in agent_stop.go) ----

func (w *Worker) finalizeStop(ctx context.Context, tx txDB, a *activeClaim, d *stopDecision) error {
	work := a.claim.Work
	if d.outcome == outcomeSuccess {
		ns, err := store.ShareNamespace(ctx, tx, work.NamespaceID)
		var agent store.WorkerAgent
		if err == nil {
			agent, err = store.LockWorkerAgent(ctx, tx, work.NamespaceID, *work.AgentID)
		}
		switch {
		case errors.Is(err, store.ErrNotFound) || (err == nil && (ns.DeletedAt != nil || agent.ServicePrincipalID != d.principal)):
			d.result, d.stopped = permanent(codeInvalidAgentOwner), ""
		case err != nil:
			return err
		case agent.DesiredRuntimeState != store.RuntimeStopped:
			d.code, d.stopped = codeStopSuperseded, "" // a deploy admitted meanwhile: keep the pointer
		case d.stopped != "":
			cleared, err := store.ClearActiveRevisionIfUnchanged(ctx, tx, store.AgentKey{NamespaceID: work.NamespaceID, AgentID: agent.ID}, d.stopped)
			if err != nil {
				return err
			}
			w.hooks.pointer(a, agent.ID, &d.stopped, "", cleared)
		}
	}
	exhausted := d.outcome == outcomeRetry && a.claim.Attempt() >= w.q.MaxAttempts()
	switch {
	case d.denial != nil:
		if err := w.appendDenial(ctx, tx, a, "openclaw.agents.stop", agentResource(work.NamespaceID, *work.AgentID), d.denial); err != nil {
			return err
		}
	case d.outcome == outcomeSuccess || d.outcome == outcomePermanent || exhausted:
		details := map[string]any{}
		if d.stopped != "" {
			details["revisionId"] = d.stopped
		}
		if err := w.appendAgentLifecycle(ctx, tx, a, "openclaw.agents.lifecycle.stop", d.result, details); err != nil {
			return err
		}
	}
	var err error
	switch {
	case d.outcome == outcomePending:
		delay := readinessRecheck(a.txClock().Sub(work.CreatedAt))
		_, err = w.deferWork(ctx, tx, a, d.code, queue.DeferOptions{Delay: &delay})
	case d.outcome == outcomeSuccess:
		_, err = w.complete(ctx, tx, a, d.code, nil)
	case d.outcome == outcomePermanent:
		_, err = w.fail(ctx, tx, a, d.code, nil)
	default:
		_, err = w.retry(ctx, tx, a, d.code)
	}
	return err
}

// ---- Agent delete ----

// agentDeletePass retires every revision of a deleting Agent, deletes its runtime credentials,
// then removes the Agent with everything it owns in one SQL finalizer.
func (w *Worker) agentDeletePass(a *activeClaim) (result, passReport, error) {
	r, err := w.decideDelete(a)
	if err != nil {
		return r, passReport{}, err
	}
	err = w.finalize(a, func(ctx context.Context, tx txDB) error { return w.finalizeDelete(ctx, tx, a, &r) })
	if err == nil && r.outcome == outcomeSuccess {
		w.observeOperation(operationDelete, a.claim.Work)
	}
	return r, w.exhaustedReport(a, r), err
}

// deleteSnapshot is what the delete pass reads before its first effect.
type deleteSnapshot struct {
	work      queue.Work
	readErr   error // a failed read of the Namespace, the Agent or its revisions
	ns        store.NamespaceRow
	agent     store.WorkerAgent
	revisions []agentRevision
	owned     bool    // every revision is pinned to this worker's Compute
	authErr   error   // the re-authorization could not be decided
	denial    *denial // the re-authorization refused the actor
}

// decideDelete reads the snapshot, plans, and retires the Agent's runtime under the claim.
func (w *Worker) decideDelete(a *activeClaim) (result, error) {
	s := w.loadDelete(a)
	if r := planDelete(s); r != nil {
		return *r, nil
	}
	return w.runDelete(a, s)
}

// loadDelete reads the Namespace, the Agent and its revisions, then re-authorizes the actor when
// the Agent is in a state to be deleted.
func (w *Worker) loadDelete(a *activeClaim) *deleteSnapshot {
	ctx, work := a.ctx, a.claim.Work
	s := &deleteSnapshot{work: work}
	if !agentTarget(work, queue.AgentDeleted) {
		return s
	}
	var rows []store.WorkerRevision
	s.ns, s.readErr = store.GetNamespaceRow(ctx, w.pool, work.NamespaceID)
	if s.readErr == nil {
		s.agent, s.readErr = store.ReadWorkerAgent(ctx, w.pool, work.NamespaceID, *work.AgentID)
	}
	if s.readErr == nil {
		rows, s.readErr = store.ListWorkerRevisions(ctx, w.pool, work.NamespaceID, s.agent.ID)
	}
	s.revisions = lenientRevisions(rows)
	s.owned = true
	for _, r := range s.revisions {
		s.owned = s.owned && w.ownsCompute(r.spec.Compute)
	}
	if s.readErr == nil && deletable(s.agent) {
		s.denial, s.authErr = w.reauthorize(ctx, iam.Request{PrincipalID: work.ActorID, Action: iam.ActionDelete,
			Resource: agentResource(work.NamespaceID, s.agent.ID)})
	}
	return s
}

// agentTarget reports whether work is Agent work with the given target.
func agentTarget(work queue.Work, target string) bool {
	return work.AgentID != nil && work.RevisionID == nil && work.AgentTarget != nil && *work.AgentTarget == target
}

func deletable(a store.WorkerAgent) bool {
	return a.Status == store.AgentDeleting && a.DesiredRuntimeState == store.RuntimeStopped
}

// planDelete returns the result that ends the delete pass before any effect, or nil: retire.
func planDelete(s *deleteSnapshot) *result {
	end := func(r result) *result { return &r }
	switch {
	case !agentTarget(s.work, queue.AgentDeleted):
		return end(permanent(codeInvalidTarget))
	case errors.Is(s.readErr, store.ErrNotFound):
		return end(permanent(codeInvalidAgentOwner))
	case s.readErr != nil:
		return end(dependencyFailure(s.readErr))
	case !deletable(s.agent):
		return end(permanent(codeInvalidAgentState))
	case s.authErr != nil:
		return end(dependencyFailure(s.authErr))
	case s.denial != nil:
		return end(result{outcome: outcomePermanent, code: s.denial.code, denial: s.denial})
	}
	for _, r := range s.revisions {
		if !r.ownedBy(s.agent) {
			return end(permanent(codeInvalidRevisionOwner))
		}
	}
	if !s.owned {
		return end(permanent(codeComputeDriverMismatch))
	}
	return nil
}

// runDelete retires every revision, newest first (the serving revision stops before its
// predecessors), then deletes the Agent's runtime credentials when the driver can.
func (w *Worker) runDelete(a *activeClaim, s *deleteSnapshot) (result, error) {
	var r result
	revisions := s.revisions
	if len(revisions) > 0 {
		if err := w.bindAgent(a, s.ns, s.agent); err != nil {
			return r, claimLostOr(err, &r)
		}
	}
	sort.SliceStable(revisions, func(i, j int) bool { return revisions[i].row.Number > revisions[j].row.Number })
	for _, rev := range revisions {
		dr := rev.driverRevision()
		if err := w.effect(a, func(ctx context.Context) error { return w.cfg.Compute.RetireRevision(ctx, dr) }); err != nil {
			return r, claimLostOr(err, &r)
		}
	}
	if deleter, ok := w.cfg.Compute.(driver.RuntimeCredentialDeleter); ok {
		if err := w.effect(a, func(ctx context.Context) error { return deleter.DeleteAgentRuntimeCredentials(ctx, agentRef(s.agent)) }); err != nil {
			return r, claimLostOr(err, &r)
		}
	}
	return success(codeAgentDeleted), nil
}

func (w *Worker) finalizeDelete(ctx context.Context, tx txDB, a *activeClaim, r *result) error {
	work := a.claim.Work
	if r.outcome == outcomeSuccess {
		// The SQL finalizer checks the claim again, removes the Agent, its revisions, principal,
		// bindings, restrictions, keys and every work row, and writes the success audit.
		st, err := store.FinalizeAgentDeletion(ctx, tx, store.AgentKey{NamespaceID: work.NamespaceID, AgentID: *work.AgentID}, work.Key, a.claim.Token)
		switch {
		case err != nil:
			return err
		case st == store.AgentDeletionClaimLost:
			return queue.ErrClaimLost
		case st == store.AgentDeletionDone:
			return nil
		}
		*r = result{outcome: outcomePending, code: codeRepositoryCleanupPending}
		_, err = w.deferWork(ctx, tx, a, r.code, queue.DeferOptions{})
		return err
	}
	exhausted := r.outcome == outcomeRetry && a.claim.Attempt() >= w.q.MaxAttempts()
	switch {
	case r.denial != nil:
		if err := w.appendDenial(ctx, tx, a, "openclaw.agents.delete", agentResource(work.NamespaceID, *work.AgentID), r.denial); err != nil {
			return err
		}
	case r.outcome == outcomePermanent || exhausted:
		// A failed teardown never changes the Agent: it stays deleting until someone retries.
		if err := w.appendAgentLifecycle(ctx, tx, a, "openclaw.agents.lifecycle.delete", result{outcome: outcomePermanent, code: r.code}, nil); err != nil {
			return err
		}
	}
	var err error
	switch {
	case r.outcome == outcomePending:
		_, err = w.deferWork(ctx, tx, a, r.code, queue.DeferOptions{})
	case r.outcome == outcomePermanent:
		_, err = w.fail(ctx, tx, a, r.code, nil)
	default:
		_, err = w.retry(ctx, tx, a, r.code)
	}
	return err
}
