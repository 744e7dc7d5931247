package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Limits of the worker's metrics pool: a scrape must answer quickly, even when PostgreSQL does not.
const (
	PoolConnectTimeout   = 500 * time.Millisecond
	PoolStatementTimeout = 1500 * time.Millisecond
)

// NewPool returns the worker's dedicated metrics pool for databaseURL: at most two connections (a
// scrape's and the background Agent-state refresh's), a 500 ms connect timeout, a 1500 ms
// statement, lock and idle-in-transaction timeout and read-only transactions
// (default_transaction_read_only=on), named occ-worker-metrics. It does not connect until the first
// scrape, so a database outage never delays startup.
func NewPool(databaseURL string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = 2
	pc.MinConns = 0
	pc.MaxConnIdleTime = time.Minute
	pc.ConnConfig.ConnectTimeout = PoolConnectTimeout
	timeout := strconv.FormatInt(PoolStatementTimeout.Milliseconds(), 10)
	params := pc.ConnConfig.RuntimeParams
	params["application_name"] = "occ-worker-metrics"
	params["statement_timeout"] = timeout
	params["lock_timeout"] = timeout
	params["idle_in_transaction_session_timeout"] = timeout
	params["default_transaction_read_only"] = "on"
	// The backlog statement is a nested loop of index probes over every Agent; its plan cost passes
	// jit_above_cost at 100 000 Agents, and compiling it cost ~0.75 s of the 1.5 s budget while
	// saving nothing (docs/performance.md).
	params["jit"] = "off"
	return pgxpool.NewWithConfig(context.Background(), pc)
}
