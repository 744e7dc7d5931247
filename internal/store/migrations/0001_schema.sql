-- Schema occ: every table of the first release, with the constraints that make illegal states
-- unrepresentable even for a buggy caller. Privileges for the application role live in
-- privileges.sql, which `occ migrate` re-applies on every run.

CREATE SCHEMA IF NOT EXISTS occ;

-- ---------------------------------------------------------------------------------------------
-- Shared value rules (also enforced by the application; the database is the last line).
-- ---------------------------------------------------------------------------------------------

-- <prefix>_<lowercase uuidv4>
CREATE FUNCTION occ.is_prefixed_id(value text, prefix text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT value ~ ('^' || prefix || '_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')
$$;

-- The Name rule: 1..200 code points, no surrounding whitespace, no C0, DEL, C1, U+2028 or U+2029.
CREATE FUNCTION occ.is_valid_name(value text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT char_length(value) BETWEEN 1 AND 200
     AND value !~ '^\s' AND value !~ '\s$'
     AND value !~ '[\x01-\x1f\x7f-\x9f\u2028\u2029]'
$$;

-- Opaque identifiers (IAM roles, bindings, groups, restrictions): 1..200 printable characters.
CREATE FUNCTION occ.is_opaque_id(value text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT char_length(value) BETWEEN 1 AND 200 AND value !~ '[\x01-\x20\x7f-\x9f]'
$$;

CREATE FUNCTION occ.reject_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% on occ.% is not allowed', TG_OP, TG_TABLE_NAME USING ERRCODE = '55000';
END
$$;

-- ---------------------------------------------------------------------------------------------
-- Installation (singleton)
-- ---------------------------------------------------------------------------------------------

CREATE TABLE occ.installation (
  id         text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'ins')),
  name       text COLLATE "C" NOT NULL CHECK (occ.is_valid_name(name)),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE UNIQUE INDEX installation_one_row ON occ.installation ((true));

CREATE FUNCTION occ.installation_id_is_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id THEN
    RAISE EXCEPTION 'installation id is immutable' USING ERRCODE = '55000';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER installation_id_immutable BEFORE UPDATE ON occ.installation
  FOR EACH ROW EXECUTE FUNCTION occ.installation_id_is_immutable();
CREATE TRIGGER installation_no_delete BEFORE DELETE ON occ.installation
  FOR EACH ROW EXECUTE FUNCTION occ.reject_change();

-- ---------------------------------------------------------------------------------------------
-- Namespaces
-- ---------------------------------------------------------------------------------------------

CREATE TABLE occ.namespaces (
  id                 text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'ns')),
  name               text COLLATE "C" NOT NULL UNIQUE CHECK (occ.is_valid_name(name)),
  status             text NOT NULL DEFAULT 'provisioning'
                     CHECK (status IN ('provisioning', 'ready', 'failed', 'deleting')),
  existing_namespace text CHECK (existing_namespace ~ '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'),
  deleted_at         timestamptz,
  created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT namespaces_tombstone_valid
    CHECK (deleted_at IS NULL OR (status = 'deleting' AND deleted_at >= created_at))
);
-- An adopted Kubernetes namespace belongs to at most one live Namespace.
CREATE UNIQUE INDEX namespaces_existing_namespace_live
  ON occ.namespaces (existing_namespace) WHERE existing_namespace IS NOT NULL AND deleted_at IS NULL;

CREATE FUNCTION occ.validate_namespace_lifecycle() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.name IS DISTINCT FROM OLD.name
     OR NEW.existing_namespace IS DISTINCT FROM OLD.existing_namespace
     OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
    RAISE EXCEPTION 'namespace identity is immutable' USING ERRCODE = '55000';
  END IF;
  IF OLD.deleted_at IS NOT NULL THEN
    RAISE EXCEPTION 'namespace % is tombstoned', OLD.id USING ERRCODE = '55000';
  END IF;
  IF NEW.status IS DISTINCT FROM OLD.status AND NOT (
       (OLD.status = 'provisioning' AND NEW.status IN ('ready', 'failed', 'deleting'))
    OR (OLD.status IN ('ready', 'failed') AND NEW.status = 'deleting')) THEN
    RAISE EXCEPTION 'namespace status transition % -> % is not allowed', OLD.status, NEW.status
      USING ERRCODE = '23514';
  END IF;
  IF NEW.deleted_at IS NOT NULL THEN
    IF NEW.status <> 'deleting' THEN
      RAISE EXCEPTION 'only a deleting namespace can be tombstoned' USING ERRCODE = '23514';
    END IF;
    IF EXISTS (SELECT 1 FROM occ.agents a WHERE a.namespace_id = NEW.id) THEN
      RAISE EXCEPTION 'namespace % still has agents', NEW.id USING ERRCODE = '23514';
    END IF;
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER validate_namespace_lifecycle BEFORE UPDATE ON occ.namespaces
  FOR EACH ROW EXECUTE FUNCTION occ.validate_namespace_lifecycle();
