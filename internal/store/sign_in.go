package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// External sign-in state: attached identities, the recovery designation, pending attempts, login
// receipts and the per-minute sign-in budgets. Every lifetime is computed with the database clock.

// Typed outcomes callers branch on.
var (
	// ErrIdentityTaken: another account already holds the (provider instance, subject) pair.
	ErrIdentityTaken = errors.New("store: the external identity is already assigned")
	// ErrIdentityInstanceHeld: the account already holds an identity of this provider instance.
	ErrIdentityInstanceHeld = errors.New("store: the account already has an identity of this provider")
	// ErrCLISessionRefused: the CLI session guard refused the insert (parent gone, expired,
	// another account's, or holding 10 CLI sessions).
	ErrCLISessionRefused = errors.New("store: the CLI session was refused by its parent session")
)

func constraintViolated(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == constraint
}

// AccountMethod is one sign-in method of an account: the local password (Provider "password",
// ProviderID "credential", Subject the account id) or an attached external identity.
type AccountMethod struct {
	ID         string
	Provider   string
	ProviderID string
	Subject    string
}

// AccountControl is what the account controls read and change: the account, its version and its
// methods (password first, then identities by creation).
type AccountControl struct {
	Account Account
	Version int64
	Methods []AccountMethod
}

// GetAccountControl reads an account by id with its methods. lock FOR UPDATE serializes account
// mutations (and session issuance, which locks the account too) against each other.
func GetAccountControl(ctx context.Context, db DBTX, id string, lock RowLock) (AccountControl, error) {
	var a AccountControl
	q := `SELECT id, email, name, principal_id, disabled, version FROM occ.accounts WHERE id = $1`
	if lock == LockUpdate {
		q += ` FOR UPDATE`
	}
	err := db.QueryRow(ctx, q, id).Scan(&a.Account.ID, &a.Account.Email, &a.Account.Name, &a.Account.PrincipalID,
		&a.Account.Disabled, &a.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return AccountControl{}, ErrNotFound
	} else if err != nil {
		return AccountControl{}, err
	}
	rows, err := db.Query(ctx, `
SELECT method_id, 'password', 'credential', account_id, 0, changed_at FROM occ.password_credentials WHERE account_id = $1
UNION ALL
SELECT id, provider, provider_id, subject, 1, created_at FROM occ.account_identities WHERE account_id = $1
ORDER BY 5, 6, 1`, id)
	if err != nil {
		return AccountControl{}, err
	}
	a.Methods, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (AccountMethod, error) {
		var m AccountMethod
		var order int
		var at time.Time
		err := r.Scan(&m.ID, &m.Provider, &m.ProviderID, &m.Subject, &order, &at)
		return m, err
	})
	return a, err
}

// BumpAccount sets disabled and advances the version of an account already read FOR UPDATE.
func BumpAccount(ctx context.Context, db DBTX, id string, disabled bool) (int64, error) {
	var v int64
	err := db.QueryRow(ctx, `UPDATE occ.accounts SET disabled = $2, version = version + 1, updated_at = clock_timestamp()
 WHERE id = $1 RETURNING version`, id, disabled).Scan(&v)
	return v, err
}

// DeleteAccountSessions ends every browser session of an account (their CLI sessions and login
// receipts go with them) and returns how many there were.
func DeleteAccountSessions(ctx context.Context, db DBTX, accountID string) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.sessions WHERE account_id = $1`, accountID)
	return tag.RowsAffected(), err
}

// AttachIdentity attaches an external identity to an account. ErrIdentityTaken when another
// account holds it, ErrIdentityInstanceHeld when the account holds one of that instance already.
func AttachIdentity(ctx context.Context, db DBTX, m AccountMethod, accountID string) error {
	_, err := db.Exec(ctx, `INSERT INTO occ.account_identities (id, account_id, provider, provider_id, subject)
