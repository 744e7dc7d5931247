-- Guided provisioning: one request that creates a Configuration and an Agent, grants the Agent's
-- ServicePrincipal operate on the Secrets it consumes, and admits its first revision. The API
-- records the request here with the ids every step will use (chosen up front, so a step repeated
-- after a crash finds its own row instead of creating a second one) and queues one work item per
-- run; the worker advances `phase` one step per transaction. The Configuration's values are staged
-- in `staged_values` only until the Configuration step has written them to the Configuration
-- Driver; that step clears them. The Agent's initial workspace files are staged in
-- `staged_workspace_files` until the Agent step has staged them with the Agent.
CREATE TABLE occ.agent_provisioning_work (
  id                   text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'apw')),
  namespace_id         text NOT NULL REFERENCES occ.namespaces (id),
  actor_id             text NOT NULL CHECK (char_length(actor_id) BETWEEN 1 AND 200),
  request_id           text NOT NULL CHECK (occ.is_prefixed_id(request_id, 'req')),
  fingerprint          text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  request              jsonb NOT NULL CHECK (jsonb_typeof(request) = 'object'),
  staged_values        jsonb CHECK (staged_values IS NULL OR jsonb_typeof(staged_values) = 'object'),
  staged_workspace_files jsonb CHECK (staged_workspace_files IS NULL OR jsonb_typeof(staged_workspace_files) = 'object'),
  status               text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'succeeded', 'failed')),
  phase                text NOT NULL DEFAULT 'configuration'
                       CHECK (phase IN ('configuration', 'agent', 'grant', 'admission', 'done')),
  run                  integer NOT NULL DEFAULT 1 CHECK (run >= 1),
  configuration_id     text NOT NULL CHECK (occ.is_prefixed_id(configuration_id, 'cfg')),
  agent_id             text NOT NULL CHECK (occ.is_prefixed_id(agent_id, 'agt')),
  service_principal_id text NOT NULL CHECK (occ.is_prefixed_id(service_principal_id, 'spn')),
  role_id              text NOT NULL CHECK (char_length(role_id) BETWEEN 1 AND 200),
  revision_id          text CHECK (occ.is_prefixed_id(revision_id, 'rev')),
  granted_secret_ids   text[] NOT NULL DEFAULT '{}',
  error_code           text CHECK (char_length(error_code) BETWEEN 1 AND 64),
  error_message        text CHECK (char_length(error_message) BETWEEN 1 AND 512),
  created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (namespace_id, actor_id, request_id),
  CONSTRAINT agent_provisioning_outcome CHECK (
    CASE status
      WHEN 'succeeded' THEN phase = 'done' AND revision_id IS NOT NULL AND error_code IS NULL
      WHEN 'failed' THEN phase <> 'done' AND error_code IS NOT NULL AND error_message IS NOT NULL
      ELSE error_code IS NULL AND error_message IS NULL END),
  CONSTRAINT agent_provisioning_values_staged CHECK (phase = 'configuration' OR staged_values IS NULL),
  CONSTRAINT agent_provisioning_files_staged CHECK (phase IN ('configuration', 'agent') OR staged_workspace_files IS NULL)
);

-- Provisioning work has no Agent yet when it starts: its lane is the Namespace, and its key names
-- the provisioning record and the run (a retry is a new run, so finished rows stay receipts).
ALTER TABLE occ.controller_work DROP CONSTRAINT controller_work_namespace_target_valid;
ALTER TABLE occ.controller_work ADD CONSTRAINT controller_work_namespace_target_valid CHECK (
    (work_kind = 'lifecycle' AND agent_id IS NULL AND revision_id IS NULL
       AND namespace_target IS NOT NULL AND agent_target IS NULL)
    OR (work_kind = 'lifecycle' AND agent_id IS NOT NULL AND revision_id IS NULL
       AND namespace_target IS NULL AND agent_target IN ('stopped', 'deleted'))
    OR (work_kind = 'lifecycle' AND agent_id IS NOT NULL AND revision_id IS NOT NULL
       AND namespace_target IS NULL AND (agent_target IS NULL OR agent_target = 'credentials_withdrawn'))
    OR (work_kind = 'lifecycle' AND agent_id IS NULL AND revision_id IS NULL
       AND namespace_target IS NULL AND agent_target IS NULL
       AND idempotency_key ~ '^agent_revision:rev_[0-9a-f-]{36}:repository_cleanup:')
    OR (work_kind = 'provisioning' AND agent_id IS NOT NULL AND revision_id IS NULL
       AND namespace_target IS NULL AND agent_target IS NULL)
    OR (work_kind = 'provisioning' AND agent_id IS NULL AND revision_id IS NULL
       AND namespace_target IS NULL AND agent_target IS NULL
       AND idempotency_key ~ '^agent_provisioning:apw_[0-9a-f-]{36}:[1-9][0-9]*$'));
