package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// ConfigurationRow is the metadata of a Configuration; its values live in the Configuration Driver.
type ConfigurationRow struct {
	ID             string
	NamespaceID    string
	Kind           string
	Generation     int64
	DriverID       string
	SecretBindings json.RawMessage // a JSON object, or nil
	CreatedAt      time.Time
}

const configurationColumns = `c.id, c.namespace_id, c.kind, c.generation, c.driver_id, c.secret_bindings, c.created_at`

func scanConfiguration(r pgx.CollectableRow) (ConfigurationRow, error) {
	var c ConfigurationRow
	err := r.Scan(&c.ID, &c.NamespaceID, &c.Kind, &c.Generation, &c.DriverID, &c.SecretBindings, &c.CreatedAt)
	return c, err
}

// InsertConfiguration writes a new Configuration (generation 1) and returns it.
func InsertConfiguration(ctx context.Context, db DBTX, c ConfigurationRow) (ConfigurationRow, error) {
	rows, err := db.Query(ctx, `INSERT INTO occ.configurations AS c (id, namespace_id, kind, generation, driver_id, secret_bindings)
VALUES ($1, $2, 'agent', 1, $3, $4) RETURNING `+configurationColumns, c.ID, c.NamespaceID, c.DriverID, nullableRaw(c.SecretBindings))
	if err != nil {
		return ConfigurationRow{}, err
	}
	return pgx.CollectExactlyOneRow(rows, scanConfiguration)
}

// GetConfiguration reads a Configuration of the Namespace with an optional row lock; ErrNotFound
// when absent.
func GetConfiguration(ctx context.Context, db DBTX, namespaceID, id string, lock RowLock) (ConfigurationRow, error) {
	rows, err := db.Query(ctx, `SELECT `+configurationColumns+` FROM occ.configurations c
 WHERE c.namespace_id = $1 AND c.id = $2`+lock.clause(), namespaceID, id)
	return oneRow(rows, err, scanConfiguration)
}

// UpdateConfiguration advances the generation by one and replaces the bindings; it returns the
// updated row.
func UpdateConfiguration(ctx context.Context, db DBTX, namespaceID, id string, bindings json.RawMessage) (ConfigurationRow, error) {
	rows, err := db.Query(ctx, `UPDATE occ.configurations c SET generation = c.generation + 1, secret_bindings = $3,
  updated_at = clock_timestamp() WHERE c.namespace_id = $1 AND c.id = $2 RETURNING `+configurationColumns,
		namespaceID, id, nullableRaw(bindings))
	return oneRow(rows, err, scanConfiguration)
}

// DeleteConfiguration removes a Configuration row; false when it did not exist. One still
// referenced by an Agent is ErrForeignKey.
func DeleteConfiguration(ctx context.Context, db DBTX, namespaceID, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.configurations WHERE namespace_id = $1 AND id = $2`, namespaceID, id)
	return tag.RowsAffected() == 1, classify(err)
}

// liveRevisions is the set of revisions that still consume their inputs: the active revision of
// an Agent, and every revision whose deployment work is queued or claimed.
const liveRevisions = `
SELECT r.id, r.admitted_spec FROM occ.agent_revisions r
  JOIN occ.agents a ON a.namespace_id = r.namespace_id AND a.id = r.agent_id
 WHERE r.namespace_id = $1 AND (a.active_revision_id = r.id OR EXISTS (
   SELECT 1 FROM occ.controller_work w
    WHERE w.idempotency_key = 'agent_revision:' || r.id || ':reconcile' AND w.state IN ('queued', 'claimed')))`

// ConfigurationReferences lists the kinds that still reference a Configuration: "agent" (an
// Agent's draft) and "agent_revision" (an active revision or a pending deployment).
func ConfigurationReferences(ctx context.Context, db DBTX, namespaceID, id string) ([]string, error) {
	rows, err := db.Query(ctx, `
SELECT 'agent' WHERE EXISTS (SELECT 1 FROM occ.agents WHERE namespace_id = $1 AND configuration_id = $2)
UNION ALL
SELECT 'agent_revision' WHERE EXISTS (SELECT 1 FROM (`+liveRevisions+`) lr WHERE lr.admitted_spec ->> 'configurationId' = $2)`,
		namespaceID, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// RemoveTargetBindings deletes the AccessBindings whose exact target is the resource and returns
// their ids (in order), for the deletion's audit event.
func RemoveTargetBindings(ctx context.Context, db DBTX, r NamespaceResource) ([]string, error) {
	rows, err := db.Query(ctx, `WITH removed AS (DELETE FROM occ.iam_access_bindings
 WHERE namespace_id = $1 AND resource_kind = $2 AND resource_id = $3 RETURNING id)
SELECT id FROM removed ORDER BY id`, r.NamespaceID, r.Kind, r.ID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
