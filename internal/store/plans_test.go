package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// TestRefreshedPlansFollowTheTablesGrowth: a session completes work on a young installation's
// one-row queue past PostgreSQL's five custom plans, then 2 000 rows are queued. With its plans
// kept, the next completion reads the queue and the Namespaces whole (the generic plan of the
// transition and of the foreign-key check of its evidence row were made for one page); with its
// plans dropped when the session is handed out (store.RefreshPlans), it reads neither.
func TestRefreshedPlansFollowTheTablesGrowth(t *testing.T) {
	for _, c := range []struct {
		name  string
		every time.Duration
		// kept: the plans are the young installation's, and the completion scans both tables.
		kept bool
	}{
		{"plans kept for an hour", time.Hour, true},
		{"plans dropped at every hand-out", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.New(t)
			owner := db.Owner(t)
			for _, sql := range []string{
				`ALTER TABLE occ.controller_work SET (autovacuum_enabled = false)`,
				`ALTER TABLE occ.namespaces SET (autovacuum_enabled = false)`,
			} {
				if _, err := owner.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := pgxpool.ParseConfig(db.AppURL)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 1 // one session, whose plans the test follows
			store.RefreshPlans(cfg, c.every)
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()

			actor := "prn_" + uuid.NewString()
			fill := func(n int) {
				t.Helper()
				if err := fixture.FillNamespaceWork(ctx, pool, n, actor); err != nil {
					t.Fatal(err)
				}
			}
			claim := func() store.WorkRecord {
				t.Helper()
				claimed, err := store.ClaimWork(ctx, pool, 1, 10, time.Minute)
				if err != nil || len(claimed) != 1 {
					t.Fatalf("claim: %d rows, %v", len(claimed), err)
				}
				return claimed[0]
			}
			complete := func(db store.DBTX, w store.WorkRecord) {
				t.Helper()
				out, err := store.TransitionWork(ctx, db, store.TransitionParams{MaxAttempts: 10},
					[]store.WorkTransition{{Key: w.Key, Token: *w.ClaimToken, Kind: store.TransitionComplete, Code: "RECONCILE_SUCCEEDED"}})
				if err != nil || len(out) != 1 || !out[0].Applied {
					t.Fatalf("complete %s: %+v, %v", w.Key, out, err)
				}
			}

			fill(1)
			for _, table := range []string{"occ.controller_work", "occ.namespaces"} {
				if _, err := owner.Exec(ctx, `ANALYZE `+table); err != nil {
					t.Fatal(err)
				}
			}
			for range 8 { // past the plan cache's five custom plans, on a queue of one row
				fill(1)
				complete(pool, claim())
			}
			fill(2000)
			w := claim()

			conn, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			tables := []string{"occ.controller_work", "occ.namespaces"}
			before := make([]int64, len(tables))
			for i, table := range tables {
				before[i] = xactStat(t, tx, "pg_stat_get_xact_tuples_returned", table)
			}
			complete(tx, w)
			for i, table := range tables {
				read := xactStat(t, tx, "pg_stat_get_xact_tuples_returned", table) - before[i]
				switch {
				case c.kept && read < 2000:
					t.Errorf("%s: %d rows read by sequential scan; this test needs the young installation's plans, which read all of them", table, read)
				case !c.kept && read != 0:
					t.Errorf("%s: %d rows read by sequential scan after the plans were dropped; want its row by key", table, read)
				}
			}
		})
	}
}
