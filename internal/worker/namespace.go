package worker

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Namespace result codes.
const (
	codeNamespaceReconciled = "NAMESPACE_RECONCILED"
	codeNamespaceIncomplete = "NAMESPACE_INCOMPLETE"
	codeSupersededTarget    = "SUPERSEDED_TARGET"
)

type namespaceKind int

const (
	ensurePass namespaceKind = iota
	deletePass
)

// call names the Compute call of the pass.
func (k namespaceKind) call() string {
	if k == ensurePass {
		return "EnsureNamespace"
	}
	return "DeleteNamespace"
}

func (k namespaceKind) wantStatus() store.NamespaceStatus {
	if k == ensurePass {
		return store.NamespaceProvisioning
	}
	return store.NamespaceDeleting
}

// namespacePass is the Namespace ensure pass or delete pass.
func (w *Worker) namespacePass(a *activeClaim, kind namespaceKind) (result, error) {
	r := w.decideNamespace(a, kind)
	if lost, _ := a.state(); lost {
		return r, queue.ErrClaimLost
	}
	var auditKey, auditValue string
	err := w.finalize(a, func(ctx context.Context, tx txDB) error {
		var err error
		auditKey, auditValue, err = w.finalizeNamespace(ctx, tx, a, kind, &r)
		return err
	})
	if err == nil && auditKey != "" {
		w.lastAudit.set(auditKey, auditValue) // only after commit
	}
	return r, err
}

// namespaceSnapshot is what a Namespace pass reads before its effect.
type namespaceSnapshot struct {
	readErr error // a failed read of the Namespace (store.ErrNotFound when it is gone)
	ns      store.NamespaceRow
	// authorization is the result a refused or failed re-authorization ends the pass with.
	authorization *result
}

// decideNamespace reads the snapshot, plans, and calls Compute; every failure becomes a result.
func (w *Worker) decideNamespace(a *activeClaim, kind namespaceKind) result {
	s := w.loadNamespace(a, kind)
	if r := planNamespace(kind, s); r != nil {
		return *r
	}
	return w.runNamespace(a, kind, s.ns)
}

// loadNamespace reads the Namespace and, while it is in the pass's status, re-authorizes the actor.
func (w *Worker) loadNamespace(a *activeClaim, kind namespaceKind) *namespaceSnapshot {
	s := &namespaceSnapshot{}
	s.ns, s.readErr = store.GetNamespaceRow(a.ctx, w.pool, a.claim.Work.NamespaceID)
	if planNamespace(kind, s) == nil {
		s.authorization = w.authorizeNamespace(a, kind, s.ns)
	}
	return s
}

// planNamespace returns the result that ends the pass before its effect, or nil: call Compute.
func planNamespace(kind namespaceKind, s *namespaceSnapshot) *result {
	end := func(r result) *result { return &r }
	switch {
	case errors.Is(s.readErr, store.ErrNotFound):
		return end(success(codeSupersededTarget))
	case s.readErr != nil:
		return end(dependencyFailure(s.readErr))
	case s.ns.DeletedAt != nil || s.ns.Status != kind.wantStatus():
		return end(success(codeSupersededTarget))
	}
	return s.authorization
}

// authorizeNamespace re-authorizes the actor: create (and administer for an existing Kubernetes
// Namespace) for the ensure pass, delete for the delete pass. It returns the result a refusal or
// a failure ends the pass with, or nil.
func (w *Worker) authorizeNamespace(a *activeClaim, kind namespaceKind, ns store.NamespaceRow) *result {
	ctx, work := a.ctx, a.claim.Work
	end := func(r result) *result { return &r }
	nsID := ns.ID
	requests := []iam.Request{{PrincipalID: work.ActorID, Action: iam.ActionDelete,
		Resource: iam.Resource{Kind: iam.KindNamespace, ID: nsID, NamespaceID: &nsID}}}
	if kind == ensurePass {
		requests = []iam.Request{{PrincipalID: work.ActorID, Action: iam.ActionCreate,
			Resource: iam.Resource{Kind: iam.KindNamespace, ID: w.cfg.InstallationID}}}
		if ns.ExistingNamespace != nil {
			requests = append(requests, iam.Request{PrincipalID: work.ActorID, Action: iam.ActionAdminister,
				Resource: iam.Resource{Kind: iam.KindInstallation, ID: w.cfg.InstallationID}})
		}
	}
	for _, req := range requests {
		d, err := w.reauthorize(ctx, req)
		if err != nil {
			return end(dependencyFailure(err))
		}
		if d != nil {
			return end(result{outcome: outcomePermanent, code: d.code, denial: d})
		}
	}
	if kind != ensurePass {
		return nil
	}
	// A Restriction on creating this exact Namespace refuses it even though the collection grant
	// allowed the admission.
	exact := iam.Request{PrincipalID: work.ActorID, Action: iam.ActionCreate,
		Resource: iam.Resource{Kind: iam.KindNamespace, ID: nsID, NamespaceID: &nsID}}
	d, err := w.iam.Authorize(ctx, exact)
	if err != nil {
		return end(dependencyFailure(err))
	}
	if len(d.Evidence.RestrictionIDs) > 0 {
		return end(result{outcome: outcomePermanent, code: codeAuthorizationDenied,
			denial: &denial{request: exact, decision: d, code: codeAuthorizationDenied}})
	}
	return nil
}

