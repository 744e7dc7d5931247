package worker

import (
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/store"
)

// revisionResult is what a deploy pass decided before (and between) its finalizations: the result
// for the log line and the queue transition, what to publish, how to wait, and the stops behind it.
type revisionResult struct {
	result
	data     json.RawMessage // result data of a terminal transition
	warnings []driver.PluginWarning
	publication
	waiting
	stops
	finalized
}

// publication is what the finalization transaction publishes besides the queue transition.
type publication struct {
	publish    bool    // prepared and ready: compare-and-set the pointer from expected
	expected   *string // the pointer as read before preparing
	activation bool    // complete as an activation: pointer check and the one activation audit
	superseded bool    // a newer revision is active
	activeID   *string // the active revision that superseded the candidate
}

// waiting shapes a pending result: the recheck cadence and whether the deadline applies.
type waiting struct {
	runtimeFailure *driver.RuntimeFailure // evidence of a pending readiness observation
	transient      bool                   // pending on a transient dependency (its code at the deadline)
	readiness      bool                   // pending on readiness (recheck cadence)
	noDeadline     bool                   // an Agent stop wait: the convergence deadline does not apply
	recheck        time.Duration          // the refused-candidate stop recheck
	held, expired  bool                   // settle ended the wait: a held runtime failure, the deadline
}

// stops is the bookkeeping of the stops behind a result (refused candidates, stop yields).
type stops struct {
	refused         *string       // pending REFUSED_CANDIDATE_STOP_PENDING: the refusal kept for the stop
	stopYielded     bool          // the refused candidate's stop yielded
	stopDuration    time.Duration // how long the failed refused-candidate stop took
	refusedStopped  bool          // the refused candidate's stop already ran in this pass
	yielded         bool          // the pass ends pending because a stop yielded
	predecessor     bool          // that stop was a predecessor's
	predecessorStop string        // the cause of a predecessor stop that still fails (log only)
}

// finalized is what the finalization transaction learned.
type finalized struct {
	published       bool // the pointer now names the candidate; the work is not complete yet
	stopAfterCommit bool // the Agent was stopped between readiness and publication
}

// heldRuntimeFailures maps the runtime failures that end a deployment at once.
// Other runtime codes keep it pending.
var heldRuntimeFailures = map[string]string{
	driver.RuntimeAuthenticationFailed: "RUNTIME_AUTHENTICATION_FAILED",
	driver.RuntimeModelProbeCPUStarved: "RUNTIME_CPU_STARVED",
	driver.RuntimeModelProbeTimeout:    "RUNTIME_MODEL_PROBE_TIMEOUT",
	driver.RuntimeModelProbeFailed:     codeRuntimeModelProbeFailed,
	driver.RuntimeLoginFailed:          "RUNTIME_LOGIN_FAILED",
	driver.RuntimeUnavailable:          "RUNTIME_STARTUP_FAILED",
	driver.RuntimeIncompatibleResponse: "RUNTIME_STARTUP_FAILED",
}

// maxRefusedRecheck bounds the refused-candidate stop recheck.
const maxRefusedRecheck = 300 * time.Second

// settle completes a pass's result before its finalization transaction, rule by rule: the stored
// refusal, held runtime failures, the convergence deadline, the refused-candidate stop, and the
// predecessor stop a failed, superseded or stopped deployment finishes first.
func (p *deployPass) settle(r *revisionResult) error {
	if r.publish || r.activation {
		return nil
	}
	now, err := store.DatabaseNow(p.a.ctx, p.w.pool)
	if err != nil {
		if lost, _ := p.a.state(); lost {
			return errClaimLost
		}
		return err
	}
	age := now.Sub(p.work.CreatedAt)
	p.keepStoredRefusal(r)
	p.holdRuntimeFailure(r)
	p.applyDeadline(r, age)
	if err := p.stopRefusedBeforePublishing(r); err != nil {
		return err
	}
	if err := p.finishPredecessorStop(r); err != nil {
		return err
	}
	if r.refused != nil {
		n, err := store.CountRefusedStopWaits(p.a.ctx, p.w.pool, p.work.Key)
		if err != nil {
			return err
		}
		r.recheck = refusedRecheck(age, n, r.stopDuration)
	}
	return nil
}

// keepStoredRefusal: a stored refusal wait is never turned into a retry or an ordinary wait.
func (p *deployPass) keepStoredRefusal(r *revisionResult) {
	if p.refusal == nil || r.refused != nil || (r.outcome != outcomeRetry && r.outcome != outcomePending) {
		return
	}
	denial := r.denial
	*r = revisionResult{result: permanent(*p.refusal)}
	r.denial = denial
	if *p.refusal == codeDeadlineExceeded {
		r.data = p.timeoutData(nil)
	}
}

// holdRuntimeFailure: a held runtime failure ends the deployment at once.
func (p *deployPass) holdRuntimeFailure(r *revisionResult) {
	if r.outcome != outcomePending || r.runtimeFailure == nil {
		return
	}
	code, ok := heldRuntimeFailures[r.runtimeFailure.Code]
	if !ok {
		return
	}
	r.outcome, r.code, r.held = outcomePermanent, code, true
	if code == codeRuntimeModelProbeFailed {
		r.data, _ = json.Marshal(map[string]any{"runtimeFailure": runtimeFailureJSON(r.runtimeFailure, true)})
	}
}

