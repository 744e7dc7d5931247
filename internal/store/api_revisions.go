package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// RevisionRow is one immutable AgentRevision.
type RevisionRow struct {
	ID           string
	NamespaceID  string
	AgentID      string
	Number       int64
	AdmittedSpec json.RawMessage
	AdmittedAt   time.Time
}

const revisionColumns = `r.id, r.namespace_id, r.agent_id, r.revision_number, r.admitted_spec, r.admitted_at`

func scanRevision(r pgx.CollectableRow) (RevisionRow, error) {
	var rev RevisionRow
	err := r.Scan(&rev.ID, &rev.NamespaceID, &rev.AgentID, &rev.Number, &rev.AdmittedSpec, &rev.AdmittedAt)
	return rev, err
}

// InsertRevisionParams name a new revision of an Agent and its admitted spec.
type InsertRevisionParams struct {
	NamespaceID string
	AgentID     string
	ID          string
	Spec        json.RawMessage
}

// InsertRevision writes the next revision of an Agent (number = highest + 1). The caller holds the
// Agent's row lock, so numbers are assigned one at a time.
func InsertRevision(ctx context.Context, db DBTX, p InsertRevisionParams) (RevisionRow, error) {
	rows, err := db.Query(ctx, insertRevisionSQL, p.NamespaceID, p.AgentID, p.ID, string(p.Spec))
	return oneRow(rows, err, scanRevision)
}

// InsertRevisionAhead is InsertRevision sent in front of pipe's next statement (decision 47).
func InsertRevisionAhead(pipe *Pipeline, p InsertRevisionParams) *Pending[RevisionRow] {
	return queueOneRow(pipe, scanRevision, insertRevisionSQL, p.NamespaceID, p.AgentID, p.ID, string(p.Spec))
}

const insertRevisionSQL = `INSERT INTO occ.agent_revisions AS r (namespace_id, agent_id, id, revision_number, admitted_spec)
SELECT $1, $2, $3, COALESCE(max(x.revision_number), 0) + 1, $4::jsonb FROM occ.agent_revisions x WHERE x.agent_id = $2
RETURNING ` + revisionColumns

// GetRevisionParams name a revision of an Agent.
type GetRevisionParams struct {
	NamespaceID string
	AgentID     string
	ID          string
}

// GetRevision reads a revision of the Agent; ErrNotFound when absent.
func GetRevision(ctx context.Context, db DBTX, p GetRevisionParams) (RevisionRow, error) {
	rows, err := db.Query(ctx, `SELECT `+revisionColumns+` FROM occ.agent_revisions r
 WHERE r.namespace_id = $1 AND r.agent_id = $2 AND r.id = $3`, p.NamespaceID, p.AgentID, p.ID)
	return oneRow(rows, err, scanRevision)
}

// ListRevisions returns up to limit revisions of the Agent by number, after the given number.
func ListRevisions(ctx context.Context, db DBTX, namespaceID, agentID string, afterNumber int64, limit int) ([]RevisionRow, error) {
	rows, err := db.Query(ctx, `SELECT `+revisionColumns+` FROM occ.agent_revisions r
 WHERE r.namespace_id = $1 AND r.agent_id = $2 AND r.revision_number > $3 ORDER BY r.revision_number LIMIT $4`,
		namespaceID, agentID, afterNumber, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanRevision)
}
