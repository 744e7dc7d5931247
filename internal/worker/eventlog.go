package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Event types of the worker event log (OCC_WORKER_EVENT_LOG).
const (
	EventClaim       = "claim"
	EventRenew       = "renew"
	EventEffectStart = "effect-start"
	EventEffectEnd   = "effect-end"
	EventPublish     = "publish"
	EventRelease     = "release"
)

// Results carried by renew and publish events.
const (
	ResultOK       = "ok"       // renew: the lease was extended in time
	ResultRefused  = "refused"  // renew: matched no row; publish: the fence refused the transaction
	ResultLate     = "late"     // renew: extended, but answered after the lease could have run out
	ResultFailed   = "failed"   // renew: no answer (database error)
	ResultAccepted = "accepted" // publish: committed
	ResultError    = "error"    // publish: the transaction failed otherwise; a failed COMMIT may have committed
)

// Event is one line of the worker event log: a verification aid that a history checker
// (internal/testkit/chaos) replays against the final database state. Times named *At without a
// "DB" meaning come from the worker's clock (UTC); ClaimedAt and LeaseExpiresAt come from the
// database clock, as the queue stored them.
type Event struct {
	Type string    `json:"type"`
	At   time.Time `json:"at"`  // worker clock when the line was written
	PID  int       `json:"pid"` // worker process id
	// Process distinguishes process instances that reuse a pid: "<pid>-<start unix nanos>".
	Process string `json:"process"`
	Seq     uint64 `json:"seq"`

	WorkID    string `json:"workId,omitempty"`
	Lane      string `json:"lane,omitempty"` // the Agent, or the Namespace for Namespace work
	Token     string `json:"token,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	Operation string `json:"operation,omitempty"` // queue.OperationOf the work
	// Call names the Compute call of an effect when the worker knows it (Namespace passes).
	Call string `json:"call,omitempty"`

	SentAt         *time.Time `json:"sentAt,omitempty"`         // worker clock: claim/renewal statement sent, publish transaction begun
	ClaimedAt      *time.Time `json:"claimedAt,omitempty"`      // database clock of the claim
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt,omitempty"` // database clock: the claim's or renewal's (or the publish's own renewal's) expiry
	LeaseMs        int64      `json:"leaseMs,omitempty"`        // OCC_WORKER_LEASE_DURATION_MS
	MaxAttempts    int        `json:"maxAttempts,omitempty"`

	Result  string `json:"result,omitempty"`  // renew: ok|refused|late|failed; publish: accepted|refused|error; effect-end: ok|error|claim_lost
	Renewal string `json:"renewal,omitempty"` // renew: batch (renewer) or one (before an external call)
	Lost    bool   `json:"lost,omitempty"`    // renew: the claim had already been abandoned when the answer came

	// Transition is the queue transition a publish committed (complete, defer, retry, fail), State
	// and Code the row it left; empty for a publish that only moved the active pointer.
	Transition string `json:"transition,omitempty"`
	State      string `json:"state,omitempty"`
	Code       string `json:"code,omitempty"`
	// AgentID, ActiveRevisionID and PreviousRevisionID describe an active pointer the publish set
	// (activation: previous → active) or cleared (stop: ActiveRevisionID empty, Cleared true).
	AgentID            string `json:"agentId,omitempty"`
	ActiveRevisionID   string `json:"activeRevisionId,omitempty"`
	PreviousRevisionID string `json:"previousRevisionId,omitempty"`
	Activation         bool   `json:"activation,omitempty"`
	Cleared            bool   `json:"cleared,omitempty"`

	Outcome string `json:"outcome,omitempty"` // release: the pass's outcome
	Cause   string `json:"cause,omitempty"`   // release: the CLAIM_LOST cause; renew/effect-end/publish: error class
}

// eventLog appends Events as JSON lines; it implements the worker's hooks (hooks.go). Lines are written with one write(2) each, without fsync: they
// survive a SIGKILL of the worker, not a crash of the machine.
type eventLog struct {
	mu      sync.Mutex
	f       *os.File
	pid     int
	process string
	seq     uint64
	lease   time.Duration
	max     int
	failed  bool

	pubMu sync.Mutex                      // guards pubs
	pubs  map[*activeClaim]*publishRecord // open finalization transactions, by claim
}

func openEventLog(path string, q *queue.Queue) (*eventLog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("worker: event log: %w", err)
	}
	pid := os.Getpid()
	return &eventLog{f: f, pid: pid, process: fmt.Sprintf("%d-%d", pid, time.Now().UnixNano()),
		lease: q.LeaseDuration(), max: q.MaxAttempts(), pubs: map[*activeClaim]*publishRecord{}}, nil
}

func (l *eventLog) write(e Event) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.At, e.PID, e.Process, e.Seq = time.Now().UTC(), l.pid, l.process, l.seq
	line, err := json.Marshal(e)
	if err != nil || l.failed {
		return
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		l.failed = true // a verification aid never stops the worker
	}
}

func (l *eventLog) close() {
	if l != nil {
		l.mu.Lock()
		_ = l.f.Close()
		l.failed = true
		l.mu.Unlock()
	}
}

