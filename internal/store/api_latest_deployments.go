package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// LatestRevision is an Agent with its newest revision, for the list of latest deployments.
type LatestRevision struct {
	AgentID        string
	AgentCreatedAt time.Time
	RevisionID     string
	Number         int64
}

// ListLatestRevisions returns, for up to limit Agents of the Namespace after the keyset position
// (in creation order), each Agent's newest revision; Agents without a revision are left out but
// still count towards limit, so a caller paging by Agent position sees every Agent once.
func ListLatestRevisions(ctx context.Context, db DBTX, namespaceID string, after *Cursor, limit int) ([]LatestRevision, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, `
SELECT a.id, a.created_at, r.id, r.revision_number
  FROM (SELECT a.id, a.created_at FROM occ.agents a
         WHERE a.namespace_id = $1 AND ($2::timestamptz IS NULL OR (a.created_at, a.id) > ($2, $3))
         ORDER BY a.created_at, a.id LIMIT $4) a
  LEFT JOIN LATERAL (SELECT r.id, r.revision_number FROM occ.agent_revisions r
                      WHERE r.namespace_id = $1 AND r.agent_id = a.id
                      ORDER BY r.revision_number DESC LIMIT 1) r ON true
 ORDER BY a.created_at, a.id`, namespaceID, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LatestRevision, error) {
		var l LatestRevision
		var revID *string
		var number *int64
		err := r.Scan(&l.AgentID, &l.AgentCreatedAt, &revID, &number)
		if revID != nil && number != nil {
			l.RevisionID, l.Number = *revID, *number
		}
		return l, err
	})
}

// GetWorks reads the work rows with the given idempotency keys; absent keys are absent from the map.
func GetWorks(ctx context.Context, db DBTX, keys []string) (map[string]WorkRecord, error) {
	rows, err := db.Query(ctx, `SELECT `+workColumns+` FROM occ.controller_work w WHERE w.idempotency_key = ANY($1)`, keys)
	if err != nil {
		return nil, err
	}
	works, err := pgx.CollectRows(rows, scanWork)
	if err != nil {
		return nil, err
	}
	out := make(map[string]WorkRecord, len(works))
	for _, w := range works {
		out[w.Key] = w
	}
	return out, nil
}
