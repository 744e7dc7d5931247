package store

import "github.com/jackc/pgx/v5"

// IntAhead queues a read of one int column ahead on p, for tests of the Pipeline.
func IntAhead(p *Pipeline, sql string, args ...any) *Pending[int] {
	return queueOneRow(p, pgx.RowTo[int], sql, args...)
}
