package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Exclusive replacement, refused candidates and stop yields (worker-lifecycle §3.7.1, §3.7.4).
const (
	codePredecessorStopYielded      = "PREDECESSOR_STOP_YIELDED"
	codeAgentStopYielded            = "AGENT_STOP_YIELDED"
	codeRefusedCandidateStopPending = "REFUSED_CANDIDATE_STOP_PENDING"
)

// redecidedRefusals are the refusals a pass decides again on every pass (§3.7 step 8): a stored
// refusal wait with one of them is lifted once the refusal no longer stands.
var redecidedRefusals = map[string]bool{
	codeActorRevoked: true, codeAuthorizationDenied: true, codeInvalidAgentPrincipal: true,
	codeHarnessAuthRequired: true, codeInvalidHarnessAuth: true, codeInvalidSecretBindings: true,
	"BACKEND_UNAVAILABLE": true, "HARNESS_AUTH_SOURCE_CHANGED": true, "SERVICE_ACCOUNT_BACKEND_MISMATCH": true,
}

// maxRefusedRecheck bounds the refused-candidate stop recheck (§2.5).
const maxRefusedRecheck = 300 * time.Second

// ---- stopped revisions (the stopped-predecessor memory, §2.5) ----

type stopRecord struct {
	stoppedAt time.Time
	restop    time.Duration
}

// stopMemory remembers the revisions this process stopped, so that pending passes do not stop the
// same predecessor again and again: a revision is stopped again once its re-stop window (first the
// lease, then doubling) has passed. At most 4096 records, oldest evicted.
type stopMemory struct {
	mu sync.Mutex // guards the records' fields
	m  *boundedMap[*stopRecord]
}

func newStopMemory() *stopMemory { return &stopMemory{m: newBoundedMap[*stopRecord](4096)} }

// recent reports whether revision id was stopped within its re-stop window.
func (s *stopMemory) recent(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m.get(id)
	return ok && time.Since(r.stoppedAt) < r.restop
}

// record notes a successful stop of id: the window is lease the first time, then doubles.
func (s *stopMemory) record(id string, lease time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.m.get(id); ok {
		r.stoppedAt, r.restop = time.Now(), min(2*r.restop, 24*time.Hour)
		return
	}
	s.m.set(id, &stopRecord{stoppedAt: time.Now(), restop: max(lease, time.Millisecond)})
}

// forget drops the record of id (it runs again, or its stop must be swept again).
func (s *stopMemory) forget(id string) { s.m.delete(id) }

// ---- stop yields: counts and the log rate limit ----

type yieldState struct {
	count       int
	lastLogged  time.Time
	report      bool // the work's next other line adds stopYields
	predecessor bool // a predecessor stop of this deployment yielded
}

// yieldLog counts the stop yields of each work item in this process and rate-limits their
// worker.completed lines: the work's first yield, then at most one a minute. At most 4096 items.
type yieldLog struct {
	mu sync.Mutex // guards the states' fields
	m  *boundedMap[*yieldState]
}

func newYieldLog() *yieldLog { return &yieldLog{m: newBoundedMap[*yieldState](4096)} }

// pass records the end of a pass of work key that yielded or not. It returns whether its
// worker.completed line is logged and the stopYields value to add (0: none).
func (y *yieldLog) pass(key string, yielded, predecessor bool, now time.Time) (logged bool, stopYields int) {
	y.mu.Lock()
	defer y.mu.Unlock()
	s, ok := y.m.get(key)
	if !yielded {
		if !ok || !s.report {
			return true, 0
		}
		s.report = false
		return true, s.count
	}
	if !ok {
		s = y.m.getOrSet(key, func() *yieldState { return &yieldState{} })
	}
	s.count++
	s.report = true
	s.predecessor = s.predecessor || predecessor
	if s.count > 1 && now.Sub(s.lastLogged) < time.Minute {
		return false, 0
	}
	s.lastLogged = now
	return true, s.count
}

// predecessorYielded reports whether a predecessor stop of work key yielded in this process.
func (y *yieldLog) predecessorYielded(key string) bool {
	y.mu.Lock()
	defer y.mu.Unlock()
	s, ok := y.m.get(key)
	return ok && s.predecessor
}

// ---- stops ----

// stopRevision stops rev under the claim. A yielding stop may end early with
// *driver.StopYieldedError while workloads terminate (preferably when other work is waiting); a
// stop that does not yield waits the termination out.
func (w *Worker) stopRevision(a *activeClaim, rev driver.Revision, yield bool) error {
	return w.effect(a, func(ctx context.Context) error {
		if yield {
			ctx = driver.WithStopYield(ctx, w.otherWorkWaiting)
		}
		return w.cfg.Compute.StopRevision(ctx, rev)
	})
}

// otherWorkWaiting reports whether a claim would find work in another lane now.
func (w *Worker) otherWorkWaiting(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.DatabaseTimeout)
	defer cancel()
	ok, err := w.q.ClaimableWorkWaiting(ctx)
	return err == nil && ok
}

