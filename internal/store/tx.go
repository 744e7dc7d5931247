package store

import (
	"errors"

	"github.com/jackc/pgx/v5"
)

// oneRow collects the single row of a query with scan; no row is ErrNotFound, and constraint or
// race refusals are classified. It takes the query's results as they come (rows, err :=
// db.Query(...)).
func oneRow[T any](rows pgx.Rows, err error, scan pgx.RowToFunc[T]) (T, error) {
	var zero T
	if err != nil {
		return zero, classify(err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return zero, ErrNotFound
	}
	return v, classify(err)
}
