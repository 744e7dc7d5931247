-- Indexes found missing by bench/cmd/scalecheck (docs/performance.md): at 10 000 Namespaces,
-- 100 000 Agents, 200 000 access bindings and 1 000 000 terminal work rows.

-- A decision reads a subject's bindings that carry no resource only for "no Namespace" and for the
-- target's Namespace (store.LoadIAMPolicy). The (subject, kind, id) indexes of 0001 cannot narrow
-- those by Namespace, so a subject with a Namespace-wide binding on every Namespace read all of
-- them on every decision.
CREATE INDEX iam_access_bindings_identity_unscoped ON occ.iam_access_bindings (identity_subject_id, namespace_id)
  WHERE identity_subject_id IS NOT NULL AND resource_kind IS NULL;
CREATE INDEX iam_access_bindings_group_unscoped ON occ.iam_access_bindings (group_subject_id, namespace_id)
  WHERE group_subject_id IS NOT NULL AND resource_kind IS NULL;

-- The backlog metric (store.WorkBacklog) reads, for every Agent, its newest revision and its newest
-- stop or delete work row. Both become index-only probes.
CREATE INDEX agent_revisions_newest ON occ.agent_revisions (agent_id, revision_number DESC) INCLUDE (id);
CREATE INDEX controller_work_agent_stops
  ON occ.controller_work (agent_id, created_at DESC, idempotency_key DESC) INCLUDE (state)
  WHERE revision_id IS NULL AND agent_target IN ('stopped', 'deleted');
-- The Agents with open stop or delete work, read once per backlog scrape as a set.
CREATE INDEX controller_work_open_stops ON occ.controller_work (agent_id)
  WHERE state IN ('queued', 'claimed') AND revision_id IS NULL AND agent_target IN ('stopped', 'deleted');
