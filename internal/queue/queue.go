// Package queue is the durable controller work queue: enqueue inside the
// caller's transaction, claim under a lease, and fenced transitions that publish only while the
// claim is still owned. The SQL is in package store; this package gives it its meaning, its
// errors and its options.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/store"
)

// State is the state of a work row.
type State = store.QueueState

// States of a work row.
const (
	StateQueued          State = "queued"
	StateClaimed         State = "claimed"
	StateSucceeded       State = "succeeded"
	StateFailedPermanent State = "failed_permanent"
)

// Targets.
const (
	NamespaceReady   = "ready"
	NamespaceDeleted = "deleted"
	AgentStopped     = "stopped"
	AgentDeleted     = "deleted"
)

// Queue-level reason codes.
const (
	CodeReconcileSucceeded     = "RECONCILE_SUCCEEDED"
	CodeLeaseExpired           = "LEASE_EXPIRED"
	CodeMaxAttemptsExhausted   = "MAX_ATTEMPTS_EXHAUSTED"
	CodeActiveRevisionRecovery = "ACTIVE_REVISION_RECOVERY"
	CodeUnknownFailure         = "UNKNOWN_FAILURE"
)

// Defaults of the queue library (worker settings override them).
const (
	DefaultMaxAttempts      = 10
	DefaultLeaseDuration    = 60 * time.Second
	DefaultClaimRaceRetries = 3
	DefaultRecoveryLimit    = 100
	MaxRecoveryLimit        = 1000
	InitialBackoff          = time.Second
	MaxBackoff              = 300 * time.Second
)

var (
	// ErrClaimLost: a fenced write or a renewal matched no row — the token was replaced, the lease
	// expired, or the row is no longer claimed. Nothing was published.
	ErrClaimLost = errors.New("queue: claim lost")
	// ErrConflict: a row with this key exists with another owner, actor or target.
	ErrConflict = errors.New("queue: work conflicts with existing work")
	// ErrInvalidWork: the work's key or target shape is not one the queue accepts.
	ErrInvalidWork = errors.New("queue: invalid work")
	// ErrInvalidResult: the result data does not have a shape allowed for that state and code.
	ErrInvalidResult = errors.New("queue: invalid result data")
)

// Work is one row of occ.controller_work.
type Work = store.WorkRecord

// Claim is a claimed row and the token that fences every write for it.
type Claim struct {
	Work           Work
	Token          uuid.UUID
	LeaseExpiresAt time.Time
}

// Attempt is the attempt number of this claim (1 on the first claim).
func (c Claim) Attempt() int { return c.Work.AttemptCount }

// EnqueueWork is the owner and target of new work.
type EnqueueWork struct {
	Key             string
	NamespaceID     string
	ActorID         string
	AgentID         *string
	RevisionID      *string
	NamespaceTarget *string
	AgentTarget     *string
	AvailableAt     *time.Time
}

// Enqueue inserts the work in the caller's transaction (idle workers are notified on commit), or
// returns the existing row with that key unchanged, even when it is terminal: enqueue never
// revives work, so a finished row is a receipt. An existing row with another owner, actor or
// target is ErrConflict.
func Enqueue(ctx context.Context, db store.DBTX, w EnqueueWork) (Work, error) {
	if err := validateEnqueue(w); err != nil {
		return Work{}, err
	}
	row, inserted, err := store.EnqueueWork(ctx, db, store.WorkRow{
		Key: w.Key, NamespaceID: w.NamespaceID, AgentID: w.AgentID, RevisionID: w.RevisionID, ActorID: w.ActorID,
		NamespaceTarget: w.NamespaceTarget, AgentTarget: w.AgentTarget,
	}, w.AvailableAt)
	if err != nil {
		return Work{}, err
	}
	if !inserted && !sameOwner(row, w) {
		return Work{}, fmt.Errorf("%w: %s", ErrConflict, w.Key)
	}
	return row, nil
}