CREATE TRIGGER namespaces_no_delete BEFORE DELETE ON occ.namespaces
  FOR EACH ROW EXECUTE FUNCTION occ.reject_change();

-- ---------------------------------------------------------------------------------------------
-- IAM: identities, roles, bindings, groups, memberships, restrictions
-- ---------------------------------------------------------------------------------------------

CREATE TABLE occ.iam_identities (
  id           text PRIMARY KEY,
  kind         text NOT NULL CHECK (kind IN ('principal', 'service_principal')),
  namespace_id text REFERENCES occ.namespaces (id),
  agent_id     text UNIQUE,
  issuer       text,
  subject      text,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT iam_identities_shape CHECK (
    (kind = 'principal' AND occ.is_prefixed_id(id, 'prn') AND namespace_id IS NULL AND agent_id IS NULL
       AND char_length(issuer) BETWEEN 1 AND 512 AND char_length(subject) BETWEEN 1 AND 512)
    OR
    (kind = 'service_principal' AND occ.is_prefixed_id(id, 'spn') AND issuer IS NULL AND subject IS NULL
       AND (agent_id IS NULL OR (namespace_id IS NOT NULL AND occ.is_prefixed_id(agent_id, 'agt'))))
  ),
  CONSTRAINT iam_identities_issuer_subject UNIQUE (issuer, subject)
);
CREATE INDEX iam_identities_namespace ON occ.iam_identities (namespace_id) WHERE namespace_id IS NOT NULL;

