package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Agent lifecycle states of the occ_agents gauge.
const (
	AgentDraft     = "draft"
	AgentDeploying = "deploying"
	AgentRunning   = "running"
	AgentStopping  = "stopping"
	AgentStopped   = "stopped"
	AgentFailed    = "failed"
)

// AgentLifecycleStates lists every lifecycle state in a stable order.
func AgentLifecycleStates() []string {
	return []string{AgentDraft, AgentDeploying, AgentRunning, AgentStopping, AgentStopped, AgentFailed}
}

// Backlog is one snapshot of the worker gauges.
type Backlog struct {
	// Pending counts controller work that is queued or claimed, including delayed retries.
	Pending int64
	// OldestPendingAgeSeconds is the age of the oldest pending work from its admission
	// (created_at); 0 when nothing is pending, never negative.
	OldestPendingAgeSeconds float64
	// Agents counts Agents per lifecycle state; every state of AgentLifecycleStates is present.
	Agents map[string]int64
}

// workPendingSQL reads the pending work and the age of its oldest item.
const workPendingSQL = `
WITH pending AS (
  -- One branch per state, so each can use that state's partial index.
  SELECT coalesce(sum(parts.n), 0)::bigint AS n, min(parts.oldest) AS oldest
    FROM (SELECT count(*) AS n, min(created_at) AS oldest FROM occ.controller_work WHERE state = 'queued'
          UNION ALL
          SELECT count(*), min(created_at) FROM occ.controller_work WHERE state = 'claimed') parts
)
SELECT p.n,
       CASE WHEN p.oldest IS NULL THEN 0
            ELSE greatest(extract(epoch FROM clock_timestamp() - p.oldest), 0)::float8 END
  FROM pending p`

// The Agent lifecycle state is defined once, by the view occ.agent_lifecycle_now (migration
// 0012). occ.agent_lifecycle holds each Agent's state as of the last fold, occ.agent_lifecycle_counts
// the Agents per state as of the last fold, and occ.agent_lifecycle_changes the Agents whose state
// may have moved since (appended by triggers in the transactions that changed them).
//
// agentMovesSQL follows a CTE named changed (the marked Agent ids, duplicates allowed): moves holds
// each marked Agent whose state differs from its folded one (was is NULL for an Agent never
// folded, now is NULL for one that is gone), deltas the resulting change of each counter. Both
// lookups are per marked Agent (LIMIT 1 keeps the planner from joining the view with every
// Agent), so the cost follows the marks, whatever the statistics say.
const agentMovesSQL = `
moves AS (
  SELECT c.agent_id, prev.lifecycle_state AS was, cur.lifecycle_state AS now
    FROM (SELECT DISTINCT agent_id FROM changed) c
    LEFT JOIN LATERAL (
      SELECT n.lifecycle_state FROM occ.agent_lifecycle_now n WHERE n.agent_id = c.agent_id LIMIT 1
    ) cur ON true
    LEFT JOIN LATERAL (
      SELECT l.lifecycle_state FROM occ.agent_lifecycle l WHERE l.agent_id = c.agent_id LIMIT 1
    ) prev ON true
   WHERE cur.lifecycle_state IS DISTINCT FROM prev.lifecycle_state
), deltas AS (
  SELECT m.lifecycle_state, sum(m.delta)::bigint AS delta
    FROM (SELECT was AS lifecycle_state, -1 AS delta FROM moves WHERE was IS NOT NULL
          UNION ALL
          SELECT now, 1 FROM moves WHERE now IS NOT NULL) m
   GROUP BY m.lifecycle_state
)`

// agentStatesSQL reads the counters plus the moves of the Agents marked since the last fold: its
// cost follows the changes since that fold, not the number of Agents.
const agentStatesSQL = `
WITH changed AS (
  SELECT agent_id FROM occ.agent_lifecycle_changes
), ` + agentMovesSQL + `
SELECT c.lifecycle_state, c.agents + coalesce(d.delta, 0)
  FROM occ.agent_lifecycle_counts c
  LEFT JOIN deltas d ON d.lifecycle_state = c.lifecycle_state`