// stopCause names a failed stop for the log (predecessorStop, cause): the error's code, or its
// class when it has none.
func stopCause(err error) string {
	if c := driver.Code(err); c != "" {
		return queue.SafeCode(c)
	}
	return driver.ErrorClass(err)
}

// predecessorStopError is a failed (or yielded) stop of an earlier revision before an exclusive
// candidate was prepared.
type predecessorStopError struct{ err error }

func (e *predecessorStopError) Error() string { return "predecessor stop: " + e.err.Error() }
func (e *predecessorStopError) Unwrap() error { return e.err }

// refusedStopError is a failed (or yielded) stop of a refused candidate (upstream
// RefusedCandidateStopError).
type refusedStopError struct {
	err      error
	duration time.Duration
}

func (e *refusedStopError) Error() string { return "refused candidate stop: " + e.err.Error() }
func (e *refusedStopError) Unwrap() error { return e.err }

// refusalUnavailableError means the pass could not read its stored refusal: it leaves its claim to
// lease recovery instead of turning a stored wait into a retry.
type refusalUnavailableError struct{ err error }

func (e *refusalUnavailableError) Error() string {
	return "stored refusal unavailable: " + e.err.Error()
}
func (e *refusalUnavailableError) Unwrap() error { return e.err }

// ---- deploy pass: exclusive replacement ----

// exclusiveFor reports whether Compute requires stopped predecessors for rev.
func (w *Worker) exclusiveFor(r agentRevision) bool {
	ex, ok := w.cfg.Compute.(driver.ExclusiveReplacement)
	return ok && ex.RequiresStoppedPredecessors(r.driverRevision())
}