CREATE TABLE occ.iam_roles (
  id           text PRIMARY KEY CHECK (occ.is_opaque_id(id)),
  namespace_id text REFERENCES occ.namespaces (id),
  name         text COLLATE "C" CHECK (name IS NULL OR occ.is_valid_name(name)),
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX iam_roles_namespace ON occ.iam_roles (namespace_id) WHERE namespace_id IS NOT NULL;

CREATE TABLE occ.iam_role_permissions (
  role_id       text NOT NULL REFERENCES occ.iam_roles (id) ON DELETE CASCADE,
  action        text NOT NULL CHECK (action IN
                  ('create', 'read', 'update', 'delete', 'deploy', 'operate', 'administer', 'read_logs', 'use')),
  resource_kind text NOT NULL CHECK (resource_kind IN
                  ('installation', 'namespace', 'configuration', 'preset', 'service_account', 'secret',
                   'agent', 'agent_revision', 'credential_source')),
  PRIMARY KEY (role_id, action, resource_kind)
);
-- Roles are immutable: a permission set is written once with its Role.
CREATE TRIGGER iam_roles_immutable BEFORE UPDATE ON occ.iam_roles
  FOR EACH ROW EXECUTE FUNCTION occ.reject_change();
CREATE TRIGGER iam_role_permissions_immutable BEFORE UPDATE ON occ.iam_role_permissions
  FOR EACH ROW EXECUTE FUNCTION occ.reject_change();

CREATE TABLE occ.iam_groups (
  id           text PRIMARY KEY CHECK (occ.is_opaque_id(id)),
  namespace_id text REFERENCES occ.namespaces (id),
  name         text COLLATE "C" NOT NULL CHECK (occ.is_valid_name(name)),
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE occ.iam_group_memberships (
  group_id     text NOT NULL REFERENCES occ.iam_groups (id) ON DELETE CASCADE,
  principal_id text NOT NULL REFERENCES occ.iam_identities (id) ON DELETE CASCADE,
  namespace_id text REFERENCES occ.namespaces (id),
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (group_id, principal_id)
);
CREATE INDEX iam_group_memberships_principal ON occ.iam_group_memberships (principal_id);

CREATE TABLE occ.iam_access_bindings (
  id                  text PRIMARY KEY CHECK (occ.is_opaque_id(id)),
  namespace_id        text REFERENCES occ.namespaces (id),
  identity_subject_id text REFERENCES occ.iam_identities (id),
  group_subject_id    text REFERENCES occ.iam_groups (id),
  role_id             text NOT NULL REFERENCES occ.iam_roles (id),
  resource_kind       text CHECK (resource_kind IN
                        ('installation', 'namespace', 'configuration', 'preset', 'service_account', 'secret',
                         'agent', 'agent_revision', 'credential_source')),
  resource_id         text CHECK (char_length(resource_id) BETWEEN 1 AND 200),
  runtime_role        text CHECK (char_length(runtime_role) BETWEEN 1 AND 128 AND btrim(runtime_role) = runtime_role),
  created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT iam_access_bindings_one_subject
    CHECK ((identity_subject_id IS NULL) <> (group_subject_id IS NULL)),
  CONSTRAINT iam_access_bindings_resource_pair
    CHECK ((resource_kind IS NULL) = (resource_id IS NULL)),
  CONSTRAINT iam_access_bindings_namespaced_kinds
    CHECK (resource_kind IS NULL OR resource_kind NOT IN ('configuration', 'preset', 'service_account')
           OR namespace_id IS NOT NULL)
);
-- Decisions read the bindings of one subject; cleanup reads bindings of one target or Role.
-- (subject, kind, id) lets a decision read only the bindings that can match its target, so its
-- cost does not grow with the number of exact-resource grants a subject holds.
CREATE INDEX iam_access_bindings_identity ON occ.iam_access_bindings (identity_subject_id, resource_kind, resource_id)
  WHERE identity_subject_id IS NOT NULL;
CREATE INDEX iam_access_bindings_group ON occ.iam_access_bindings (group_subject_id, resource_kind, resource_id)
  WHERE group_subject_id IS NOT NULL;
CREATE INDEX iam_access_bindings_role ON occ.iam_access_bindings (role_id);
CREATE INDEX iam_access_bindings_target ON occ.iam_access_bindings (resource_kind, resource_id)
  WHERE resource_kind IS NOT NULL;
CREATE INDEX iam_access_bindings_namespace ON occ.iam_access_bindings (namespace_id)
  WHERE namespace_id IS NOT NULL;
CREATE TRIGGER iam_access_bindings_immutable_subject BEFORE UPDATE OF
  id, namespace_id, identity_subject_id, group_subject_id, role_id, resource_kind, resource_id
  ON occ.iam_access_bindings FOR EACH ROW EXECUTE FUNCTION occ.reject_change();

CREATE TABLE occ.iam_restrictions (
  id            text PRIMARY KEY CHECK (occ.is_opaque_id(id)),
  namespace_id  text REFERENCES occ.namespaces (id),
  action        text NOT NULL CHECK (action IN
                  ('create', 'read', 'update', 'delete', 'deploy', 'operate', 'administer', 'read_logs', 'use')),
  resource_kind text NOT NULL CHECK (resource_kind IN
                  ('installation', 'namespace', 'configuration', 'preset', 'service_account', 'secret',
                   'agent', 'agent_revision', 'credential_source')),
  resource_id   text CHECK (char_length(resource_id) BETWEEN 1 AND 200),
  effect        text NOT NULL DEFAULT 'deny' CHECK (effect = 'deny'),
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT iam_restrictions_scope CHECK (
    namespace_id IS NULL
    OR (resource_kind <> 'installation'
        AND (resource_kind <> 'namespace' OR resource_id IS NULL OR resource_id = namespace_id)))
);
CREATE INDEX iam_restrictions_lookup ON occ.iam_restrictions (action, resource_kind, resource_id);

-- ---------------------------------------------------------------------------------------------
-- Authentication: human accounts, password credentials, sessions, service keys
-- ---------------------------------------------------------------------------------------------

CREATE TABLE occ.accounts (
  id           text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'usr')),
  email        text COLLATE "C" NOT NULL UNIQUE
               CHECK (char_length(email) BETWEEN 3 AND 320 AND email = lower(btrim(email))
                      AND email ~ '^[^@[:space:]]+@[^@[:space:]]+\.[^@[:space:]]+$'),
  name         text NOT NULL CHECK (occ.is_valid_name(name)),
  principal_id text NOT NULL UNIQUE REFERENCES occ.iam_identities (id),
  disabled     boolean NOT NULL DEFAULT false,
  version      bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE occ.password_credentials (
  account_id    text PRIMARY KEY REFERENCES occ.accounts (id) ON DELETE CASCADE,
  password_hash text NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
  changed_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE occ.sessions (
  id         text PRIMARY KEY CHECK (occ.is_opaque_id(id)),
  token_hash bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
  account_id text NOT NULL REFERENCES occ.accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at timestamptz NOT NULL,
  CONSTRAINT sessions_lifetime CHECK (expires_at > created_at AND expires_at <= created_at + interval '8 hours')
);
CREATE INDEX sessions_account ON occ.sessions (account_id);
CREATE INDEX sessions_expiry ON occ.sessions (expires_at);

CREATE TABLE occ.service_keys (
  id                   text PRIMARY KEY CHECK (occ.is_opaque_id(id)),
  key_hash             bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
  start                text NOT NULL CHECK (char_length(start) BETWEEN 1 AND 16),
  service_principal_id text NOT NULL REFERENCES occ.iam_identities (id),
  installation_id      text NOT NULL REFERENCES occ.installation (id),
  namespace_id         text REFERENCES occ.namespaces (id),
  name                 text NOT NULL CHECK (occ.is_valid_name(name)),
  created_by           text NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at           timestamptz NOT NULL,
  CONSTRAINT service_keys_lifetime
    CHECK (expires_at > created_at AND expires_at <= created_at + interval '365 days')
);
CREATE INDEX service_keys_principal ON occ.service_keys (service_principal_id);

-- ---------------------------------------------------------------------------------------------
-- Namespace-owned resources: configurations, secrets, service accounts
-- ---------------------------------------------------------------------------------------------

CREATE TABLE occ.configurations (
  id              text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'cfg')),
  namespace_id    text NOT NULL REFERENCES occ.namespaces (id),
  kind            text NOT NULL DEFAULT 'agent' CHECK (kind = 'agent'),
  generation      bigint NOT NULL DEFAULT 1 CHECK (generation BETWEEN 1 AND 9007199254740991),
  driver_id       text NOT NULL CHECK (char_length(driver_id) BETWEEN 1 AND 200),
  secret_bindings jsonb CHECK (secret_bindings IS NULL OR jsonb_typeof(secret_bindings) = 'object'),
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (namespace_id, id)
);

