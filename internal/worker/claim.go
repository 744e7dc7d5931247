package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Causes of a lost claim, logged as `cause` of worker.error CLAIM_LOST.
const (
	CauseRenewalRefused = "CLAIM_RENEWAL_REFUSED" // a renewal matched no row: someone else owns the work
	CauseRenewalLate    = "CLAIM_RENEWAL_LATE"    // a renewal succeeded after the lease could have run out
	CauseRenewalFailed  = "CLAIM_RENEWAL_FAILED"  // a renewal errored (database unreachable)
	CauseLeaseLapsed    = "CLAIM_LEASE_LAPSED"    // no renewal was confirmed within the lease
	CauseWorkerStopping = "WorkerStopping"        // graceful shutdown
)

// errClaimLost is the cancellation cause of a claim's context.
var errClaimLost = queue.ErrClaimLost

// activeClaim is one claim held by this process and the context its effects run under.
//
// The lease is tracked from the moment a renewal was *sent*: the database extends the lease to
// (its clock at execution) + lease, which is never earlier than send time + lease, so a lapse
// timer armed at send + lease can never fire after the stored expiry. When it fires the effect's
// context is cancelled at once: the claim may already belong to another worker.
type activeClaim struct {
	claim  queue.Claim
	q      *queue.Queue
	lease  time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
	onLate func(c *activeClaim, d time.Duration)
	// spawn runs a goroutine the worker joins on stop (the late-renewal report).
	spawn func(func())
	hooks hooks // the worker's verification hooks (noHooks unless OCC_WORKER_EVENT_LOG is set)

	mu            sync.Mutex
	lastConfirmed time.Time // send time of the newest confirmed renewal (or of the claim)
	lapse         *time.Timer
	lost          bool
	released      bool // the pass is over: no renewal is sent any more
	cause         string
	inflight      int        // renewals sent and not yet answered
	answered      *sync.Cond // signalled when a renewal is answered (on mu)
	// ended: a finalization transaction that made the claim's queue transition committed. The
	// claim is over (the transition cleared its token), so a renewal refused after that is the
	// transition's own doing, not a lost claim.
	ended bool

	// txNow is the database clock at the renewal that began the current finalization
	// transaction; only the pass's own goroutine writes and reads it (renewInTx, txClock).
	txNow time.Time
	// transitioned: the current finalization transaction made the queue transition (pass
	// goroutine only, like txNow).
	transitioned bool
}

func newActiveClaim(parent context.Context, q *queue.Queue, c queue.Claim, sentAt time.Time, onLate func(*activeClaim, time.Duration), spawn func(func())) *activeClaim {
	ctx, cancel := context.WithCancelCause(parent)
	a := &activeClaim{claim: c, q: q, lease: q.LeaseDuration(), ctx: ctx, cancel: cancel, onLate: onLate, spawn: spawn, lastConfirmed: sentAt}
	a.answered = sync.NewCond(&a.mu)
	a.mu.Lock()
	a.lapse = time.AfterFunc(time.Until(sentAt.Add(a.lease)), a.lapsed)
	a.mu.Unlock()
	return a
}

func (a *activeClaim) key() string { return a.claim.Work.Key }

// lapsed fires when no renewal was confirmed within the lease.
func (a *activeClaim) lapsed() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lost || time.Since(a.lastConfirmed) < a.lease {
		return // a renewal re-armed the timer concurrently
	}
	a.abandonLocked(CauseLeaseLapsed)
}

func (a *activeClaim) abandonLocked(cause string) {
	if a.lost {
		return
	}
	a.lost, a.cause = true, cause
	a.lapse.Stop()
	a.cancel(errClaimLost)
}

// stop abandons the claim for a graceful shutdown: the effect is cancelled, the claim is left to
// lease recovery.
func (a *activeClaim) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.abandonLocked(CauseWorkerStopping)
}

// beginRenewal records a renewal sent now.
func (a *activeClaim) beginRenewal() (sentAt time.Time, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lost || a.released || a.ended {
		return time.Time{}, false
	}
	a.inflight++
	return time.Now(), true
}

