package store

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// workPendingSQL reads the pending work; agentStatesSQL below the Agent lifecycle states.
//
// Agent lifecycle state, first match wins, from the Agent row, its newest revision's deploy work
// (key agent_revision:<rev>:reconcile) and its stop and delete work:
//
//	stopping   stop or delete work is queued or claimed
//	failed     the Agent is deleting, or stopped, and its latest stop or delete work failed permanently
//	stopping   the Agent is deleting (its delete work is not failed)
//	stopped    desired stopped and at least one revision exists
//	draft      desired stopped and never deployed (no revision)
//	deploying  desired running and the newest revision's deploy work is queued, claimed or not
//	           written yet (for example still in provisioning)
//	running    desired running and that work succeeded with REVISION_ACTIVATED or
//	           REVISION_ALREADY_ACTIVE
//	failed     desired running and that work failed permanently or succeeded without activating
//	           (the deployment status projection's "failed")
//
// A replacement deployment of a running Agent counts as deploying until it finishes; a failed
// replacement counts as failed although the previous revision may still serve (there is no
// rollback). Maintenance work does not change the state.
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

// agentStatesSQL counts Agents per lifecycle state: one pass over every Agent (about 10 µs each).
const agentStatesSQL = `
WITH open_stops AS (
  -- Agents with open stop or delete work: a small set (controller_work_open_stops, migration 0003).
  SELECT DISTINCT w.agent_id FROM occ.controller_work w
   WHERE w.state IN ('queued', 'claimed') AND w.revision_id IS NULL AND w.agent_target IN ('stopped', 'deleted')
), agent_states AS (
  SELECT CASE
           WHEN lifecycle.open_stop THEN 'stopping'
           WHEN (a.status = 'deleting' OR a.desired_runtime_state = 'stopped')
                AND lifecycle.latest_stop_state = 'failed_permanent' THEN 'failed'
           WHEN a.status = 'deleting' THEN 'stopping'
           WHEN a.desired_runtime_state = 'stopped' AND newest.id IS NOT NULL THEN 'stopped'
           WHEN a.desired_runtime_state = 'stopped' THEN 'draft'
           WHEN deploy.state IS NULL OR deploy.state IN ('queued', 'claimed') THEN 'deploying'
           WHEN deploy.state = 'succeeded'
                AND deploy.reason_code IN ('REVISION_ACTIVATED', 'REVISION_ALREADY_ACTIVE') THEN 'running'
           ELSE 'failed'
         END AS lifecycle_state
    FROM occ.agents a
    LEFT JOIN LATERAL (
      SELECT r.id
        FROM occ.agent_revisions r
       WHERE r.agent_id = a.id
       ORDER BY r.revision_number DESC
       LIMIT 1
    ) newest ON true
    -- Deploy work matters only for a live Agent that should run (the CASE reads it last). A
    -- primary-key probe per such Agent; LIMIT 1 (the key is unique) keeps the planner from turning
    -- it into a hash join over the whole work table.
    LEFT JOIN LATERAL (
      SELECT w.state, w.reason_code
        FROM occ.controller_work w
       WHERE a.status <> 'deleting' AND a.desired_runtime_state = 'running'
         AND w.idempotency_key = 'agent_revision:' || newest.id || ':reconcile'
       LIMIT 1
    ) deploy ON true
    -- Stop/delete history: whether one is open (a hashed set, read once), and the newest row only,
    -- index-only through controller_work_agent_stops (migration 0003), so the cost per Agent does
    -- not grow with its history; the newest row is read only for an Agent for which the CASE
    -- reads it (deleting or stopped).
    LEFT JOIN LATERAL (
      SELECT a.id IN (SELECT o.agent_id FROM open_stops o) AS open_stop,
             (SELECT w.state
                FROM occ.controller_work w
               WHERE (a.status = 'deleting' OR a.desired_runtime_state = 'stopped')
                 AND w.agent_id = a.id
                 AND w.revision_id IS NULL
                 AND w.agent_target IN ('stopped', 'deleted')
               ORDER BY w.created_at DESC, w.idempotency_key DESC
               LIMIT 1) AS latest_stop_state
    ) lifecycle ON true
)
SELECT count(*) FILTER (WHERE s.lifecycle_state = 'draft'),
       count(*) FILTER (WHERE s.lifecycle_state = 'deploying'),
       count(*) FILTER (WHERE s.lifecycle_state = 'running'),
       count(*) FILTER (WHERE s.lifecycle_state = 'stopping'),
       count(*) FILTER (WHERE s.lifecycle_state = 'stopped'),
       count(*) FILTER (WHERE s.lifecycle_state = 'failed')
  FROM agent_states s`

// WorkPending reads the cheap gauges: the pending work and the age of its oldest item.
func WorkPending(ctx context.Context, db DBTX) (pending int64, oldestAgeSeconds float64, err error) {
	err = db.QueryRow(ctx, workPendingSQL).Scan(&pending, &oldestAgeSeconds)
	return pending, oldestAgeSeconds, err
}

// AgentStates counts Agents per lifecycle state (every state of AgentLifecycleStates is present).
// Its cost grows with the number of Agents: the worker's metrics refresh it in the background,
// not on every scrape.
func AgentStates(ctx context.Context, db DBTX) (map[string]int64, error) {
	var draft, deploying, running, stopping, stopped, failed int64
	if err := db.QueryRow(ctx, agentStatesSQL).Scan(&draft, &deploying, &running, &stopping, &stopped, &failed); err != nil {
		return nil, err
	}
	return map[string]int64{
		AgentDraft: draft, AgentDeploying: deploying, AgentRunning: running,
		AgentStopping: stopping, AgentStopped: stopped, AgentFailed: failed,
	}, nil
}

// AgentStatesWithin runs AgentStates in a read-only transaction of its own whose statement timeout
// is timeout: the metrics pool's 1.5 s is too short for it at about 150 000 Agents.
func AgentStatesWithin(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) (map[string]int64, error) {
	var states map[string]int64
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, strconv.FormatInt(timeout.Milliseconds(), 10)); err != nil {
			return err
		}
		var err error
		states, err = AgentStates(ctx, tx)
		return err
	})
	return states, err
}

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
