-- The IAM policy epoch: a number that changes in the same commit as any change to the IAM policy
-- tables, so that an API process may keep decision policy it has read and reuse it for as long as
-- the epoch it reads at the start of a request is the one it read the policy under (decision 42
-- in docs/architecture.md). A request that starts after a revocation committed reads the new
-- epoch and loads the policy afresh: the revocation takes effect at once on every process.
--
-- The epoch is the sum of sixteen counters. A transaction that changes the policy adds one to the
-- counter of its backend (pg_backend_pid() % 16), once, when it commits: writers that commit at
-- the same time rarely wait for each other, and each committed change still makes the sum grow.
CREATE TABLE occ.iam_policy_epoch (
  shard smallint PRIMARY KEY CHECK (shard >= 0 AND shard < 16),
  epoch bigint NOT NULL DEFAULT 0
);
INSERT INTO occ.iam_policy_epoch (shard) SELECT generate_series(0, 15);

-- Runs as a deferred constraint trigger, that is, just before the commit: the counter's row is
-- locked only for the commit itself. The transaction-local setting makes it count a transaction
-- once, however many rows it changed.
CREATE FUNCTION occ.advance_iam_policy_epoch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF current_setting('occ.iam_policy_epoch_advanced', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('occ.iam_policy_epoch_advanced', 'on', true);
  UPDATE occ.iam_policy_epoch SET epoch = epoch + 1 WHERE shard = pg_backend_pid() % 16;
  RETURN NULL;
END
$$;

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['iam_identities', 'iam_roles', 'iam_role_permissions', 'iam_groups',
                           'iam_group_memberships', 'iam_access_bindings', 'iam_restrictions'] LOOP
    EXECUTE format('CREATE CONSTRAINT TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON occ.%I
                      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                      EXECUTE FUNCTION occ.advance_iam_policy_epoch()', t || '_policy_epoch', t);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON occ.%I
                      FOR EACH STATEMENT EXECUTE FUNCTION occ.advance_iam_policy_epoch()', t || '_policy_epoch_truncate', t);
  END LOOP;
END
$$;