// endRenewal applies the answer of a renewal sent at sentAt: renewed (the row still ours, until
// the new expiry), or not (refused), or err (no answer). renewal names the renewal for the event
// log (batch or one).
func (a *activeClaim) endRenewal(renewal string, sentAt, until time.Time, renewed bool, err error) {
	answered := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hooks != nil {
		wasLost, lateNow := a.lost, answered.Sub(a.lastConfirmed) >= a.lease
		defer func() {
			result := ResultOK
			switch {
			case err != nil:
				result = ResultFailed
			case !renewed:
				result = ResultRefused
			case lateNow || (wasLost && a.cause == CauseRenewalLate):
				result = ResultLate
			}
			a.hooks.renewed(a, renewal, sentAt, until, result, wasLost, err) // never takes a.mu
		}()
	}
	a.inflight--
	a.answered.Broadcast()
	lapsedBefore := answered.Sub(a.lastConfirmed) >= a.lease
	switch {
	case a.ended:
		// The claim ended with the pass's own transition: the answer changes nothing.
	case a.lost:
		// The lapse timer won the race; the answer tells why the lease was not confirmed.
		if a.cause == CauseLeaseLapsed {
			switch {
			case err != nil:
				a.cause = CauseRenewalFailed
			case !renewed:
				a.cause = CauseRenewalRefused
			default:
				a.cause = CauseRenewalLate
				a.reportLate(answered.Sub(sentAt))
			}
		}
	case err != nil:
		a.abandonLocked(CauseRenewalFailed)
	case !renewed:
		a.abandonLocked(CauseRenewalRefused)
	case lapsedBefore:
		a.abandonLocked(CauseRenewalLate)
		a.reportLate(answered.Sub(sentAt))
	case sentAt.After(a.lastConfirmed):
		a.lastConfirmed = sentAt
		a.lapse.Reset(time.Until(sentAt.Add(a.lease)))
	}
}

func (a *activeClaim) reportLate(d time.Duration) {
	if a.onLate != nil {
		a.spawn(func() { a.onLate(a, d) })
	}
}

// renew renews this claim alone (before an external call) and reports whether it is still held.
func (a *activeClaim) renew(ctx context.Context) error {
	sentAt, ok := a.beginRenewal()
	if !ok {
		return errClaimLost
	}
	until, err := a.q.RenewOne(ctx, nil, a.claim)
	switch {
	case errors.Is(err, queue.ErrClaimLost):
		a.endRenewal("one", sentAt, until, false, nil)
	case err != nil:
		a.endRenewal("one", sentAt, until, false, err)
	default:
		a.endRenewal("one", sentAt, until, true, nil)
	}
	if lost, _ := a.state(); lost {
		return errClaimLost
	}
	return nil
}

// renewInTx starts a finalization transaction: the claim must be renewed inside it, so that the
// resource change, the audit and the queue transition publish only under a live claim.
func (a *activeClaim) renewInTx(ctx context.Context, tx store.DBTX) error {
	if lost, _ := a.state(); lost {
		return errClaimLost
	}
	until, err := a.q.RenewOne(ctx, tx, a.claim)
	if err != nil {
		return err
	}
	a.txNow = until.Add(-a.lease) // the renewal set the lease from clock_timestamp()
	if a.hooks != nil {
		a.hooks.renewedInTx(a, until)
	}
	return nil
}

// txClock is the database clock of the finalization transaction, read by its renewal: one round
// trip less than asking the database again.
func (a *activeClaim) txClock() time.Time { return a.txNow }

func (a *activeClaim) state() (lost bool, cause string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lost, a.cause
}

// end records that the pass's transition committed: the claim is over.
func (a *activeClaim) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
}

// outcomeState is state for the pass's report: a claim that ended with the pass's own committed
// transition was not lost, whatever a renewal answered after the commit.
func (a *activeClaim) outcomeState() (lost bool, cause string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return false, ""
	}
	return a.lost, a.cause
}

// release stops the lapse timer once the pass is over. It waits for the answers of renewals in
// flight (each is bounded by the database timeout), so that every renewal is reported before the
// claim's release.
func (a *activeClaim) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.released = true
	for a.inflight > 0 {
		a.answered.Wait()
	}
	a.lapse.Stop()
	a.cancel(context.Canceled)
}