// runNamespace calls EnsureNamespace or DeleteNamespace under the claim and classifies the answer.
// A lost claim is the empty result (the pass then reports the lost claim).
func (w *Worker) runNamespace(a *activeClaim, kind namespaceKind, ns store.NamespaceRow) result {
	target := driver.Namespace{ID: ns.ID, Name: ns.Name, ExistingNamespace: ns.ExistingNamespace}
	call, check := w.cfg.Compute.EnsureNamespace, driver.CheckEnsureObservation
	if kind == deletePass {
		call, check = w.cfg.Compute.DeleteNamespace, driver.CheckDeleteObservation
	}
	obs, err := effectValue(w, a, kind.call(), func(ctx context.Context) (driver.NamespaceObservation, error) {
		return call(ctx, target)
	})
	if errors.Is(err, errClaimLost) {
		return result{}
	}
	if err == nil {
		err = check(ns.ID, obs)
	}
	var invalid *driver.InvalidObservationError
	switch {
	case errors.As(err, &invalid):
		return result{outcome: outcomePermanent, code: codeInvalidObservation, cause: driver.ErrorClass(err)}
	case err != nil && driver.IsPermanent(err):
		// A refusal the driver calls permanent: record it as the observation it implies.
		if kind == ensurePass {
			obs = driver.NamespaceEnsureFailed(ns.ID, err)
		} else {
			obs = driver.NamespaceDeleteFailed(ns.ID, err)
		}
	case err != nil:
		return dependencyFailure(err)
	}
	return classifyNamespace(kind, obs)
}

func classifyNamespace(kind namespaceKind, obs driver.NamespaceObservation) result {
	done := obs.Ready != nil && *obs.Ready
	if kind == deletePass {
		done = obs.Deleted != nil && *obs.Deleted
	}
	code := codeNamespaceIncomplete
	if done {
		code = codeNamespaceReconciled
	}
	r := result{code: code, reason: obs.Reason, observation: &obs}
	switch {
	case obs.Failure == driver.FailurePermanent:
		r.outcome = outcomePermanent
	case done && obs.Failure == "":
		r.outcome = outcomeSuccess
	case obs.Failure == driver.FailureRetryable:
		r.outcome = outcomeRetry
	default:
		r.outcome = outcomePending
	}
	return r
}

// finalizeNamespace applies a Namespace pass inside its finalization transaction. It returns the
// dedup key and value of a pending lifecycle audit it wrote (recorded after commit).
func (w *Worker) finalizeNamespace(ctx context.Context, tx txDB, a *activeClaim, kind namespaceKind, r *result) (string, string, error) {
	work := a.claim.Work
	now := a.txClock()
	if r.outcome == outcomePending && now.Sub(work.CreatedAt) > w.cfg.ConvergenceTimeout {
		r.outcome, r.code = outcomePermanent, codeDeadlineExceeded
	}
	exhausted := r.outcome == outcomeRetry && a.claim.Attempt() >= w.q.MaxAttempts()

	removed, err := w.applyNamespaceTx(ctx, tx, kind, r, exhausted, work.NamespaceID)
	if err != nil {
		return "", "", err
	}

	dedupKey, dedupValue, skipEvidence, err := w.auditNamespace(ctx, tx, a, kind, r, removed)
	if err != nil {
		return "", "", err
	}

	return dedupKey, dedupValue, w.namespaceTransitionTx(ctx, tx, a, r, exhausted, skipEvidence)
}

// applyNamespaceTx changes a live Namespace in the pass's status as the result says: ready or
// failed for the ensure pass; for the delete pass, success tombstones the Namespace and removes
// its policy in the same transaction, and a failed teardown never changes the status.
func (w *Worker) applyNamespaceTx(ctx context.Context, tx txDB, kind namespaceKind, r *result, exhausted bool, id string) (store.RemovedPolicy, error) {
	var removed store.RemovedPolicy
	ns, err := store.LockNamespace(ctx, tx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return removed, nil
	case err != nil:
		return removed, err
	case ns.DeletedAt != nil || ns.Status != kind.wantStatus():
		return removed, nil
	}
	reconciled := r.outcome == outcomeSuccess && r.code == codeNamespaceReconciled
	switch {
	case kind == ensurePass && reconciled:
		err = store.SetNamespaceStatus(ctx, tx, ns.ID, store.NamespaceReady)
	case kind == ensurePass && (r.outcome == outcomePermanent || exhausted):
		err = store.SetNamespaceStatus(ctx, tx, ns.ID, store.NamespaceFailed)
	case kind == deletePass && reconciled:
		removed, err = store.TombstoneNamespace(ctx, tx, ns.ID)
	}
	return removed, err
}

