package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SecretRow is the metadata of a Secret and its internal backend locator; the value lives only in
// the Secret Driver.
type SecretRow struct {
	ID                   string
	NamespaceID          string
	Name                 string
	DriverID             string
	BackendNamespaceName *string
	BackendName          *string
	BackendKey           *string
	BackendUID           *string
	CreatedAt            time.Time
}

const secretColumns = `s.id, s.namespace_id, s.name, s.driver_id, s.backend_namespace_name, s.backend_name,
  s.backend_key, s.backend_uid, s.created_at`

func scanSecret(r pgx.CollectableRow) (SecretRow, error) {
	var s SecretRow
	err := r.Scan(&s.ID, &s.NamespaceID, &s.Name, &s.DriverID, &s.BackendNamespaceName, &s.BackendName,
		&s.BackendKey, &s.BackendUID, &s.CreatedAt)
	return s, err
}

// InsertSecret writes a Secret's metadata and backend locator and returns the row.
func InsertSecret(ctx context.Context, db DBTX, s SecretRow) (SecretRow, error) {
	rows, err := db.Query(ctx, `INSERT INTO occ.secrets AS s (id, namespace_id, name, driver_id, backend_namespace_name,
  backend_name, backend_key, backend_uid) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+secretColumns,
		s.ID, s.NamespaceID, s.Name, s.DriverID, s.BackendNamespaceName, s.BackendName, s.BackendKey, s.BackendUID)
	if err != nil {
		return SecretRow{}, err
	}
	return pgx.CollectExactlyOneRow(rows, scanSecret)
}

// GetSecret reads a Secret of the Namespace with an optional row lock; ErrNotFound when absent.
func GetSecret(ctx context.Context, db DBTX, namespaceID, id string, lock RowLock) (SecretRow, error) {
	rows, err := db.Query(ctx, `SELECT `+secretColumns+` FROM occ.secrets s WHERE s.namespace_id = $1 AND s.id = $2`+lock.clause(),
		namespaceID, id)
	return oneRow(rows, err, scanSecret)
}

// ListSecrets returns up to limit Secrets of the Namespace ordered by creation, after the cursor.
func ListSecrets(ctx context.Context, db DBTX, namespaceID string, after *Cursor, limit int) ([]SecretRow, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, `SELECT `+secretColumns+` FROM occ.secrets s
 WHERE s.namespace_id = $1 AND ($2::timestamptz IS NULL OR (s.created_at, s.id) > ($2, $3))
 ORDER BY s.created_at, s.id LIMIT $4`, namespaceID, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSecret)
}

// TouchSecret records a value change (updated_at).
func TouchSecret(ctx context.Context, db DBTX, namespaceID, id string) error {
	_, err := db.Exec(ctx, `UPDATE occ.secrets SET updated_at = clock_timestamp() WHERE namespace_id = $1 AND id = $2`, namespaceID, id)
	return err
}

// DeleteSecret removes a Secret row; false when it did not exist. One still referenced by an
// Agent is ErrForeignKey.
func DeleteSecret(ctx context.Context, db DBTX, namespaceID, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.secrets WHERE namespace_id = $1 AND id = $2`, namespaceID, id)
	return tag.RowsAffected() == 1, classify(err)
}

// specUsesSecret is true when an admitted_spec (alias spec) consumes Secret $2.
const specUsesSecret = `(spec -> 'harnessAuth' -> 'source' ->> 'kind' = 'secret' AND spec -> 'harnessAuth' -> 'source' ->> 'id' = $2
  OR EXISTS (SELECT 1 FROM jsonb_each(CASE WHEN jsonb_typeof(spec -> 'secretBindings') = 'object'
                                           THEN spec -> 'secretBindings' ELSE '{}'::jsonb END) b
              WHERE b.value -> 'source' ->> 'id' = $2))`

// bindingsUseSecret is true when a secret_bindings object (alias sb) binds Secret $2.
const bindingsUseSecret = `EXISTS (SELECT 1 FROM jsonb_each(CASE WHEN jsonb_typeof(sb) = 'object' THEN sb ELSE '{}'::jsonb END) b
  WHERE b.value -> 'source' ->> 'id' = $2)`

// SecretReferences lists the kinds that still reference a Secret: "configuration" (bindings),
// "agent" (Harness authentication of a draft) and "agent_revision" (an active revision or a
// pending deployment).
func SecretReferences(ctx context.Context, db DBTX, namespaceID, id string) ([]string, error) {
	rows, err := db.Query(ctx, `
SELECT 'configuration' WHERE EXISTS (SELECT 1 FROM occ.configurations c, LATERAL (SELECT c.secret_bindings AS sb) x
                                      WHERE c.namespace_id = $1 AND `+bindingsUseSecret+`)
UNION ALL
SELECT 'agent' WHERE EXISTS (SELECT 1 FROM occ.agents WHERE namespace_id = $1 AND harness_auth_secret_id = $2)
UNION ALL
SELECT 'agent_revision' WHERE EXISTS (SELECT 1 FROM (`+liveRevisions+`) lr, LATERAL (SELECT lr.admitted_spec AS spec) x
                                       WHERE `+specUsesSecret+`)`, namespaceID, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Consumer is one resource that consumes a Secret.
type Consumer struct {
	Kind string
	ID   string
}

// SecretConsumers lists the Configurations binding a Secret and the Agents authenticating with it,
// ordered by kind and id.
func SecretConsumers(ctx context.Context, db DBTX, namespaceID, id string) ([]Consumer, error) {
	rows, err := db.Query(ctx, `
SELECT 'configuration', c.id FROM occ.configurations c, LATERAL (SELECT c.secret_bindings AS sb) x
 WHERE c.namespace_id = $1 AND `+bindingsUseSecret+`
UNION ALL
SELECT 'agent', a.id FROM occ.agents a WHERE a.namespace_id = $1 AND a.harness_auth_secret_id = $2
ORDER BY 1, 2`, namespaceID, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Consumer, error) {
		var c Consumer
		err := r.Scan(&c.Kind, &c.ID)
		return c, err
	})
}

// ExistingSecrets returns which of ids are Secrets of the Namespace.
func ExistingSecrets(ctx context.Context, db DBTX, namespaceID string, ids []string) (map[string]bool, error) {
	rows, err := db.Query(ctx, `SELECT id FROM occ.secrets WHERE namespace_id = $1 AND id = ANY($2) FOR SHARE`, namespaceID, ids)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(found))
	for _, id := range found {
		out[id] = true
	}
	return out, nil
}