CREATE TABLE occ.secrets (
  id                     text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'sec')),
  namespace_id           text NOT NULL REFERENCES occ.namespaces (id),
  name                   text COLLATE "C" NOT NULL CHECK (occ.is_valid_name(name)),
  driver_id              text NOT NULL CHECK (char_length(driver_id) BETWEEN 1 AND 200),
  backend_namespace_name text,
  backend_name           text,
  backend_key            text,
  backend_uid            text,
  created_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (namespace_id, id)
);

CREATE TABLE occ.service_accounts (
  id           text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'sa')),
  namespace_id text NOT NULL REFERENCES occ.namespaces (id),
  name         text COLLATE "C" NOT NULL CHECK (occ.is_valid_name(name)),
  credential   jsonb CHECK (credential IS NULL OR jsonb_typeof(credential) = 'object'),
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (namespace_id, id),
  UNIQUE (namespace_id, name)
);

-- ---------------------------------------------------------------------------------------------
-- Agents and their immutable revisions
-- ---------------------------------------------------------------------------------------------

CREATE TABLE occ.agents (
  id                    text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'agt')),
  namespace_id          text NOT NULL REFERENCES occ.namespaces (id),
  name                  text COLLATE "C" NOT NULL CHECK (occ.is_valid_name(name)),
  execution_mode        text NOT NULL CHECK (execution_mode IN ('embedded', 'dedicated')),
  service_principal_id  text NOT NULL UNIQUE
                        REFERENCES occ.iam_identities (id) DEFERRABLE INITIALLY DEFERRED,
  status                text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deleting')),
  desired_runtime_state text NOT NULL DEFAULT 'stopped' CHECK (desired_runtime_state IN ('running', 'stopped')),
  active_revision_id    text,
  configuration_id      text NOT NULL,
  backend_id            text CHECK (occ.is_valid_name(backend_id)),
  harness_auth          jsonb CHECK (harness_auth IS NULL OR jsonb_typeof(harness_auth) = 'object'),
  plugins               jsonb CHECK (plugins IS NULL OR jsonb_typeof(plugins) = 'object'),
  plugin_approvers      jsonb CHECK (plugin_approvers IS NULL OR jsonb_typeof(plugin_approvers) = 'array'),
  harness_auth_secret_id text GENERATED ALWAYS AS (
    CASE WHEN harness_auth -> 'source' ->> 'kind' = 'secret' THEN harness_auth -> 'source' ->> 'id' END) STORED,
  harness_auth_service_account_id text GENERATED ALWAYS AS (
    CASE WHEN harness_auth -> 'source' ->> 'kind' = 'service_account' THEN harness_auth -> 'source' ->> 'id' END) STORED,
  created_at            timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at            timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (namespace_id, id),
  UNIQUE (namespace_id, name),
  CONSTRAINT agents_deleting_is_stopped CHECK (status <> 'deleting' OR desired_runtime_state = 'stopped'),
  FOREIGN KEY (namespace_id, configuration_id) REFERENCES occ.configurations (namespace_id, id),
  FOREIGN KEY (namespace_id, harness_auth_secret_id) REFERENCES occ.secrets (namespace_id, id),
  FOREIGN KEY (namespace_id, harness_auth_service_account_id) REFERENCES occ.service_accounts (namespace_id, id)
);
CREATE INDEX agents_configuration ON occ.agents (configuration_id);

