-- A CHECK constraint that calls a SQL-language function costs every statement that writes the
-- table a parse of the function's body: PostgreSQL tries to inline it when it prepares the
-- constraint, once per statement, whether or not a row then calls it, and either inlines it or
-- gives up and plans the body on the first call. For controller_work_result_valid that was most of
-- the cost of a claim, a lease renewal or a transition: a one-row lease renewal took 0.45-0.55 ms
-- with the constraint and 0.25-0.3 ms without it (pgbench, docs/performance.md). PL/pgSQL
-- functions are never inlined and keep their plans for the session, so the value-rule helpers the
-- constraints call become PL/pgSQL with the same bodies, arguments, strictness and volatility:
-- they accept exactly what they accepted. (`#variable_conflict use_column` keeps the SQL rule
-- that a column wins over an argument of the same name.)

CREATE OR REPLACE FUNCTION occ.is_prefixed_id(value text, prefix text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
#variable_conflict use_column
BEGIN
  RETURN value ~ ('^' || prefix || '_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$');
END
$$;

CREATE OR REPLACE FUNCTION occ.is_valid_name(value text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
#variable_conflict use_column
BEGIN
  RETURN char_length(value) BETWEEN 1 AND 200
     AND value !~ '^\s' AND value !~ '\s$'
     AND value !~ '[\x01-\x1f\x7f-\x9f\u2028\u2029]'
     AND value !~ '[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]';
END
$$;

CREATE OR REPLACE FUNCTION occ.is_opaque_id(value text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
#variable_conflict use_column
BEGIN
  RETURN char_length(value) BETWEEN 1 AND 200 AND value !~ '[\x01-\x20\x7f-\x9f]';
END
$$;

CREATE OR REPLACE FUNCTION occ.is_runtime_token(value jsonb) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
#variable_conflict use_column
BEGIN
  RETURN jsonb_typeof(value) = 'string' AND (value #>> '{}') ~ '^[A-Za-z0-9._~:@-]{1,64}$';
END
$$;

CREATE OR REPLACE FUNCTION occ.is_runtime_failure(value jsonb, probe boolean) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
#variable_conflict use_column
BEGIN
  RETURN jsonb_typeof(value) = 'object'
     AND value ?& ARRAY['component', 'check', 'checkedAt', 'code']
     AND (SELECT count(*) FROM jsonb_object_keys(value) k
           WHERE k NOT IN ('component', 'check', 'checkedAt', 'code', 'cause')) = 0
     AND occ.is_runtime_token(value -> 'component')
     AND occ.is_runtime_token(value -> 'check')
     AND occ.is_runtime_token(value -> 'code')
     AND occ.is_iso_timestamp(value -> 'checkedAt')
     AND (CASE WHEN probe
               THEN value ->> 'code' = 'MODEL_PROBE_FAILED'
                    AND (NOT value ? 'cause' OR (
                          jsonb_typeof(value -> 'cause') = 'object'
                          AND (value -> 'cause') ? 'kind'
                          AND occ.is_runtime_token(value -> 'cause' -> 'kind')
                          AND (SELECT count(*) FROM jsonb_object_keys(value -> 'cause') k
                                WHERE k NOT IN ('kind', 'detail')) = 0
                          AND (NOT (value -> 'cause') ? 'detail'
                               OR (jsonb_typeof(value -> 'cause' -> 'detail') = 'string'
                                   AND char_length(value -> 'cause' ->> 'detail') BETWEEN 1 AND 256))))
               ELSE NOT value ? 'cause' END);
END
$$;

CREATE OR REPLACE FUNCTION occ.is_valid_work_result(state text, reason_code text, result_data jsonb) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
#variable_conflict use_column
BEGIN
  RETURN CASE
    WHEN result_data IS NULL THEN true
    WHEN state = 'failed_permanent' AND reason_code = 'CONVERGENCE_DEADLINE_EXCEEDED' THEN
      jsonb_typeof(result_data) = 'object'
      AND result_data ? 'timeoutMs'
      AND (SELECT count(*) FROM jsonb_object_keys(result_data) k WHERE k NOT IN ('timeoutMs', 'runtimeFailure')) = 0
      AND jsonb_typeof(result_data -> 'timeoutMs') = 'number'
      AND (result_data ->> 'timeoutMs') ~ '^[1-9][0-9]{0,15}$'
      AND (result_data ->> 'timeoutMs')::numeric <= 9007199254740991
      AND (NOT result_data ? 'runtimeFailure' OR occ.is_runtime_failure(result_data -> 'runtimeFailure', false))
    WHEN state = 'failed_permanent' AND reason_code = 'RUNTIME_MODEL_PROBE_FAILED' THEN
      jsonb_typeof(result_data) = 'object'
      AND (SELECT array_agg(k) FROM jsonb_object_keys(result_data) k) = ARRAY['runtimeFailure']
      AND occ.is_runtime_failure(result_data -> 'runtimeFailure', true)
    WHEN state = 'succeeded' AND reason_code IN ('REVISION_ACTIVATED', 'REVISION_ALREADY_ACTIVE') THEN
      jsonb_typeof(result_data) = 'object'
      AND (SELECT array_agg(k) FROM jsonb_object_keys(result_data) k) = ARRAY['warnings']
      AND jsonb_typeof(result_data -> 'warnings') = 'array'
      AND NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(result_data -> 'warnings') w
         WHERE jsonb_typeof(w) <> 'object'
            OR (SELECT count(*) FROM jsonb_object_keys(w) k WHERE k NOT IN ('code', 'pluginId')) <> 0
            OR w ->> 'code' IS NULL OR w ->> 'code' NOT IN ('PLUGIN_INSTALL_FAILED', 'PLUGIN_AUTH_REQUIRED')
            OR jsonb_typeof(w -> 'pluginId') IS DISTINCT FROM 'string'
            OR (w ->> 'pluginId') !~ '^[A-Za-z0-9._~:@-]{1,253}$')
      AND (SELECT count(DISTINCT w ->> 'pluginId') = count(*)
             FROM jsonb_array_elements(result_data -> 'warnings') w)
    ELSE false
  END;
END
$$;

-- controller_work_result_valid also tests the common case, a row without result data, before it
-- calls its function.
ALTER TABLE occ.controller_work
  DROP CONSTRAINT controller_work_result_valid,
  ADD CONSTRAINT controller_work_result_valid
    CHECK (result_data IS NULL OR occ.is_valid_work_result(state, reason_code, result_data));
