package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pipeline runs statements on one connection and saves round trips: statements queued ahead
// (BEGIN, a read the caller will need) travel in one pipeline in front of the next statement
// (decisions 46 and 47). It is a DBTX.
type Pipeline struct {
	conn  *pgxpool.Conn
	ahead []aheadStatement
}

// aheadStatement is a statement sent in front of the next one; read consumes its result, in order.
type aheadStatement struct {
	sql  string
	args []any
	read func(pgx.BatchResults)
}

// NewPipeline returns a Pipeline on conn (outside any transaction).
func NewPipeline(conn *pgxpool.Conn) *Pipeline { return &Pipeline{conn: conn} }

// Pending is the result of a read queued ahead: Result sends it (alone) if no statement has
// carried it yet.
type Pending[T any] struct {
	p    *Pipeline
	done bool
	v    T
	err  error
}

// Result returns the read's result.
func (r *Pending[T]) Result(ctx context.Context) (T, error) {
	if !r.done {
		_ = r.p.flush(ctx) // the read records its own failure
	}
	if !r.done {
		return r.v, errAheadDropped
	}
	return r.v, r.err
}

// errAheadDropped answers a read whose transaction ended before anything carried it.
var errAheadDropped = errors.New("store: a read queued ahead was dropped when its transaction ended")

// queueAhead queues a read whose rows become the Pending's value through collect.
func queueAhead[T any](p *Pipeline, collect func(pgx.Rows, error) (T, error), sql string, args ...any) *Pending[T] {
	r := &Pending[T]{p: p}
	p.ahead = append(p.ahead, aheadStatement{sql: sql, args: args, read: func(br pgx.BatchResults) {
		rows, err := br.Query()
		r.v, r.err = collect(rows, err)
		r.done = true
	}})
	return r
}

// queueOneRow queues a read of exactly one row, scanned by scan: oneRow's value and errors
// (ErrNotFound when there is no row).
func queueOneRow[T any](p *Pipeline, scan pgx.RowToFunc[T], sql string, args ...any) *Pending[T] {
	return queueAhead(p, func(rows pgx.Rows, err error) (T, error) { return oneRow(rows, err, scan) }, sql, args...)
}

// send sends the statements ahead and then more (none, one, or a caller's batch) in one
// pipeline, reads the results of those ahead and returns the results, positioned at the first of
// more.
func (p *Pipeline) send(ctx context.Context, more ...*pgx.QueuedQuery) pgx.BatchResults {
	ahead := p.ahead
	p.ahead = nil
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(ahead)+len(more))}
	for _, s := range ahead {
		b.QueuedQueries = append(b.QueuedQueries, &pgx.QueuedQuery{SQL: s.sql, Arguments: s.args})
	}
	b.QueuedQueries = append(b.QueuedQueries, more...)
	br := p.conn.SendBatch(ctx, b)
	for _, s := range ahead {
		s.read(br)
	}
	return br
}

// flush sends the statements ahead alone.
func (p *Pipeline) flush(ctx context.Context) error {
	if len(p.ahead) == 0 {
		return nil
	}
	return p.send(ctx).Close()
}

// ownMode reports a statement that names its own QueryExecMode: it cannot join a pipeline (a
// batch runs in the connection's mode), so what is ahead goes before it alone.
func ownMode(args []any) bool {
	if len(args) == 0 {
		return false
	}
	_, ok := args[0].(pgx.QueryExecMode)
	return ok
}

func (p *Pipeline) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if len(p.ahead) == 0 || ownMode(args) {
		if err := p.flush(ctx); err != nil {
			return pgconn.CommandTag{}, err
		}
		return p.conn.Exec(ctx, sql, args...)
	}
	br := p.send(ctx, &pgx.QueuedQuery{SQL: sql, Arguments: args})
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (p *Pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if len(p.ahead) == 0 || ownMode(args) {
		if err := p.flush(ctx); err != nil {
			return nil, err
		}
		return p.conn.Query(ctx, sql, args...)
	}
	br := p.send(ctx, &pgx.QueuedQuery{SQL: sql, Arguments: args})
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

func (p *Pipeline) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if len(p.ahead) == 0 || ownMode(args) {
		if err := p.flush(ctx); err != nil {
			return errRow{err}
		}
		return p.conn.QueryRow(ctx, sql, args...)
	}
	br := p.send(ctx, &pgx.QueuedQuery{SQL: sql, Arguments: args})
	return pipelineRow{row: br.QueryRow(), br: br}
}

// SendBatch sends a batch, with the statements ahead in front of it.
func (p *Pipeline) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if len(p.ahead) == 0 {
		return p.conn.SendBatch(ctx, b)
	}
	return p.send(ctx, b.QueuedQueries...)
}

// PipelinedTx is a transaction on one pooled connection, two round trips shorter than pgx's
// (decision 46): BEGIN goes ahead of the first statement, and the statements queued with
// AtCommit (audit rows, whose outcome the caller never reads) travel with COMMIT.
type PipelinedTx struct {
	Pipeline
	begun bool // BEGIN was sent
	// commitBatch holds the AtCommit statements; a failure of any of them rolls everything back.
	commitBatch pgx.Batch
}

// NewPipelinedTx returns a transaction on conn. Nothing is sent before its first statement.
func NewPipelinedTx(conn *pgxpool.Conn) *PipelinedTx {
	t := &PipelinedTx{Pipeline: Pipeline{conn: conn}}
	t.ahead = []aheadStatement{{sql: "BEGIN", read: func(br pgx.BatchResults) {
		// When BEGIN fails, so does every statement after it in the pipeline.
		_, _ = br.Exec()
		t.begun = true
	}}}
	return t
}

// KeepPolicy makes the transaction one that keeps the IAM policy (decision 49): it is sent with
// BEGIN, and from then on PostgreSQL refuses the transaction any change to the policy tables
// (migration 0016), so decisions made under the policy epoch it read stay true until it ends.
// Call it before the first statement.
func (t *PipelinedTx) KeepPolicy() {
	t.ahead = append(t.ahead, aheadStatement{sql: `SELECT set_config('occ.iam_policy_kept', 'on', true)`,
		read: func(br pgx.BatchResults) { _, _ = br.Exec() }})
}

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

// beginAhead reports whether BEGIN has not been sent yet: the next statement travels with it.
func (t *PipelinedTx) beginAhead() bool { return !t.begun }

// Commit sends the queued statements and COMMIT in one pipeline. Without a statement before them,
// the queued statements alone form PostgreSQL's implicit transaction of one pipeline: all or none.
// Reads still queued ahead are dropped: nobody asked for their results.
func (t *PipelinedTx) Commit(ctx context.Context) error {
	t.ahead = nil
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
	t.ahead = nil
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