func sameOwner(row Work, w EnqueueWork) bool {
	return row.Kind == "lifecycle" && row.NamespaceID == w.NamespaceID && row.ActorID == w.ActorID &&
		eq(row.AgentID, w.AgentID) && eq(row.RevisionID, w.RevisionID) &&
		eq(row.NamespaceTarget, w.NamespaceTarget) && eq(row.AgentTarget, w.AgentTarget)
}

func eq(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func validateEnqueue(w EnqueueWork) error {
	invalid := func(why string) error { return fmt.Errorf("%w: %s", ErrInvalidWork, why) }
	switch {
	case w.Key == "" || len(w.Key) > 512:
		return invalid("key must be 1..512 characters")
	case strings.Contains(w.Key, ":repository_cleanup:"):
		return invalid("repository cleanup keys are not enqueued here")
	case w.NamespaceID == "" || w.ActorID == "":
		return invalid("namespace and actor are required")
	}
	set := func(p *string) bool { return p != nil }
	switch {
	case !set(w.AgentID) && !set(w.RevisionID):
		if set(w.AgentTarget) || !set(w.NamespaceTarget) || (*w.NamespaceTarget != NamespaceReady && *w.NamespaceTarget != NamespaceDeleted) {
			return invalid("namespace work needs namespace target ready or deleted")
		}
	case set(w.AgentID) && !set(w.RevisionID):
		if set(w.NamespaceTarget) || !set(w.AgentTarget) || (*w.AgentTarget != AgentStopped && *w.AgentTarget != AgentDeleted) {
			return invalid("agent work needs agent target stopped or deleted")
		}
	case set(w.AgentID) && set(w.RevisionID):
		if set(w.NamespaceTarget) || (set(w.AgentTarget) && *w.AgentTarget != "credentials_withdrawn") {
			return invalid("revision work takes no namespace target")
		}
	default:
		return invalid("revision work needs its agent")
	}
	return nil
}

// Options tune a Queue.
type Options struct {
	MaxAttempts      int
	LeaseDuration    time.Duration
	ClaimRaceRetries int
	RecoveryLimit    int
	// Jitter returns the full-jitter factor in [0, 1) for a delay; nil lets PostgreSQL draw one per
	// row. Tests inject a constant.
	Jitter func() float64
}

// Queue runs claims and fenced transitions on one database.
type Queue struct {
	db   store.DBTX
	opts Options
}

// New returns a Queue on db (a pool) with defaults for unset options.
func New(db store.DBTX, o Options) *Queue {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.ClaimRaceRetries <= 0 {
		o.ClaimRaceRetries = DefaultClaimRaceRetries
	}
	if o.RecoveryLimit <= 0 {
		o.RecoveryLimit = DefaultRecoveryLimit
	}
	o.RecoveryLimit = min(o.RecoveryLimit, MaxRecoveryLimit)
	return &Queue{db: db, opts: o}
}

// MaxAttempts is the attempt budget.
func (q *Queue) MaxAttempts() int { return q.opts.MaxAttempts }

// LeaseDuration is the length of a claim's lease.
func (q *Queue) LeaseDuration() time.Duration { return q.opts.LeaseDuration }

func (q *Queue) jitter() *float64 {
	if q.opts.Jitter == nil {
		return nil
	}
	j := q.opts.Jitter()
	return &j
}

// Claim claims up to limit rows, at most one per lane. It retries a statement that lost a race
// (unique lane violation, serialization failure, deadlock) up to ClaimRaceRetries times.
func (q *Queue) Claim(ctx context.Context, limit int) ([]Claim, error) {
	if limit <= 0 {
		return nil, nil
	}
	var rows []Work
	var err error
	for range q.opts.ClaimRaceRetries {
		rows, err = store.ClaimWork(ctx, q.db, limit, q.opts.MaxAttempts, q.opts.LeaseDuration)
		if !isClaimRace(err) {
			break
		}
	}
	if isClaimRace(err) {
		return nil, nil // lost every race: someone else is claiming; try again next round
	}
	if err != nil {
		return nil, err
	}
	claims := make([]Claim, len(rows))
	for i, w := range rows {
		claims[i] = Claim{Work: w, Token: *w.ClaimToken, LeaseExpiresAt: *w.LeaseExpiresAt}
	}
	return claims, nil
}

func isClaimRace(err error) bool { return errors.Is(err, store.ErrRetryableRace) }

// Renew extends the leases of claims in one statement and returns the new expiry of each claim
// it still owns, by key. A claim missing from the result is lost.
func (q *Queue) Renew(ctx context.Context, db store.DBTX, claims []Claim) (map[string]time.Time, error) {
	if len(claims) == 0 {
		return map[string]time.Time{}, nil
	}
	keys := make([]string, len(claims))
	tokens := make([]uuid.UUID, len(claims))
	for i, c := range claims {
		keys[i], tokens[i] = c.Work.Key, c.Token
	}
	if db == nil {
		db = q.db
	}
	renewed, err := store.RenewLeases(ctx, db, keys, tokens, q.opts.LeaseDuration)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(renewed))
	for _, r := range renewed {
		out[r.Key] = r.LeaseExpiresAt
	}
	return out, nil
}

