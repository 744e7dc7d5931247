package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// `occ login`: device authorizations a person approves in the browser and the CLI sessions they
// turn into. Only SHA-256 hashes of device codes, user codes and tokens are stored.

// Device authorization states.
const (
	DeviceAuthorizationPending  = "pending"
	DeviceAuthorizationApproved = "approved"
	DeviceAuthorizationDenied   = "denied"
	DeviceAuthorizationConsumed = "consumed"
)

// ErrUserCodeTaken: a pending authorization already has this user code (the caller draws another).
var ErrUserCodeTaken = errors.New("store: the user code is taken")

// DeviceAuthorization is one `occ login` request.
type DeviceAuthorization struct {
	ID               string
	DeviceCodeHash   []byte
	UserCodeHash     []byte
	ClientLabel      string
	RequesterAddress string
	NamespaceID      *string
	State            string
	AccountID        *string
	ParentSessionID  *string
	CreatedAt        time.Time
	ExpiresAt        time.Time
	LastPolledAt     *time.Time
}

// InsertDeviceAuthorization stores a pending authorization valid for lifetime, first removing
// expired ones and the oldest pending ones beyond maxPending-1 (under a transaction-scoped advisory
// lock shared by every replica).
func InsertDeviceAuthorization(ctx context.Context, db DBTX, a DeviceAuthorization, lifetime time.Duration, maxPending int) (DeviceAuthorization, error) {
	if _, err := db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('occ.cli_device_authorizations', 0))`); err != nil {
		return a, err
	}
	if _, err := db.Exec(ctx, `DELETE FROM occ.cli_device_authorizations WHERE expires_at <= clock_timestamp()`); err != nil {
		return a, err
	}
	if _, err := db.Exec(ctx, `DELETE FROM occ.cli_device_authorizations WHERE id IN (
  SELECT id FROM occ.cli_device_authorizations WHERE state = 'pending' ORDER BY created_at DESC, id OFFSET $1)`, maxPending-1); err != nil {
		return a, err
	}
	err := db.QueryRow(ctx, `INSERT INTO occ.cli_device_authorizations
  (id, device_code_hash, user_code_hash, client_label, requester_address, namespace_id, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, now(), now() + make_interval(secs => $7))
RETURNING state, created_at, expires_at`, a.ID, a.DeviceCodeHash, a.UserCodeHash, a.ClientLabel, a.RequesterAddress,
		a.NamespaceID, lifetime.Seconds()).Scan(&a.State, &a.CreatedAt, &a.ExpiresAt)
	if constraintViolated(err, "cli_device_authorizations_pending_code") {
		return a, ErrUserCodeTaken
	}
	return a, err
}

const deviceAuthorizationColumns = `id, device_code_hash, user_code_hash, client_label, requester_address, namespace_id, state,
  account_id, parent_session_id, created_at, expires_at, last_polled_at`

func scanDeviceAuthorization(r pgx.Row) (DeviceAuthorization, error) {
	var a DeviceAuthorization
	err := r.Scan(&a.ID, &a.DeviceCodeHash, &a.UserCodeHash, &a.ClientLabel, &a.RequesterAddress, &a.NamespaceID, &a.State,
		&a.AccountID, &a.ParentSessionID, &a.CreatedAt, &a.ExpiresAt, &a.LastPolledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return DeviceAuthorization{}, ErrNotFound
	}
	return a, err
}

// GetPendingDeviceAuthorization finds the unexpired pending authorization of a user code.
func GetPendingDeviceAuthorization(ctx context.Context, db DBTX, userCodeHash []byte) (DeviceAuthorization, error) {
	return scanDeviceAuthorization(db.QueryRow(ctx, `SELECT `+deviceAuthorizationColumns+` FROM occ.cli_device_authorizations
 WHERE user_code_hash = $1 AND state = 'pending' AND expires_at > clock_timestamp()`, userCodeHash))
}

// DecideDeviceAuthorization moves the unexpired pending authorization of a user code to approved
// (naming the approving account and browser session) or denied; ErrNotFound when there is none.
func DecideDeviceAuthorization(ctx context.Context, db DBTX, userCodeHash []byte, approve bool, accountID, sessionID string) (DeviceAuthorization, error) {
	state, parent := DeviceAuthorizationDenied, (*string)(nil)
	if approve {
		state, parent = DeviceAuthorizationApproved, &sessionID
	}
	return scanDeviceAuthorization(db.QueryRow(ctx, `UPDATE occ.cli_device_authorizations
   SET state = $2, account_id = $3, parent_session_id = $4, decided_at = clock_timestamp()
 WHERE user_code_hash = $1 AND state = 'pending' AND expires_at > clock_timestamp()
