package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// InventoryAgent is one Agent of the Installation's deployment inventory: the Agent, its
// Namespace's status, its active revision (when deployed) and its newest revision (whose
// deployment may be in progress).
type InventoryAgent struct {
	ID, NamespaceID, NamespaceStatus, Name string
	Status, DesiredRuntimeState            string
	ExecutionMode                          string
	CreatedAt                              time.Time
	// ActiveRevisionID and the active revision's number and admitted harness and compute; empty
	// when the Agent was never deployed.
	ActiveRevisionID     string
	ActiveRevisionNumber int64
	Harness, Compute     json.RawMessage
	// LatestRevisionID is the Agent's newest revision, or empty.
	LatestRevisionID string
}

// ListInventoryAgents returns up to limit Agents of live Namespaces after the keyset position, in
// creation order, each with its active and newest revision.
func ListInventoryAgents(ctx context.Context, db DBTX, after *Cursor, limit int) ([]InventoryAgent, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, `
SELECT a.id, a.namespace_id, n.status, a.name, a.status, a.desired_runtime_state, a.execution_mode, a.created_at,
       ar.id, ar.revision_number, ar.admitted_spec->'harness', ar.admitted_spec->'compute', lr.id
  FROM occ.agents a
  JOIN occ.namespaces n ON n.id = a.namespace_id AND n.deleted_at IS NULL
  LEFT JOIN occ.agent_revisions ar ON ar.namespace_id = a.namespace_id AND ar.agent_id = a.id AND ar.id = a.active_revision_id
  LEFT JOIN LATERAL (SELECT r.id FROM occ.agent_revisions r
                      WHERE r.namespace_id = a.namespace_id AND r.agent_id = a.id
                      ORDER BY r.revision_number DESC LIMIT 1) lr ON true
 WHERE $1::timestamptz IS NULL OR (a.created_at, a.id) > ($1, $2)
 ORDER BY a.created_at, a.id
 LIMIT $3`, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (InventoryAgent, error) {
		var a InventoryAgent
		var activeID, latestID *string
		var number *int64
		err := r.Scan(&a.ID, &a.NamespaceID, &a.NamespaceStatus, &a.Name, &a.Status, &a.DesiredRuntimeState,
			&a.ExecutionMode, &a.CreatedAt, &activeID, &number, &a.Harness, &a.Compute, &latestID)
		if activeID != nil && number != nil {
			a.ActiveRevisionID, a.ActiveRevisionNumber = *activeID, *number
		}
		if latestID != nil {
			a.LatestRevisionID = *latestID
		}
		return a, err
	})
}
