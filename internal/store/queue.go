package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The SQL of the durable work queue. Package queue gives it meaning; this
// file only speaks SQL. Every write after a claim is fenced by
//
//	claim_token = $token AND lease_expires_at > clock_timestamp()
//
// (a row holds a token exactly while it is claimed: controller_work_claim_consistent), and every
// transition but enqueue and renew writes its evidence row to occ.audit_events in the
// same statement, so a transition and its evidence can never be separated.
//
// The statements that pick rows before they rewrite them lock them FOR NO KEY UPDATE: none of
// them changes the key, and no table references occ.controller_work, so the stronger FOR UPDATE
// (which also excludes FOR KEY SHARE) would exclude nothing more.

// QueueState is the state of a work row: queued, claimed, succeeded or failed_permanent (package
// queue names them).
type QueueState string

// WorkRecord is one row of occ.controller_work.
type WorkRecord struct {
	Key             string
	Kind            string
	NamespaceID     string
	AgentID         *string
	RevisionID      *string
	ActorID         string
	NamespaceTarget *string
	AgentTarget     *string
	State           QueueState
	AvailableAt     time.Time
	AttemptCount    int
	ClaimToken      *uuid.UUID
	LeaseExpiresAt  *time.Time
	CompletedAt     *time.Time
	ReasonCode      *string
	ResultData      json.RawMessage
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

const workColumns = `w.idempotency_key, w.work_kind, w.namespace_id, w.agent_id, w.revision_id, w.actor_id,
  w.namespace_target, w.agent_target, w.state, w.available_at, w.attempt_count, w.claim_token,
  w.lease_expires_at, w.completed_at, w.reason_code, w.result_data, w.created_at, w.updated_at`

func scanWork(row pgx.CollectableRow) (WorkRecord, error) {
	var w WorkRecord
	err := row.Scan(workTargets(&w)...)
	return w, err
}

// workTargets are the scan targets of workColumns.
func workTargets(w *WorkRecord) []any {
	return []any{&w.Key, &w.Kind, &w.NamespaceID, &w.AgentID, &w.RevisionID, &w.ActorID,
		&w.NamespaceTarget, &w.AgentTarget, &w.State, &w.AvailableAt, &w.AttemptCount, &w.ClaimToken,
		&w.LeaseExpiresAt, &w.CompletedAt, &w.ReasonCode, &w.ResultData, &w.CreatedAt, &w.UpdatedAt}
}

// WorkNotifyChannel is the LISTEN/NOTIFY channel that wakes idle workers.
const WorkNotifyChannel = "occ_controller_work"

// WorkRow is the owner and target of one unit of controller work: what EnqueueWork inserts.
type WorkRow struct {
	Key             string
	NamespaceID     string
	AgentID         *string
	RevisionID      *string
	ActorID         string
	NamespaceTarget *string
	AgentTarget     *string
}

// EnqueueWork inserts a queued row and notifies idle workers (delivered on commit), or returns
// the existing row with that key unchanged (inserted false).
func EnqueueWork(ctx context.Context, db DBTX, w WorkRow, availableAt *time.Time) (WorkRecord, bool, error) {
	rows, err := db.Query(ctx, `
WITH inserted AS (
  INSERT INTO occ.controller_work AS w
    (idempotency_key, namespace_id, agent_id, revision_id, actor_id, namespace_target, agent_target,
     available_at, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8, clock_timestamp()), clock_timestamp(), clock_timestamp())
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING `+workColumns+`)
SELECT `+unqualified(workColumns)+`
  FROM inserted CROSS JOIN LATERAL (SELECT pg_notify('`+WorkNotifyChannel+`', inserted.idempotency_key)) notified`,
		w.Key, w.NamespaceID, w.AgentID, w.RevisionID, w.ActorID, w.NamespaceTarget, w.AgentTarget, availableAt)
	if err != nil {
		return WorkRecord{}, false, err
	}
	recs, err := pgx.CollectRows(rows, scanWork)
	if err != nil {
		return WorkRecord{}, false, err
	}
	if len(recs) == 1 {
		return recs[0], true, nil
	}
	existing, err := GetWork(ctx, db, w.Key)
	return existing, false, err
}

// GetWork reads one row; ErrNotFound when absent.
func GetWork(ctx context.Context, db DBTX, key string) (WorkRecord, error) {
	rows, err := db.Query(ctx, `SELECT `+workColumns+` FROM occ.controller_work w WHERE w.idempotency_key = $1`, key)
	return oneRow(rows, err, scanWork)
}

// laneIdle holds for a queued row w whose lane (COALESCE(agent_id, namespace_id)) has no claimed
// row: one probe of controller_work_one_claim_per_resource per row tested. The OFFSET 0 keeps
// PostgreSQL from turning it into an anti-join, which it planned as a comparison of every row with
// every claimed row whenever the statistics said nothing was claimed: with 500 rows claimed
// (completions waiting for their batch), 16 000 comparisons and 3.5–8 ms per claim instead of
// 0.8–1.3 ms.
const laneIdle = `NOT EXISTS (SELECT 1 FROM occ.controller_work f
                      WHERE f.state = 'claimed'
                        AND COALESCE(f.agent_id, f.namespace_id) = COALESCE(w.agent_id, w.namespace_id)
                     OFFSET 0)`

// ClaimWork claims up to limit queued rows whose time has come, at most one per lane
// (COALESCE(agent_id, namespace_id)) and none in a lane that is already claimed. Each claim gets
// attempt + 1, a fresh token and a lease measured on the database clock. Rows are skipped, not
// waited for, when another claimer holds them. Two claimers that pick different rows of one lane
// collide on controller_work_one_claim_per_resource; that race, a serialization failure and a
// deadlock are ErrRetryableRace, and the caller retries.
//
// Due rows are compared with statement_timestamp(), not clock_timestamp(): a volatile function
// cannot bound an index scan, and with 10 000 rows waiting in backoff every claim read them all
// (391 buffers, 2.15 ms instead of 6 buffers, 0.03 ms; docs/performance.md).
//
// The only index this scan can use is controller_work_ready, whose order is the ORDER BY, so the
// scan stops after limit × 4 rows whatever the statistics say (migration 0011 took
// controller_work_queued_attempts out of its reach).
//
// It is planned on every execution (QueryExecModeExec: still one round trip), never from a cached
// generic plan. A worker that started on a young installation's nearly empty queue otherwise kept
// the generic plan PostgreSQL chose after five executions, a sequential scan of the queue
// anti-joined with a sequential scan of it per row, for the connection's life: 8 s per claim,
// 4 000 000 rows read, once 2 000 rows were queued (TestClaimIsPlannedForTheQueueItFinds). A
// custom plan measures the table's current size.
func ClaimWork(ctx context.Context, db DBTX, limit, maxAttempts int, lease time.Duration) ([]WorkRecord, error) {
	rows, err := db.Query(ctx, `
WITH locked AS (
  SELECT w.idempotency_key, COALESCE(w.agent_id, w.namespace_id) AS lane, w.available_at, w.created_at
    FROM occ.controller_work w
   WHERE w.state = 'queued' AND w.available_at <= statement_timestamp() AND w.attempt_count < $2
     AND `+laneIdle+`
   ORDER BY w.available_at, w.created_at, w.idempotency_key
   FOR NO KEY UPDATE OF w SKIP LOCKED
   LIMIT $1 * 4),
picked AS (
  SELECT key FROM (
    SELECT DISTINCT ON (lane) idempotency_key AS key, available_at, created_at
      FROM locked ORDER BY lane, available_at, created_at, idempotency_key) one_per_lane
   ORDER BY available_at, created_at, key
   LIMIT $1)
UPDATE occ.controller_work w
   SET state = 'claimed', attempt_count = w.attempt_count + 1, claim_token = gen_random_uuid(),
       lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond', updated_at = clock_timestamp()
  FROM picked
 WHERE w.idempotency_key = picked.key
RETURNING `+workColumns, pgx.QueryExecModeExec, limit, maxAttempts, lease.Milliseconds())
	if err != nil {
		return nil, claimRace(err)
	}
	recs, err := pgx.CollectRows(rows, scanWork)
	return recs, claimRace(err)
}

// claimRace classifies a claim's failure: two claimers that picked different rows of one lane are
// a race like a serialization failure, not a duplicate.
func claimRace(err error) error {
	err = classify(err)
	if RefusedBy(err, constraintOneClaimPerResource) {
		return fmt.Errorf("%w: %w", ErrRetryableRace, err)
	}
	return err
}

// RenewedLease is one lease that a renewal extended.
type RenewedLease struct {
	Key            string
	LeaseExpiresAt time.Time
}

// RenewLeases extends every still-owned lease in one statement. Claims absent from the result
// were lost (token replaced, lease expired or row no longer claimed). It uses the simple query
// protocol so that a renewal is always exactly one round trip: the worker measures how late an
// answer is, and a prepare round trip in front of it would move the moment the row is updated.
// As the first statement of a PipelinedTx it travels with BEGIN instead, as a statement prepared
// once per connection.
func RenewLeases(ctx context.Context, db DBTX, keys []string, tokens []uuid.UUID, lease time.Duration) ([]RenewedLease, error) {
	tokenText := make([]string, len(tokens))
	for i, t := range tokens {
		tokenText[i] = t.String()
	}
	args := []any{pgx.QueryExecModeSimpleProtocol, keys, tokenText, lease.Milliseconds()}
	if tx, ok := db.(*PipelinedTx); ok && tx.beginAhead() {
		args = args[1:]
	}
	rows, err := db.Query(ctx, `
UPDATE occ.controller_work w
   SET lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond', updated_at = clock_timestamp()
  FROM unnest($1::text[], $2::uuid[]) AS c(key, token)
 WHERE w.idempotency_key = c.key AND w.claim_token = c.token
   AND w.state = 'claimed' AND w.lease_expires_at > clock_timestamp()
RETURNING w.idempotency_key, w.lease_expires_at`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (RenewedLease, error) {
		var l RenewedLease
		err := r.Scan(&l.Key, &l.LeaseExpiresAt)
		return l, err
	})
}

// evidenceInsert is the INSERT that writes one evidence row per row of the CTE `src`, which must
// expose the work columns plus `reason` (text), `outcome` (text), `refusal` (text, nullable) and
// `stop_yielded` (boolean, nullable).
func evidenceInsert(src string) string {
	return `
INSERT INTO occ.audit_events (id, kind, actor_id, action, namespace_id, resource_kind, resource_id, outcome, details)
SELECT 'aud_' || gen_random_uuid()::text, 'mutation', s.actor_id, 'reconcile', s.namespace_id,
       CASE WHEN s.revision_id IS NOT NULL OR s.idempotency_key LIKE 'agent_revision:%' THEN 'agent_revision'
            WHEN s.agent_id IS NOT NULL THEN 'agent' ELSE 'namespace' END,
       CASE WHEN s.revision_id IS NOT NULL THEN s.revision_id
            WHEN s.idempotency_key LIKE 'agent_revision:%' THEN split_part(s.idempotency_key, ':', 2)
            ELSE COALESCE(s.agent_id, s.namespace_id) END,
       s.outcome,
       jsonb_strip_nulls(jsonb_build_object(
         'reasonCode', s.reason, 'attemptCount', s.attempt_count, 'workId', s.idempotency_key,
         'final', CASE WHEN s.state = 'failed_permanent' THEN true END,
         'refusal', s.refusal, 'stopYielded', s.stop_yielded))
  FROM ` + src + ` s`
}

// fence is the claim guard of every write after a claim, for the claim i (key, token): the row
// holds that token and its lease has not run out. It names no state because a row holds a token
// exactly while it is claimed (controller_work_claim_consistent). A `state = 'claimed'` term let
// the planner reach the rows through controller_work_one_claim_per_resource, and whenever the
// statistics had been taken with nothing claimed it did, comparing every transition with every
// claimed row: 53 393 pairs for 107 completions among 500 claimed rows, 15 ms of a 24 ms
// statement. Without it the primary key is the only index that fits.
const fence = `w.idempotency_key = i.key AND w.claim_token = i.token AND w.lease_expires_at > clock_timestamp()`

// backoff is the full-jitter delay in milliseconds for the attempt count `n`:
// min(300000, 1000 * 2^min(max(n-1, 0), 30)) * jitter, jitter in [0, 1). A NULL $jitter parameter
// means random() per row.
func backoff(n, jitter string) string {
	return `(LEAST(300000, 1000 * power(2, LEAST(GREATEST(` + n + ` - 1, 0), 30))) * COALESCE(` + jitter + `, random()))`
}

// Transition kinds of TransitionWork.
const (
	TransitionComplete = "complete" // succeeded, with the code and result data
	TransitionDefer    = "defer"    // queued again without spending the attempt
	TransitionRetry    = "retry"    // the attempt spent: queued with backoff, or failed_permanent at the limit
	TransitionFail     = "fail"     // failed_permanent, with the code and result data
)

// Evidence modes of a defer (the other transitions always write their evidence).
const (
	evidenceAlways       = "always"
	evidenceUnlessRepeat = "unless_repeat" // not when it repeats the latest evidence's outcome and code
	evidenceNone         = "none"
)

// WorkTransition is one fenced transition of a claimed row: the claim (key and token) and what
// it becomes.
type WorkTransition struct {
	Key   string
	Token uuid.UUID
	Kind  string // TransitionComplete, TransitionDefer, TransitionRetry or TransitionFail
	Code  string
	// Result is the result data of a completion or a failure (ignored otherwise).
	Result json.RawMessage
	// Defer: the delay (nil: the backoff of the refunded attempt) and the evidence to write.
	Delay          *time.Duration
	SkipEvidence   bool // no evidence row (the caller knows the wait repeats)
	RepeatEvidence bool // evidence even when it repeats the latest evidence's outcome and code
	Refusal        *string
	StopYielded    bool
}

// TransitionParams are the queue settings a transition depends on.
type TransitionParams struct {
	MaxAttempts int      // a retry at this attempt count ends failed_permanent
	Jitter      *float64 // the full-jitter factor of backoffs; nil: random() per row
}

// TransitionedWork is what became of one WorkTransition.
type TransitionedWork struct {
	// Applied: the fence held and the row is now Work. When false with InvalidResult, Work is the
	// row as it still is (the result data is not one its state and code allow); when false
	// without it, the claim was lost and Work is empty.
	Applied       bool
	InvalidResult bool
	Work          WorkRecord
}

// TransitionWork makes many fenced transitions in one statement, each checked against its own
// token, state and lease, each with its evidence row (a defer may skip or deduplicate its own),
// and returns one TransitionedWork per transition, in order. A transition whose fence fails or
// whose result data is invalid changes nothing and does not stop the others. A retry that ends
// failed_permanent flips its still-provisioning Namespace to failed in the same statement.
//
// The rows are distinct claims, so two concurrent calls never wait for each other's rows.
func TransitionWork(ctx context.Context, db DBTX, p TransitionParams, ts []WorkTransition) ([]TransitionedWork, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	n := len(ts)
	keys, tokens, kinds, codes := make([]string, n), make([]uuid.UUID, n), make([]string, n), make([]string, n)
	results, delays := make([]*string, n), make([]*int64, n)
	evidence, refusals, yielded := make([]string, n), make([]*string, n), make([]*bool, n)
	for i, t := range ts {
		keys[i], tokens[i], kinds[i], codes[i] = t.Key, t.Token, t.Kind, t.Code
		if len(t.Result) > 0 && (t.Kind == TransitionComplete || t.Kind == TransitionFail) {
			r := string(t.Result)
			results[i] = &r
		}
		evidence[i] = evidenceAlways
		if t.Kind == TransitionDefer {
			if t.Delay != nil {
				ms := t.Delay.Milliseconds()
				delays[i] = &ms
			}
			switch {
			case t.SkipEvidence:
				evidence[i] = evidenceNone
			case !t.RepeatEvidence:
				evidence[i] = evidenceUnlessRepeat
			}
			refusals[i] = t.Refusal
			if t.StopYielded {
				yielded[i] = &t.StopYielded
			}
		}
	}
	rows, err := db.Query(ctx, transitionWorkSQL, keys, tokens, kinds, codes, results, delays, evidence, refusals, yielded,
		p.MaxAttempts, p.Jitter)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := make([]TransitionedWork, n)
	for rows.Next() {
		var ord int64
		var applied bool
		var w WorkRecord
		if err := rows.Scan(append([]any{&ord, &applied}, workTargets(&w)...)...); err != nil {
			return nil, err
		}
		if ord < 1 || int(ord) > n {
			return nil, fmt.Errorf("store: transition %d of %d", ord, n)
		}
		out[ord-1] = TransitionedWork{Applied: applied, InvalidResult: !applied, Work: w}
	}
	return out, classify(rows.Err())
}

// The new state of a transitioned row (in the UPDATE of transitionWorkSQL, where w is the row as
// it was and i the transition), and whether it is terminal.
const (
	transitionState = `CASE i.kind WHEN 'complete' THEN 'succeeded' WHEN 'fail' THEN 'failed_permanent'
                      WHEN 'retry' THEN CASE WHEN w.attempt_count >= $10 THEN 'failed_permanent' ELSE 'queued' END
                      ELSE 'queued' END`
	transitionTerminal = `(i.kind IN ('complete', 'fail') OR (i.kind = 'retry' AND w.attempt_count >= $10))`
)

// transitionWorkSQL is TransitionWork's statement. $1..$9 are the transitions as parallel arrays
// (key, token, kind, code, result, delay in ms, evidence mode, refusal, stop yielded), $10 the
// attempt limit and $11 the jitter. The final SELECT returns each applied transition's new row,
// and the unchanged row of each transition refused for its result data whose claim still holds;
// a lost claim returns nothing.
var transitionWorkSQL = `
WITH input AS (
  SELECT i.*, (i.kind NOT IN ('complete', 'fail') OR i.result IS NULL
               OR occ.is_valid_work_result(CASE i.kind WHEN 'complete' THEN 'succeeded' ELSE 'failed_permanent' END,
                                           i.code, i.result)) AS valid
    FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::bigint[], $7::text[], $8::text[], $9::boolean[])
         WITH ORDINALITY AS i(key, token, kind, code, result, delay_ms, evidence_mode, refusal, stop_yielded, ord)),
updated AS (
  UPDATE occ.controller_work w
     SET state = ` + transitionState + `,
         attempt_count = CASE WHEN i.kind = 'defer' THEN GREATEST(w.attempt_count - 1, 0) ELSE w.attempt_count END,
         completed_at = CASE WHEN ` + transitionTerminal + ` THEN clock_timestamp() END,
         reason_code = CASE WHEN ` + transitionTerminal + ` THEN i.code END,
         result_data = CASE WHEN i.kind IN ('complete', 'fail') THEN i.result END,
         available_at = CASE
           WHEN i.kind = 'defer'
             THEN clock_timestamp() + COALESCE(i.delay_ms, ` + backoff("w.attempt_count", "$11::float8") + `) * interval '1 millisecond'
           WHEN i.kind = 'retry' AND w.attempt_count < $10
             THEN clock_timestamp() + ` + backoff("w.attempt_count", "$11::float8") + ` * interval '1 millisecond'
           ELSE w.available_at END,
         claim_token = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
    FROM input i
   WHERE ` + fence + ` AND i.valid AND i.kind IN ('complete', 'defer', 'retry', 'fail')
  RETURNING w.*, i.ord, i.kind, i.code AS reason,
            CASE WHEN i.kind IN ('complete', 'defer') THEN 'success' ELSE 'failure' END AS outcome,
            i.refusal, i.stop_yielded, i.evidence_mode),
record AS (
  SELECT u.* FROM updated u
   WHERE u.evidence_mode = '` + evidenceAlways + `'
      OR (u.evidence_mode = '` + evidenceUnlessRepeat + `' AND NOT EXISTS (
            SELECT 1
              FROM (SELECT e.outcome, e.details ->> 'reasonCode' AS reason
                      FROM occ.audit_events e
                     WHERE e.action = 'reconcile' AND (e.details ->> 'workId') = u.idempotency_key
                     ORDER BY e.occurred_at DESC LIMIT 1) latest
             WHERE latest.outcome = 'success' AND latest.reason = u.reason))),
evidence AS (` + evidenceInsert("record") + `),
failed_namespace AS (` + namespaceFailedUpdate("(SELECT * FROM updated WHERE kind = 'retry')") + `)
SELECT u.ord, true, ` + unqualified(workColumns) + ` FROM updated u
UNION ALL
SELECT i.ord, false, ` + workColumns + `
  FROM input i JOIN occ.controller_work w ON ` + fence + `
 WHERE NOT i.valid`

// namespaceFailedUpdate flips a still-provisioning, live Namespace to failed when its ready-target
// work in `src` became failed_permanent — in the same statement as the transition, so the two
// commit or roll back together.
func namespaceFailedUpdate(src string) string {
	return `
UPDATE occ.namespaces n SET status = 'failed'
  FROM ` + src + ` s
 WHERE s.state = 'failed_permanent' AND s.agent_id IS NULL AND s.namespace_target = 'ready'
   AND n.id = s.namespace_id AND n.status = 'provisioning' AND n.deleted_at IS NULL
RETURNING n.id`
}

// RecoveredWork is one row that stale recovery requeued or failed.
type RecoveredWork struct {
	Key        string
	State      QueueState
	ReasonCode string
}

// RecoverExpiredClaims requeues (or, at the attempt limit, fails with LEASE_EXPIRED) up to limit
// claims whose lease ran out. A deploy whose revision is already the running active pointer gets
// one extra attempt (ACTIVE_REVISION_RECOVERY) instead of failing.
func RecoverExpiredClaims(ctx context.Context, db DBTX, limit, maxAttempts int, jitter *float64) ([]RecoveredWork, error) {
	rows, err := db.Query(ctx, `
WITH expired AS (
  SELECT w.idempotency_key, w.attempt_count,
         (w.revision_id IS NOT NULL AND w.idempotency_key LIKE 'agent_revision:%:reconcile'
          AND w.attempt_count >= $2
          AND EXISTS (SELECT 1 FROM occ.agents a JOIN occ.namespaces n ON n.id = a.namespace_id
                       WHERE a.id = w.agent_id AND a.active_revision_id = w.revision_id
                         AND a.desired_runtime_state = 'running' AND n.status = 'ready' AND n.deleted_at IS NULL)
          AND NOT EXISTS (SELECT 1 FROM occ.audit_events e
                           WHERE e.action = 'reconcile' AND (e.details ->> 'workId') = w.idempotency_key
                             AND (e.details ->> 'reasonCode') = 'ACTIVE_REVISION_RECOVERY')) AS recovering
    FROM occ.controller_work w
   WHERE w.state = 'claimed' AND w.lease_expires_at <= clock_timestamp()
   ORDER BY w.lease_expires_at, w.idempotency_key
   FOR NO KEY UPDATE OF w SKIP LOCKED
   LIMIT $1),
updated AS (
  UPDATE occ.controller_work w
     SET state = CASE WHEN e.attempt_count >= $2 AND NOT e.recovering THEN 'failed_permanent' ELSE 'queued' END,
         completed_at = CASE WHEN e.attempt_count >= $2 AND NOT e.recovering THEN clock_timestamp() END,
         reason_code = CASE WHEN e.attempt_count >= $2 AND NOT e.recovering THEN 'LEASE_EXPIRED' END,
         result_data = NULL,
         attempt_count = CASE WHEN e.recovering THEN $2 - 1 ELSE w.attempt_count END,
         available_at = CASE
           WHEN e.attempt_count >= $2 AND NOT e.recovering THEN w.available_at
           WHEN e.recovering THEN clock_timestamp() + 1000 * COALESCE($3::float8, random()) * interval '1 millisecond'
           ELSE clock_timestamp() + `+backoff("w.attempt_count", "$3::float8")+` * interval '1 millisecond' END,
         claim_token = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
    FROM expired e
   WHERE w.idempotency_key = e.idempotency_key
  RETURNING w.*, CASE WHEN e.recovering THEN 'ACTIVE_REVISION_RECOVERY' ELSE 'LEASE_EXPIRED' END AS reason,
            'failure'::text AS outcome, NULL::text AS refusal, NULL::boolean AS stop_yielded),
failed_namespace AS (`+namespaceFailedUpdate("updated")+`),
evidence AS (`+evidenceInsert("updated")+`)
SELECT idempotency_key, state, reason FROM updated ORDER BY idempotency_key`, limit, maxAttempts, jitter)
	if err != nil {
		return nil, err
	}
	return collectRecovered(rows)
}

// FailExhaustedQueued ends queued rows at or above the attempt limit (the operator lowered
// OCC_WORKER_MAX_ATTEMPTS) with MAX_ATTEMPTS_EXHAUSTED. `attempt_count > 0` (implied by the
// limit, which is at least 1) is spelled out so that the planner can use the partial index
// controller_work_queued_attempts.
func FailExhaustedQueued(ctx context.Context, db DBTX, limit, maxAttempts int) ([]RecoveredWork, error) {
	rows, err := db.Query(ctx, `
WITH exhausted AS (
  SELECT w.idempotency_key FROM occ.controller_work w
   WHERE w.state = 'queued' AND w.attempt_count >= $2 AND w.attempt_count > 0
   ORDER BY w.available_at, w.idempotency_key
   FOR NO KEY UPDATE OF w SKIP LOCKED
   LIMIT $1),
updated AS (
  UPDATE occ.controller_work w
     SET state = 'failed_permanent', completed_at = clock_timestamp(), reason_code = 'MAX_ATTEMPTS_EXHAUSTED',
         result_data = NULL, updated_at = clock_timestamp()
    FROM exhausted e
   WHERE w.idempotency_key = e.idempotency_key
  RETURNING w.*, 'MAX_ATTEMPTS_EXHAUSTED'::text AS reason, 'failure'::text AS outcome,
            NULL::text AS refusal, NULL::boolean AS stop_yielded),
failed_namespace AS (`+namespaceFailedUpdate("updated")+`),
evidence AS (`+evidenceInsert("updated")+`)
SELECT idempotency_key, state, reason FROM updated ORDER BY idempotency_key`, limit, maxAttempts)
	if err != nil {
		return nil, err
	}
	return collectRecovered(rows)
}

func collectRecovered(rows pgx.Rows) ([]RecoveredWork, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (RecoveredWork, error) {
		var w RecoveredWork
		err := r.Scan(&w.Key, &w.State, &w.ReasonCode)
		return w, err
	})
}

