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
