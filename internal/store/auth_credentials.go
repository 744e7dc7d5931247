package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sessions and service keys as the API reads and writes them. Only SHA-256 hashes of tokens and
// keys are ever stored; lifetimes are computed with the database clock so the CHECK constraints on
// the tables (8 hours, 365 days) hold by construction.

// Session is a live browser session with the account it belongs to.
type Session struct {
	ID        string
	ExpiresAt time.Time
	Account   Account
	// ProviderID is the provider instance of an external sign-in; nil for a password session.
	ProviderID *string
}

// InsertSession stores a new session for accountID that ends lifetime after the transaction's
// start, and returns its end.
func InsertSession(ctx context.Context, db DBTX, id string, tokenHash []byte, accountID string, lifetime time.Duration) (time.Time, error) {
	var expires time.Time
	err := db.QueryRow(ctx, `INSERT INTO occ.sessions (id, token_hash, account_id, created_at, expires_at)
VALUES ($1, $2, $3, now(), now() + make_interval(secs => $4))
RETURNING expires_at`, id, tokenHash, accountID, lifetime.Seconds()).Scan(&expires)
	return expires, err
}

// GetLiveSession finds the unexpired session whose token hashes to tokenHash, of an enabled
// account; ErrNotFound otherwise. It always reads storage (there is no session cache).
func GetLiveSession(ctx context.Context, db DBTX, tokenHash []byte) (Session, error) {
	var s Session
	err := db.QueryRow(ctx, `
SELECT s.id, s.expires_at, a.id, a.email, a.name, a.principal_id, a.disabled, s.provider_id
  FROM occ.sessions s JOIN occ.accounts a ON a.id = s.account_id
 WHERE s.token_hash = $1 AND s.expires_at > clock_timestamp() AND NOT a.disabled`, tokenHash).
		Scan(&s.ID, &s.ExpiresAt, &s.Account.ID, &s.Account.Email, &s.Account.Name, &s.Account.PrincipalID, &s.Account.Disabled, &s.ProviderID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, ErrNotFound
	}
	return s, err
}

// DeleteSession removes a session; false when it did not exist.
func DeleteSession(ctx context.Context, db DBTX, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.sessions WHERE id = $1`, id)
	return tag.RowsAffected() == 1, err
}

// PasswordLogin is what a password sign-in needs about one email.
type PasswordLogin struct {
	Account      Account
	PasswordHash string
}

// GetPasswordLogin reads the account and password hash of an email; ErrNotFound when there is no
// account or no password for it.
func GetPasswordLogin(ctx context.Context, db DBTX, email string) (PasswordLogin, error) {
	var l PasswordLogin
	err := db.QueryRow(ctx, `
SELECT a.id, a.email, a.name, a.principal_id, a.disabled, p.password_hash
  FROM occ.accounts a JOIN occ.password_credentials p ON p.account_id = a.id
 WHERE a.email = $1`, email).
		Scan(&l.Account.ID, &l.Account.Email, &l.Account.Name, &l.Account.PrincipalID, &l.Account.Disabled, &l.PasswordHash)
	if errors.Is(err, pgx.ErrNoRows) {
		return PasswordLogin{}, ErrNotFound
	}
	return l, err
}

const serviceKeyColumns = `k.id, k.start, k.service_principal_id, k.installation_id, k.namespace_id, k.name, k.created_by, k.expires_at`

func scanServiceKey(r pgx.CollectableRow) (ServiceKey, error) {
	var k ServiceKey
	err := r.Scan(&k.ID, &k.Start, &k.ServicePrincipalID, &k.InstallationID, &k.NamespaceID, &k.Name, &k.CreatedBy, &k.ExpiresAt)
	return k, err
}

const getLiveServiceKeySQL = `SELECT ` + serviceKeyColumns + ` FROM occ.service_keys k
 WHERE k.key_hash = $1 AND k.expires_at > clock_timestamp()`

// GetLiveServiceKey finds the unexpired key whose plaintext hashes to keyHash; ErrNotFound
// otherwise (unknown, expired or revoked: revocation deletes the row).
func GetLiveServiceKey(ctx context.Context, db DBTX, keyHash []byte) (ServiceKey, error) {
	rows, err := db.Query(ctx, getLiveServiceKeySQL, keyHash)
	return oneRow(rows, err, scanServiceKey)
}

// GetLiveServiceKeyAhead is GetLiveServiceKey sent in front of p's next statement (decision 48).
func GetLiveServiceKeyAhead(p *Pipeline, keyHash []byte) *Pending[ServiceKey] {
	return queueOneRow(p, scanServiceKey, getLiveServiceKeySQL, keyHash)
}

// GetServiceKey reads a key by id (expired or not); ErrNotFound when absent.
func GetServiceKey(ctx context.Context, db DBTX, id string) (ServiceKey, error) {
	rows, err := db.Query(ctx, `SELECT `+serviceKeyColumns+` FROM occ.service_keys k WHERE k.id = $1`, id)
	return oneRow(rows, err, scanServiceKey)
}

// IssueServiceKey stores a key by its hash with a lifetime counted from the transaction's start and
// returns its expiry, truncated to milliseconds as the API shows it.
func IssueServiceKey(ctx context.Context, db DBTX, k ServiceKey, lifetime time.Duration) (time.Time, error) {
	var expires time.Time
	err := db.QueryRow(ctx, `INSERT INTO occ.service_keys
  (id, key_hash, start, service_principal_id, installation_id, namespace_id, name, created_by, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), date_trunc('milliseconds', now() + make_interval(secs => $9)))
RETURNING expires_at`,
		k.ID, k.Hash, k.Start, k.ServicePrincipalID, k.InstallationID, k.NamespaceID, k.Name, k.CreatedBy, lifetime.Seconds()).Scan(&expires)
	return expires, err
}

// DeleteServiceKey revokes a key by deleting its row; false when it did not exist.
func DeleteServiceKey(ctx context.Context, db DBTX, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.service_keys WHERE id = $1`, id)
	return tag.RowsAffected() == 1, err
}
