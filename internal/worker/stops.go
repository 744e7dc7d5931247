package worker

import (
	"context"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/queue"
)

// Stops: exclusive replacement, refused candidates and stop yields.
const (
	codePredecessorStopYielded      = "PREDECESSOR_STOP_YIELDED"
	codeAgentStopYielded            = "AGENT_STOP_YIELDED"
	codeRefusedCandidateStopPending = "REFUSED_CANDIDATE_STOP_PENDING"
)

// ---- stopped revisions (the stopped-predecessor memory) ----

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
	opts := driver.StopOptions{}
	if yield {
		opts = driver.StopOptions{Yield: true, OtherWorkWaiting: w.otherWorkWaiting}
	}
	return w.effect(a, func(ctx context.Context) error {
		return w.cfg.Compute.StopRevision(ctx, rev, opts)
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
