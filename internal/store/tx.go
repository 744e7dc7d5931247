package store

import (
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// CommitChangedNothing reports whether a failed COMMIT certainly left the database unchanged: the
// server answered with an error (or rolled back), or the request never left the client. Any other
// failure leaves the outcome unknown, and callers must say so rather than retry.
func CommitChangedNothing(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) || pgconn.SafeToRetry(err) || errors.Is(err, pgx.ErrTxCommitRollback)
}

// oneRow collects the single row of a query with scan; no row is ErrNotFound. It takes the query's
// results as they come (rows, err := db.Query(...)).
func oneRow[T any](rows pgx.Rows, err error, scan pgx.RowToFunc[T]) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return zero, ErrNotFound
	}
	return v, err
}
