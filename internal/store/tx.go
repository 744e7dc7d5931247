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