CREATE FUNCTION occ.agents_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    -- A new Agent never runs until it is deployed.
    NEW.desired_runtime_state := 'stopped';
    NEW.status := 'active';
    NEW.active_revision_id := NULL;
    RETURN NEW;
  END IF;
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.namespace_id IS DISTINCT FROM OLD.namespace_id
     OR NEW.service_principal_id IS DISTINCT FROM OLD.service_principal_id
     OR NEW.execution_mode IS DISTINCT FROM OLD.execution_mode
     OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
    RAISE EXCEPTION 'agent identity is immutable' USING ERRCODE = '55000';
  END IF;
  IF OLD.status = 'deleting' AND NEW.status <> 'deleting' THEN
    RAISE EXCEPTION 'a deleting agent cannot be revived' USING ERRCODE = '23514';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER agents_guard BEFORE INSERT OR UPDATE ON occ.agents
  FOR EACH ROW EXECUTE FUNCTION occ.agents_guard();

CREATE TABLE occ.agent_revisions (
  id              text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'rev') AND char_length(id) = 40),
  namespace_id    text NOT NULL,
  agent_id        text NOT NULL,
  revision_number bigint NOT NULL CHECK (revision_number > 0),
  admitted_spec   jsonb NOT NULL CHECK (jsonb_typeof(admitted_spec) = 'object'),
  admitted_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (agent_id, revision_number),
  UNIQUE (namespace_id, agent_id, id),
  FOREIGN KEY (namespace_id, agent_id) REFERENCES occ.agents (namespace_id, id)
);

ALTER TABLE occ.agents ADD CONSTRAINT agents_active_revision_fk
  FOREIGN KEY (namespace_id, id, active_revision_id) REFERENCES occ.agent_revisions (namespace_id, agent_id, id);

-- Revisions are immutable. They disappear only inside occ.finalize_agent_deletion, which marks
-- its transaction with the Agent it is finalizing.
CREATE FUNCTION occ.agent_revisions_are_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('occ.finalizing_agent', true) = OLD.agent_id THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'agent revisions are immutable' USING ERRCODE = '55000';
END
$$;
CREATE TRIGGER agent_revisions_are_immutable BEFORE UPDATE OR DELETE ON occ.agent_revisions
  FOR EACH ROW EXECUTE FUNCTION occ.agent_revisions_are_immutable();

-- An Agent-owned service principal lives and dies with its Agent.
CREATE FUNCTION occ.agent_identity_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.agent_id IS NOT NULL AND current_setting('occ.finalizing_agent', true) IS DISTINCT FROM OLD.agent_id THEN
    RAISE EXCEPTION 'an agent-owned service principal is removed only with its agent' USING ERRCODE = '55000';
  END IF;
  IF TG_OP = 'UPDATE' THEN
    RAISE EXCEPTION 'identities are immutable' USING ERRCODE = '55000';
  END IF;
  RETURN OLD;
