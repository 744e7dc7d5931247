package queue_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// Micro-benchmarks of the queue statements: claim, complete and renew, each on its
// own clone of the migrated template. Every work item is Namespace work in a Namespace of its own,
// so each item is its own lane and a claim of k returns k rows. Besides ns/op they report the time
// and the WAL per item. The WAL is the pg_current_wal_insert_lsn delta of the whole private
// server: other tests of this binary running at the same time would add to it (run with
// -run '^$').
//
//	go test -run '^$' -bench . -benchtime 2000x ./internal/queue/

type benchEnv struct {
	b   *testing.B
	ctx context.Context
	app *pgxpool.Pool
	q   *queue.Queue
}

func newBenchEnv(b *testing.B, queued int) *benchEnv {
	b.Helper()
	db := pgtest.New(b)
	e := &benchEnv{b: b, ctx: context.Background(), app: db.App(b)}
	// A lease long enough for any benchmark length: claims made during setup must still be owned
	// when the timed loop reaches them.
	e.q = queue.New(e.app, queue.Options{LeaseDuration: time.Hour, Jitter: zero})
	if queued > 0 {
		if err := fixture.FillNamespaceWork(e.ctx, e.app, queued, "prn_"+uuid.NewString()); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
	owner := db.Owner(b)
	for _, table := range []string{"occ.controller_work", "occ.namespaces"} {
		if _, err := owner.Exec(e.ctx, "VACUUM (ANALYZE) "+table); err != nil {
			b.Fatalf("vacuum: %v", err)
		}
	}
	return e
}

// claim claims n items in batches of up to 100.
func (e *benchEnv) claim(n int) []queue.Claim {
	e.b.Helper()
	var out []queue.Claim
	for len(out) < n {
		claims, err := e.q.Claim(e.ctx, min(100, n-len(out)))
		if err != nil {
			e.b.Fatal(err)
		}
		if len(claims) == 0 {
			e.b.Fatalf("claimed %d of %d", len(out), n)
		}
		out = append(out, claims...)
	}
	return out
}

func (e *benchEnv) walLSN() uint64 {
	e.b.Helper()
	var lsn string
	if err := e.app.QueryRow(e.ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		e.b.Fatal(err)
	}
	hi, lo, _ := strings.Cut(lsn, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		e.b.Fatalf("parse LSN %q", lsn)
	}
	return h<<32 | l
}

// report adds per-item metrics: items is the number of work items the timed loop handled.
func (e *benchEnv) report(items int, walBefore uint64) {
	e.b.Helper()
	wal := e.walLSN() - walBefore
	e.b.ReportMetric(float64(e.b.Elapsed().Nanoseconds())/float64(items), "ns/item")
	e.b.ReportMetric(float64(items)/e.b.Elapsed().Seconds(), "items/s")
	e.b.ReportMetric(float64(wal)/float64(items), "WAL-B/item")
}

// benchRelease ends every held claim in one statement, outside the timer (no evidence: it stands
// in for the completions of the worker's passes, which BenchmarkComplete measures).
const benchRelease = `
UPDATE occ.controller_work
   SET state = 'succeeded', completed_at = clock_timestamp(), reason_code = 'RECONCILE_SUCCEEDED',
       claim_token = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
 WHERE state = 'claimed'`

// BenchmarkClaim claims batches of 1 and of 16 from a queue holding exactly the items the loop
// will claim (it drains as it runs, as in a burn-down). Between two claims the claimed items are
// finished outside the timer, as a worker with that many slots would finish them. In the ",held"
// case nothing is finished: every claim stays held, so the lane check of each claim sees all the
// claims before it (b.N·batch at the end).
func BenchmarkClaim(b *testing.B) {
	for _, bc := range []struct {
		batch int
		held  bool
	}{{1, false}, {16, false}, {1, true}} {
		name := "batch=" + strconv.Itoa(bc.batch)
		if bc.held {
			name += ",held"
		}
		b.Run(name, func(b *testing.B) {
			e := newBenchEnv(b, b.N*bc.batch)
			from := e.walLSN()
			var releaseWAL uint64 // WAL of the untimed releases, left out of WAL-B/item
			claimed := 0
			b.ResetTimer()
			for range b.N {
				claims, err := e.q.Claim(e.ctx, bc.batch)
				if err != nil {
					b.Fatal(err)
				}
				claimed += len(claims)
				if !bc.held {
					b.StopTimer()
					before := e.walLSN()
					if _, err := e.app.Exec(e.ctx, benchRelease); err != nil {
						b.Fatal(err)
					}
					releaseWAL += e.walLSN() - before
					b.StartTimer()
				}
			}
			b.StopTimer()
			if claimed != b.N*bc.batch {
				b.Fatalf("claimed %d, want %d", claimed, b.N*bc.batch)
			}
			e.report(claimed, from+releaseWAL)
		})
	}
}

// BenchmarkComplete completes claimed items one per operation: "autocommit" is Complete as its
// own statement; "finalize_tx" is the worker's finalization transaction without the resource
// change (BEGIN; renew the claim; Complete; COMMIT). Each completion writes its evidence row.
func BenchmarkComplete(b *testing.B) {
	for _, mode := range []string{"autocommit", "finalize_tx"} {
		b.Run(mode, func(b *testing.B) {
			e := newBenchEnv(b, b.N)
			claims := e.claim(b.N)
			wal := e.walLSN()
			b.ResetTimer()
			for i := range b.N {
				var err error
				if mode == "autocommit" {
					_, err = e.q.Complete(e.ctx, e.app, claims[i], "", nil)
				} else {
					err = pgx.BeginFunc(e.ctx, e.app, func(tx pgx.Tx) error {
						if _, err := e.q.RenewOne(e.ctx, tx, claims[i]); err != nil {
							return err
						}
						_, err := e.q.Complete(e.ctx, tx, claims[i], "", nil)
						return err
					})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			e.report(b.N, wal)
		})
	}
}

// BenchmarkRenew renews 1 and 64 claims in one statement per operation (the worker's renewal
// loop sends every active lease at once).
func BenchmarkRenew(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("claims=%d", n), func(b *testing.B) {
			e := newBenchEnv(b, n)
			claims := e.claim(n)
			wal := e.walLSN()
			b.ResetTimer()
			for range b.N {
				renewed, err := e.q.Renew(e.ctx, nil, claims)
				if err != nil {
					b.Fatal(err)
				}
				if len(renewed) != n {
					b.Fatalf("renewed %d of %d", len(renewed), n)
				}
			}
			b.StopTimer()
			e.report(b.N*n, wal)
		})
	}
}
