package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotFound is returned by single-row reads that find nothing.
var ErrNotFound = errors.New("not found")

type Installation struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// GetInstallation reads the singleton; ErrNotFound before bootstrap.
func GetInstallation(ctx context.Context, db DBTX) (Installation, error) {
	var i Installation
	err := db.QueryRow(ctx, `SELECT id, name, created_at FROM occ.installation`).Scan(&i.ID, &i.Name, &i.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Installation{}, ErrNotFound
	}
	return i, err
}

// InsertInstallation creates the singleton; a second one violates installation_one_row.
func InsertInstallation(ctx context.Context, db DBTX, id, name string) error {
	_, err := db.Exec(ctx, `INSERT INTO occ.installation (id, name) VALUES ($1, $2)`, id, name)
	return err
}

// bootstrapLockKey is the advisory lock key of bootstrap runs (the keyspace is global to the
// database, so the value is fixed).
const bootstrapLockKey int64 = 0x6f63635f626f6f74 // "occ_boot"

// LockBootstrap serializes concurrent bootstrap runs until the transaction ends, so that checking
// whether the Installation exists is reliable. The Installation's singleton index would make the
// loser fail anyway, but later and less clearly.
func LockBootstrap(ctx context.Context, tx DBTX) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, bootstrapLockKey)
	return err
}