END
$$;
CREATE TRIGGER iam_identities_guard BEFORE UPDATE OR DELETE ON occ.iam_identities
  FOR EACH ROW EXECUTE FUNCTION occ.agent_identity_guard();

-- ---------------------------------------------------------------------------------------------
-- Durable controller work (reference: worker-lifecycle §2.1)
-- ---------------------------------------------------------------------------------------------

CREATE FUNCTION occ.is_runtime_token(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT jsonb_typeof(value) = 'string' AND (value #>> '{}') ~ '^[A-Za-z0-9._~:@-]{1,64}$'
$$;

-- checkedAt: a calendar-valid ISO timestamp. The regex bounds the shape; the cast proves the date.
CREATE FUNCTION occ.is_iso_timestamp(value jsonb) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF jsonb_typeof(value) <> 'string'
     OR (value #>> '{}') !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$' THEN
    RETURN false;
  END IF;
  PERFORM to_date(substr(value #>> '{}', 1, 10), 'YYYY-MM-DD');
  RETURN to_char(to_date(substr(value #>> '{}', 1, 10), 'YYYY-MM-DD'), 'YYYY-MM-DD') = substr(value #>> '{}', 1, 10);
EXCEPTION WHEN OTHERS THEN
  RETURN false;
END
$$;

CREATE FUNCTION occ.is_runtime_failure(value jsonb, probe boolean) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT jsonb_typeof(value) = 'object'
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
               ELSE NOT value ? 'cause' END)
$$;

-- The only result_data shapes a terminal row may carry.
CREATE FUNCTION occ.is_valid_work_result(state text, reason_code text, result_data jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
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
  END
$$;

CREATE TABLE occ.controller_work (
  idempotency_key  text PRIMARY KEY CHECK (char_length(idempotency_key) BETWEEN 1 AND 512),
  work_kind        text NOT NULL DEFAULT 'lifecycle' CHECK (work_kind IN ('lifecycle', 'provisioning')),
  namespace_id     text NOT NULL REFERENCES occ.namespaces (id),
  agent_id         text,
  revision_id      text,
  actor_id         text NOT NULL CHECK (char_length(actor_id) BETWEEN 1 AND 200),
  namespace_target text CHECK (namespace_target IN ('ready', 'deleted')),
  agent_target     text CHECK (agent_target IN ('stopped', 'deleted', 'credentials_withdrawn')),
  state            text NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'claimed', 'succeeded', 'failed_permanent')),
  available_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  attempt_count    integer NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  claim_token      uuid,
  lease_expires_at timestamptz,
  completed_at     timestamptz,
  reason_code      text CHECK (char_length(reason_code) BETWEEN 1 AND 64),
  result_data      jsonb,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT controller_work_claim_consistent CHECK (
    (state = 'claimed') = (claim_token IS NOT NULL)
    AND (state = 'claimed') = (lease_expires_at IS NOT NULL)),
  CONSTRAINT controller_work_completion_consistent CHECK (
    CASE WHEN state IN ('succeeded', 'failed_permanent')
         THEN completed_at IS NOT NULL AND reason_code IS NOT NULL
         ELSE completed_at IS NULL AND reason_code IS NULL AND result_data IS NULL END),
  CONSTRAINT controller_work_revision_has_agent CHECK (revision_id IS NULL OR agent_id IS NOT NULL),
  CONSTRAINT controller_work_namespace_target_valid CHECK (
    (work_kind = 'lifecycle' AND agent_id IS NULL AND revision_id IS NULL
       AND namespace_target IS NOT NULL AND agent_target IS NULL)
    OR (work_kind = 'lifecycle' AND agent_id IS NOT NULL AND revision_id IS NULL
       AND namespace_target IS NULL AND agent_target IN ('stopped', 'deleted'))
    OR (work_kind = 'lifecycle' AND agent_id IS NOT NULL AND revision_id IS NOT NULL
       AND namespace_target IS NULL AND (agent_target IS NULL OR agent_target = 'credentials_withdrawn'))
    -- Repository cleanup whose Agent is gone keeps the revision only inside its key.
    OR (work_kind = 'lifecycle' AND agent_id IS NULL AND revision_id IS NULL
       AND namespace_target IS NULL AND agent_target IS NULL
       AND idempotency_key ~ '^agent_revision:rev_[0-9a-f-]{36}:repository_cleanup:')
    OR (work_kind = 'provisioning' AND agent_id IS NOT NULL AND revision_id IS NULL
       AND namespace_target IS NULL AND agent_target IS NULL)),
  CONSTRAINT controller_work_result_valid CHECK (occ.is_valid_work_result(state, reason_code, result_data)),
  FOREIGN KEY (namespace_id, agent_id) REFERENCES occ.agents (namespace_id, id),
  FOREIGN KEY (namespace_id, agent_id, revision_id) REFERENCES occ.agent_revisions (namespace_id, agent_id, id)
);
CREATE INDEX controller_work_ready ON occ.controller_work (available_at, created_at, idempotency_key)
  WHERE state = 'queued';
CREATE INDEX controller_work_expired ON occ.controller_work (lease_expires_at, idempotency_key)
  WHERE state = 'claimed';
-- Stale recovery looks for queued rows at or above the attempt limit on every loop; without this
-- index that is a scan of the whole backlog.
CREATE INDEX controller_work_queued_attempts ON occ.controller_work (attempt_count)
  WHERE state = 'queued';
CREATE UNIQUE INDEX controller_work_one_claim_per_resource
  ON occ.controller_work ((COALESCE(agent_id, namespace_id))) WHERE state = 'claimed';
CREATE INDEX controller_work_agent ON occ.controller_work (agent_id) WHERE agent_id IS NOT NULL;

-- Owner and target columns are frozen; only the SECURITY DEFINER retry functions may replace the
-- actor (a takeover), and they mark their transaction to do so.
CREATE FUNCTION occ.controller_work_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key
     OR NEW.work_kind IS DISTINCT FROM OLD.work_kind
     OR NEW.namespace_id IS DISTINCT FROM OLD.namespace_id
     OR NEW.agent_id IS DISTINCT FROM OLD.agent_id
     OR NEW.revision_id IS DISTINCT FROM OLD.revision_id
     OR NEW.namespace_target IS DISTINCT FROM OLD.namespace_target
     OR NEW.agent_target IS DISTINCT FROM OLD.agent_target
     OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
    RAISE EXCEPTION 'controller work ownership is immutable' USING ERRCODE = '55000';
  END IF;
  IF NEW.actor_id IS DISTINCT FROM OLD.actor_id
     AND current_setting('occ.work_takeover', true) IS DISTINCT FROM OLD.idempotency_key THEN
    RAISE EXCEPTION 'controller work actor is immutable' USING ERRCODE = '55000';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER controller_work_guard BEFORE UPDATE ON occ.controller_work
  FOR EACH ROW EXECUTE FUNCTION occ.controller_work_guard();

-- ---------------------------------------------------------------------------------------------
-- Audit events (append-only)
-- ---------------------------------------------------------------------------------------------

CREATE TABLE occ.audit_events (
  id            text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'aud')),
  occurred_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  kind          text NOT NULL CHECK (kind IN ('bootstrap', 'mutation', 'authorization_denial', 'access')),
  actor_id      text NOT NULL CHECK (char_length(actor_id) BETWEEN 1 AND 200),
  action        text NOT NULL CHECK (char_length(action) BETWEEN 1 AND 200),
  namespace_id  text,
  resource_kind text NOT NULL CHECK (char_length(resource_kind) BETWEEN 1 AND 64),
  resource_id   text NOT NULL CHECK (char_length(resource_id) BETWEEN 1 AND 512),
  outcome       text NOT NULL CHECK (outcome IN ('success', 'denied', 'failure')),
  details       jsonb CHECK (details IS NULL OR jsonb_typeof(details) = 'object')
);
CREATE INDEX audit_events_occurred ON occ.audit_events (occurred_at DESC, id DESC);
CREATE INDEX audit_events_namespace ON occ.audit_events (namespace_id, occurred_at DESC) WHERE namespace_id IS NOT NULL;
-- "Latest evidence for this work item" (deployment progress, refused-stop counting).
CREATE INDEX audit_events_work_attempt_idx ON occ.audit_events ((details ->> 'workId'), occurred_at DESC)
  WHERE action = 'reconcile';
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON occ.audit_events
  FOR EACH ROW EXECUTE FUNCTION occ.reject_change();
