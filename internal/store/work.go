package store

import "context"

// WorkRow is the owner and target of one unit of controller work.
type WorkRow struct {
	Key             string
	NamespaceID     string
	AgentID         *string
	RevisionID      *string
	ActorID         string
	NamespaceTarget *string
	AgentTarget     *string
}

// WorkNotifyChannel is the LISTEN/NOTIFY channel that wakes idle workers.
const WorkNotifyChannel = "occ_controller_work"

// InsertWork queues a new lifecycle work row inside the caller's transaction and notifies idle
// workers on commit. It returns false when the key already exists (the existing row is left
// unchanged: enqueue never revives work).
func InsertWork(ctx context.Context, db DBTX, w WorkRow) (bool, error) {
	tag, err := db.Exec(ctx, `
INSERT INTO occ.controller_work (idempotency_key, namespace_id, agent_id, revision_id, actor_id, namespace_target, agent_target)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idempotency_key) DO NOTHING`,
		w.Key, w.NamespaceID, w.AgentID, w.RevisionID, w.ActorID, w.NamespaceTarget, w.AgentTarget)
	if err != nil || tag.RowsAffected() == 0 {
		return false, err
	}
	_, err = db.Exec(ctx, `SELECT pg_notify($1, $2)`, WorkNotifyChannel, w.Key)
	return true, err
}
