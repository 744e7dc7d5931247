package store

import (
	"context"
	"time"
)

// AuditEventRow is one row of occ.audit_events. Details is a JSON object (already redacted).
// A nil OccurredAt lets the database clock stamp the event.
type AuditEventRow struct {
	ID           string
	OccurredAt   *time.Time
	Kind         string
	ActorID      string
	Action       string
	NamespaceID  *string
	ResourceKind string
	ResourceID   string
	Outcome      string
	Details      []byte
}

// InsertAuditEvent appends one audit event inside the caller's transaction.
func InsertAuditEvent(ctx context.Context, db Execer, row AuditEventRow) error {
	_, err := db.Exec(ctx, `
INSERT INTO occ.audit_events
  (id, occurred_at, kind, actor_id, action, namespace_id, resource_kind, resource_id, outcome, details)
VALUES ($1, COALESCE($2, clock_timestamp()), $3, $4, $5, $6, $7, $8, $9, $10)`,
		row.ID, row.OccurredAt, row.Kind, row.ActorID, row.Action, row.NamespaceID,
		row.ResourceKind, row.ResourceID, row.Outcome, nullableJSON(row.Details))
	return err
}

func nullableJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
