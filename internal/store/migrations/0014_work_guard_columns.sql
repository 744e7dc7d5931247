-- The guard on controller_work's frozen columns ran for every update, although claims, renewals
-- and transitions (three updates or more per work item) never name those columns. An UPDATE can
-- change a column only by naming it in SET (no other BEFORE trigger on the table rewrites NEW),
-- so the guard now fires only for updates that name one of them; what it refuses is unchanged.
DROP TRIGGER controller_work_guard ON occ.controller_work;
CREATE TRIGGER controller_work_guard
  BEFORE UPDATE OF idempotency_key, work_kind, namespace_id, agent_id, revision_id, namespace_target,
                   agent_target, created_at, actor_id
  ON occ.controller_work
  FOR EACH ROW EXECUTE FUNCTION occ.controller_work_guard();
