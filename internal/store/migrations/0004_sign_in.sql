-- External sign-in (GitHub, Google, generic OIDC), account controls, the recovery account, CLI
-- sessions for people, and the sign-in rate limits. Everything a sign-in needs between two requests
-- lives here, so any API replica can answer any step of it.

-- The local password is one sign-in method of an account; its id is the methodId the account read
-- shows next to the external identities.
ALTER TABLE occ.password_credentials ADD COLUMN method_id text;
UPDATE occ.password_credentials SET method_id = 'mth_' || gen_random_uuid()::text WHERE method_id IS NULL;
ALTER TABLE occ.password_credentials
  ALTER COLUMN method_id SET DEFAULT ('mth_' || gen_random_uuid()::text),
  ALTER COLUMN method_id SET NOT NULL,
  ADD CONSTRAINT password_credentials_method_id CHECK (occ.is_prefixed_id(method_id, 'mth')),
  ADD CONSTRAINT password_credentials_method_id_unique UNIQUE (method_id);

-- An external identity an administrator attached to an account. provider_id is the provider
-- instance (the provider name and a digest of its client id, and of its issuer for OIDC): a new
-- client id is a new instance, so its identities must be attached again.
CREATE TABLE occ.account_identities (
  id          text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'mth')),
  account_id  text NOT NULL REFERENCES occ.accounts (id) ON DELETE CASCADE,
  provider    text NOT NULL CHECK (provider IN ('github', 'google', 'oidc')),
  provider_id text COLLATE "C" NOT NULL CHECK (provider_id ~ '^(github|google|oidc):[0-9a-f]{64}$'
                                               AND split_part(provider_id, ':', 1) = provider),
  subject     text COLLATE "C" NOT NULL CHECK (subject ~ '^[!-~]{1,255}$'),
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT account_identities_subject UNIQUE (provider_id, subject),
  CONSTRAINT account_identities_one_per_instance UNIQUE (account_id, provider_id)
);

-- A session remembers the external identity it was signed in with (NULL for a password session):
-- detaching the identity deletes its sessions, and a session whose provider instance is no longer
-- configured ends on its next use.
ALTER TABLE occ.sessions
  ADD COLUMN method_id text REFERENCES occ.account_identities (id) ON DELETE CASCADE,
  ADD COLUMN provider_id text,
  ADD CONSTRAINT sessions_method_binding CHECK ((method_id IS NULL) = (provider_id IS NULL));
CREATE INDEX sessions_method ON occ.sessions (method_id) WHERE method_id IS NOT NULL;

-- The recovery account: one local-password Installation administrator per Installation.
CREATE TABLE occ.recovery_accounts (
  installation_id text PRIMARY KEY REFERENCES occ.installation (id),
  account_id      text NOT NULL UNIQUE REFERENCES occ.accounts (id),
  changed_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A started external sign-in: single use (the callback deletes it before the code exchange), bound
-- to the starting browser by a cookie whose hash is stored, and short-lived.
CREATE TABLE occ.sign_in_attempts (
  state_hash    bytea PRIMARY KEY CHECK (octet_length(state_hash) = 32),
  browser_hash  bytea NOT NULL CHECK (octet_length(browser_hash) = 32),
  provider_key  text COLLATE "C" NOT NULL CHECK (char_length(provider_key) BETWEEN 1 AND 300),
  code_verifier text COLLATE "C" NOT NULL CHECK (code_verifier ~ '^[A-Za-z0-9_-]{43}$'),
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at    timestamptz NOT NULL,
  CONSTRAINT sign_in_attempts_lifetime
    CHECK (expires_at > created_at AND expires_at <= created_at + interval '5 minutes')
);
CREATE INDEX sign_in_attempts_age ON occ.sign_in_attempts (created_at);

-- The login receipt of a successful callback: the starting tab trades it, once, for the key of the
-- session the callback created.
CREATE TABLE occ.sign_in_receipts (
  receipt_hash bytea PRIMARY KEY CHECK (octet_length(receipt_hash) = 32),
  attempt_id   text COLLATE "C" NOT NULL CHECK (attempt_id ~ '^[A-Za-z0-9_-]{43}$'),
  session_id   text NOT NULL REFERENCES occ.sessions (id) ON DELETE CASCADE,
  provider_id  text COLLATE "C" NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at   timestamptz NOT NULL,
  CONSTRAINT sign_in_receipts_lifetime
    CHECK (expires_at > created_at AND expires_at <= created_at + interval '2 minutes')
);
CREATE INDEX sign_in_receipts_expiry ON occ.sign_in_receipts (expires_at);

-- `occ login`: a device authorization the person approves in a signed-in browser. Only SHA-256
-- hashes of the device code and of the user code are stored.
CREATE TABLE occ.cli_device_authorizations (
  id                text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'cda')),
  device_code_hash  bytea NOT NULL UNIQUE CHECK (octet_length(device_code_hash) = 32),
  user_code_hash    bytea NOT NULL CHECK (octet_length(user_code_hash) = 32),
  client_label      text NOT NULL CHECK (client_label ~ '^[ -~]{1,64}$'),
  requester_address text NOT NULL CHECK (char_length(requester_address) BETWEEN 1 AND 64),
  namespace_id      text CHECK (namespace_id IS NULL OR occ.is_prefixed_id(namespace_id, 'ns')),
  state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'denied', 'consumed')),
  account_id        text REFERENCES occ.accounts (id) ON DELETE CASCADE,
  parent_session_id text REFERENCES occ.sessions (id) ON DELETE CASCADE,
  created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  decided_at        timestamptz,
  last_polled_at    timestamptz,
  expires_at        timestamptz NOT NULL,
  CONSTRAINT cli_device_authorizations_lifetime
    CHECK (expires_at > created_at AND expires_at <= created_at + interval '10 minutes'),
  CONSTRAINT cli_device_authorizations_decision CHECK (
    (state = 'pending' AND account_id IS NULL AND parent_session_id IS NULL AND decided_at IS NULL)
    OR (state = 'denied' AND account_id IS NOT NULL AND decided_at IS NOT NULL)
    OR (state IN ('approved', 'consumed') AND account_id IS NOT NULL AND parent_session_id IS NOT NULL
        AND decided_at IS NOT NULL))
);
CREATE UNIQUE INDEX cli_device_authorizations_pending_code ON occ.cli_device_authorizations (user_code_hash)
  WHERE state = 'pending';