// laterExclusive reports whether a later revision of this Compute, also exclusive, exists
// (§3.7 step 10).
func (p *deployPass) laterExclusive() bool {
	for _, r := range p.revisions {
		if r.row.Number > p.candidate.row.Number && p.w.ownsCompute(r.spec.Compute) && p.w.exclusiveFor(r) {
			return true
		}
	}
	return false
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

// stopPredecessors stops every earlier revision (failed candidates included) that was not stopped
// within its re-stop window (§3.7.1). A failed or yielded stop is a *predecessorStopError: the
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

// ---- deploy pass: refused candidates (§3.7.4) ----

// readRefusalWait reads the work's latest evidence and the refusal wait it stores, if any.
func (p *deployPass) readRefusalWait() error {
	latest, err := p.w.q.LatestAttempt(p.a.ctx, p.work.Key, nil)
	if err != nil {
		return &refusalUnavailableError{err: err}
	}
	p.latest = latest
	switch {
	case latest == nil:
	case latest.Refusal != nil && (latest.Code == codeRefusedCandidateStopPending || latest.Code == queue.CodeLeaseExpired):
		refusal := *latest.Refusal
		p.storedRefusal, p.refusal = &refusal, &refusal
	case latest.Code == queue.CodeLeaseExpired:
		// Lease recovery does not carry the refusal into its evidence: look behind it.
		refusal, err := store.RefusalBeforeLeaseExpiry(p.a.ctx, p.w.pool, p.work.Key)
		if err != nil {
			return &refusalUnavailableError{err: err}
		}
		p.storedRefusal, p.refusal = refusal, refusal
	}
	return nil
}

// redecideRefusal lifts a stored refusal that the pass decides again and that no longer stands
// (§3.7 step 8), unless the deadline passed: then the refusal becomes CONVERGENCE_DEADLINE_EXCEEDED.
func (p *deployPass) redecideRefusal() error {
	if p.refusal == nil || !redecidedRefusals[*p.refusal] {
		return nil
	}
	now, err := store.DatabaseNow(p.a.ctx, p.w.pool)
	if err != nil {
		return err
	}
	if now.Sub(p.work.CreatedAt) >= p.w.cfg.ConvergenceTimeout {
		code := codeDeadlineExceeded
		p.refusal = &code
		return nil
	}
	p.refusal = nil
	return nil
}

// refusalResult publishes the stored refusal as a permanent failure, its stop already done.
func (p *deployPass) refusalResult(refusal string) revisionResult {
	r := revisionResult{result: permanent(refusal), refusedStopped: true}
	if refusal == codeDeadlineExceeded {
		r.data, _ = json.Marshal(map[string]any{"timeoutMs": max(1, p.w.cfg.ConvergenceTimeout.Milliseconds())})
	}
	return r
}

// refusedWait is the pending result of a refused candidate whose stop did not finish.
func refusedWait(refusal string, err error) revisionResult {
	r := revisionResult{result: result{outcome: outcomePending, code: codeRefusedCandidateStopPending, cause: stopCause(err)}, refused: &refusal}
	var rs *refusedStopError
	if errors.As(err, &rs) {
		r.stopDuration = rs.duration
	}
	r.stopYielded = driver.IsStopYielded(err)
	r.yielded = r.stopYielded
	return r
}

// stopRefusedCandidate stops the candidate before its refusal is published, so that a refused
// deployment never stays the only runtime (§3.7.4). It skips when the stop does not apply. A
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

// refusedRecheck is the refused-candidate stop recheck (§2.5):
// max(min(300 s, readiness(age) · 2^min(failedWaits, 20)), ceil(4 · stop duration)).
func refusedRecheck(age time.Duration, failedWaits int, stop time.Duration) time.Duration {
	d := readinessRecheck(age)
	for i := 0; i < min(failedWaits, 20) && d < maxRefusedRecheck; i++ {
		d *= 2
	}
	return max(min(d, maxRefusedRecheck), 4*stop.Round(time.Millisecond))
}

// settle completes a pass's result before its finalization transaction (§3.7.2 steps 1–7): the
// stored refusal, held runtime failures, the convergence deadline, the refused-candidate stop, and
// the predecessor stop a failed, superseded or stopped deployment finishes first.
func (p *deployPass) settle(r *revisionResult) error {
	if r.publish || r.activation {
		return nil
	}
	ctx := p.a.ctx
	now, err := store.DatabaseNow(ctx, p.w.pool)
	if err != nil {
		if lost, _ := p.a.state(); lost {
			return errClaimLost
		}
		return err
	}
	age := now.Sub(p.work.CreatedAt)
	// 1. A stored refusal wait is never turned into a retry or an ordinary wait.
	if p.refusal != nil && r.refused == nil && (r.outcome == outcomeRetry || r.outcome == outcomePending) {
		denial := r.denial
		*r = revisionResult{result: permanent(*p.refusal)}
		r.denial = denial
		if *p.refusal == codeDeadlineExceeded {
			r.data, _ = json.Marshal(map[string]any{"timeoutMs": max(1, p.w.cfg.ConvergenceTimeout.Milliseconds())})
		}
	}
	// 2. A held runtime failure ends the deployment at once.
	if r.outcome == outcomePending && r.runtimeFailure != nil {
		if code, ok := heldRuntimeFailures[r.runtimeFailure.Code]; ok {
			r.outcome, r.code, r.held = outcomePermanent, code, true
			if code == codeRuntimeModelProbeFailed {
				r.data, _ = json.Marshal(map[string]any{"runtimeFailure": runtimeFailureJSON(r.runtimeFailure, true)})
			}
		}
	}
	// 3. The convergence deadline (refused-candidate and Agent stop waits have none).
	if r.outcome == outcomePending && r.refused == nil && !r.noDeadline && age >= p.w.cfg.ConvergenceTimeout {
		r.outcome, r.expired = outcomePermanent, true
		if !r.transient {
			data := map[string]any{"timeoutMs": max(1, p.w.cfg.ConvergenceTimeout.Milliseconds())}
			if r.runtimeFailure != nil {
				data["runtimeFailure"] = runtimeFailureJSON(r.runtimeFailure, false)
			}
			r.code = codeDeadlineExceeded
			r.data, _ = json.Marshal(data)
		}
	}
	// 4. A refused candidate is stopped before its refusal is published.
	if r.outcome == outcomePermanent && !r.held && !r.expired && !r.refusedStopped {
		if err := p.stopRefusedCandidate(); err != nil {
			if errors.Is(err, errClaimLost) {
				return errClaimLost
			}
			denial := r.denial
			*r = refusedWait(r.code, err)
			r.denial = denial
		}
	}
	// 5. A deployment whose predecessor stop yielded finishes that stop, waiting it out, before it
	// fails, is superseded or ends stopped.
	exhausted := r.outcome == outcomeRetry && p.a.claim.Attempt() >= p.w.q.MaxAttempts()
	stopped := r.outcome == outcomeSuccess && r.code == codeRevisionStopped
	if p.loaded && p.exclusive && (r.outcome == outcomePermanent || exhausted || r.superseded || stopped) {
		yielded := r.predecessor // this pass's own yield, ended by the deadline
		if !yielded {
			var err error
			if yielded, err = p.hadPredecessorYield(); err != nil {
				return err
			}
		}
		if yielded {
			if err := p.stopPredecessors(false); err != nil {
				if errors.Is(err, errClaimLost) {
					return errClaimLost
				}
				if stopped {
					*r = revisionResult{result: result{outcome: outcomeRetry, code: codeDependencyUnavailable, cause: driver.ErrorClass(err)}, predecessorStop: stopCause(err)}
				} else {
					r.predecessorStop = stopCause(err)
				}
			}
		}
	}
	if r.refused != nil {
		n, err := store.CountRefusedStopWaits(ctx, p.w.pool, p.work.Key)
		if err != nil {
			return err
		}
		r.recheck = refusedRecheck(age, n, r.stopDuration)
	}
	return nil
}