// RenewOne renews one claim in db (a finalization transaction starts with it) and returns its new
// expiry, or ErrClaimLost.
func (q *Queue) RenewOne(ctx context.Context, db store.DBTX, c Claim) (time.Time, error) {
	renewed, err := q.Renew(ctx, db, []Claim{c})
	if err != nil {
		return time.Time{}, err
	}
	at, ok := renewed[c.Work.Key]
	if !ok {
		return time.Time{}, ErrClaimLost
	}
	return at, nil
}

// Transition names a fenced transition.
type Transition string

// Fenced transitions.
const (
	TransitionComplete Transition = store.TransitionComplete
	TransitionDefer    Transition = store.TransitionDefer
	TransitionRetry    Transition = store.TransitionRetry
	TransitionFail     Transition = store.TransitionFail
)

// DeferOptions shape a convergence wait: the work is requeued without spending its attempt.
type DeferOptions struct {
	Delay *time.Duration // nil: backoff of the refunded attempt
	// SkipEvidence writes no evidence row (the caller knows the wait repeats); by default a row is
	// written unless it repeats the latest evidence's outcome and code.
	SkipEvidence   bool
	RepeatEvidence bool
	Refusal        *string
	StopYielded    bool
}

// TransitionRequest is one fenced transition of a claim: complete or fail with a code and
// optional result data, defer with its options, or retry (spend the attempt).
type TransitionRequest struct {
	Claim  Claim
	To     Transition
	Code   string          // complete: default RECONCILE_SUCCEEDED
	Result json.RawMessage // complete and fail
	Defer  DeferOptions    // defer
}

// TransitionResult is the outcome of one TransitionRequest: the row it left, or ErrClaimLost
// (nothing was written), or ErrInvalidResult (the result data is not a shape its state and code
// allow; nothing was written).
type TransitionResult struct {
	Work Work
	Err  error
}

// TransitionMany makes every transition in one statement: each is fenced by its own claim and
// writes its own evidence, and one that is refused (lost claim, invalid result data) is reported
// in its result without stopping the others. err is a failure of the statement as a whole, in
// which case nothing was written.
func (q *Queue) TransitionMany(ctx context.Context, db store.DBTX, reqs []TransitionRequest) ([]TransitionResult, error) {
	ts := make([]store.WorkTransition, len(reqs))
	for i, r := range reqs {
		code := r.Code
		if r.To == TransitionComplete && code == "" {
			code = CodeReconcileSucceeded
		}
		ts[i] = store.WorkTransition{Key: r.Claim.Work.Key, Token: r.Claim.Token, Kind: string(r.To), Code: SafeCode(code),
			Result: r.Result, Delay: r.Defer.Delay, SkipEvidence: r.Defer.SkipEvidence, RepeatEvidence: r.Defer.RepeatEvidence,
			Refusal: r.Defer.Refusal, StopYielded: r.Defer.StopYielded}
	}
	if db == nil {
		db = q.db
	}
	done, err := store.TransitionWork(ctx, db, store.TransitionParams{MaxAttempts: q.opts.MaxAttempts, Jitter: q.jitter()}, ts)
	if err != nil {
		return nil, err
	}
	out := make([]TransitionResult, len(done))
	for i, d := range done {
		switch {
		case d.Applied:
			out[i].Work = d.Work
		case d.InvalidResult:
			out[i].Err = fmt.Errorf("%w: %s", ErrInvalidResult, store.ConstraintWorkResultValid)
		default:
			out[i].Err = ErrClaimLost
		}
	}
	return out, nil
}