RETURNING `+deviceAuthorizationColumns, userCodeHash, state, accountID, parent))
}

// PollDeviceAuthorization locks the authorization of a device code, records this poll and returns
// it as it was before (LastPolledAt is the previous poll); ErrNotFound when there is none.
func PollDeviceAuthorization(ctx context.Context, db DBTX, deviceCodeHash []byte) (DeviceAuthorization, error) {
	a, err := scanDeviceAuthorization(db.QueryRow(ctx, `SELECT `+deviceAuthorizationColumns+` FROM occ.cli_device_authorizations
 WHERE device_code_hash = $1 FOR UPDATE`, deviceCodeHash))
	if err != nil {
		return a, err
	}
	_, err = db.Exec(ctx, `UPDATE occ.cli_device_authorizations SET last_polled_at = clock_timestamp() WHERE id = $1`, a.ID)
	return a, err
}

// MarkDeviceAuthorizationConsumed ends an approved authorization: its code cannot be traded again.
func MarkDeviceAuthorizationConsumed(ctx context.Context, db DBTX, id string) error {
	_, err := db.Exec(ctx, `UPDATE occ.cli_device_authorizations SET state = 'consumed' WHERE id = $1 AND state = 'approved'`, id)
	return err
}

// ElapsedSince is how long ago t was by the database clock.
func ElapsedSince(ctx context.Context, db DBTX, t time.Time) (time.Duration, error) {
	var seconds float64
	err := db.QueryRow(ctx, `SELECT extract(epoch FROM clock_timestamp() - $1::timestamptz)`, t).Scan(&seconds)
	return time.Duration(seconds * float64(time.Second)), err
}

// CLISession is a CLI session with the account it admits.
type CLISession struct {
	ID               string
	AuthorizationID  string
	ParentSessionID  string
	ParentProviderID *string
	NamespaceID      *string
	ClientLabel      string
	CreatedAt        time.Time
	ExpiresAt        time.Time
	Account          Account
}

// CountLiveCLISessions counts the unexpired CLI sessions of a parent session.
func CountLiveCLISessions(ctx context.Context, db DBTX, parentSessionID string) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM occ.cli_sessions WHERE parent_session_id = $1 AND expires_at > clock_timestamp()`,
		parentSessionID).Scan(&n)
	return n, err
}

// LiveParentSession reports whether a browser session exists unexpired, and its end.
func LiveParentSession(ctx context.Context, db DBTX, id string) (time.Time, bool, error) {
	var expires time.Time
	err := db.QueryRow(ctx, `SELECT expires_at FROM occ.sessions WHERE id = $1 AND expires_at > clock_timestamp()`, id).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	return expires, err == nil, err
}

// InsertCLISession stores a CLI session that ends at the earlier of its parent's end and maxLifetime
// from now. ErrCLISessionRefused when the guard trigger refuses it.
func InsertCLISession(ctx context.Context, db DBTX, s CLISession, tokenHash []byte, maxLifetime time.Duration) (CLISession, error) {
	err := db.QueryRow(ctx, `INSERT INTO occ.cli_sessions
  (id, token_hash, authorization_id, account_id, parent_session_id, namespace_id, client_label, created_at, expires_at)
SELECT $1, $2, $3, $4, $5, $6, $7, now(), least(p.expires_at, now() + make_interval(secs => $8))
  FROM occ.sessions p WHERE p.id = $5
RETURNING created_at, expires_at`, s.ID, tokenHash, s.AuthorizationID, s.Account.ID, s.ParentSessionID, s.NamespaceID,
		s.ClientLabel, maxLifetime.Seconds()).Scan(&s.CreatedAt, &s.ExpiresAt)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return s, ErrCLISessionRefused
	case errors.As(err, &pgErr) && pgErr.Code == "55000":
		return s, ErrCLISessionRefused
	}
	return s, err
}

const cliSessionColumns = `c.id, c.authorization_id, c.parent_session_id, p.provider_id, c.namespace_id, c.client_label,
  c.created_at, c.expires_at, a.id, a.email, a.name, a.principal_id, a.disabled`

func scanCLISession(r pgx.CollectableRow) (CLISession, error) {
	var s CLISession
	err := r.Scan(&s.ID, &s.AuthorizationID, &s.ParentSessionID, &s.ParentProviderID, &s.NamespaceID, &s.ClientLabel,
		&s.CreatedAt, &s.ExpiresAt, &s.Account.ID, &s.Account.Email, &s.Account.Name, &s.Account.PrincipalID, &s.Account.Disabled)
	return s, err
}

// GetLiveCLISession finds the unexpired CLI session of a token whose parent session is unexpired
// and whose account is enabled; ErrNotFound otherwise.
func GetLiveCLISession(ctx context.Context, db DBTX, tokenHash []byte) (CLISession, error) {
	rows, err := db.Query(ctx, `SELECT `+cliSessionColumns+`
  FROM occ.cli_sessions c JOIN occ.sessions p ON p.id = c.parent_session_id JOIN occ.accounts a ON a.id = c.account_id
 WHERE c.token_hash = $1 AND c.expires_at > clock_timestamp() AND p.expires_at > clock_timestamp() AND NOT a.disabled`, tokenHash)
	return oneRow(rows, err, scanCLISession)
}

// ListCLISessions lists the unexpired CLI sessions of an account, newest first.
func ListCLISessions(ctx context.Context, db DBTX, accountID string) ([]CLISession, error) {
	rows, err := db.Query(ctx, `SELECT `+cliSessionColumns+`
  FROM occ.cli_sessions c JOIN occ.sessions p ON p.id = c.parent_session_id JOIN occ.accounts a ON a.id = c.account_id
 WHERE c.account_id = $1 AND c.expires_at > clock_timestamp()
 ORDER BY c.created_at DESC, c.id`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanCLISession)
}

// DeleteCLISession revokes a CLI session of an account; false when the account has no such session.
func DeleteCLISession(ctx context.Context, db DBTX, accountID, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.cli_sessions WHERE id = $1 AND account_id = $2`, id, accountID)
	return tag.RowsAffected() == 1, err
}

// SweepCLISignIn deletes up to limit expired device authorizations and expired CLI sessions.
func SweepCLISignIn(ctx context.Context, db DBTX, limit int) (int64, error) {
	a, err := db.Exec(ctx, `DELETE FROM occ.cli_device_authorizations WHERE id IN (
  SELECT id FROM occ.cli_device_authorizations WHERE expires_at <= clock_timestamp() LIMIT $1)`, limit)
	if err != nil {
		return 0, err
	}
	s, err := db.Exec(ctx, `DELETE FROM occ.cli_sessions WHERE id IN (
  SELECT id FROM occ.cli_sessions WHERE expires_at <= clock_timestamp() LIMIT $1)`, limit)
	return a.RowsAffected() + s.RowsAffected(), err
}
