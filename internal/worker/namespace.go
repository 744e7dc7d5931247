package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Pass outcomes (worker.completed `outcome`).
const (
	outcomeSuccess   = "success"
	outcomePending   = "pending"
	outcomeRetry     = "retry"
	outcomePermanent = "permanent"
)

// Namespace result codes (worker-lifecycle §4.3).
const (
	codeNamespaceReconciled   = "NAMESPACE_RECONCILED"
	codeNamespaceIncomplete   = "NAMESPACE_INCOMPLETE"
	codeSupersededTarget      = "SUPERSEDED_TARGET"
	codeDependencyUnavailable = "DEPENDENCY_UNAVAILABLE"
	codeAuthorizationDenied   = "AUTHORIZATION_DENIED"
	codeActorRevoked          = "ACTOR_REVOKED"
	codeInvalidObservation    = "INVALID_DRIVER_OBSERVATION"
	codeDeadlineExceeded      = "CONVERGENCE_DEADLINE_EXCEEDED"
)

// result is what a pass decided before its finalization.
type result struct {
	outcome     string
	code        string
	reason      string // the driver's bounded reason (log only)
	cause       string // error class of a failure
	dependency  string
	observation *driver.NamespaceObservation
	denial      *denial
	// status and statusReason are the HTTP answer behind a dependency failure (log only): the
	// status, and the dependency's reason word (the Kubernetes Status reason, such as Forbidden)
	// when the driver kept one.
	status       int
	statusReason string
}

// denial is a reauthorization that refused the stored actor; it is audited.
type denial struct {
	request  iam.Request
	decision iam.Decision
	code     string
}

type txDB = pgx.Tx

// finalize runs one finalization transaction that starts with a renewal of the claim: the
// resource change, the audit and the queue transition commit together, and only under a live
// claim. It is not cancelled by the claim's own context (it must be able to record a
// claim-independent failure), but a lost claim fails its first statement.
func (w *Worker) finalize(a *activeClaim, fn func(ctx context.Context, tx txDB) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), 2*w.q.LeaseDuration()+10*time.Second)
	defer cancel()
	ctx, pub := w.events.withPublish(ctx)
	begun := time.Now()
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if err := a.renewInTx(ctx, tx); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
	w.events.published(a, pub, begun, err)
	return err
}

// reauthorize checks the stored actor against current policy. A storage failure is an error (the
// pass retries); an unknown identity is ACTOR_REVOKED; a refusal is AUTHORIZATION_DENIED.
func (w *Worker) reauthorize(ctx context.Context, req iam.Request) (*denial, error) {
	d, err := w.iam.Authorize(ctx, req)
	if err != nil {
		return nil, err
	}
	if !iam.CheckDecision(d, w.cfg.IAMDriverID) {
		return nil, errors.New("worker: malformed IAM decision")
	}
	if d.Allowed {
		return nil, nil
	}
	code := codeAuthorizationDenied
	if d.Reason == iam.ReasonNotProvisioned {
		code = codeActorRevoked
	}
	return &denial{request: req, decision: d, code: code}, nil
}

type namespaceKind int

const (
	ensurePass namespaceKind = iota
	deletePass
)

func (k namespaceKind) wantStatus() string {
	if k == ensurePass {
		return "provisioning"
	}
	return "deleting"
}

// namespacePass is the Namespace ensure pass (§3.3) or delete pass (§3.4).
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
		return result{outcome: outcomeSuccess, code: codeSupersededTarget}
	case err != nil:
		return dependencyFailure(err)
	case ns.DeletedAt != nil || ns.Status != kind.wantStatus():
		return result{outcome: outcomeSuccess, code: codeSupersededTarget}
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

	if err := a.renew(ctx); err != nil {
		return result{}
	}
	target := driver.Namespace{ID: ns.ID, Name: ns.Name, ExistingNamespace: ns.ExistingNamespace}
	var obs driver.NamespaceObservation
	if kind == ensurePass {
		w.events.effect(a, EventEffectStart, "EnsureNamespace", nil)
		obs, err = w.cfg.Compute.EnsureNamespace(ctx, target)
		w.events.effect(a, EventEffectEnd, "EnsureNamespace", err)
		if err == nil {
			err = driver.CheckEnsureObservation(ns.ID, obs)
		}
	} else {
		w.events.effect(a, EventEffectStart, "DeleteNamespace", nil)
		obs, err = w.cfg.Compute.DeleteNamespace(ctx, target)
		w.events.effect(a, EventEffectEnd, "DeleteNamespace", err)
		if err == nil {
			err = driver.CheckDeleteObservation(ns.ID, obs)
		}
	}
	if lost, _ := a.state(); lost {
		return result{}
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

func dependencyFailure(err error) result {
	r := result{outcome: outcomeRetry, code: codeDependencyUnavailable, cause: driver.ErrorClass(err)}
	var dep *driver.TransientDependencyError
	if errors.As(err, &dep) {
		r.dependency, r.status = dep.Dependency, dep.Status
	}
	r.withHTTPStatus(err)
	return r
}

// withHTTPStatus keeps the HTTP answer err carries (driver.HTTPFailure) for the log.
func (r *result) withHTTPStatus(err error) {
	var hf driver.HTTPFailure
	if r.status == 0 && errors.As(err, &hf) {
		r.status, r.statusReason = hf.HTTPStatus()
	}
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
			err = store.SetNamespaceStatus(ctx, tx, ns.ID, "ready")
		case kind == ensurePass && (r.outcome == outcomePermanent || exhausted):
			err = store.SetNamespaceStatus(ctx, tx, ns.ID, "failed")
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