func utc(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func lane(w queue.Work) string {
	if w.AgentID != nil {
		return *w.AgentID
	}
	return w.NamespaceID
}

func (l *eventLog) claimEvent(a *activeClaim, typ string) Event {
	c := a.claim
	return Event{Type: typ, WorkID: c.Work.Key, Lane: lane(c.Work), Token: c.Token.String(), Attempt: c.Attempt(),
		Operation: string(queue.OperationOf(c.Work))}
}

// claimed records a claim before its pass starts.
func (l *eventLog) claimed(a *activeClaim, sentAt time.Time) {
	if l == nil {
		return
	}
	e := l.claimEvent(a, EventClaim)
	e.SentAt, e.ClaimedAt, e.LeaseExpiresAt = utc(sentAt), utc(a.claim.Work.UpdatedAt), utc(a.claim.LeaseExpiresAt)
	e.LeaseMs, e.MaxAttempts = l.lease.Milliseconds(), l.max
	l.write(e)
}

// renewed records the answer to a renewal sent at sentAt (until: the new database expiry).
func (l *eventLog) renewed(a *activeClaim, renewal string, sentAt, until time.Time, result string, lost bool, err error) {
	if l == nil {
		return
	}
	e := l.claimEvent(a, EventRenew)
	e.Renewal, e.SentAt, e.Result, e.Lost = renewal, utc(sentAt), result, lost
	if err != nil {
		e.Cause = errorClass(err)
	}
	if result == ResultOK || result == ResultLate {
		e.LeaseExpiresAt = utc(until)
	}
	l.write(e)
}

func (l *eventLog) effect(a *activeClaim, typ, call string, err error) {
	if l == nil {
		return
	}
	e := l.claimEvent(a, typ)
	e.Call = call
	if typ == EventEffectEnd {
		switch lost, _ := a.state(); {
		case lost:
			e.Result = "claim_lost"
		case err != nil:
			e.Result, e.Cause = "error", errorClass(err)
		default:
			e.Result = ResultOK
		}
	}
	l.write(e)
}

func (l *eventLog) released(a *activeClaim, outcome, cause string) {
	if l == nil {
		return
	}
	e := l.claimEvent(a, EventRelease)
	e.Outcome, e.Cause = outcome, cause
	l.write(e)
}

// publishRecord collects what one finalization transaction wrote; the publish event is written
// once the transaction has committed or failed, before the pass reports its result.
type publishRecord struct {
	mu         sync.Mutex
	until      time.Time
	transition string
	state      string
	code       string
	agentID    string
	active     string
	previous   string
	activation bool
	cleared    bool
}

// publishBegun opens the publish record of a's finalization transaction.
func (l *eventLog) publishBegun(a *activeClaim) {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	l.pubs[a] = &publishRecord{}
}

func (l *eventLog) publishing(a *activeClaim) *publishRecord {
	l.pubMu.Lock()
	defer l.pubMu.Unlock()
	return l.pubs[a]
}

// transition records the fenced transition a finalization transaction made.
func (l *eventLog) transition(a *activeClaim, op queue.Transition, code string, w queue.Work, err error) {
	if p := l.publishing(a); p != nil && err == nil {
		p.mu.Lock()
		p.transition, p.state, p.code = string(op), string(w.State), queue.SafeCode(code)
		p.mu.Unlock()
	}
}

// pointer records, inside a finalization transaction, an active pointer the transaction set
// (activation: previous → active) or cleared (active "").
func (l *eventLog) pointer(a *activeClaim, agentID string, previous *string, active string, changed bool) {
	p := l.publishing(a)
	if p == nil || !changed {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.agentID, p.active = agentID, active
	p.previous = ""
	if previous != nil {
		p.previous = *previous
	}
	p.activation, p.cleared = active != "", active == ""
}

// renewedInTx records the renewal that begins a finalization transaction.
func (l *eventLog) renewedInTx(a *activeClaim, until time.Time) {
	if p := l.publishing(a); p != nil {
		p.mu.Lock()
		p.until = until
		p.mu.Unlock()
	}
}

func (l *eventLog) published(a *activeClaim, sentAt time.Time, err error) {
	l.pubMu.Lock()
	p := l.pubs[a]
	delete(l.pubs, a)
	l.pubMu.Unlock()
	if p == nil {
		return
	}
	e := l.claimEvent(a, EventPublish)
	e.SentAt = utc(sentAt)
	p.mu.Lock()
	e.LeaseExpiresAt, e.LeaseMs = utc(p.until), l.lease.Milliseconds()
	e.Transition, e.State, e.Code = p.transition, p.state, p.code
	if p.activation || p.cleared {
		e.AgentID, e.ActiveRevisionID, e.PreviousRevisionID = p.agentID, p.active, p.previous
		e.Activation, e.Cleared = p.activation, p.cleared
	}
	p.mu.Unlock()
	switch {
	case err == nil:
		e.Result = ResultAccepted
	case errors.Is(err, queue.ErrClaimLost):
		e.Result = ResultRefused
	default:
		e.Result, e.Cause = ResultError, errorClass(err)
	}
	l.write(e)
}

// errorClass names an error without its message: the code PostgreSQL reported, a context error,
// or the driver's class.
func errorClass(err error) string {
	code, reported := store.ServerErrorCode(err)
	switch {
	case reported:
		return "sqlstate:" + code
	case errors.Is(err, context.DeadlineExceeded):
		return "context-deadline"
	case errors.Is(err, context.Canceled):
		return "context-canceled"
	case errors.Is(err, queue.ErrClaimLost):
		return "claim-lost"
	case store.ConnectionFailed(err):
		return "connection"
	}
	return driver.ErrorClass(err) + ":" + fmt.Sprintf("%T", err)
}
