package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// pipelinedTxPool is a pool with a table of its own (the migration owner's, on a test database).
func pipelinedTxPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.New(t).Owner(t)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE public.wtx (v int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return pool
}

func wtxRows(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM public.wtx`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// withPipelinedTx runs fn in a PipelinedTx and commits it, returning the commit's error.
func withPipelinedTx(t *testing.T, pool *pgxpool.Pool, fn func(*pgxpool.Conn, *store.PipelinedTx)) error {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx := store.NewPipelinedTx(conn)
	fn(conn, tx)
	err = tx.Commit(ctx)
	if err != nil {
		tx.Rollback(ctx)
	}
	if status := conn.Conn().PgConn().TxStatus(); status != 'I' {
		t.Fatalf("the connection is left in transaction status %q", status)
	}
	return err
}

// Whichever call comes first, it opens the transaction: a later failure undoes its write.
func TestPipelinedTxFirstStatementOpensTheTransaction(t *testing.T) {
	pool := pipelinedTxPool(t)
	ctx := context.Background()
	firsts := map[string]func(*store.PipelinedTx) error{
		"Exec": func(tx *store.PipelinedTx) error {
			_, err := tx.Exec(ctx, `INSERT INTO public.wtx VALUES (1)`)
			return err
		},
		"Exec in a mode of its own": func(tx *store.PipelinedTx) error {
			_, err := tx.Exec(ctx, `INSERT INTO public.wtx VALUES (1)`, pgx.QueryExecModeSimpleProtocol)
			return err
		},
		"QueryRow": func(tx *store.PipelinedTx) error {
			var v int
			return tx.QueryRow(ctx, `INSERT INTO public.wtx VALUES (1) RETURNING v`).Scan(&v)
		},
		"Query read to its end": func(tx *store.PipelinedTx) error {
			rows, err := tx.Query(ctx, `INSERT INTO public.wtx VALUES (1) RETURNING v`)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			return rows.Err()
		},
		"SendBatch": func(tx *store.PipelinedTx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO public.wtx VALUES (1)`)
			return tx.SendBatch(ctx, b).Close()
		},
	}
	for name, first := range firsts {
		t.Run(name, func(t *testing.T) {
			err := withPipelinedTx(t, pool, func(conn *pgxpool.Conn, tx *store.PipelinedTx) {
				if err := first(tx); err != nil {
					t.Fatal(err)
				}
				if status := conn.Conn().PgConn().TxStatus(); status != 'T' {
					t.Fatalf("after the first statement the connection's transaction status is %q, want T", status)
				}
				// A duplicate key aborts the transaction; the route would return its error.
				if _, err := tx.Exec(ctx, `INSERT INTO public.wtx VALUES (1)`); err == nil {
					t.Fatal("the duplicate insert succeeded")
				}
			})
			if !errors.Is(err, pgx.ErrTxCommitRollback) {
				t.Fatalf("commit of an aborted transaction: %v, want pgx.ErrTxCommitRollback", err)
			}
			if n := wtxRows(t, pool); n != 0 {
				t.Fatalf("%d rows after the rollback, want 0", n)
			}
		})
	}
}

