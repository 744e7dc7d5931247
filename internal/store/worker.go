package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// NamespaceStatus is a Namespace's lifecycle status.
type NamespaceStatus string

// Namespace statuses.
const (
	NamespaceProvisioning NamespaceStatus = "provisioning"
	NamespaceReady        NamespaceStatus = "ready"
	NamespaceFailed       NamespaceStatus = "failed"
	NamespaceDeleting     NamespaceStatus = "deleting"
)

// NamespaceRow is a Namespace as the worker reads it, tombstones included.
type NamespaceRow struct {
	ID                string
	Name              string
	Status            NamespaceStatus
	ExistingNamespace *string
	DeletedAt         *time.Time
	CreatedAt         time.Time
}

func getNamespace(ctx context.Context, db DBTX, id string, lock RowLock) (NamespaceRow, error) {
	var n NamespaceRow
	err := db.QueryRow(ctx, `SELECT id, name, status, existing_namespace, deleted_at, created_at FROM occ.namespaces
 WHERE id = $1`+lock.clause(), id).Scan(&n.ID, &n.Name, &n.Status, &n.ExistingNamespace, &n.DeletedAt, &n.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return NamespaceRow{}, ErrNotFound
	}
	return n, err
}

// GetNamespaceRow reads a Namespace, tombstoned or not; ErrNotFound when absent.
func GetNamespaceRow(ctx context.Context, db DBTX, id string) (NamespaceRow, error) {
	return getNamespace(ctx, db, id, NoLock)
}

// LockNamespace reads and locks a Namespace row (lock order: Namespace, then Agent).
func LockNamespace(ctx context.Context, db DBTX, id string) (NamespaceRow, error) {
	return getNamespace(ctx, db, id, LockUpdate)
}

// ShareNamespace reads a Namespace row FOR SHARE: it waits for and excludes the row's writers (its
// deletion, its status changes) but not other sharers, so passes of different Agents of one
// Namespace do not queue behind each other (lock order: Namespace, then Agent).
func ShareNamespace(ctx context.Context, db DBTX, id string) (NamespaceRow, error) {
	return getNamespace(ctx, db, id, LockShare)
}

// SetNamespaceStatus changes a Namespace's status (the lifecycle trigger validates the transition).
func SetNamespaceStatus(ctx context.Context, db DBTX, id string, status NamespaceStatus) error {
	_, err := db.Exec(ctx, `UPDATE occ.namespaces SET status = $2 WHERE id = $1`, id, status)
	return err
}

// RemovedPolicy lists what RemoveNamespacePolicy deleted.
type RemovedPolicy struct {
	AccessBindings []string
	Roles          []string
	Restrictions   []string
	ServiceKeys    []string
}

// TombstoneNamespace sets deleted_at on a deleting Namespace and, in the same statement, removes
// every IAM policy row scoped to it (bindings, Roles, Restrictions) and the service keys scoped to
// it, so that nothing granted inside the Namespace outlives it.
func TombstoneNamespace(ctx context.Context, db DBTX, id string) (RemovedPolicy, error) {
	var p RemovedPolicy
	err := db.QueryRow(ctx, `
WITH tombstone AS (
  UPDATE occ.namespaces SET deleted_at = clock_timestamp() WHERE id = $1 RETURNING id),
bindings AS (
  DELETE FROM occ.iam_access_bindings b
   WHERE b.namespace_id = $1 OR b.role_id IN (SELECT r.id FROM occ.iam_roles r WHERE r.namespace_id = $1)
  RETURNING b.id),
restrictions AS (
  DELETE FROM occ.iam_restrictions x WHERE x.namespace_id = $1 RETURNING x.id),
keys AS (
  DELETE FROM occ.service_keys k WHERE k.namespace_id = $1 RETURNING k.id)
SELECT (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM bindings),
       (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM restrictions),
       (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM keys)`, id).
		Scan(&p.AccessBindings, &p.Restrictions, &p.ServiceKeys)
	if err != nil {
		return p, err
	}
	// Roles go last: their bindings (which reference them) are gone only once the statement above
	// has completed.
	rows, err := db.Query(ctx, `DELETE FROM occ.iam_roles r WHERE r.namespace_id = $1 RETURNING r.id`, id)
	if err != nil {
		return p, err
	}
	p.Roles, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return p, err
}

// IsSuperuser reports whether the connected role is a PostgreSQL superuser.
func IsSuperuser(ctx context.Context, db DBTX) (bool, error) {
	var super bool
	err := db.QueryRow(ctx, `SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user`).Scan(&super)
	return super, err
}

// IAMPolicyNonEmpty reports whether at least one identity, one Role and one binding exist.
func IAMPolicyNonEmpty(ctx context.Context, db DBTX) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM occ.iam_identities)
   AND EXISTS (SELECT 1 FROM occ.iam_roles) AND EXISTS (SELECT 1 FROM occ.iam_access_bindings)`).Scan(&ok)
	return ok, err
}

// SessionReadOnly reports whether a new transaction on db is read-only by default.
func SessionReadOnly(ctx context.Context, db DBTX) (bool, error) {
	var on string
	err := db.QueryRow(ctx, `SELECT current_setting('default_transaction_read_only')`).Scan(&on)
	return on == "on", err
}

// DatabaseNow reads the database clock.
func DatabaseNow(ctx context.Context, db DBTX) (time.Time, error) {
	var now time.Time
	err := db.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now)
	return now, err
}