VALUES ($1, $2, $3, $4, $5)`, m.ID, accountID, m.Provider, m.ProviderID, m.Subject)
	switch {
	case constraintViolated(err, "account_identities_subject"):
		return ErrIdentityTaken
	case constraintViolated(err, "account_identities_one_per_instance"):
		return ErrIdentityInstanceHeld
	}
	return err
}

// DetachIdentity removes an external identity of an account (its sessions go with it); false when
// the account holds no such identity.
func DetachIdentity(ctx context.Context, db DBTX, accountID, methodID string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.account_identities WHERE id = $1 AND account_id = $2`, methodID, accountID)
	return tag.RowsAffected() == 1, err
}

// ExternalLogin is the account an external identity belongs to.
type ExternalLogin struct {
	Account  Account
	MethodID string
}

// GetExternalLogin finds the account holding (providerID, subject); ErrNotFound when none does.
// The account row is locked so a concurrent disable or detach serializes with the new session.
func GetExternalLogin(ctx context.Context, db DBTX, providerID, subject string) (ExternalLogin, error) {
	var l ExternalLogin
	err := db.QueryRow(ctx, `
SELECT a.id, a.email, a.name, a.principal_id, a.disabled, i.id
  FROM occ.account_identities i JOIN occ.accounts a ON a.id = i.account_id
 WHERE i.provider_id = $1 AND i.subject = $2
   FOR UPDATE OF a`, providerID, subject).
		Scan(&l.Account.ID, &l.Account.Email, &l.Account.Name, &l.Account.PrincipalID, &l.Account.Disabled, &l.MethodID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ExternalLogin{}, ErrNotFound
	}
	return l, err
}

// InsertExternalSession stores a session signed in with an external identity.
func InsertExternalSession(ctx context.Context, db DBTX, id string, tokenHash []byte, accountID, methodID, providerID string, lifetime time.Duration) (time.Time, error) {
	var expires time.Time
	err := db.QueryRow(ctx, `INSERT INTO occ.sessions (id, token_hash, account_id, method_id, provider_id, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, now(), now() + make_interval(secs => $6))
RETURNING expires_at`, id, tokenHash, accountID, methodID, providerID, lifetime.Seconds()).Scan(&expires)
	return expires, err
}

// EndSession deletes a session and reports whether this call deleted it, so exactly one of several
// concurrent callers records the end.
func EndSession(ctx context.Context, db DBTX, id string) (bool, error) {
	return DeleteSession(ctx, db, id)
}

