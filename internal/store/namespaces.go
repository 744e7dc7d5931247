package store

import (
	"context"
	"time"
)

type Namespace struct {
	ID                string
	Name              string
	Status            string
	ExistingNamespace *string
	CreatedAt         time.Time
}

// InsertNamespace writes a new Namespace in `provisioning`.
func InsertNamespace(ctx context.Context, db DBTX, id, name string, existing *string) (Namespace, error) {
	n := Namespace{ID: id, Name: name, ExistingNamespace: existing}
	err := db.QueryRow(ctx, `INSERT INTO occ.namespaces (id, name, existing_namespace) VALUES ($1, $2, $3)
RETURNING status, created_at`, id, name, existing).Scan(&n.Status, &n.CreatedAt)
	return n, err
}
