package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PipelinedTx is a transaction on one pooled connection, two round trips shorter than pgx's
// (decision 46): BEGIN travels in one pipeline with the first statement, and the statements
// queued with AtCommit (audit rows, whose outcome the caller never reads) travel with COMMIT.
type PipelinedTx struct {
	conn  *pgxpool.Conn
	begun bool
	// commitBatch holds the AtCommit statements; a failure of any of them rolls everything back.
	commitBatch pgx.Batch
}

// NewPipelinedTx returns a transaction on conn. Nothing is sent before its first statement.
func NewPipelinedTx(conn *pgxpool.Conn) *PipelinedTx { return &PipelinedTx{conn: conn} }

// CommitError is the error of a transaction's commit pipeline: CommitChangedNothing tells
// whether it may have committed.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return "store: commit: " + e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// RunPipelined runs fn in a PipelinedTx on a connection of pool and commits it. fn's error is
// returned as it is, after a rollback; a failed commit is a *CommitError.
func RunPipelined(ctx context.Context, pool *pgxpool.Pool, fn func(*PipelinedTx) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx := NewPipelinedTx(conn)
	// A panic must not leave the transaction open on a connection the pool takes back.
	defer func() {
		if p := recover(); p != nil {
			tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return &CommitError{Err: err}
	}
	return nil
}

// atCommit is the Execer whose statements are sent with the transaction's COMMIT.
type atCommit struct{ t *PipelinedTx }

// Exec queues the statement; its outcome is the commit's.
func (d atCommit) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	d.t.commitBatch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

// AtCommit returns an Execer whose statements are sent, in order, in one pipeline with COMMIT.
func (t *PipelinedTx) AtCommit() Execer { return atCommit{t} }

// pending reports whether BEGIN has not been sent yet: the next statement travels with it.
func (t *PipelinedTx) pending() bool { return !t.begun }

// withBegin is a pipeline of BEGIN and one statement.
func withBegin(sql string, args []any) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sql, args...)
	return b
}

// first sends BEGIN and the transaction's first statement; the caller reads the statement's result
// from the returned results and closes them. A statement that names its own QueryExecMode cannot
// join a pipeline (a batch runs in the connection's mode), so BEGIN goes ahead of it alone.
func (t *PipelinedTx) first(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	t.begun = true
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			if _, err := t.conn.Exec(ctx, "BEGIN"); err != nil {
				return nil, err
			}
			return nil, nil
		}
	}
	br := t.conn.SendBatch(ctx, withBegin(sql, args))
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, err
	}
	return br, nil
}

func (t *PipelinedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begun {
		return t.conn.Exec(ctx, sql, args...)
	}
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	} else if br == nil {
		return t.conn.Exec(ctx, sql, args...)
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *PipelinedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.begun {
		return t.conn.Query(ctx, sql, args...)
	}
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return nil, err
	} else if br == nil {
		return t.conn.Query(ctx, sql, args...)
	}
	rows, err := br.Query()
	if err != nil {
		if rows != nil {
			rows.Close()
		}
		_ = br.Close()
		return nil, err
	}
	return &pipelineRows{Rows: rows, br: br}, nil
}

func (t *PipelinedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.begun {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return errRow{err}
	} else if br == nil {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	return pipelineRow{row: br.QueryRow(), br: br}
}

// SendBatch sends a batch, with BEGIN in front when it is the transaction's first statement.
func (t *PipelinedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	withBegin := &pgx.Batch{QueuedQueries: append([]*pgx.QueuedQuery{{SQL: "BEGIN"}}, b.QueuedQueries...)}
	br := t.conn.SendBatch(ctx, withBegin)
	// BEGIN's result; when it failed, so does every result the caller reads.
	_, _ = br.Exec()
	return br
}

// Commit sends the queued statements and COMMIT in one pipeline. Without a statement before them,
// the queued statements alone form PostgreSQL's implicit transaction of one pipeline: all or none.
func (t *PipelinedTx) Commit(ctx context.Context) error {
	b := &t.commitBatch
	if t.begun {
		b.Queue("COMMIT")
	}
	if b.Len() == 0 {
		return nil
	}
	br := t.conn.SendBatch(ctx, b)
	var err error
	for i := range b.Len() {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err != nil {
			break
		}
		// COMMIT of a transaction that an earlier statement aborted answers ROLLBACK.
		if t.begun && i == b.Len()-1 && tag.String() == "ROLLBACK" {
			err = pgx.ErrTxCommitRollback
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// Rollback ends a transaction the connection still has open. A connection that cannot is
// closed by the pool on release.
func (t *PipelinedTx) Rollback(ctx context.Context) {
	if t.conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = t.conn.Exec(ctx, "ROLLBACK")
	}
}

// pipelineRows closes the pipeline it was read from when it is closed or read to its end.
type pipelineRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *pipelineRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *pipelineRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *pipelineRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// pipelineRow closes the pipeline it was read from once scanned.
type pipelineRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r pipelineRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