// foldAgentLifecycleSQL deletes the marks it can see and applies their moves to occ.agent_lifecycle
// and the counters, in one statement and so from one snapshot: a mark committed after it stays for
// the next fold, and each change it read had its mark deleted here. Folds must not overlap (see
// FoldAgentLifecycle).
const foldAgentLifecycleSQL = `
WITH changed AS (
  DELETE FROM occ.agent_lifecycle_changes RETURNING agent_id
), ` + agentMovesSQL + `, stored AS (
  INSERT INTO occ.agent_lifecycle (agent_id, lifecycle_state)
  SELECT m.agent_id, m.now FROM moves m WHERE m.now IS NOT NULL
  ON CONFLICT (agent_id) DO UPDATE SET lifecycle_state = excluded.lifecycle_state
), removed AS (
  DELETE FROM occ.agent_lifecycle l USING moves m WHERE l.agent_id = m.agent_id AND m.now IS NULL
), counted AS (
  UPDATE occ.agent_lifecycle_counts c SET agents = c.agents + d.delta
    FROM deltas d
   WHERE c.lifecycle_state = d.lifecycle_state AND d.delta <> 0
)
SELECT (SELECT count(*) FROM changed), (SELECT count(*) FROM moves)`

// recountAgentStatesSQL derives every Agent's state: one pass over every Agent (about 10 µs each).
const recountAgentStatesSQL = `
SELECT n.lifecycle_state, count(*) FROM occ.agent_lifecycle_now n GROUP BY n.lifecycle_state`

// WorkPending reads the cheap gauges: the pending work and the age of its oldest item.
func WorkPending(ctx context.Context, db DBTX) (pending int64, oldestAgeSeconds float64, err error) {
	err = db.QueryRow(ctx, workPendingSQL).Scan(&pending, &oldestAgeSeconds)
	return pending, oldestAgeSeconds, err
}

// AgentStates counts Agents per lifecycle state (every state of AgentLifecycleStates is present),
// from the counters and the changes since the last fold: one read-only statement whose cost does
// not grow with the number of Agents.
func AgentStates(ctx context.Context, db DBTX) (map[string]int64, error) {
	return agentStateCounts(ctx, db, agentStatesSQL)
}

// RecountAgentStates derives the same counts from every Agent's rows. Its cost grows with the
// number of Agents; it is the reference the counters are checked against.
func RecountAgentStates(ctx context.Context, db DBTX) (map[string]int64, error) {
	return agentStateCounts(ctx, db, recountAgentStatesSQL)
}

func agentStateCounts(ctx context.Context, db DBTX, sql string) (map[string]int64, error) {
	states := map[string]int64{}
	for _, s := range AgentLifecycleStates() {
		states[s] = 0
	}
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	var state string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error {
		if _, ok := states[state]; !ok {
			return fmt.Errorf("store: unknown Agent lifecycle state %q", state)
		}
		states[state] = n
		return nil
	}); err != nil {
		return nil, err
	}
	return states, nil
}

// AgentLifecycleFold says what one FoldAgentLifecycle did.
type AgentLifecycleFold struct {
	Changes int64 // marks folded (an Agent changed twice has two)
	Moves   int64 // Agents whose state moved, appeared or disappeared
	Busy    bool  // another fold held the lock: nothing was done
}

// FoldAgentLifecycle moves the Agents changed since the last fold between the counters and
// deletes their marks, in a transaction of its own. Folds of several workers take turns on a lock
// only folds take (EXCLUSIVE on the counters, which reads do not wait for); the fold statement
// starts after the lock is held, so it sees what the previous fold committed. When another fold
// holds the lock this one does nothing (Busy) rather than wait: a worker stopped in the middle of
// a fold must not hold a connection of every other worker.
func FoldAgentLifecycle(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}) (AgentLifecycleFold, error) {
	var f AgentLifecycleFold
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE occ.agent_lifecycle_counts IN EXCLUSIVE MODE NOWAIT`); err != nil {
			if code, _ := ServerErrorCode(err); code == "55P03" {
				f.Busy = true
				return errFoldBusy
			}
			return err
		}
		return tx.QueryRow(ctx, foldAgentLifecycleSQL).Scan(&f.Changes, &f.Moves)
	})
	if errors.Is(err, errFoldBusy) {
		err = nil
	}
	return f, err
}

// errFoldBusy rolls back a fold that found the lock taken.
var errFoldBusy = errors.New("store: another fold holds the lock")

// WorkBacklog reads every worker gauge at once (WorkPending, then AgentStates).
func WorkBacklog(ctx context.Context, db DBTX) (Backlog, error) {
	var b Backlog
	var err error
	if b.Pending, b.OldestPendingAgeSeconds, err = WorkPending(ctx, db); err != nil {
		return Backlog{}, err
	}
	if b.Agents, err = AgentStates(ctx, db); err != nil {
		return Backlog{}, err
	}
	return b, nil
}
