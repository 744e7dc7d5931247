package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The SQL of the worker's Agent passes (stop, delete, revision deploy).
// Lock order in every finalization transaction: Namespace (LockNamespace), then Agent
// (LockWorkerAgent).

// WorkerAgent is an Agent as the worker reads it: identity, lifecycle axes and the active pointer.
// The editable draft is never read by the worker.
type WorkerAgent struct {
	ID                  string
	NamespaceID         string
	ExecutionMode       string
	ServicePrincipalID  string
	Status              string // active | deleting
	DesiredRuntimeState string // running | stopped
	ActiveRevisionID    *string
}

func readWorkerAgent(ctx context.Context, db DBTX, namespaceID, agentID string, lock RowLock) (WorkerAgent, error) {
	var a WorkerAgent
	err := db.QueryRow(ctx, `SELECT id, namespace_id, execution_mode, service_principal_id, status, desired_runtime_state, active_revision_id
  FROM occ.agents WHERE namespace_id = $1 AND id = $2`+lock.clause(), namespaceID, agentID).Scan(&a.ID, &a.NamespaceID, &a.ExecutionMode,
		&a.ServicePrincipalID, &a.Status, &a.DesiredRuntimeState, &a.ActiveRevisionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return WorkerAgent{}, ErrNotFound
	}
	return a, err
}

// ReadWorkerAgent reads an Agent of a Namespace; ErrNotFound when absent.
func ReadWorkerAgent(ctx context.Context, db DBTX, namespaceID, agentID string) (WorkerAgent, error) {
	return readWorkerAgent(ctx, db, namespaceID, agentID, NoLock)
}

// LockWorkerAgent reads and locks an Agent row (after LockNamespace); ErrNotFound when absent.
func LockWorkerAgent(ctx context.Context, db DBTX, namespaceID, agentID string) (WorkerAgent, error) {
	return readWorkerAgent(ctx, db, namespaceID, agentID, LockUpdate)
}

// WorkerRevision is one immutable AgentRevision row with its admitted snapshot (undecoded).
type WorkerRevision struct {
	ID           string
	NamespaceID  string
	AgentID      string
	Number       int64
	AdmittedSpec []byte
	AdmittedAt   time.Time
}

// ListWorkerRevisions reads every revision of an Agent, by revision number.
func ListWorkerRevisions(ctx context.Context, db DBTX, namespaceID, agentID string) ([]WorkerRevision, error) {
	rows, err := db.Query(ctx, `
SELECT id, namespace_id, agent_id, revision_number, admitted_spec, admitted_at
  FROM occ.agent_revisions WHERE namespace_id = $1 AND agent_id = $2
 ORDER BY revision_number`, namespaceID, agentID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WorkerRevision, error) {
		var v WorkerRevision
		err := r.Scan(&v.ID, &v.NamespaceID, &v.AgentID, &v.Number, &v.AdmittedSpec, &v.AdmittedAt)
		return v, err
	})
}

// SetActiveRevisionIfUnchanged publishes candidate as the Agent's active revision only while the
// pointer still names expected (NULL when expected is nil): the compare-and-set of a deployment.
// It reports whether the pointer moved.
func SetActiveRevisionIfUnchanged(ctx context.Context, db DBTX, namespaceID, agentID string, expected *string, candidate string) (bool, error) {
	tag, err := db.Exec(ctx, `
UPDATE occ.agents SET active_revision_id = $4, updated_at = clock_timestamp()
 WHERE namespace_id = $1 AND id = $2 AND active_revision_id IS NOT DISTINCT FROM $3`,
		namespaceID, agentID, expected, candidate)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// ClearActiveRevisionIfUnchanged clears the Agent's active pointer only while it still names
// expected (the revision a stop pass stopped). It reports whether the pointer was cleared.
func ClearActiveRevisionIfUnchanged(ctx context.Context, db DBTX, namespaceID, agentID, expected string) (bool, error) {
	tag, err := db.Exec(ctx, `
UPDATE occ.agents SET active_revision_id = NULL, updated_at = clock_timestamp()
 WHERE namespace_id = $1 AND id = $2 AND active_revision_id = $3`, namespaceID, agentID, expected)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// AgentDeletion is the answer of occ.finalize_agent_deletion.
type AgentDeletion int

const (
	// AgentDeletionClaimLost: the claim or the Agent's deleting state is gone; nothing changed.
	AgentDeletionClaimLost AgentDeletion = iota
	// AgentDeletionDone: the Agent, its revisions, principal, bindings, restrictions, keys and
	// every work row are gone and the success audit is written.
	AgentDeletionDone
	// AgentDeletionPending: provisioning or repository cleanup of the Agent is still open.
	AgentDeletionPending
)

// FinalizeAgentDeletion runs occ.finalize_agent_deletion for the current claim of the Agent's
// deletion work, inside the caller's finalization transaction.
func FinalizeAgentDeletion(ctx context.Context, db DBTX, namespaceID, agentID, key string, token uuid.UUID) (AgentDeletion, error) {
	var done *bool
	if err := db.QueryRow(ctx, `SELECT occ.finalize_agent_deletion($1, $2, $3, $4)`,
		namespaceID, agentID, key, token).Scan(&done); err != nil {
		return AgentDeletionClaimLost, err
	}
	switch {
	case done == nil:
		return AgentDeletionPending, nil
	case *done:
		return AgentDeletionDone, nil
	}
	return AgentDeletionClaimLost, nil
}

// AgentPrincipalValid reports whether principalID is a service principal identity owned by exactly
// this Namespace and Agent (the Agent's workload identity).
func AgentPrincipalValid(ctx context.Context, db DBTX, principalID, namespaceID, agentID string) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `
SELECT EXISTS (SELECT 1 FROM occ.iam_identities
                WHERE id = $1 AND kind = 'service_principal' AND namespace_id = $2 AND agent_id = $3)`,
		principalID, namespaceID, agentID).Scan(&ok)
	return ok, err
}

// WorkerSecret is a Secret's metadata as the worker resolves it: where its value lives in the
// Secret Driver's backend. Never a value.
type WorkerSecret struct {
	ID                   string
	NamespaceID          string
	DriverID             string
	BackendNamespaceName string
	BackendName          string
	BackendKey           string
	BackendUID           string
}

// ListWorkerSecrets reads the Secrets with the given ids (any Namespace: the caller checks
// ownership), keyed by id.
func ListWorkerSecrets(ctx context.Context, db DBTX, ids []string) (map[string]WorkerSecret, error) {
	out := map[string]WorkerSecret{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.Query(ctx, `
SELECT id, namespace_id, driver_id, COALESCE(backend_namespace_name, ''), COALESCE(backend_name, ''),
       COALESCE(backend_key, ''), COALESCE(backend_uid, '')
  FROM occ.secrets WHERE id = ANY($1::text[])`, ids)
	if err != nil {
		return nil, err
	}
	secrets, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WorkerSecret, error) {
		var s WorkerSecret
		err := r.Scan(&s.ID, &s.NamespaceID, &s.DriverID, &s.BackendNamespaceName, &s.BackendName, &s.BackendKey, &s.BackendUID)
		return s, err
	})
	if err != nil {
		return nil, err
	}
	for _, s := range secrets {
		out[s.ID] = s
	}
	return out, nil
}