// applyDeadline: a pending deployment older than the convergence timeout fails (refused-candidate
// and Agent stop waits have no deadline). A transient dependency keeps its own code.
func (p *deployPass) applyDeadline(r *revisionResult, age time.Duration) {
	if r.outcome != outcomePending || r.refused != nil || r.noDeadline || age < p.w.cfg.ConvergenceTimeout {
		return
	}
	r.outcome, r.expired = outcomePermanent, true
	if !r.transient {
		r.code = codeDeadlineExceeded
		r.data = p.timeoutData(r.runtimeFailure)
	}
}

// timeoutData is the result data of CONVERGENCE_DEADLINE_EXCEEDED.
func (p *deployPass) timeoutData(f *driver.RuntimeFailure) json.RawMessage {
	data := map[string]any{"timeoutMs": max(1, p.w.cfg.ConvergenceTimeout.Milliseconds())}
	if f != nil {
		data["runtimeFailure"] = runtimeFailureJSON(f, false)
	}
	out, _ := json.Marshal(data)
	return out
}

// stopRefusedBeforePublishing: a refused candidate is stopped before its refusal is published; a
// stop that does not finish keeps the deployment waiting with the refusal.
func (p *deployPass) stopRefusedBeforePublishing(r *revisionResult) error {
	if r.outcome != outcomePermanent || r.held || r.expired || r.refusedStopped {
		return nil
	}
	err := p.stopRefusedCandidate()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errClaimLost):
		return errClaimLost
	}
	denial := r.denial
	*r = refusedWait(r.code, err)
	r.denial = denial
	return nil
}

// finishPredecessorStop: a deployment whose predecessor stop yielded finishes that stop, waiting
// it out, before it fails, is superseded or ends stopped.
func (p *deployPass) finishPredecessorStop(r *revisionResult) error {
	exhausted := r.outcome == outcomeRetry && p.a.claim.Attempt() >= p.w.q.MaxAttempts()
	stopped := r.outcome == outcomeSuccess && r.code == codeRevisionStopped
	if !p.loaded || !p.exclusive || !(r.outcome == outcomePermanent || exhausted || r.superseded || stopped) {
		return nil
	}
	yielded := r.predecessor // this pass's own yield, ended by the deadline
	if !yielded {
		var err error
		if yielded, err = p.hadPredecessorYield(); err != nil {
			return err
		}
	}
	if !yielded {
		return nil
	}
	err := p.stopPredecessors(false)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errClaimLost):
		return errClaimLost
	case stopped:
		*r = revisionResult{result: result{outcome: outcomeRetry, code: codeDependencyUnavailable, cause: driver.ErrorClass(err)},
			stops: stops{predecessorStop: stopCause(err)}}
	default:
		r.predecessorStop = stopCause(err)
	}
	return nil
}

// hadPredecessorYield reports whether a predecessor stop of this deployment yielded (in this
// process, or as recorded by its evidence).
func (p *deployPass) hadPredecessorYield() (bool, error) {
	if p.w.yields.predecessorYielded(p.work.Key) {
		return true, nil
	}
	code := codePredecessorStopYielded
	a, err := p.w.q.LatestAttempt(p.a.ctx, p.work.Key, &code)
	return a != nil, err
}

// refusalResult publishes the stored refusal as a permanent failure, its stop already done.
func (p *deployPass) refusalResult(refusal string) revisionResult {
	r := revisionResult{result: permanent(refusal), stops: stops{refusedStopped: true}}
	if refusal == codeDeadlineExceeded {
		r.data = p.timeoutData(nil)
	}
	return r
}

// refusedWait is the pending result of a refused candidate whose stop did not finish.
func refusedWait(refusal string, err error) revisionResult {
	r := revisionResult{result: result{outcome: outcomePending, code: codeRefusedCandidateStopPending, cause: stopCause(err)},
		stops: stops{refused: &refusal}}
	var rs *refusedStopError
	if errors.As(err, &rs) {
		r.stopDuration = rs.duration
	}
	r.stopYielded = driver.IsStopYielded(err)
	r.yielded = r.stopYielded
	return r
}

// refusedRecheck is the refused-candidate stop recheck:
// max(min(300 s, readiness(age) · 2^min(failedWaits, 20)), ceil(4 · stop duration)).
func refusedRecheck(age time.Duration, failedWaits int, stop time.Duration) time.Duration {
	d := readinessRecheck(age)
	for i := 0; i < min(failedWaits, 20) && d < maxRefusedRecheck; i++ {
		d *= 2
	}
	return max(min(d, maxRefusedRecheck), 4*stop.Round(time.Millisecond))
}

// readinessRecheck is the readiness recheck cadence: min(5 s, max(500 ms, age/40)).
func readinessRecheck(age time.Duration) time.Duration {
	ms := math.Round(float64(age.Milliseconds()) / 40)
	return time.Duration(min(5000, max(500, ms))) * time.Millisecond
}

func runtimeFailureJSON(f *driver.RuntimeFailure, withCause bool) map[string]any {
	m := map[string]any{"component": f.Component, "check": f.Check, "checkedAt": f.CheckedAt, "code": f.Code}
	if withCause && f.Cause != nil {
		cause := map[string]any{"kind": f.Cause.Kind}
		if f.Cause.Detail != "" {
			cause["detail"] = f.Cause.Detail
		}
		m["cause"] = cause
	}
	return m
}
