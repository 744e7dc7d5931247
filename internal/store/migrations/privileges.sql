-- Privileges of the application role (API, worker, bootstrap). `occ migrate` re-applies this file
-- after every run, inside one transaction, so the grants are always exactly these. {{app_role}} is
-- replaced by the quoted role name from OCC_DATABASE_APP_ROLE.
--
-- Deliberately absent: DELETE on controller_work, audit_events, agent_revisions, agents,
-- namespaces and installation, and UPDATE of any owner, target or actor column. Those changes
-- happen only through the SECURITY DEFINER functions below.

REVOKE ALL ON SCHEMA occ FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA occ FROM {{app_role}};
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA occ FROM {{app_role}};
GRANT USAGE ON SCHEMA occ TO {{app_role}};

GRANT SELECT, INSERT ON occ.installation TO {{app_role}};
GRANT SELECT, INSERT ON occ.namespaces TO {{app_role}};
GRANT UPDATE (status, deleted_at) ON occ.namespaces TO {{app_role}};

GRANT SELECT, INSERT ON occ.iam_identities TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.iam_roles, occ.iam_role_permissions TO {{app_role}};
GRANT SELECT ON occ.iam_groups, occ.iam_group_memberships TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.iam_access_bindings TO {{app_role}};
GRANT UPDATE (runtime_role) ON occ.iam_access_bindings TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.iam_restrictions TO {{app_role}};
-- The policy epoch (migration 0013): the triggers advance it as the owner; the API reads it.
GRANT SELECT ON occ.iam_policy_epoch TO {{app_role}};

GRANT SELECT, INSERT ON occ.accounts TO {{app_role}};
GRANT UPDATE (name, disabled, version, updated_at) ON occ.accounts TO {{app_role}};
GRANT SELECT, INSERT ON occ.password_credentials TO {{app_role}};
GRANT UPDATE (password_hash, changed_at) ON occ.password_credentials TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.sessions TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.service_keys TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.account_identities, occ.recovery_accounts TO {{app_role}};
GRANT UPDATE (account_id, changed_at) ON occ.recovery_accounts TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.sign_in_attempts, occ.sign_in_receipts TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.cli_device_authorizations, occ.cli_sessions TO {{app_role}};
GRANT UPDATE (state, account_id, parent_session_id, decided_at, last_polled_at) ON occ.cli_device_authorizations TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.rate_limits TO {{app_role}};
GRANT UPDATE (hits) ON occ.rate_limits TO {{app_role}};

GRANT SELECT, INSERT, DELETE ON occ.configurations TO {{app_role}};
GRANT UPDATE (generation, secret_bindings, updated_at) ON occ.configurations TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.secrets TO {{app_role}};
GRANT UPDATE (backend_namespace_name, backend_name, backend_key, backend_uid, updated_at) ON occ.secrets TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.service_accounts TO {{app_role}};
GRANT UPDATE (credential) ON occ.service_accounts TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.presets TO {{app_role}};
GRANT UPDATE (name, template, updated_at) ON occ.presets TO {{app_role}};

GRANT SELECT, INSERT ON occ.agents TO {{app_role}};
GRANT UPDATE (name, configuration_id, backend_id, harness_auth, plugins, plugin_approvers, status,
              desired_runtime_state, active_revision_id, updated_at) ON occ.agents TO {{app_role}};
GRANT SELECT, INSERT ON occ.agent_revisions TO {{app_role}};
GRANT SELECT, INSERT, DELETE ON occ.agent_initial_workspace_files TO {{app_role}};

GRANT SELECT, INSERT ON occ.controller_work TO {{app_role}};
GRANT UPDATE (state, available_at, attempt_count, claim_token, lease_expires_at, completed_at,
              updated_at, reason_code, result_data) ON occ.controller_work TO {{app_role}};

GRANT SELECT, INSERT ON occ.agent_provisioning_work TO {{app_role}};
GRANT UPDATE (staged_values, staged_workspace_files, status, phase, run, revision_id, granted_secret_ids, error_code, error_message,
              updated_at) ON occ.agent_provisioning_work TO {{app_role}};

GRANT SELECT, INSERT ON occ.audit_events TO {{app_role}};

-- Derived Agent lifecycle counts (migration 0012): the triggers append the changes as the owner;
-- the worker's fold moves them into the counters, a scrape reads them.
GRANT SELECT ON occ.agent_lifecycle_now TO {{app_role}};
GRANT SELECT, INSERT, UPDATE, DELETE ON occ.agent_lifecycle TO {{app_role}};
GRANT SELECT, UPDATE ON occ.agent_lifecycle_counts TO {{app_role}};
GRANT SELECT, DELETE ON occ.agent_lifecycle_changes TO {{app_role}};

-- Value-rule helpers used by CHECK constraints and queries.
GRANT EXECUTE ON FUNCTION occ.is_prefixed_id(text, text), occ.is_valid_name(text), occ.is_opaque_id(text),
  occ.is_runtime_token(jsonb), occ.is_iso_timestamp(jsonb), occ.is_runtime_failure(jsonb, boolean),
  occ.is_valid_work_result(text, text, jsonb) TO {{app_role}};
GRANT EXECUTE ON FUNCTION occ.finalize_agent_deletion(text, text, text, uuid),
  occ.retry_failed_agent_deletion(text, text, text, text),
  occ.retry_failed_namespace_deletion(text, text, text) TO {{app_role}};
GRANT EXECUTE ON FUNCTION occ.acquire_sign_in_lanes(bytea[], integer[], timestamptz, interval, interval),
  occ.end_sign_in_attempt(bytea[], timestamptz, timestamptz, text) TO {{app_role}};
