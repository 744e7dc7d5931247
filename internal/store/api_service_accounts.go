package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServiceAccountRow is an OCC ServiceAccount (an upstream-credential holder, not an IAM identity).
type ServiceAccountRow struct {
	ID          string
	NamespaceID string
	Name        string
	Credential  json.RawMessage // a JSON object, or nil
	CreatedAt   time.Time
}

const serviceAccountColumns = `sa.id, sa.namespace_id, sa.name, sa.credential, sa.created_at`

func scanServiceAccount(r pgx.CollectableRow) (ServiceAccountRow, error) {
	var s ServiceAccountRow
	err := r.Scan(&s.ID, &s.NamespaceID, &s.Name, &s.Credential, &s.CreatedAt)
	return s, err
}

// InsertServiceAccountParams name a new ServiceAccount.
type InsertServiceAccountParams struct {
	NamespaceID string
	ID          string
	Name        string
}

// InsertServiceAccount writes a ServiceAccount; a duplicate name in the Namespace is ErrDuplicate.
func InsertServiceAccount(ctx context.Context, db DBTX, p InsertServiceAccountParams) (ServiceAccountRow, error) {
	rows, err := db.Query(ctx, `INSERT INTO occ.service_accounts AS sa (id, namespace_id, name) VALUES ($1, $2, $3)
RETURNING `+serviceAccountColumns, p.ID, p.NamespaceID, p.Name)
	return oneRow(rows, err, scanServiceAccount)
}

// GetServiceAccount reads a ServiceAccount of the Namespace; ErrNotFound when absent.
func GetServiceAccount(ctx context.Context, db DBTX, namespaceID, id string, lock RowLock) (ServiceAccountRow, error) {
	rows, err := db.Query(ctx, `SELECT `+serviceAccountColumns+` FROM occ.service_accounts sa
 WHERE sa.namespace_id = $1 AND sa.id = $2`+lock.clause(), namespaceID, id)
	return oneRow(rows, err, scanServiceAccount)
}

// ListServiceAccounts returns up to limit ServiceAccounts of the Namespace ordered by creation.
func ListServiceAccounts(ctx context.Context, db DBTX, namespaceID string, after *Cursor, limit int) ([]ServiceAccountRow, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, `SELECT `+serviceAccountColumns+` FROM occ.service_accounts sa
 WHERE sa.namespace_id = $1 AND ($2::timestamptz IS NULL OR (sa.created_at, sa.id) > ($2, $3))
 ORDER BY sa.created_at, sa.id LIMIT $4`, namespaceID, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanServiceAccount)
}

// SetServiceAccountCredential replaces the credential reference and returns the row.
func SetServiceAccountCredential(ctx context.Context, db DBTX, namespaceID, id string, credential json.RawMessage) (ServiceAccountRow, error) {
	rows, err := db.Query(ctx, `UPDATE occ.service_accounts sa SET credential = $3 WHERE sa.namespace_id = $1 AND sa.id = $2
RETURNING `+serviceAccountColumns, namespaceID, id, nullableRaw(credential))
	return oneRow(rows, err, scanServiceAccount)
}

// DeleteServiceAccount removes a ServiceAccount; false when it did not exist. One still referenced
// by an Agent is ErrForeignKey.
func DeleteServiceAccount(ctx context.Context, db DBTX, namespaceID, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.service_accounts WHERE namespace_id = $1 AND id = $2`, namespaceID, id)
	return tag.RowsAffected() == 1, classify(err)
}

// ServiceAccountReferences lists the kinds that still reference a ServiceAccount: "agent" (an
// Agent's draft) and "agent_revision" (an active revision or a pending deployment).
func ServiceAccountReferences(ctx context.Context, db DBTX, namespaceID, id string) ([]string, error) {
	rows, err := db.Query(ctx, `
SELECT 'agent' WHERE EXISTS (SELECT 1 FROM occ.agents WHERE namespace_id = $1 AND harness_auth_service_account_id = $2)
UNION ALL
SELECT 'agent_revision' WHERE EXISTS (SELECT 1 FROM (`+liveRevisions+`) lr
  WHERE lr.admitted_spec -> 'harnessAuth' -> 'source' ->> 'kind' = 'service_account'
    AND lr.admitted_spec -> 'harnessAuth' -> 'source' ->> 'id' = $2)`, namespaceID, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