CREATE INDEX cli_device_authorizations_age ON occ.cli_device_authorizations (created_at);

-- A CLI session: it admits the approving person's own Principal and never outlives the browser
-- session that approved it (deleting that session deletes it).
CREATE TABLE occ.cli_sessions (
  id                text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'cls')),
  token_hash        bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
  authorization_id  text NOT NULL UNIQUE,
  account_id        text NOT NULL REFERENCES occ.accounts (id) ON DELETE CASCADE,
  parent_session_id text NOT NULL REFERENCES occ.sessions (id) ON DELETE CASCADE,
  namespace_id      text CHECK (namespace_id IS NULL OR occ.is_prefixed_id(namespace_id, 'ns')),
  client_label      text NOT NULL CHECK (client_label ~ '^[ -~]{1,64}$'),
  created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at        timestamptz NOT NULL,
  CONSTRAINT cli_sessions_lifetime CHECK (expires_at > created_at AND expires_at <= created_at + interval '8 hours')
);
CREATE INDEX cli_sessions_parent ON occ.cli_sessions (parent_session_id);
CREATE INDEX cli_sessions_account ON occ.cli_sessions (account_id);
CREATE INDEX cli_sessions_expiry ON occ.cli_sessions (expires_at);

-- The backstop of the exchange: the parent must be an unexpired session of the same account, the
-- CLI session must not outlive it, and a parent holds at most 10 unexpired CLI sessions. The
-- advisory lock serializes concurrent inserts for one parent, so the count cannot be raced.
CREATE FUNCTION occ.guard_cli_session() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  parent_account text;
  parent_expires timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('occ.cli_sessions:' || NEW.parent_session_id, 0));
  SELECT account_id, expires_at INTO parent_account, parent_expires
    FROM occ.sessions WHERE id = NEW.parent_session_id;
  IF parent_account IS NULL OR parent_expires <= clock_timestamp() THEN
    RAISE EXCEPTION 'the parent session is gone or expired' USING ERRCODE = '55000';
  END IF;
  IF parent_account <> NEW.account_id OR NEW.expires_at > parent_expires THEN
    RAISE EXCEPTION 'a CLI session must belong to and end with its parent session' USING ERRCODE = '55000';
  END IF;
  IF (SELECT count(*) FROM occ.cli_sessions
       WHERE parent_session_id = NEW.parent_session_id AND expires_at > clock_timestamp()) >= 10 THEN
    RAISE EXCEPTION 'the parent session holds 10 CLI sessions' USING ERRCODE = '55000';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER cli_sessions_guard BEFORE INSERT ON occ.cli_sessions
  FOR EACH ROW EXECUTE FUNCTION occ.guard_cli_session();

-- Per-minute request budgets of the sign-in routes, shared by every replica. key_hash is a SHA-256
-- of the budget's key (a client address, a browser cookie, an account), never the key itself.
CREATE TABLE occ.rate_limits (
  bucket       text COLLATE "C" NOT NULL CHECK (bucket ~ '^[a-z][a-z0-9.-]{0,63}$'),
  key_hash     bytea NOT NULL CHECK (octet_length(key_hash) = 32),
  window_start timestamptz NOT NULL,
  hits         integer NOT NULL CHECK (hits >= 0),
  PRIMARY KEY (bucket, key_hash, window_start)
);
CREATE INDEX rate_limits_window ON occ.rate_limits (window_start);