// PendingWork counts queued and claimed rows.
func PendingWork(ctx context.Context, db DBTX) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM occ.controller_work WHERE state IN ('queued', 'claimed')`).Scan(&n)
	return n, err
}

// ClaimableWorkWaiting reports whether claim() would find a row now; work in a lane that is
// already claimed (the caller's own included) and delayed work do not count.
func ClaimableWorkWaiting(ctx context.Context, db DBTX, maxAttempts int) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `
SELECT EXISTS (
  SELECT 1 FROM occ.controller_work w
   WHERE w.state = 'queued' AND w.available_at <= clock_timestamp() AND w.attempt_count < $1
     AND `+laneIdle+`)`,
		maxAttempts).Scan(&ok)
	return ok, err
}

// WorkAttempt is the latest evidence of one work item.
type WorkAttempt struct {
	At      time.Time
	Code    string
	Outcome string
	Refusal *string
}

// LatestWorkAttempt reads the newest evidence row bound to a work item (optionally with a code).
func LatestWorkAttempt(ctx context.Context, db DBTX, key string, code *string) (*WorkAttempt, error) {
	var a WorkAttempt
	err := db.QueryRow(ctx, `
SELECT e.occurred_at, e.details ->> 'reasonCode', e.outcome, e.details ->> 'refusal'
  FROM occ.audit_events e
 WHERE e.action = 'reconcile' AND (e.details ->> 'workId') = $1
   AND ($2::text IS NULL OR (e.details ->> 'reasonCode') = $2)
 ORDER BY e.occurred_at DESC LIMIT 1`, key, code).Scan(&a.At, &a.Code, &a.Outcome, &a.Refusal)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// unqualified drops the "w." table prefix so a column list can read a CTE.
func unqualified(columns string) string { return strings.ReplaceAll(columns, "w.", "") }

func nullableRaw(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