// A statement queued for the commit that fails leaves nothing of the transaction behind.
func TestPipelinedTxFailedAtCommitStatementCommitsNothing(t *testing.T) {
	pool := pipelinedTxPool(t)
	ctx := context.Background()
	err := withPipelinedTx(t, pool, func(conn *pgxpool.Conn, tx *store.PipelinedTx) {
		if _, err := tx.Exec(ctx, `INSERT INTO public.wtx VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		_, _ = tx.AtCommit().Exec(ctx, `INSERT INTO public.wtx VALUES (2)`)
		_, _ = tx.AtCommit().Exec(ctx, `INSERT INTO public.wtx VALUES (1)`)
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("commit: %v, want the queued statement's unique violation", err)
	}
	if n := wtxRows(t, pool); n != 0 {
		t.Fatalf("%d rows after the failed commit, want 0", n)
	}
	// Queued statements with no statement before them are one implicit transaction.
	err = withPipelinedTx(t, pool, func(conn *pgxpool.Conn, tx *store.PipelinedTx) {
		_, _ = tx.AtCommit().Exec(ctx, `INSERT INTO public.wtx VALUES (3)`)
		_, _ = tx.AtCommit().Exec(ctx, `INSERT INTO public.wtx VALUES (3)`)
	})
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("commit of queued statements alone: %v, want a unique violation", err)
	}
	if n := wtxRows(t, pool); n != 0 {
		t.Fatalf("%d rows after the failed implicit transaction, want 0", n)
	}
	if err := withPipelinedTx(t, pool, func(conn *pgxpool.Conn, tx *store.PipelinedTx) {
		if _, err := tx.Exec(ctx, `INSERT INTO public.wtx VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		_, _ = tx.AtCommit().Exec(ctx, `INSERT INTO public.wtx VALUES (2)`)
	}); err != nil {
		t.Fatal(err)
	}
	if n := wtxRows(t, pool); n != 2 {
		t.Fatalf("%d rows after the commit, want 2", n)
	}
}

// A read queued ahead travels with the next statement, or alone when its result is asked first;
// one that fails makes the statement it traveled with fail too, and the transaction rolls back.
func TestPipelineReadsAhead(t *testing.T) {
	pool := pipelinedTxPool(t)
	ctx := context.Background()
	if err := withPipelinedTx(t, pool, func(_ *pgxpool.Conn, tx *store.PipelinedTx) {
		before := store.IntAhead(&tx.Pipeline, `SELECT count(*)::int FROM public.wtx`)
		if _, err := tx.Exec(ctx, `INSERT INTO public.wtx VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		after := store.IntAhead(&tx.Pipeline, `SELECT count(*)::int FROM public.wtx`)
		for want, r := range []*store.Pending[int]{before, after} {
			if n, err := r.Result(ctx); err != nil || n != want {
				t.Fatalf("read ahead %d: %d, %v; want %d", want, n, err, want)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	err := withPipelinedTx(t, pool, func(conn *pgxpool.Conn, tx *store.PipelinedTx) {
		if _, err := tx.Exec(ctx, `INSERT INTO public.wtx VALUES (2)`); err != nil {
			t.Fatal(err)
		}
		failing := store.IntAhead(&tx.Pipeline, `SELECT 1/0`)
		if _, err := tx.Exec(ctx, `INSERT INTO public.wtx VALUES (3)`); err == nil {
			t.Fatal("the statement after a failed read ahead succeeded")
		}
		var pgErr *pgconn.PgError
		if _, err := failing.Result(ctx); !errors.As(err, &pgErr) || pgErr.Code != "22012" {
			t.Fatalf("the failed read ahead: %v, want division_by_zero", err)
		}
	})
	if !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Fatalf("commit after a failed read ahead: %v, want pgx.ErrTxCommitRollback", err)
	}
	if n := wtxRows(t, pool); n != 1 {
		t.Fatalf("%d rows, want 1 (the first transaction's)", n)
	}
	// Outside a transaction: a read ahead with nothing after it is sent alone.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	p := store.NewPipeline(conn)
	if n, err := store.IntAhead(p, `SELECT v FROM public.wtx`).Result(ctx); err != nil || n != 1 {
		t.Fatalf("read ahead alone: %d, %v", n, err)
	}
}

// A transaction that keeps the IAM policy is refused any change to a policy table, even one that
// touches no row; the transactions after it, which do not keep it, are not (decision 49,
// migration 0016).
func TestKeptPolicyRefusesPolicyChanges(t *testing.T) {
	pool := pgtest.New(t).App(t)
	changes := []string{
		`DELETE FROM occ.iam_access_bindings WHERE false`,
		`DELETE FROM occ.iam_roles WHERE false`,
		`DELETE FROM occ.iam_restrictions WHERE false`,
		`INSERT INTO occ.iam_identities (id, kind) SELECT 'spn_x', 'service_principal' WHERE false`,
	}
	for _, sql := range changes {
		err := withPipelinedTx(t, pool, func(conn *pgxpool.Conn, tx *store.PipelinedTx) {
			tx.KeepPolicy()
			if _, err := tx.Exec(context.Background(), `SELECT 1`); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(context.Background(), sql); err == nil {
				t.Errorf("%s: allowed in a transaction that keeps the policy", sql)
			}
		})
		if !errors.Is(err, pgx.ErrTxCommitRollback) {
			t.Errorf("%s: the commit answered %v, want a rollback", sql, err)
		}
		if err := withPipelinedTx(t, pool, func(_ *pgxpool.Conn, tx *store.PipelinedTx) {
			if _, err := tx.Exec(context.Background(), sql); err != nil {
				t.Errorf("%s, not kept: %v", sql, err)
			}
		}); err != nil {
			t.Errorf("%s, not kept: commit: %v", sql, err)
		}
	}
}
