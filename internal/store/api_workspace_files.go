package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
)

// InsertInitialWorkspaceFiles stages an Agent's initial workspace files (a non-empty JSON object of
// file name to content) next to the Agent, in the transaction that creates it.
func InsertInitialWorkspaceFiles(ctx context.Context, db DBTX, namespaceID, agentID string, files json.RawMessage) error {
	_, err := db.Exec(ctx, `INSERT INTO occ.agent_initial_workspace_files (namespace_id, agent_id, files) VALUES ($1, $2, $3::jsonb)`,
		namespaceID, agentID, string(files))
	return classify(err)
}

// TakeInitialWorkspaceFiles removes and returns the Agent's staged files while the Agent has no
// revision yet (the caller holds the Agent's row lock and admits its first revision in the same
// transaction); nil when there are none or a revision exists.
func TakeInitialWorkspaceFiles(ctx context.Context, db DBTX, namespaceID, agentID string) (json.RawMessage, error) {
	rows, err := db.Query(ctx, takeInitialWorkspaceFilesSQL, namespaceID, agentID)
	return takenFiles(rows, err)
}

// TakeInitialWorkspaceFilesAhead is TakeInitialWorkspaceFiles sent in front of p's next statement
// (decision 47).
func TakeInitialWorkspaceFilesAhead(p *Pipeline, namespaceID, agentID string) *Pending[json.RawMessage] {
	return queueAhead(p, takenFiles, takeInitialWorkspaceFilesSQL, namespaceID, agentID)
}

const takeInitialWorkspaceFilesSQL = `DELETE FROM occ.agent_initial_workspace_files f
 WHERE f.namespace_id = $1 AND f.agent_id = $2
   AND NOT EXISTS (SELECT 1 FROM occ.agent_revisions r WHERE r.agent_id = $2)
RETURNING f.files`

func takenFiles(rows pgx.Rows, err error) (json.RawMessage, error) {
	files, err := oneRow(rows, err, pgx.RowTo[json.RawMessage])
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return files, err
}
