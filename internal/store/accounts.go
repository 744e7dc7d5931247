package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

type Account struct {
	ID          string
	Email       string
	Name        string
	PrincipalID string
	Disabled    bool
}

// InsertAccount writes a human account and its password credential; an email in use is
// ErrDuplicate.
func InsertAccount(ctx context.Context, db DBTX, a Account, passwordHash string) error {
	if _, err := db.Exec(ctx, `INSERT INTO occ.accounts (id, email, name, principal_id) VALUES ($1, $2, $3, $4)`,
		a.ID, a.Email, a.Name, a.PrincipalID); err != nil {
		return classify(err)
	}
	_, err := db.Exec(ctx, `INSERT INTO occ.password_credentials (account_id, password_hash) VALUES ($1, $2)`, a.ID, passwordHash)
	return classify(err)
}

// GetAccountByEmail reads an account; ErrNotFound when absent.
func GetAccountByEmail(ctx context.Context, db DBTX, email string) (Account, error) {
	var a Account
	err := db.QueryRow(ctx, `SELECT id, email, name, principal_id, disabled FROM occ.accounts WHERE email = $1`, email).
		Scan(&a.ID, &a.Email, &a.Name, &a.PrincipalID, &a.Disabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, ErrNotFound
	}
	return a, err
}

type ServiceKey struct {
	ID                 string
	Hash               []byte
	Start              string
	ServicePrincipalID string
	InstallationID     string
	NamespaceID        *string
	Name               string
	CreatedBy          string
	ExpiresAt          time.Time
}

// InsertServiceKey stores a key by its hash; the plaintext never reaches the database.
func InsertServiceKey(ctx context.Context, db DBTX, k ServiceKey) error {
	_, err := db.Exec(ctx, `INSERT INTO occ.service_keys
  (id, key_hash, start, service_principal_id, installation_id, namespace_id, name, created_by, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		k.ID, k.Hash, k.Start, k.ServicePrincipalID, k.InstallationID, k.NamespaceID, k.Name, k.CreatedBy, k.ExpiresAt)
	return err
}

// PrincipalHoldsPermissions reports whether some binding of the identity (direct, unscoped or
// exact on the Installation) names a Role that contains every given (action, kind) pair.
func PrincipalHoldsPermissions(ctx context.Context, db DBTX, identityID string, permissions [][2]string) (bool, error) {
	actions := make([]string, len(permissions))
	kinds := make([]string, len(permissions))
	for i, p := range permissions {
		actions[i], kinds[i] = p[0], p[1]
	}
	var ok bool
	err := db.QueryRow(ctx, `
SELECT EXISTS (
  SELECT 1 FROM occ.iam_access_bindings b
   WHERE b.identity_subject_id = $1
     AND (SELECT count(*) FROM occ.iam_role_permissions p
           JOIN unnest($2::text[], $3::text[]) AS want(a, k) ON p.action = want.a AND p.resource_kind = want.k
          WHERE p.role_id = b.role_id) = cardinality($2::text[]))`, identityID, actions, kinds).Scan(&ok)
	return ok, err
}
