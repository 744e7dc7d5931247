-- A transaction that says it keeps the IAM policy (occ.iam_policy_kept = 'on', set by
-- store.PipelinedTx.KeepPolicy with its BEGIN) reuses authorization decisions made under the
-- policy epoch it read, as a read does (decision 49 in docs/architecture.md). That is correct only
-- if nothing in the same transaction changed the policy, so PostgreSQL refuses such a change: any
-- write to a policy table in such a transaction fails, and the transaction with it.
CREATE FUNCTION occ.refuse_policy_change_where_kept() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF current_setting('occ.iam_policy_kept', true) = 'on' THEN
    RAISE EXCEPTION 'occ: the IAM policy table % cannot change in a transaction that keeps the policy', TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END
$$;

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['iam_identities', 'iam_roles', 'iam_role_permissions', 'iam_groups',
                           'iam_group_memberships', 'iam_access_bindings', 'iam_restrictions'] LOOP
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON occ.%I
                      FOR EACH STATEMENT EXECUTE FUNCTION occ.refuse_policy_change_where_kept()',
                   t || '_policy_kept', t);
  END LOOP;
END
$$;
