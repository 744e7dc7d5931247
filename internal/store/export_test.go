package store

import "github.com/jackc/pgx/v5"

// IntAhead queues a read of one int column ahead on p, for tests of the Pipeline.
func IntAhead(p *Pipeline, sql string, args ...any) *Pending[int] {
	return queueAhead(p, func(rows pgx.Rows, err error) (int, error) {
		return oneRow(rows, err, pgx.RowTo[int])
	}, sql, args...)
}