// transition makes one fenced transition.
func (q *Queue) transition(ctx context.Context, db store.DBTX, r TransitionRequest) (Work, error) {
	out, err := q.TransitionMany(ctx, db, []TransitionRequest{r})
	if err != nil {
		return Work{}, err
	}
	return out[0].Work, out[0].Err
}

// Complete ends the claim as succeeded with code (default RECONCILE_SUCCEEDED).
func (q *Queue) Complete(ctx context.Context, db store.DBTX, c Claim, code string, result json.RawMessage) (Work, error) {
	return q.transition(ctx, db, TransitionRequest{Claim: c, To: TransitionComplete, Code: code, Result: result})
}

// Defer requeues the claim without spending its attempt.
func (q *Queue) Defer(ctx context.Context, db store.DBTX, c Claim, code string, o DeferOptions) (Work, error) {
	return q.transition(ctx, db, TransitionRequest{Claim: c, To: TransitionDefer, Code: code, Defer: o})
}

// Retry spends the claimed attempt: requeued with full-jitter backoff, or failed_permanent with
// code once the budget is exhausted (the returned row says which).
func (q *Queue) Retry(ctx context.Context, db store.DBTX, c Claim, code string) (Work, error) {
	return q.transition(ctx, db, TransitionRequest{Claim: c, To: TransitionRetry, Code: code})
}

// Fail ends the claim as failed_permanent with code and optional result data.
func (q *Queue) Fail(ctx context.Context, db store.DBTX, c Claim, code string, result json.RawMessage) (Work, error) {
	return q.transition(ctx, db, TransitionRequest{Claim: c, To: TransitionFail, Code: code, Result: result})
}

// RecoverySummary is what one RecoverStale call did.
type RecoverySummary struct {
	Recovered       int // expired claims handled
	Requeued        int
	FailedPermanent int
	ExhaustedQueued int
	Failed          []string // keys that became failed_permanent
}

// RecoverStale runs both recovery statements: expired claims, then queued rows at or above the
// attempt limit. Each statement writes its evidence and the Namespace → failed side effect
// atomically. The worker runs it at the start of every loop iteration.
func (q *Queue) RecoverStale(ctx context.Context) (RecoverySummary, error) {
	var s RecoverySummary
	expired, err := store.RecoverExpiredClaims(ctx, q.db, q.opts.RecoveryLimit, q.opts.MaxAttempts, q.jitter())
	if err != nil {
		return s, err
	}
	for _, r := range expired {
		s.Recovered++
		if r.State == StateFailedPermanent {
			s.FailedPermanent++
			s.Failed = append(s.Failed, r.Key)
		} else {
			s.Requeued++
		}
	}
	exhausted, err := store.FailExhaustedQueued(ctx, q.db, q.opts.RecoveryLimit, q.opts.MaxAttempts)
	if err != nil {
		return s, err
	}
	for _, r := range exhausted {
		s.ExhaustedQueued++
		s.Failed = append(s.Failed, r.Key)
	}
	return s, nil
}

// Pending counts queued and claimed work.
func (q *Queue) Pending(ctx context.Context) (int, error) { return store.PendingWork(ctx, q.db) }

// ClaimableWorkWaiting reports whether a claim would find work now.
func (q *Queue) ClaimableWorkWaiting(ctx context.Context) (bool, error) {
	return store.ClaimableWorkWaiting(ctx, q.db, q.opts.MaxAttempts)
}

// Find reads one work row; store.ErrNotFound when absent.
func (q *Queue) Find(ctx context.Context, key string) (Work, error) {
	return store.GetWork(ctx, q.db, key)
}

