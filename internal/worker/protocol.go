package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// The claim protocol every pass follows, in one place:
//
//  1. a pass runs only while it holds its claim (claim.go tracks the lease);
//  2. every external call is an effect: the claim is renewed first, the call runs under the
//     claim's context, and a claim lost before, during or after the call turns whatever the call
//     returned into errClaimLost, so the pass publishes nothing;
//  3. the original actor is re-authorized against the current policy before any effect;
//  4. the pass's result is published by one finalization transaction that begins by renewing the
//     claim, so that the resource change, its audit and the queue transition commit together and
//     only under a live claim.
//
// Passes call these functions; they never re-implement a step.

// outcome is a pass's classification (worker.completed `outcome`, the metric's outcome label).
type outcome string

// Pass outcomes.
const (
	outcomeSuccess   outcome = "success"
	outcomePending   outcome = "pending"
	outcomeRetry     outcome = "retry"
	outcomePermanent outcome = "permanent"
	// outcomeClaimLost and outcomeError are reported by runPass, never decided by a pass.
	outcomeClaimLost outcome = "claim_lost"
	outcomeError     outcome = "error"
)

// Result codes shared by every pass.
const (
	codeDependencyUnavailable = "DEPENDENCY_UNAVAILABLE"
	codeAuthorizationDenied   = "AUTHORIZATION_DENIED"
	codeActorRevoked          = "ACTOR_REVOKED"
	codeInvalidObservation    = "INVALID_DRIVER_OBSERVATION"
	codeDeadlineExceeded      = "CONVERGENCE_DEADLINE_EXCEEDED"
	codeInvalidTarget         = "INVALID_TARGET"
	codeWorkKindUnsupported   = "WORK_KIND_UNSUPPORTED"
)

// result is what a pass decided before its finalization: the outcome and code of the queue
// transition and of the worker.completed line, with the line's diagnostic fields.
type result struct {
	outcome     outcome
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

func permanent(code string) result { return result{outcome: outcomePermanent, code: code} }

func success(code string) result { return result{outcome: outcomeSuccess, code: code} }

// exhausted reports whether r is a retry that spends the claim's last attempt.
func (w *Worker) exhausted(a *activeClaim, r result) bool {
	return r.outcome == outcomeRetry && a.claim.Attempt() >= w.q.MaxAttempts()
}

// dependencyFailure is the retry DEPENDENCY_UNAVAILABLE of an unclassified failure.
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

// claimLostOr returns errClaimLost for a lost claim; any other error becomes the retry
// DEPENDENCY_UNAVAILABLE in *r and nil.
func claimLostOr(err error, r *result) error {
	if errors.Is(err, errClaimLost) {
		return errClaimLost
	}
	*r = dependencyFailure(err)
	return nil
}

// passReport is what runPass logs beyond the result: an outcome that differs from the
// classification (an exhausted retry of Agent work is permanent) and extra worker.completed fields.
type passReport struct {
	outcome outcome
	attrs   []any
	// yielded: the pass ended pending because a stop yielded (its line is rate-limited);
	// predecessor: that stop was a predecessor's.
	yielded, predecessor bool
}

// exhaustedReport logs an exhausted retry of Agent work as outcome permanent, while its result
// stays the classification (retry).
func (w *Worker) exhaustedReport(a *activeClaim, r result) passReport {
	if w.exhausted(a, r) {
		return passReport{outcome: outcomePermanent}
	}
	return passReport{}
}

// denial is a reauthorization that refused the stored actor; it is audited.
type denial struct {
	request  iam.Request
	decision iam.Decision
	code     string
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

// effect runs fn as an external call under the claim (see effectValue).
func (w *Worker) effect(a *activeClaim, fn func(ctx context.Context) error) error {
	_, err := effectValue(w, a, "", func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// effectValue renews the claim and runs fn under the claim's context. A claim lost before,
// during or after fn is errClaimLost, whatever fn returned: the pass must publish nothing. call
// names the Compute call for the hooks when the pass knows it.
func effectValue[T any](w *Worker, a *activeClaim, call string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if err := a.renew(a.ctx); err != nil {
		return zero, errClaimLost
	}
	w.hooks.effect(a, EventEffectStart, call, nil)
	v, err := fn(a.ctx)
	w.hooks.effect(a, EventEffectEnd, call, err)
	if lost, _ := a.state(); lost {
		return zero, errClaimLost
	}
	return v, err
}

type txDB = *store.PipelinedTx

// finalize runs one finalization transaction that starts with a renewal of the claim: the
// resource change, the audit and the queue transition commit together, and only under a live
// claim. It is not cancelled by the claim's own context (it must be able to record a
// claim-independent failure), but a lost claim fails its first statement.
func (w *Worker) finalize(a *activeClaim, fn func(ctx context.Context, tx txDB) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), 2*w.q.LeaseDuration()+10*time.Second)
	defer cancel()
	w.hooks.publishBegun(a)
	begun := time.Now()
	a.transitioned = false
	err := store.RunPipelined(ctx, w.pool, func(tx *store.PipelinedTx) error {
		if err := a.renewInTx(ctx, tx); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
	if err == nil && a.transitioned {
		a.end()
	}
	w.hooks.published(a, begun, err)
	return err
}

// transitioned records a queue transition made in the finalization transaction and reports it to
// the hooks.
func (w *Worker) transitioned(a *activeClaim, op queue.Transition, code string, work queue.Work, err error) {
	if err == nil {
		a.transitioned = true
	}
	w.hooks.transition(a, op, code, work, err)
}

// complete, deferWork, retry and fail make the fenced queue transition of a finalization
// transaction and report it to the hooks (before the transaction commits).
func (w *Worker) complete(ctx context.Context, tx txDB, a *activeClaim, code string, data json.RawMessage) (queue.Work, error) {
	work, err := w.q.Complete(ctx, tx, a.claim, code, data)
	if code == "" {
		code = queue.CodeReconcileSucceeded
	}
	w.transitioned(a, queue.TransitionComplete, code, work, err)
	return work, err
}

func (w *Worker) deferWork(ctx context.Context, tx txDB, a *activeClaim, code string, o queue.DeferOptions) (queue.Work, error) {
	work, err := w.q.Defer(ctx, tx, a.claim, code, o)
	w.transitioned(a, queue.TransitionDefer, code, work, err)
	return work, err
}

func (w *Worker) retry(ctx context.Context, tx txDB, a *activeClaim, code string) (queue.Work, error) {
	work, err := w.q.Retry(ctx, tx, a.claim, code)
	w.transitioned(a, queue.TransitionRetry, code, work, err)
	return work, err
}

func (w *Worker) fail(ctx context.Context, tx txDB, a *activeClaim, code string, data json.RawMessage) (queue.Work, error) {
	work, err := w.q.Fail(ctx, tx, a.claim, code, data)
	w.transitioned(a, queue.TransitionFail, code, work, err)
	return work, err
}