// EnabledAccountsWithoutIdentity lists the enabled accounts, other than exceptID, that hold no
// identity of any of providerIDs, by id (at most limit).
func EnabledAccountsWithoutIdentity(ctx context.Context, db DBTX, providerIDs []string, exceptID string, limit int) ([]string, error) {
	rows, err := db.Query(ctx, `
SELECT a.id FROM occ.accounts a
 WHERE NOT a.disabled AND a.id <> $2
   AND NOT EXISTS (SELECT 1 FROM occ.account_identities i WHERE i.account_id = a.id AND i.provider_id = ANY($1))
 ORDER BY a.id LIMIT $3`, providerIDs, exceptID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Recovery is the recovery designation of an Installation.
type Recovery struct {
	Account  Account
	MethodID string // the password method
}

// GetRecovery reads the designation; ErrNotFound when there is none. LockUpdate locks it.
func GetRecovery(ctx context.Context, db DBTX, installationID string, lock RowLock) (Recovery, error) {
	if lock == LockUpdate {
		// The designation is locked alone, before the join: a join locked FOR UPDATE that waits
		// for a concurrent move re-checks the moved row against the account it joined before the
		// wait, finds no match and answers no designation at all.
		var holder string
		err := db.QueryRow(ctx, `SELECT account_id FROM occ.recovery_accounts WHERE installation_id = $1 FOR UPDATE`,
			installationID).Scan(&holder)
		if errors.Is(err, pgx.ErrNoRows) {
			return Recovery{}, ErrNotFound
		} else if err != nil {
			return Recovery{}, err
		}
	}
	q := `SELECT a.id, a.email, a.name, a.principal_id, a.disabled, p.method_id
  FROM occ.recovery_accounts r JOIN occ.accounts a ON a.id = r.account_id
  JOIN occ.password_credentials p ON p.account_id = a.id
 WHERE r.installation_id = $1`
	var r Recovery
	err := db.QueryRow(ctx, q, installationID).Scan(&r.Account.ID, &r.Account.Email, &r.Account.Name,
		&r.Account.PrincipalID, &r.Account.Disabled, &r.MethodID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Recovery{}, ErrNotFound
	}
	return r, err
}

// SetRecovery designates accountID, creating or moving the designation.
func SetRecovery(ctx context.Context, db DBTX, installationID, accountID string) error {
	_, err := db.Exec(ctx, `INSERT INTO occ.recovery_accounts (installation_id, account_id) VALUES ($1, $2)
ON CONFLICT (installation_id) DO UPDATE SET account_id = EXCLUDED.account_id, changed_at = clock_timestamp()`,
		installationID, accountID)
	return err
}

// SeedRecovery designates accountID only when the Installation has no designation yet, and
// returns the account designated afterwards.
func SeedRecovery(ctx context.Context, db DBTX, installationID, accountID string) (string, error) {
	if _, err := db.Exec(ctx, `INSERT INTO occ.recovery_accounts (installation_id, account_id) VALUES ($1, $2)
ON CONFLICT (installation_id) DO NOTHING`, installationID, accountID); err != nil {
		return "", err
	}
	var holder string
	err := db.QueryRow(ctx, `SELECT account_id FROM occ.recovery_accounts WHERE installation_id = $1`, installationID).Scan(&holder)
	return holder, err
}

// HasPassword reports whether the account has a local password, and its method id.
func HasPassword(ctx context.Context, db DBTX, accountID string) (string, bool, error) {
	var id string
	err := db.QueryRow(ctx, `SELECT method_id FROM occ.password_credentials WHERE account_id = $1`, accountID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// SignInAttempt is a pending external sign-in.
type SignInAttempt struct {
	StateHash    []byte
	BrowserHash  []byte
	ProviderKey  string
	CodeVerifier string
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

// InsertSignInAttempt stores an attempt valid for lifetime, first removing expired attempts and then
// the oldest ones beyond maxPending-1, so at most maxPending stay pending. The transaction-scoped
// advisory lock serializes concurrent starts on every replica for that trim.
func InsertSignInAttempt(ctx context.Context, db DBTX, a SignInAttempt, lifetime time.Duration, maxPending int) (SignInAttempt, error) {
	if _, err := db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('occ.sign_in_attempts', 0))`); err != nil {
		return SignInAttempt{}, err
	}
	if _, err := db.Exec(ctx, `DELETE FROM occ.sign_in_attempts WHERE expires_at <= clock_timestamp()`); err != nil {
		return SignInAttempt{}, err
	}
	if _, err := db.Exec(ctx, `DELETE FROM occ.sign_in_attempts WHERE state_hash IN (
  SELECT state_hash FROM occ.sign_in_attempts ORDER BY created_at DESC, state_hash OFFSET $1)`, maxPending-1); err != nil {
		return SignInAttempt{}, err
	}
	err := db.QueryRow(ctx, `INSERT INTO occ.sign_in_attempts (state_hash, browser_hash, provider_key, code_verifier, created_at, expires_at)
VALUES ($1, $2, $3, $4, now(), now() + make_interval(secs => $5))
RETURNING created_at, expires_at`, a.StateHash, a.BrowserHash, a.ProviderKey, a.CodeVerifier, lifetime.Seconds()).
		Scan(&a.CreatedAt, &a.ExpiresAt)
	return a, err
}

// ConsumeSignInAttempt deletes and returns the unexpired attempt matching all three values;
// ErrNotFound when none does (unknown, replayed, expired, another browser or provider). Exactly one
// of concurrent callbacks gets it.
func ConsumeSignInAttempt(ctx context.Context, db DBTX, stateHash, browserHash []byte, providerKey string) (SignInAttempt, error) {
	a := SignInAttempt{StateHash: stateHash, BrowserHash: browserHash, ProviderKey: providerKey}
	err := db.QueryRow(ctx, `DELETE FROM occ.sign_in_attempts
 WHERE state_hash = $1 AND browser_hash = $2 AND provider_key = $3 AND expires_at > clock_timestamp()
RETURNING code_verifier, created_at, expires_at`, stateHash, browserHash, providerKey).Scan(&a.CodeVerifier, &a.CreatedAt, &a.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return SignInAttempt{}, ErrNotFound
	}
	return a, err
}

// InsertSignInReceipt stores the login receipt of a new session.
func InsertSignInReceipt(ctx context.Context, db DBTX, receiptHash []byte, attemptID, sessionID, providerID string, lifetime time.Duration) error {
	_, err := db.Exec(ctx, `INSERT INTO occ.sign_in_receipts (receipt_hash, attempt_id, session_id, provider_id, created_at, expires_at)
VALUES ($1, $2, $3, $4, now(), now() + make_interval(secs => $5))`,
		receiptHash, attemptID, sessionID, providerID, lifetime.Seconds())
	return err
}

// ConsumeSignInReceipt deletes the unexpired receipt that names exactly this attempt, session and
// provider instance; false when there is none (so a receipt is traded once).
func ConsumeSignInReceipt(ctx context.Context, db DBTX, receiptHash []byte, attemptID, sessionID, providerID string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.sign_in_receipts
 WHERE receipt_hash = $1 AND attempt_id = $2 AND session_id = $3 AND provider_id = $4 AND expires_at > clock_timestamp()`,
		receiptHash, attemptID, sessionID, providerID)
	return tag.RowsAffected() == 1, err
}

// SpendRateLimit adds one hit to keyHash's budget in bucket for the current minute (database
// clock) and returns the hits of this minute, including this one, and the seconds until the minute
// ends (at least 1). Old windows are trimmed on the way.
func SpendRateLimit(ctx context.Context, db DBTX, bucket string, keyHash []byte) (hits int, retryAfter int, err error) {
	err = db.QueryRow(ctx, `
WITH trimmed AS (
  DELETE FROM occ.rate_limits WHERE ctid IN (
    SELECT ctid FROM occ.rate_limits WHERE window_start < date_trunc('minute', clock_timestamp()) - interval '1 minute' LIMIT 100)
)
INSERT INTO occ.rate_limits (bucket, key_hash, window_start, hits) VALUES ($1, $2, date_trunc('minute', clock_timestamp()), 1)
ON CONFLICT (bucket, key_hash, window_start) DO UPDATE SET hits = occ.rate_limits.hits + 1
RETURNING hits, greatest(1, ceil(extract(epoch FROM window_start + interval '1 minute' - clock_timestamp())))::int`,
		bucket, keyHash).Scan(&hits, &retryAfter)
	return hits, retryAfter, err
}

// RateLimitHits reads the hits of keyHash's budget in bucket for the current minute without
// spending, and the seconds until the minute ends.
func RateLimitHits(ctx context.Context, db DBTX, bucket string, keyHash []byte) (hits int, retryAfter int, err error) {
	err = db.QueryRow(ctx, `
SELECT coalesce((SELECT hits FROM occ.rate_limits WHERE bucket = $1 AND key_hash = $2
                  AND window_start = date_trunc('minute', clock_timestamp())), 0),
       greatest(1, ceil(extract(epoch FROM date_trunc('minute', clock_timestamp()) + interval '1 minute' - clock_timestamp())))::int`,
		bucket, keyHash).Scan(&hits, &retryAfter)
	return hits, retryAfter, err
}

// SetLockTimeout bounds how long the transaction waits for a row lock; past it the statement
// fails (and the caller answers a retryable 503).
func SetLockTimeout(ctx context.Context, tx DBTX, d time.Duration) error {
	_, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, fmt.Sprintf("%dms", d.Milliseconds()))
	return err
}
