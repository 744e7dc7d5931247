package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

type Namespace struct {
	ID                string
	Name              string
	Status            string
	ExistingNamespace *string
	CreatedAt         time.Time
}

// InsertNamespace writes a new Namespace in `provisioning`. A name in use or reserved is
// ErrDuplicate; an existing cluster namespace another live Namespace adopted is refused by
// ConstraintExistingNamespaceLive.
func InsertNamespace(ctx context.Context, db DBTX, id, name string, existing *string) (Namespace, error) {
	rows, err := db.Query(ctx, insertNamespaceSQL, id, name, existing)
	return oneRow(rows, err, scanNamespace)
}

// InsertNamespaceAhead is InsertNamespace sent in front of p's next statement (decision 47).
func InsertNamespaceAhead(p *Pipeline, id, name string, existing *string) *Pending[Namespace] {
	return queueOneRow(p, scanNamespace, insertNamespaceSQL, id, name, existing)
}

const insertNamespaceSQL = `INSERT INTO occ.namespaces AS n (id, name, existing_namespace) VALUES ($1, $2, $3)
RETURNING ` + namespaceColumns

const namespaceColumns = `n.id, n.name, n.status, n.existing_namespace, n.created_at`

func scanNamespace(r pgx.CollectableRow) (Namespace, error) {
	var n Namespace
	err := r.Scan(&n.ID, &n.Name, &n.Status, &n.ExistingNamespace, &n.CreatedAt)
	return n, err
}

// GetNamespace reads a live Namespace; a tombstoned or absent one is ErrNotFound. With a lock the
// row stays locked until the transaction ends (lock order: Namespace before Agent).
func GetNamespace(ctx context.Context, db DBTX, id string, lock RowLock) (Namespace, error) {
	rows, err := db.Query(ctx, getNamespaceSQL(lock), id)
	return oneRow(rows, err, scanNamespace)
}

// GetNamespaceAhead is GetNamespace sent in front of p's next statement (decision 47).
func GetNamespaceAhead(p *Pipeline, id string, lock RowLock) *Pending[Namespace] {
	return queueOneRow(p, scanNamespace, getNamespaceSQL(lock), id)
}

func getNamespaceSQL(lock RowLock) string {
	return `SELECT ` + namespaceColumns + ` FROM occ.namespaces n
 WHERE n.id = $1 AND n.deleted_at IS NULL` + lock.clause()
}

// ListNamespaces returns up to limit live Namespaces ordered by name (byte order), starting after
// the name afterName when it is non-empty.
func ListNamespaces(ctx context.Context, db DBTX, afterName string, limit int) ([]Namespace, error) {
	rows, err := db.Query(ctx, `SELECT `+namespaceColumns+` FROM occ.namespaces n
 WHERE n.deleted_at IS NULL AND ($1 = '' OR n.name > $1)
 ORDER BY n.name LIMIT $2`, afterName, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanNamespace)
}

// MarkNamespaceDeleting moves a live Namespace to deleting; false when it was not live.
func MarkNamespaceDeleting(ctx context.Context, db DBTX, id string) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE occ.namespaces SET status = 'deleting'
 WHERE id = $1 AND deleted_at IS NULL AND status <> 'deleting'`, id)
	return tag.RowsAffected() == 1, err
}

// NamespaceContent is one resource that keeps a Namespace from being deleted.
type NamespaceContent struct {
	Kind string
	ID   string
}

// NamespaceContents lists the resources a Namespace still owns (Agents, Configurations, Service
// Accounts, Secrets, Presets, and provisionings still queued), at most perKind of each kind, in a stable order.
func NamespaceContents(ctx context.Context, db DBTX, namespaceID string, perKind int) ([]NamespaceContent, error) {
	rows, err := db.Query(ctx, `
(SELECT 'agent', id FROM occ.agents WHERE namespace_id = $1 ORDER BY id LIMIT $2)
UNION ALL
(SELECT 'configuration', id FROM occ.configurations WHERE namespace_id = $1 ORDER BY id LIMIT $2)
UNION ALL
(SELECT 'service_account', id FROM occ.service_accounts WHERE namespace_id = $1 ORDER BY id LIMIT $2)
UNION ALL
(SELECT 'secret', id FROM occ.secrets WHERE namespace_id = $1 ORDER BY id LIMIT $2)
UNION ALL
(SELECT 'preset', id FROM occ.presets WHERE namespace_id = $1 ORDER BY id LIMIT $2)
UNION ALL
(SELECT 'agent_provisioning', p.id FROM occ.agent_provisioning_work p WHERE p.namespace_id = $1 AND p.status = 'queued'
   AND NOT EXISTS (SELECT 1 FROM occ.controller_work w
                    WHERE w.idempotency_key = 'agent_provisioning:' || p.id || ':' || p.run AND w.state = 'failed_permanent')
  ORDER BY p.id LIMIT $2)`, namespaceID, perKind)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (NamespaceContent, error) {
		var c NamespaceContent
		err := r.Scan(&c.Kind, &c.ID)
		return c, err
	})
}

// WorkState is the state and actor of one controller work row.
type WorkState struct {
	Key     string
	State   QueueState
	ActorID string
}

// GetWorkState reads the state of one work row by key; ErrNotFound when absent.
func GetWorkState(ctx context.Context, db DBTX, key string) (WorkState, error) {
	w := WorkState{Key: key}
	err := db.QueryRow(ctx, `SELECT state, actor_id FROM occ.controller_work WHERE idempotency_key = $1`, key).
		Scan(&w.State, &w.ActorID)
	if errors.Is(err, pgx.ErrNoRows) {
		return WorkState{}, ErrNotFound
	}
	return w, err
}

// RetryFailedNamespaceDeletionParams name the Namespace, the actor its failed teardown must still
// have, and the actor that takes it over.
type RetryFailedNamespaceDeletionParams struct {
	NamespaceID string
	InitiatorID string
	ActorID     string
}

// RetryFailedNamespaceDeletion requeues a failed_permanent teardown whose current actor is
// InitiatorID, replacing the actor with ActorID (a takeover when they differ). It reports whether
// the work was requeued (occ.retry_failed_namespace_deletion).
func RetryFailedNamespaceDeletion(ctx context.Context, db DBTX, p RetryFailedNamespaceDeletionParams) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT occ.retry_failed_namespace_deletion($1, $2, $3)`,
		p.NamespaceID, p.InitiatorID, p.ActorID).Scan(&ok)
	return ok, err
}
