-- A lease renewal rewrites only lease_expires_at and updated_at. While lease_expires_at was indexed
-- (controller_work_expired) no renewal could be a heap-only (HOT) update: each one inserted a new
-- entry into every index of the table, and a worker renews every claim at least twice per pass
-- (before its external call and at the start of its finalization). Stale recovery reads only
-- claimed rows, which are at most the workers' combined concurrency, through the partial index
-- controller_work_one_claim_per_resource (also `state = 'claimed'`); docs/performance.md has the
-- measurement.
DROP INDEX occ.controller_work_expired;

-- Room on each page for the new version of a renewed row, so a renewal stays on its page.
ALTER TABLE occ.controller_work SET (fillfactor = 80);

-- The claim must read the queue through controller_work_ready, in its order, and stop after a few
-- rows. Whenever the statistics said few rows were queued (taken before a burst of work, or while
-- the table held mostly finished receipts), the planner read every queued row through this index
-- instead, anti-joined each with the claimed lanes and sorted them: 74 ms per claim at 1 700
-- queued rows. With `attempt_count > 0` in its predicate no claim can use it; stale recovery,
-- which asks for `attempt_count >= limit` (at least 1), still can.
DROP INDEX occ.controller_work_queued_attempts;
CREATE INDEX controller_work_queued_attempts ON occ.controller_work (attempt_count)
  WHERE state = 'queued' AND attempt_count > 0;
