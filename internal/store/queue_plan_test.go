package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// xactStat reads one of PostgreSQL's per-backend counters of the current transaction, such as
// pg_stat_get_xact_tuples_returned (entries an index's scans returned, or rows a table's
// sequential scans read) or pg_stat_get_xact_tuples_hot_updated, for one relation.
func xactStat(t *testing.T, tx pgx.Tx, counter, relation string) int64 {
	t.Helper()
	var n int64
	if err := tx.QueryRow(context.Background(), `SELECT `+counter+`($1::regclass)`, relation).Scan(&n); err != nil {
		t.Fatalf("%s(%s): %v", counter, relation, err)
	}
	return n
}

// TestClaimStopsEarlyWhateverTheStatistics: statistics taken while the table held only finished
// receipts said no row was queued; a burst of 2 000 queued rows followed. The claim must still read
// the queue through controller_work_ready, in order, and stop after a few rows, never through
// controller_work_queued_attempts (which made it read and sort every queued row: migration 0011).
func TestClaimStopsEarlyWhateverTheStatistics(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	owner, app := db.Owner(t), db.App(t)
	exec := func(sql string) {
		t.Helper()
		if _, err := owner.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`ALTER TABLE occ.controller_work SET (autovacuum_enabled = false)`)
	actor := "prn_" + uuid.NewString()
	if err := fixture.FillNamespaceWork(ctx, app, 500, actor); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE occ.controller_work SET state = 'succeeded', completed_at = clock_timestamp(), reason_code = 'NAMESPACE_RECONCILED'`)
	exec(`VACUUM (ANALYZE) occ.controller_work`)
	if err := fixture.FillNamespaceWork(ctx, app, 2000, actor); err != nil {
		t.Fatal(err)
	}

	const limit = 4
	tx, err := app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	claimed, err := store.ClaimWork(ctx, tx, limit, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != limit {
		t.Fatalf("claimed %d rows, want %d", len(claimed), limit)
	}
	if n := xactStat(t, tx, "pg_stat_get_xact_tuples_returned", "occ.controller_work_queued_attempts"); n != 0 {
		t.Errorf("the claim read %d entries of controller_work_queued_attempts", n)
	}
	if n := xactStat(t, tx, "pg_stat_get_xact_tuples_returned", "occ.controller_work_ready"); n == 0 || n > 4*limit+8 {
		t.Errorf("the claim read %d entries of controller_work_ready, want 1..%d of the 2 000 queued", n, 4*limit+8)
	}
}

// TestLeaseRenewalIsAHeapOnlyUpdate: a renewal changes no indexed column (migration 0011), so it
// is a HOT update and writes no index entry.
func TestLeaseRenewalIsAHeapOnlyUpdate(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	if err := fixture.FillNamespaceWork(ctx, app, 3, "prn_"+uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	claims, err := store.ClaimWork(ctx, app, 3, 10, time.Minute)
	if err != nil || len(claims) != 3 {
		t.Fatalf("claim: %d rows, %v", len(claims), err)
	}
	var keys []string
	var tokens []uuid.UUID
	for _, c := range claims {
		keys, tokens = append(keys, c.Key), append(tokens, *c.ClaimToken)
	}
	tx, err := app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The backend's counters may still hold the claim's updates: count the difference.
	counts := func() (updated, hot int64) {
		return xactStat(t, tx, "pg_stat_get_xact_tuples_updated", "occ.controller_work"),
			xactStat(t, tx, "pg_stat_get_xact_tuples_hot_updated", "occ.controller_work")
	}
	updated0, hot0 := counts()
	renewed, err := store.RenewLeases(ctx, tx, keys, tokens, time.Minute)
	if err != nil || len(renewed) != 3 {
		t.Fatalf("renew: %d rows, %v", len(renewed), err)
	}
	updated, hot := counts()
	updated, hot = updated-updated0, hot-hot0
	if updated != 3 || hot != 3 {
		t.Fatalf("renewals: %d updates, %d of them HOT; want 3 and 3", updated, hot)
	}
}

// TestClaimIsPlannedForTheQueueItFinds: a worker that starts on an empty queue must not keep the
// plan it made then. A prepared claim switched to a generic plan after five executions on a
// one-page table: a sequential scan of the queue anti-joined with a sequential scan per row, kept
// for the connection's life, 8 s per claim once thousands of rows were queued.
func TestClaimIsPlannedForTheQueueItFinds(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Owner(t)
	if _, err := owner.Exec(ctx, `ALTER TABLE occ.controller_work SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	actor := "prn_" + uuid.NewString()
	if err := fixture.FillNamespaceWork(ctx, conn, 1, actor); err != nil {
		t.Fatal(err)
	}
	// The statistics of a young installation: a table of one page.
	if _, err := owner.Exec(ctx, `ANALYZE occ.controller_work`); err != nil {
		t.Fatal(err)
	}
	for range 8 { // past the plan cache's five custom plans, on a queue of one row
		if err := fixture.FillNamespaceWork(ctx, conn, 1, actor); err != nil {
			t.Fatal(err)
		}
		claimed, err := store.ClaimWork(ctx, conn, 4, 10, time.Minute)
		if err != nil || len(claimed) == 0 {
			t.Fatalf("claim on a one-row queue: %d rows, %v", len(claimed), err)
		}
	}
	if err := fixture.FillNamespaceWork(ctx, conn, 2000, actor); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	seqRead := func() int64 { return xactStat(t, tx, "pg_stat_get_xact_tuples_returned", "occ.controller_work") }
	before := seqRead()
	claimed, err := store.ClaimWork(ctx, tx, 4, 10, time.Minute)
	if err != nil || len(claimed) != 4 {
		t.Fatalf("claim: %d rows, %v", len(claimed), err)
	}
	if n := seqRead() - before; n > 100 {
		t.Errorf("the claim read %d rows of occ.controller_work by sequential scan; want an index scan that stops early", n)
	}
}

