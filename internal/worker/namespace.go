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

// decideNamespace reads, reauthorizes and calls Compute; every failure becomes a result.
func (w *Worker) decideNamespace(a *activeClaim, kind namespaceKind) result {
	ctx := a.ctx
	work := a.claim.Work
	ns, err := store.GetNamespaceRow(ctx, w.pool, work.NamespaceID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return success(codeSupersededTarget)
	case err != nil:
		return dependencyFailure(err)
	case ns.DeletedAt != nil || ns.Status != kind.wantStatus():
		return success(codeSupersededTarget)
	}

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
			return dependencyFailure(err)
		}
		if d != nil {
			return result{outcome: outcomePermanent, code: d.code, denial: d}
		}
	}
	if kind == ensurePass {
		// A Restriction on creating this exact Namespace refuses it even though the collection
		// grant allowed the admission.
		exact := iam.Request{PrincipalID: work.ActorID, Action: iam.ActionCreate,
			Resource: iam.Resource{Kind: iam.KindNamespace, ID: nsID, NamespaceID: &nsID}}
		d, err := w.iam.Authorize(ctx, exact)
		if err != nil {
			return dependencyFailure(err)
		}
		if len(d.Evidence.RestrictionIDs) > 0 {
			return result{outcome: outcomePermanent, code: codeAuthorizationDenied,
				denial: &denial{request: exact, decision: d, code: codeAuthorizationDenied}}
		}
	}

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
		r := dependencyFailure(err)
		return r
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
	now, err := store.DatabaseNow(ctx, tx)
	if err != nil {
		return "", "", err
	}
	if r.outcome == outcomePending && now.Sub(work.CreatedAt) > w.cfg.ConvergenceTimeout {
		r.outcome, r.code = outcomePermanent, codeDeadlineExceeded
	}
	exhausted := r.outcome == outcomeRetry && a.claim.Attempt() >= w.q.MaxAttempts()

	ns, err := store.LockNamespace(ctx, tx, work.NamespaceID)
	live := err == nil && ns.DeletedAt == nil && ns.Status == kind.wantStatus()
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", "", err
	}
	var removed store.RemovedPolicy
	if live {
		switch {
		case kind == ensurePass && r.outcome == outcomeSuccess && r.code == codeNamespaceReconciled:
			err = store.SetNamespaceStatus(ctx, tx, ns.ID, store.NamespaceReady)
		case kind == ensurePass && (r.outcome == outcomePermanent || exhausted):
			err = store.SetNamespaceStatus(ctx, tx, ns.ID, store.NamespaceFailed)
		case kind == deletePass && r.outcome == outcomeSuccess && r.code == codeNamespaceReconciled:
			// A failed teardown never changes the status; success tombstones and removes the
			// Namespace's policy in the same transaction.
			removed, err = store.TombstoneNamespace(ctx, tx, ns.ID)
		}
		if err != nil {
			return "", "", err
		}
	}

	dedupKey, dedupValue, skipEvidence, err := w.auditNamespace(ctx, tx, a, kind, r, removed)
	if err != nil {
		return "", "", err
	}

	switch {
	case r.outcome == outcomeSuccess:
		code := r.code
		if code == codeNamespaceReconciled {
			code = queue.CodeReconcileSucceeded
		}
		_, err = w.q.Complete(ctx, tx, a.claim, code, nil)
	case r.outcome == outcomePending:
		_, err = w.q.Defer(ctx, tx, a.claim, r.code, queue.DeferOptions{SkipEvidence: skipEvidence})
	case r.outcome == outcomePermanent || exhausted:
		_, err = w.q.Fail(ctx, tx, a.claim, r.code, nil)
	default:
		_, err = w.q.Retry(ctx, tx, a.claim, r.code)
	}
	return dedupKey, dedupValue, err
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
		_, err := w.audit.Append(ctx, tx, audit.Event{
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
	_, err := w.audit.Append(ctx, tx, audit.Event{
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
