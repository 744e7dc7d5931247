package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// Provisioning phases, in the order the worker runs them, and statuses.
const (
	ProvisioningPhaseConfiguration = "configuration"
	ProvisioningPhaseAgent         = "agent"
	ProvisioningPhaseGrant         = "grant"
	ProvisioningPhaseAdmission     = "admission"
	ProvisioningPhaseDone          = "done"

	ProvisioningQueued    = "queued"
	ProvisioningSucceeded = "succeeded"
	ProvisioningFailed    = "failed"
)

// ProvisioningRow is one guided provisioning request and how far it got.
type ProvisioningRow struct {
	ID           string
	NamespaceID  string
	ActorID      string
	RequestID    string
	Fingerprint  string
	Request      json.RawMessage
	StagedValues json.RawMessage // the Configuration's values until its step wrote them
	// StagedWorkspaceFiles are the Agent's initial workspace files until the Agent step staged them
	// with the Agent.
	StagedWorkspaceFiles json.RawMessage
	Status               string
	Phase                string
	Run                  int
	ConfigurationID      string
	AgentID              string
	ServicePrincipalID   string
	RoleID               string
	RevisionID           *string
	GrantedSecretIDs     []string
	ErrorCode            *string
	ErrorMessage         *string
	CreatedAt            time.Time
	UpdatedAt            time.Time
}

const provisioningColumns = `p.id, p.namespace_id, p.actor_id, p.request_id, p.fingerprint, p.request, p.staged_values,
  p.staged_workspace_files, p.status, p.phase, p.run, p.configuration_id, p.agent_id, p.service_principal_id, p.role_id, p.revision_id,
  p.granted_secret_ids, p.error_code, p.error_message, p.created_at, p.updated_at`

func scanProvisioning(r pgx.CollectableRow) (ProvisioningRow, error) {
	var p ProvisioningRow
	err := r.Scan(&p.ID, &p.NamespaceID, &p.ActorID, &p.RequestID, &p.Fingerprint, &p.Request, &p.StagedValues,
		&p.StagedWorkspaceFiles, &p.Status, &p.Phase, &p.Run, &p.ConfigurationID, &p.AgentID, &p.ServicePrincipalID, &p.RoleID, &p.RevisionID,
		&p.GrantedSecretIDs, &p.ErrorCode, &p.ErrorMessage, &p.CreatedAt, &p.UpdatedAt)
	return p, err
}

// InsertProvisioning records a new request. Another request of the same actor in the Namespace
// with the same requestId is ErrDuplicate (the caller reads it with GetProvisioningByRequest).
func InsertProvisioning(ctx context.Context, db DBTX, p ProvisioningRow) (ProvisioningRow, error) {
	rows, err := db.Query(ctx, `INSERT INTO occ.agent_provisioning_work AS p
  (id, namespace_id, actor_id, request_id, fingerprint, request, staged_values, configuration_id, agent_id,
   service_principal_id, role_id, staged_workspace_files)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (namespace_id, actor_id, request_id) DO NOTHING
RETURNING `+provisioningColumns,
		p.ID, p.NamespaceID, p.ActorID, p.RequestID, p.Fingerprint, p.Request, nullableRaw(p.StagedValues),
		p.ConfigurationID, p.AgentID, p.ServicePrincipalID, p.RoleID, nullableRaw(p.StagedWorkspaceFiles))
	row, err := oneRow(rows, err, scanProvisioning)
	if err == ErrNotFound {
		return ProvisioningRow{}, ErrDuplicate
	}
	return row, classify(err)
}

// GetProvisioningByRequest reads the actor's request with that requestId; ErrNotFound when absent.
func GetProvisioningByRequest(ctx context.Context, db DBTX, namespaceID, actorID, requestID string) (ProvisioningRow, error) {
	rows, err := db.Query(ctx, `SELECT `+provisioningColumns+` FROM occ.agent_provisioning_work p
 WHERE p.namespace_id = $1 AND p.actor_id = $2 AND p.request_id = $3`, namespaceID, actorID, requestID)
	return oneRow(rows, err, scanProvisioning)
}