// TestManyClaimsCostNoScanOfTheClaimedRows: statistics taken with nothing claimed, then 500 rows
// claimed (a worker's completions waiting for their batch). A claim must test each candidate's lane
// with one probe, and a batch of transitions must reach its rows by their key; neither may read
// every claimed row, which PostgreSQL did, per candidate and per transition, when the plan went
// through controller_work_one_claim_per_resource (53 393 comparisons for 107 completions).
func TestManyClaimsCostNoScanOfTheClaimedRows(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	owner, app := db.Owner(t), db.App(t)
	if _, err := owner.Exec(ctx, `ALTER TABLE occ.controller_work SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	if err := fixture.FillNamespaceWork(ctx, app, 1000, "prn_"+uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `VACUUM (ANALYZE) occ.controller_work`); err != nil {
		t.Fatal(err)
	}
	const waiting = 500
	claims, err := store.ClaimWork(ctx, app, waiting, 10, time.Minute)
	if err != nil || len(claims) != waiting {
		t.Fatalf("claim: %d rows, %v", len(claims), err)
	}

	tx, err := app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	read := func(index string) int64 { return xactStat(t, tx, "pg_stat_get_xact_tuples_returned", index) }
	const lanes = "occ.controller_work_one_claim_per_resource"

	before := read(lanes)
	const limit = 8
	more, err := store.ClaimWork(ctx, tx, limit, 10, time.Minute)
	if err != nil || len(more) != limit {
		t.Fatalf("claim beside %d claimed rows: %d rows, %v", waiting, len(more), err)
	}
	if n := read(lanes) - before; n > 4*limit {
		t.Errorf("the claim read %d entries of %s; want at most one per candidate (%d), not the %d claimed rows", n, lanes, 4*limit, waiting)
	}

	const done = 100
	ts := make([]store.WorkTransition, done)
	for i, c := range claims[:done] {
		ts[i] = store.WorkTransition{Key: c.Key, Token: *c.ClaimToken, Kind: store.TransitionComplete, Code: "RECONCILE_SUCCEEDED"}
	}
	before, keysBefore := read(lanes), read("occ.controller_work_pkey")
	out, err := store.TransitionWork(ctx, tx, store.TransitionParams{MaxAttempts: 10}, ts)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if !o.Applied {
			t.Fatalf("transition %d was not applied: %+v", i, o)
		}
	}
	if n := read(lanes) - before; n != 0 {
		t.Errorf("%d transitions read %d entries of %s; want them reached by key", done, n, lanes)
	}
	if n := read("occ.controller_work_pkey") - keysBefore; n < done || n > 2*done {
		t.Errorf("%d transitions read %d entries of controller_work_pkey; want one per transition", done, n)
	}
}