// LatestAttempt reads the newest evidence of a work item, optionally with a given code.
func (q *Queue) LatestAttempt(ctx context.Context, key string, code *string) (*store.WorkAttempt, error) {
	return store.LatestWorkAttempt(ctx, q.db, key, code)
}

var unsafeCodeChars = regexp.MustCompile(`[^A-Z0-9_]`)

// SafeCode normalises a reason code: upper case, [^A-Z0-9_] → _, at most 64 characters; empty
// becomes UNKNOWN_FAILURE. Every stored code passes through it.
func SafeCode(s string) string {
	s = unsafeCodeChars.ReplaceAllString(strings.ToUpper(s), "_")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return CodeUnknownFailure
	}
	return s
}

// Backoff is the full-jitter delay before attempt n+1: min(300 s, 1 s · 2^min(max(n−1, 0), 30)) ·
// jitter.
func Backoff(n int, jitter float64) time.Duration {
	exp := min(max(n-1, 0), 30)
	d := min(float64(MaxBackoff), float64(InitialBackoff)*float64(int64(1)<<exp))
	return time.Duration(d * jitter)
}

// Operation is a kind of work: what a worker pass does with it. Its value is the work's name in
// logs (worker.completed `operation`) and in the event log.
type Operation string

// Operations.
const (
	OpNamespaceEnsure      Operation = "namespace.ensure"
	OpNamespaceDelete      Operation = "namespace.delete"
	OpAgentStop            Operation = "agent.stop"
	OpAgentDelete          Operation = "agent.delete"
	OpRevisionReconcile    Operation = "agent_revision.reconcile"
	OpCredentialWithdrawal Operation = "agent_revision.credential_withdrawal"
	// OpAgentProvision runs the steps of a guided provisioning request (work kind provisioning).
	OpAgentProvision Operation = "agent.provision"
)

// operations is the one table of the work vocabulary: every operation with its metric label
// (occ_reconciliation_attempts_total `work_kind`), in the order the metrics declare them. Dispatch,
// log names and metric labels all derive from it.
var operations = []struct {
	op         Operation
	metricKind string
}{
	{OpNamespaceEnsure, "namespace_ensure"},
	{OpNamespaceDelete, "namespace_delete"},
	{OpRevisionReconcile, "agent_revision"},
	{OpAgentStop, "agent_stop"},
	{OpAgentDelete, "agent_delete"},
	{OpCredentialWithdrawal, "agent_credential_withdrawal"},
	{OpAgentProvision, "agent_provision"},
}

// Operations lists every operation, in table order.
func Operations() []Operation {
	out := make([]Operation, len(operations))
	for i, o := range operations {
		out[i] = o.op
	}
	return out
}

// MetricKind is the operation's metric label.
func (o Operation) MetricKind() string {
	for _, row := range operations {
		if row.op == o {
			return row.metricKind
		}
	}
	return ""
}

// MetricKinds lists the metric labels of every operation, in table order.
func MetricKinds() []string {
	out := make([]string, len(operations))
	for i, o := range operations {
		out[i] = o.metricKind
	}
	return out
}

// OperationOf classifies a work row by its shape.
func OperationOf(w Work) Operation {
	switch {
	case w.Kind == "provisioning":
		return OpAgentProvision
	case w.RevisionID != nil && w.AgentTarget != nil && *w.AgentTarget == "credentials_withdrawn":
		return OpCredentialWithdrawal
	case w.RevisionID != nil:
		return OpRevisionReconcile
	case w.AgentID != nil && w.AgentTarget != nil && *w.AgentTarget == AgentDeleted:
		return OpAgentDelete
	case w.AgentID != nil:
		return OpAgentStop
	case w.NamespaceTarget != nil && *w.NamespaceTarget == NamespaceDeleted:
		return OpNamespaceDelete
	default:
		return OpNamespaceEnsure
	}
}

// MetricKind names the work for metrics (occ_reconciliation_attempts_total `work_kind`).
func MetricKind(w Work) string { return OperationOf(w).MetricKind() }
