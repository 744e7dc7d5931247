package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DBTX is what every query needs: satisfied by *pgxpool.Pool, *pgx.Conn and pgx.Tx.
type DBTX interface {
	Execer
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Execer runs statements whose rows it does not read: a pool, a transaction, or a queue of
// statements sent with a commit.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// RowLock selects the row lock a read takes; every locking read takes one (lock order: Namespace,
// then Agent).
type RowLock int

const (
	NoLock     RowLock = iota
	LockShare          // FOR SHARE: serializes with a concurrent deletion
	LockUpdate         // FOR UPDATE: the deletion itself
)

func (l RowLock) clause() string {
	switch l {
	case LockShare:
		return ` FOR SHARE`
	case LockUpdate:
		return ` FOR UPDATE`
	}
	return ``
}
