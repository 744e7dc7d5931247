package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// AgentRow is an Agent: identity, lifecycle and the editable draft.
type AgentRow struct {
	ID                  string
	NamespaceID         string
	Name                string
	ExecutionMode       string
	ServicePrincipalID  string
	Status              string
	DesiredRuntimeState string
	ActiveRevisionID    *string
	ConfigurationID     string
	BackendID           *string
	HarnessAuth         json.RawMessage // a JSON object, or nil
	CreatedAt           time.Time
}

const agentColumns = `a.id, a.namespace_id, a.name, a.execution_mode, a.service_principal_id, a.status,
  a.desired_runtime_state, a.active_revision_id, a.configuration_id, a.backend_id, a.harness_auth, a.created_at`

func scanAgent(r pgx.CollectableRow) (AgentRow, error) {
	var a AgentRow
	err := r.Scan(&a.ID, &a.NamespaceID, &a.Name, &a.ExecutionMode, &a.ServicePrincipalID, &a.Status,
		&a.DesiredRuntimeState, &a.ActiveRevisionID, &a.ConfigurationID, &a.BackendID, &a.HarnessAuth, &a.CreatedAt)
	return a, err
}

func oneAgent(rows pgx.Rows, err error) (AgentRow, error) {
	return oneRow(rows, err, scanAgent)
}

// InsertAgent writes the Agent's own ServicePrincipal and the Agent (active, stopped, no revision).
// A duplicate name in the Namespace is ErrDuplicate.
func InsertAgent(ctx context.Context, db DBTX, a AgentRow) (AgentRow, error) {
	// One round trip: when the first insert fails, PostgreSQL skips the second.
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO occ.iam_identities (id, kind, namespace_id, agent_id)
VALUES ($1, 'service_principal', $2, $3)`, a.ServicePrincipalID, a.NamespaceID, a.ID)
	b.Queue(`INSERT INTO occ.agents AS a (id, namespace_id, name, execution_mode, service_principal_id,
  configuration_id, backend_id, harness_auth) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+agentColumns,
		a.ID, a.NamespaceID, a.Name, a.ExecutionMode, a.ServicePrincipalID, a.ConfigurationID, a.BackendID, nullableRaw(a.HarnessAuth))
	br := db.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return AgentRow{}, classify(err)
	}
	return oneAgent(br.Query())
}

// GetAgent reads an Agent of the Namespace with an optional row lock (lock order: Namespace
// before Agent); ErrNotFound when absent.
func GetAgent(ctx context.Context, db DBTX, namespaceID, id string, lock RowLock) (AgentRow, error) {
	return oneAgent(db.Query(ctx, getAgentSQL(lock), namespaceID, id))
}

// GetAgentAhead is GetAgent sent in front of p's next statement (decision 47).
func GetAgentAhead(p *Pipeline, namespaceID, id string, lock RowLock) *Pending[AgentRow] {
	return queueOneRow(p, scanAgent, getAgentSQL(lock), namespaceID, id)
}

func getAgentSQL(lock RowLock) string {
	return `SELECT ` + agentColumns + ` FROM occ.agents a WHERE a.namespace_id = $1 AND a.id = $2` + lock.clause()
}

// GetAgentByName reads the Agent of the Namespace with that name; ErrNotFound when absent.
func GetAgentByName(ctx context.Context, db DBTX, namespaceID, name string) (AgentRow, error) {
	return oneAgent(db.Query(ctx, `SELECT `+agentColumns+` FROM occ.agents a WHERE a.namespace_id = $1 AND a.name = $2`,
		namespaceID, name))
}

// ListAgents returns up to limit Agents of the Namespace ordered by creation, after the cursor.
func ListAgents(ctx context.Context, db DBTX, namespaceID string, after *Cursor, limit int) ([]AgentRow, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, `SELECT `+agentColumns+` FROM occ.agents a
 WHERE a.namespace_id = $1 AND ($2::timestamptz IS NULL OR (a.created_at, a.id) > ($2, $3))
 ORDER BY a.created_at, a.id LIMIT $4`, namespaceID, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanAgent)
}

// UpdateAgentDraft replaces the editable draft (name, Configuration, Backend, Harness
// authentication) and returns the Agent; a name in use in the Namespace is ErrDuplicate.
func UpdateAgentDraft(ctx context.Context, db DBTX, a AgentRow) (AgentRow, error) {
	return oneAgent(db.Query(ctx, `UPDATE occ.agents a SET name = $3, configuration_id = $4, backend_id = $5, harness_auth = $6,
  updated_at = clock_timestamp() WHERE a.namespace_id = $1 AND a.id = $2 RETURNING `+agentColumns,
		a.NamespaceID, a.ID, a.Name, a.ConfigurationID, a.BackendID, nullableRaw(a.HarnessAuth)))
}

// SetAgentDesiredStateParams name the Agent and its new desired runtime state.
type SetAgentDesiredStateParams struct {
	NamespaceID string
	AgentID     string
	State       string // running | stopped
}

// SetAgentDesiredState sets desired_runtime_state and returns the Agent.
func SetAgentDesiredState(ctx context.Context, db DBTX, p SetAgentDesiredStateParams) (AgentRow, error) {
	return oneAgent(db.Query(ctx, setAgentDesiredStateSQL, p.NamespaceID, p.AgentID, p.State))
}

// SetAgentDesiredStateAhead is SetAgentDesiredState sent in front of pipe's next statement
// (decision 47).
func SetAgentDesiredStateAhead(pipe *Pipeline, p SetAgentDesiredStateParams) *Pending[AgentRow] {
	return queueOneRow(pipe, scanAgent, setAgentDesiredStateSQL, p.NamespaceID, p.AgentID, p.State)
}

const setAgentDesiredStateSQL = `UPDATE occ.agents a SET desired_runtime_state = $3, updated_at = clock_timestamp()
 WHERE a.namespace_id = $1 AND a.id = $2 RETURNING ` + agentColumns

// MarkAgentDeleting moves an Agent to deleting with desired state stopped and returns it.
func MarkAgentDeleting(ctx context.Context, db DBTX, namespaceID, id string) (AgentRow, error) {
	return oneAgent(db.Query(ctx, `UPDATE occ.agents a SET status = 'deleting', desired_runtime_state = 'stopped',
  updated_at = clock_timestamp() WHERE a.namespace_id = $1 AND a.id = $2 RETURNING `+agentColumns, namespaceID, id))
}

// RetryFailedAgentDeletionParams name the Agent, the actor its failed teardown must still have,
// and the actor that takes it over.
type RetryFailedAgentDeletionParams struct {
	NamespaceID string
	AgentID     string
	InitiatorID string
	ActorID     string
}

// RetryFailedAgentDeletion requeues a failed_permanent Agent teardown whose current actor is
// InitiatorID, replacing the actor with ActorID (occ.retry_failed_agent_deletion).
func RetryFailedAgentDeletion(ctx context.Context, db DBTX, p RetryFailedAgentDeletionParams) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT occ.retry_failed_agent_deletion($1, $2, $3, $4)`,
		p.NamespaceID, p.AgentID, p.InitiatorID, p.ActorID).Scan(&ok)
	return ok, err
}