// GetProvisioning reads a record of the Namespace, FOR UPDATE when lock says so; ErrNotFound when
// absent.
func GetProvisioning(ctx context.Context, db DBTX, namespaceID, id string, lock RowLock) (ProvisioningRow, error) {
	rows, err := db.Query(ctx, `SELECT `+provisioningColumns+` FROM occ.agent_provisioning_work p
 WHERE p.namespace_id = $1 AND p.id = $2`+lock.clause(), namespaceID, id)
	return oneRow(rows, err, scanProvisioning)
}

// AdvanceProvisioning moves a queued record from phase `from` to `to` (clearing the staged values
// once the Configuration exists, the staged workspace files once the Agent holds them), recording the revision and the granted Secrets when given. It
// reports false when the record is no longer queued in `from` (another run moved it).
func AdvanceProvisioning(ctx context.Context, db DBTX, id, from, to string, revisionID *string, granted []string) (bool, error) {
	status := ProvisioningQueued
	if to == ProvisioningPhaseDone {
		status = ProvisioningSucceeded
	}
	tag, err := db.Exec(ctx, `UPDATE occ.agent_provisioning_work
   SET phase = $3, status = $4, staged_values = NULL,
       staged_workspace_files = CASE WHEN $3 = 'agent' THEN staged_workspace_files END, revision_id = COALESCE($5, revision_id),
       granted_secret_ids = COALESCE($6, granted_secret_ids), updated_at = clock_timestamp()
 WHERE id = $1 AND phase = $2 AND status = 'queued'`, id, from, to, status, revisionID, granted)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// FailProvisioning ends a queued record's run at its current phase with a code and message.
func FailProvisioning(ctx context.Context, db DBTX, id, phase, code, message string) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE occ.agent_provisioning_work
   SET status = 'failed', error_code = $3, error_message = $4, updated_at = clock_timestamp()
 WHERE id = $1 AND phase = $2 AND status = 'queued'`, id, phase, code, message)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// RetryProvisioning starts the next run of a failed record at the phase that failed and returns
// it; ErrNotFound when the record is not failed (the caller read it locked). A record whose
// current work item (previousKey) the queue itself failed (lease recovery at the attempt limit)
// counts as failed.
func RetryProvisioning(ctx context.Context, db DBTX, namespaceID, id, previousKey string) (ProvisioningRow, error) {
	rows, err := db.Query(ctx, `UPDATE occ.agent_provisioning_work AS p
   SET status = 'queued', run = p.run + 1, error_code = NULL, error_message = NULL, updated_at = clock_timestamp()
 WHERE p.namespace_id = $1 AND p.id = $2
   AND (p.status = 'failed' OR (p.status = 'queued' AND EXISTS (
         SELECT 1 FROM occ.controller_work w WHERE w.idempotency_key = $3 AND w.state = 'failed_permanent')))
RETURNING `+provisioningColumns, namespaceID, id, previousKey)
	return oneRow(rows, err, scanProvisioning)
}

// EnqueueProvisioningWork queues the provisioning run's work item (lane: the Namespace) and
// notifies idle workers on commit.
func EnqueueProvisioningWork(ctx context.Context, db DBTX, key, namespaceID, actorID string) error {
	_, err := db.Exec(ctx, `WITH inserted AS (
  INSERT INTO occ.controller_work (idempotency_key, work_kind, namespace_id, actor_id, created_at, updated_at, available_at)
  VALUES ($1, 'provisioning', $2, $3, clock_timestamp(), clock_timestamp(), clock_timestamp())
  RETURNING idempotency_key)
SELECT pg_notify('`+WorkNotifyChannel+`', inserted.idempotency_key) FROM inserted`, key, namespaceID, actorID)
	return classify(err)
}
