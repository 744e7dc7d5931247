package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditFilter narrows GET /audit-events. Empty strings and nil times do not filter. Before is the
// keyset position of the last event of the previous page (newest first).
type AuditFilter struct {
	NamespaceID  string
	ResourceKind string
	ResourceID   string
	ActorID      string
	Since        *time.Time // occurred_at >= Since
	Until        *time.Time // occurred_at < Until
	Before       *Cursor
	Limit        int
}

// ListAuditEvents returns audit events newest first (occurred_at, then id, descending), through
// the index on (occurred_at DESC, id DESC).
func ListAuditEvents(ctx context.Context, db DBTX, f AuditFilter) ([]AuditEventRow, error) {
	at, id := cursorArgs(f.Before)
	rows, err := db.Query(ctx, `
SELECT id, occurred_at, kind, actor_id, action, namespace_id, resource_kind, resource_id, outcome, details
  FROM occ.audit_events
 WHERE ($1 = '' OR namespace_id = $1)
   AND ($2 = '' OR resource_kind = $2)
   AND ($3 = '' OR resource_id = $3)
   AND ($4::timestamptz IS NULL OR occurred_at >= $4)
   AND ($5::timestamptz IS NULL OR occurred_at < $5)
   AND ($6::timestamptz IS NULL OR (occurred_at, id) < ($6, $7))
   AND ($9 = '' OR actor_id = $9)
 ORDER BY occurred_at DESC, id DESC
 LIMIT $8`, f.NamespaceID, f.ResourceKind, f.ResourceID, f.Since, f.Until, at, id, f.Limit, f.ActorID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEventRow, error) {
		var e AuditEventRow
		var occurred time.Time
		err := r.Scan(&e.ID, &occurred, &e.Kind, &e.ActorID, &e.Action, &e.NamespaceID, &e.ResourceKind,
			&e.ResourceID, &e.Outcome, &e.Details)
		e.OccurredAt = &occurred
		return e, err
	})
}