// namespaceTransitionTx makes the queue transition of a Namespace pass.
func (w *Worker) namespaceTransitionTx(ctx context.Context, tx txDB, a *activeClaim, r *result, exhausted, skipEvidence bool) error {
	var err error
	switch {
	case r.outcome == outcomeSuccess:
		code := r.code
		if code == codeNamespaceReconciled {
			code = queue.CodeReconcileSucceeded
		}
		_, err = w.complete(ctx, tx, a, code, nil)
	case r.outcome == outcomePending:
		_, err = w.deferWork(ctx, tx, a, r.code, queue.DeferOptions{SkipEvidence: skipEvidence})
	case r.outcome == outcomePermanent || exhausted:
		_, err = w.fail(ctx, tx, a, r.code, nil)
	default:
		_, err = w.retry(ctx, tx, a, r.code)
	}
	return err
}

// auditNamespace writes the denial audit or the lifecycle audit of a Namespace pass. A pending
// pass that observed exactly what this process last audited for the work item writes neither the
// audit nor queue evidence (skipEvidence).
func (w *Worker) auditNamespace(ctx context.Context, tx txDB, a *activeClaim, kind namespaceKind, r *result, removed store.RemovedPolicy) (string, string, bool, error) {
	work := a.claim.Work
	nsID := work.NamespaceID
	if r.denial != nil {
		action := "openclaw.namespaces.create"
		if kind == deletePass {
			action = "openclaw.namespaces.delete"
		}
		d := r.denial
		_, err := w.audit.Append(ctx, tx.AtCommit(), audit.Event{
			Kind: audit.KindAuthorizationDenial, ActorID: work.ActorID, NamespaceID: &nsID, Action: action,
			Resource:       audit.Resource{Kind: iam.KindNamespace, ID: nsID, NamespaceID: &nsID},
			Outcome:        audit.OutcomeDenied,
			IAMDriverID:    w.cfg.IAMDriverID,
			Authorization:  &audit.Authorization{PrincipalID: d.request.PrincipalID, Action: d.request.Action, Resource: audit.Resource{Kind: d.request.Resource.Kind, ID: d.request.Resource.ID, NamespaceID: d.request.Resource.NamespaceID}},
			DecisionReason: d.decision.Reason,
			ReasonCode:     d.code,
			Details:        map[string]any{"workId": work.Key, "attemptCount": a.claim.Attempt()},
		})
		return "", "", false, err
	}
	if r.observation == nil {
		return "", "", false, nil
	}
	obs := r.observation
	details := map[string]any{"computeDriverId": w.cfg.Compute.ID(), "workId": work.Key, "reasonCode": r.code,
		"attemptCount": a.claim.Attempt()}
	action := "openclaw.namespaces.lifecycle.ensure"
	if kind == ensurePass {
		details["namespaceReady"] = obs.Ready != nil && *obs.Ready
	} else {
		action = "openclaw.namespaces.lifecycle.delete"
		details["namespaceDeleted"] = obs.Deleted != nil && *obs.Deleted
		if r.outcome == outcomeSuccess {
			details["removedAccessBindings"] = nonNil(removed.AccessBindings)
			details["removedRoles"] = nonNil(removed.Roles)
			details["removedRestrictions"] = nonNil(removed.Restrictions)
			details["removedServiceKeys"] = nonNil(removed.ServiceKeys)
		}
	}
	if obs.Failure != "" {
		details["failure"] = obs.Failure
	}
	var dedupKey, dedupValue string
	if r.outcome == outcomePending {
		details["convergencePending"] = true
		snapshot, _ := json.Marshal([]any{work.NamespaceTarget, r.code, obs})
		if last, ok := w.lastAudit.get(work.Key); ok && last == string(snapshot) {
			return "", "", true, nil
		}
		dedupKey, dedupValue = work.Key, string(snapshot)
	}
	outcome := audit.OutcomeSuccess
	if r.outcome != outcomeSuccess && r.outcome != outcomePending {
		outcome = audit.OutcomeFailure
	}
	_, err := w.audit.Append(ctx, tx.AtCommit(), audit.Event{
		Kind: audit.KindMutation, ActorID: work.ActorID, NamespaceID: &nsID, Action: action,
		Resource: audit.Resource{Kind: iam.KindNamespace, ID: nsID, NamespaceID: &nsID},
		Outcome:  outcome, ReasonCode: r.code, Details: details,
	})
	return dedupKey, dedupValue, false, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
