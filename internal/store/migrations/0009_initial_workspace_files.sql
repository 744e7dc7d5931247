-- Initial workspace files staged with an Agent at creation (AGENTS.md, SOUL.md, IDENTITY.md,
-- USER.md). They live apart from the Agent row, its Configuration and the audit log, so no read
-- of those can return them. The first deploy moves them into its revision snapshot and deletes the
-- row in the same transaction, so later revisions never carry them; deleting the Agent deletes a
-- row never deployed.
CREATE TABLE occ.agent_initial_workspace_files (
  agent_id     text PRIMARY KEY,
  namespace_id text NOT NULL,
  files        jsonb NOT NULL CHECK (jsonb_typeof(files) = 'object' AND files <> '{}'::jsonb),
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  FOREIGN KEY (namespace_id, agent_id) REFERENCES occ.agents (namespace_id, id) ON DELETE CASCADE
);
