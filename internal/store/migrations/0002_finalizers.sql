-- The only paths that delete Agents, revisions and work rows, or replace a work row's actor. They run
-- with the owner's rights (SECURITY DEFINER) so that the application role needs no DELETE on
-- controller_work, agent_revisions or agents. Each checks its own preconditions under row locks.

-- Finalizes a deleted Agent for the current claim of its `agent:<id>:reconcile:deleted` work.
-- Returns true when done, NULL when provisioning or repository cleanup is still open (the worker
-- defers with REPOSITORY_CLEANUP_PENDING), and false when the claim or the Agent state is gone
-- (the worker treats that as a lost claim).
CREATE FUNCTION occ.finalize_agent_deletion(
  p_namespace_id text, p_agent_id text, p_work_key text, p_claim_token uuid)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  work  occ.controller_work;
  agent occ.agents;
  removed_bindings text[];
  removed_restrictions text[];
BEGIN
  SELECT * INTO work FROM occ.controller_work w
   WHERE w.idempotency_key = p_work_key AND w.state = 'claimed' AND w.claim_token = p_claim_token
     AND w.lease_expires_at > clock_timestamp() AND w.work_kind = 'lifecycle'
     AND w.namespace_id = p_namespace_id AND w.agent_id = p_agent_id
     AND w.revision_id IS NULL AND w.agent_target = 'deleted'
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;

  SELECT * INTO agent FROM occ.agents a
   WHERE a.namespace_id = p_namespace_id AND a.id = p_agent_id FOR UPDATE;
  IF NOT FOUND OR agent.status <> 'deleting' OR agent.desired_runtime_state <> 'stopped' THEN
    RETURN false;
  END IF;

  IF EXISTS (SELECT 1 FROM occ.controller_work w
              WHERE w.agent_id = p_agent_id AND w.idempotency_key <> p_work_key
                AND w.state IN ('queued', 'claimed')
                AND (w.work_kind = 'provisioning' OR w.idempotency_key LIKE 'agent_revision:%:repository_cleanup:%')) THEN
    RETURN NULL;
  END IF;

  PERFORM set_config('occ.finalizing_agent', p_agent_id, true);

  UPDATE occ.agents SET active_revision_id = NULL, updated_at = clock_timestamp() WHERE id = p_agent_id;

  WITH removed AS (
    DELETE FROM occ.iam_access_bindings b
     WHERE b.identity_subject_id = agent.service_principal_id
        OR (b.resource_kind = 'agent' AND b.resource_id = p_agent_id)
        OR (b.resource_kind = 'agent_revision'
            AND b.resource_id IN (SELECT r.id FROM occ.agent_revisions r WHERE r.agent_id = p_agent_id))
    RETURNING b.id)
  SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO removed_bindings FROM removed;

  WITH removed AS (
    DELETE FROM occ.iam_restrictions x
     WHERE (x.resource_kind = 'agent' AND x.resource_id = p_agent_id)
        OR (x.resource_kind = 'agent_revision'
            AND x.resource_id IN (SELECT r.id FROM occ.agent_revisions r WHERE r.agent_id = p_agent_id))
    RETURNING x.id)
  SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO removed_restrictions FROM removed;

  DELETE FROM occ.service_keys k WHERE k.service_principal_id = agent.service_principal_id;

  INSERT INTO occ.audit_events (id, kind, actor_id, action, namespace_id, resource_kind, resource_id, outcome, details)
  VALUES ('aud_' || gen_random_uuid()::text, 'mutation', work.actor_id, 'openclaw.agents.lifecycle.delete',
          p_namespace_id, 'agent', p_agent_id, 'success',
          jsonb_build_object('reasonCode', 'AGENT_DELETED', 'attemptCount', work.attempt_count,
                             'workId', p_work_key,
                             'accessBindingsRemovedOnCompletion', to_jsonb(removed_bindings),
                             'restrictionsRemovedOnCompletion', to_jsonb(removed_restrictions)));

  DELETE FROM occ.controller_work w WHERE w.agent_id = p_agent_id;
  DELETE FROM occ.agent_revisions r WHERE r.agent_id = p_agent_id;
  DELETE FROM occ.agents a WHERE a.id = p_agent_id;
  DELETE FROM occ.iam_identities i WHERE i.id = agent.service_principal_id;

  PERFORM set_config('occ.finalizing_agent', '', true);
  RETURN true;
END
$$;

-- Requeues a failed_permanent Agent deletion. p_initiator_id must be the work's current actor
-- (compare-and-set); a different p_actor_id is a takeover and replaces the actor. Returns true
-- when the work was requeued, false when it is not a failed deletion of a deleting Agent.
CREATE FUNCTION occ.retry_failed_agent_deletion(
  p_namespace_id text, p_agent_id text, p_initiator_id text, p_actor_id text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  work_key text := 'agent:' || p_agent_id || ':reconcile:deleted';
BEGIN
  IF p_actor_id IS NULL OR char_length(p_actor_id) NOT BETWEEN 1 AND 200 THEN
    RETURN false;
  END IF;
  PERFORM 1 FROM occ.agents a
   WHERE a.namespace_id = p_namespace_id AND a.id = p_agent_id
     AND a.status = 'deleting' AND a.desired_runtime_state = 'stopped'
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM 1 FROM occ.controller_work w
   WHERE w.idempotency_key = work_key AND w.namespace_id = p_namespace_id AND w.agent_id = p_agent_id
     AND w.state = 'failed_permanent' AND w.actor_id = p_initiator_id
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM set_config('occ.work_takeover', work_key, true);
  UPDATE occ.controller_work SET
    state = 'queued', attempt_count = 0, available_at = clock_timestamp(), completed_at = NULL,
    reason_code = NULL, result_data = NULL, actor_id = p_actor_id, updated_at = clock_timestamp()
   WHERE idempotency_key = work_key;
  PERFORM set_config('occ.work_takeover', '', true);
  RETURN true;
END
$$;

-- Requeues a failed_permanent Namespace teardown; same contract as retry_failed_agent_deletion.
-- The original created_at is kept, so the original convergence deadline still applies.
CREATE FUNCTION occ.retry_failed_namespace_deletion(
  p_namespace_id text, p_initiator_id text, p_actor_id text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  work_key text := 'namespace:' || p_namespace_id || ':reconcile:deleted';
BEGIN
  IF p_actor_id IS NULL OR char_length(p_actor_id) NOT BETWEEN 1 AND 200 THEN
    RETURN false;
  END IF;
  PERFORM 1 FROM occ.namespaces n
   WHERE n.id = p_namespace_id AND n.status = 'deleting' AND n.deleted_at IS NULL
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM 1 FROM occ.controller_work w
   WHERE w.idempotency_key = work_key AND w.namespace_id = p_namespace_id
     AND w.state = 'failed_permanent' AND w.actor_id = p_initiator_id
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM set_config('occ.work_takeover', work_key, true);
  UPDATE occ.controller_work SET
    state = 'queued', attempt_count = 0, available_at = clock_timestamp(), completed_at = NULL,
    reason_code = NULL, result_data = NULL, actor_id = p_actor_id, updated_at = clock_timestamp()
   WHERE idempotency_key = work_key;
  PERFORM set_config('occ.work_takeover', '', true);
  RETURN true;
END
$$;

REVOKE ALL ON FUNCTION occ.finalize_agent_deletion(text, text, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION occ.retry_failed_agent_deletion(text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION occ.retry_failed_namespace_deletion(text, text, text) FROM PUBLIC;
