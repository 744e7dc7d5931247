-- occ_agents from counters: a scrape reads six counters and the Agents changed since the worker
-- last folded, instead of deriving the lifecycle state of every Agent (1.45 s at 100 000 Agents).
--
-- Writers never touch a shared row: a trigger appends the id of an Agent whose state may have
-- changed to agent_lifecycle_changes, in the transaction that changed it. The worker folds those
-- marks (store.FoldAgentLifecycle): it recomputes each marked Agent's state, moves it between the
-- counters and deletes the marks, all in one statement under a lock only folds take. Because a
-- mark commits with its change and is deleted only by a fold that read the change, every Agent
-- without a mark has its stored state right, and a scrape adds the marked Agents' moves to the
-- counters (store.AgentStates). Decision 41 in docs/architecture.md.

-- The lifecycle state of each Agent, derived from its row, its newest revision's deploy work
-- (key agent_revision:<rev>:reconcile) and its stop and delete work; first match wins:
--
--   stopping   stop or delete work is queued or claimed
--   failed     the Agent is deleting, or stopped, and its latest stop or delete work failed permanently
--   stopping   the Agent is deleting (its delete work is not failed)
--   stopped    desired stopped and at least one revision exists
--   draft      desired stopped and never deployed (no revision)
--   deploying  desired running and the newest revision's deploy work is queued, claimed or not
--              written yet (for example still in provisioning)
--   running    desired running and that work succeeded with REVISION_ACTIVATED or
--              REVISION_ALREADY_ACTIVE
--   failed     desired running and that work failed permanently or succeeded without activating
--              (the deployment status projection's "failed")
--
-- A replacement deployment of a running Agent counts as deploying until it finishes; a failed
-- replacement counts as failed although the previous revision may still serve (there is no
-- rollback). Maintenance work does not change the state. Changing this definition needs a
-- migration that also recomputes occ.agent_lifecycle and the counters.
CREATE VIEW occ.agent_lifecycle_now AS
SELECT a.id AS agent_id,
       CASE
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
  -- Stop/delete history: whether one is open (the Agents with open stops are a small set, hashed
  -- once per statement through controller_work_open_stops), and the newest row only, index-only
  -- through controller_work_agent_stops, so the cost per Agent does not grow with its history; the
  -- newest row is read only for an Agent for which the CASE reads it (deleting or stopped).
  LEFT JOIN LATERAL (
    SELECT a.id IN (SELECT o.agent_id FROM occ.controller_work o
                     WHERE o.state IN ('queued', 'claimed') AND o.revision_id IS NULL
                       AND o.agent_target IN ('stopped', 'deleted')) AS open_stop,
           (SELECT w.state
              FROM occ.controller_work w
             WHERE (a.status = 'deleting' OR a.desired_runtime_state = 'stopped')
               AND w.agent_id = a.id
               AND w.revision_id IS NULL
               AND w.agent_target IN ('stopped', 'deleted')
             ORDER BY w.created_at DESC, w.idempotency_key DESC
             LIMIT 1) AS latest_stop_state
  ) lifecycle ON true;

-- The state each Agent was last folded in. No foreign key: the row of a deleted Agent is removed
-- by the fold that sees it gone, after its counter was decremented.
CREATE TABLE occ.agent_lifecycle (
  agent_id        text PRIMARY KEY,
  lifecycle_state text NOT NULL
                  CHECK (lifecycle_state IN ('draft', 'deploying', 'running', 'stopping', 'stopped', 'failed'))
);

-- Agents per lifecycle state as of the last fold; one row per state, written only by folds.
CREATE TABLE occ.agent_lifecycle_counts (
  lifecycle_state text PRIMARY KEY
                  CHECK (lifecycle_state IN ('draft', 'deploying', 'running', 'stopping', 'stopped', 'failed')),
  agents          bigint NOT NULL CHECK (agents >= 0)
);

-- Agents whose state may have changed since the last fold: appended by the triggers below, deleted
-- by folds. Without an index: a fold and a scrape read all of it.
CREATE TABLE occ.agent_lifecycle_changes (
  agent_id text NOT NULL
);

CREATE FUNCTION occ.note_agent_lifecycle_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF TG_TABLE_NAME = 'agents' THEN
    INSERT INTO occ.agent_lifecycle_changes (agent_id)
    VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END);
  ELSE
    INSERT INTO occ.agent_lifecycle_changes (agent_id)
    VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.agent_id ELSE NEW.agent_id END);
  END IF;
  RETURN NULL;
END
$$;

-- Creating the triggers first locks the three tables against writes until this migration commits,
-- so the backfill below reads a state no writer can change unmarked.
CREATE TRIGGER agents_lifecycle_insert_delete AFTER INSERT OR DELETE ON occ.agents
  FOR EACH ROW EXECUTE FUNCTION occ.note_agent_lifecycle_change();
CREATE TRIGGER agents_lifecycle_update AFTER UPDATE OF status, desired_runtime_state ON occ.agents
  FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.desired_runtime_state IS DISTINCT FROM NEW.desired_runtime_state)
  EXECUTE FUNCTION occ.note_agent_lifecycle_change();
CREATE TRIGGER agent_revisions_lifecycle AFTER INSERT OR DELETE ON occ.agent_revisions
  FOR EACH ROW EXECUTE FUNCTION occ.note_agent_lifecycle_change();
CREATE TRIGGER controller_work_lifecycle_insert AFTER INSERT ON occ.controller_work
  FOR EACH ROW WHEN (NEW.agent_id IS NOT NULL)
  EXECUTE FUNCTION occ.note_agent_lifecycle_change();
CREATE TRIGGER controller_work_lifecycle_delete AFTER DELETE ON occ.controller_work
  FOR EACH ROW WHEN (OLD.agent_id IS NOT NULL)
  EXECUTE FUNCTION occ.note_agent_lifecycle_change();
-- Claims, renewals and stale recovery move work between queued and claimed, which the state does
-- not distinguish: only a move to, from or between terminal states, or a new reason code (which
-- only terminal work has), is marked.
CREATE TRIGGER controller_work_lifecycle_update AFTER UPDATE OF state, reason_code ON occ.controller_work
  FOR EACH ROW
  WHEN (NEW.agent_id IS NOT NULL
        AND (OLD.reason_code IS DISTINCT FROM NEW.reason_code
             OR (OLD.state IS DISTINCT FROM NEW.state
                 AND (OLD.state IN ('succeeded', 'failed_permanent') OR NEW.state IN ('succeeded', 'failed_permanent')))))
  EXECUTE FUNCTION occ.note_agent_lifecycle_change();

INSERT INTO occ.agent_lifecycle (agent_id, lifecycle_state)
SELECT agent_id, lifecycle_state FROM occ.agent_lifecycle_now;

INSERT INTO occ.agent_lifecycle_counts (lifecycle_state, agents)
SELECT s.state, count(l.agent_id)
  FROM unnest(ARRAY['draft', 'deploying', 'running', 'stopping', 'stopped', 'failed']) AS s (state)
  LEFT JOIN occ.agent_lifecycle l ON l.lifecycle_state = s.state
 GROUP BY s.state;
