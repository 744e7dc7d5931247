package store_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// sameSnapshot reads the counters (store.AgentStates) and the recount from every Agent's rows in
// one REPEATABLE READ transaction, so both see the same committed writes.
func sameSnapshot(ctx context.Context, pool *pgxpool.Pool) (counted, recounted map[string]int64, err error) {
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if counted, err = store.AgentStates(ctx, tx); err != nil {
			return err
		}
		recounted, err = store.RecountAgentStates(ctx, tx)
		return err
	})
	return counted, recounted, err
}

// checkFolded: after a fold with no writer running, the counters alone equal the recount, every
// mark is gone and each Agent's stored state is its state now.
func checkFolded(t *testing.T, ctx context.Context, app, owner *pgxpool.Pool) {
	t.Helper()
	if _, err := store.FoldAgentLifecycle(ctx, app); err != nil {
		t.Fatal(err)
	}
	recounted, err := store.RecountAgentStates(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	counters := map[string]int64{}
	var marks, wrong int64
	if err := pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT lifecycle_state, agents FROM occ.agent_lifecycle_counts`)
		var state string
		var n int64
		if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { counters[state] = n; return nil }); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM occ.agent_lifecycle_changes`).Scan(&marks); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
SELECT count(*) FROM occ.agent_lifecycle_now n FULL JOIN occ.agent_lifecycle l USING (agent_id)
 WHERE n.lifecycle_state IS DISTINCT FROM l.lifecycle_state`).Scan(&wrong)
	}); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(counters, recounted) || marks != 0 || wrong != 0 {
		t.Fatalf("after a fold: counters %v, recount %v, %d marks left, %d Agents with a stale stored state", counters, recounted, marks, wrong)
	}
}

func TestAgentStatesBeforeAndAfterAFold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	w := newBacklogWorld(t, app)
	a, r := w.agent(1)
	w.set(a, "running", "active", nil)
	w.deploy(a, r[0], "queued", "")
	w.agent(0)

	want := map[string]int64{"draft": 1, "deploying": 1, "running": 0, "stopping": 0, "stopped": 0, "failed": 0}
	if got, err := store.AgentStates(ctx, app); err != nil || !maps.Equal(got, want) {
		t.Fatalf("before any fold: %v %v, want %v", got, err, want)
	}
	f, err := store.FoldAgentLifecycle(ctx, app)
	if err != nil || f.Moves != 2 || f.Changes < 2 {
		t.Fatalf("first fold: %+v %v", f, err)
	}
	if f, err := store.FoldAgentLifecycle(ctx, app); err != nil || f != (store.AgentLifecycleFold{}) {
		t.Fatalf("a fold with nothing changed: %+v %v", f, err)
	}
	if got, err := store.AgentStates(ctx, app); err != nil || !maps.Equal(got, want) {
		t.Fatalf("after the fold: %v %v, want %v", got, err, want)
	}

	// Claims and renewals do not mark the Agent; a completion does, and moves it.
	w.exec(`UPDATE occ.controller_work SET state = 'claimed', claim_token = gen_random_uuid(),
	  lease_expires_at = clock_timestamp() + interval '1 minute' WHERE agent_id = $1`, a)
	w.exec(`UPDATE occ.controller_work SET lease_expires_at = lease_expires_at + interval '1 minute' WHERE agent_id = $1`, a)
	var marks int
	if err := db.Owner(t).QueryRow(ctx, `SELECT count(*) FROM occ.agent_lifecycle_changes`).Scan(&marks); err != nil || marks != 0 {
		t.Fatalf("a claim and a renewal left %d marks (%v)", marks, err)
	}
	w.exec(`UPDATE occ.controller_work SET state = 'succeeded', claim_token = NULL, lease_expires_at = NULL,
	  completed_at = clock_timestamp(), reason_code = 'REVISION_ACTIVATED' WHERE agent_id = $1`, a)
	want["deploying"], want["running"] = 0, 1
	if got, err := store.AgentStates(ctx, app); err != nil || !maps.Equal(got, want) {
		t.Fatalf("after the completion, before its fold: %v %v, want %v", got, err, want)
	}
	checkFolded(t, ctx, app, db.Owner(t))
}

// TestAFoldDoesNotWaitForAnother: while another fold holds the lock (here a transaction that took
// it), a fold returns at once with Busy and leaves the marks; scrapes stay exact meanwhile.
func TestAFoldDoesNotWaitForAnother(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	w := newBacklogWorld(t, app)
	w.agent(0)
	holder, err := app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `LOCK TABLE occ.agent_lifecycle_counts IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	if f, err := store.FoldAgentLifecycle(ctx, app); err != nil || !f.Busy || f.Changes != 0 {
		t.Fatalf("a fold while another holds the lock: %+v %v", f, err)
	}
	want := map[string]int64{"draft": 1, "deploying": 0, "running": 0, "stopping": 0, "stopped": 0, "failed": 0}
	if got, err := store.AgentStates(ctx, app); err != nil || !maps.Equal(got, want) {
		t.Fatalf("a scrape while a fold holds the lock: %v %v, want %v", got, err, want)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if f, err := store.FoldAgentLifecycle(ctx, app); err != nil || f.Busy || f.Moves != 1 {
		t.Fatalf("the fold after the lock was released: %+v %v", f, err)
	}
}

// TestAgentLifecycleCountersUnderConcurrentWriters: writers move shared Agents through every state
// input (desired state, revisions, deploy work, stop work) while two folds run over and over, and a
// reader checks at each snapshot that the counters plus the unfolded changes equal a recount of
// every Agent. Deleting Agents at the end removes them from the counters.
func TestAgentLifecycleCountersUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := pgtest.New(t)
	app, owner := db.App(t), db.Owner(t)
	w := newBacklogWorld(t, app)
	var agents []string
	for i := range 12 {
		a, _ := w.agent(i % 3)
		agents = append(agents, a)
	}

	var writers, background sync.WaitGroup
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for g := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 20))
			for range 150 {
				if err := randomLifecycleChange(ctx, app, rng, w.ns, agents[rng.IntN(len(agents))]); err != nil {
					report(err)
					return
				}
			}
		}()
	}
	// Two folds and one reader repeat their step until the writers are done.
	stop := make(chan struct{})
	repeat := func(step func() error) {
		background.Add(1)
		go func() {
			defer background.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := step(); err != nil {
					report(err)
					return
				}
			}
		}()
	}
	fold := func() error {
		if _, err := store.FoldAgentLifecycle(ctx, app); err != nil {
			return fmt.Errorf("fold: %w", err)
		}
		return nil
	}
	repeat(fold)
	repeat(fold)
	checks := 0
	repeat(func() error {
		counted, recounted, err := sameSnapshot(ctx, app)
		if err != nil {
			return err
		}
		if !maps.Equal(counted, recounted) {
			return fmt.Errorf("at one snapshot the counters say %v, the recount %v", counted, recounted)
		}
		checks++
		return nil
	})
	writers.Wait()
	close(stop)
	background.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if checks == 0 {
		t.Fatal("the reader never compared a snapshot")
	}
	t.Logf("%d snapshots compared", checks)
	checkFolded(t, ctx, app, owner)

	// Deleting Agents (the owner's path inside occ.finalize_agent_deletion) takes them out.
	for _, a := range agents[:4] {
		if err := pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
			for _, stmt := range []string{
				`SELECT set_config('occ.finalizing_agent', $1, true)`,
				`UPDATE occ.agents SET active_revision_id = NULL WHERE id = $1`,
				`DELETE FROM occ.controller_work WHERE agent_id = $1`,
				`DELETE FROM occ.agent_revisions WHERE agent_id = $1`,
				`DELETE FROM occ.agents WHERE id = $1`,
			} {
				if _, err := tx.Exec(ctx, stmt, a); err != nil {
					return fmt.Errorf("%s: %w", stmt, err)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	counted, recounted, err := sameSnapshot(ctx, app)
	if err != nil || !maps.Equal(counted, recounted) {
		t.Fatalf("after deletions: counters %v, recount %v (%v)", counted, recounted, err)
	}
	var total int64
	for _, n := range counted {
		total += n
	}
	if total != int64(len(agents)-4) {
		t.Fatalf("%d Agents counted after deleting 4 of %d", total, len(agents))
	}
	checkFolded(t, ctx, app, owner)
}

// randomLifecycleChange makes one change to an input of agent's lifecycle state, as the
// application role; changes that lose a race with another writer (a revision number taken, a key
// written) are skipped.
func randomLifecycleChange(ctx context.Context, app *pgxpool.Pool, rng *rand.Rand, ns, agent string) error {
	terminal := [][2]string{{"succeeded", "REVISION_ACTIVATED"}, {"succeeded", "REVISION_STOPPED"},
		{"failed_permanent", "AUTHORIZATION_DENIED"}, {"succeeded", "AGENT_STOPPED"}}
	var err error
	switch rng.IntN(6) {
	case 0: // desired state
		_, err = app.Exec(ctx, `UPDATE occ.agents SET desired_runtime_state = $2 WHERE id = $1`,
			agent, []string{"running", "stopped"}[rng.IntN(2)])
	case 1: // a new revision
		_, err = store.InsertRevision(ctx, app, store.InsertRevisionParams{
			NamespaceID: ns, AgentID: agent, ID: platform.NewID(platform.PrefixRevision), Spec: []byte(`{}`)})
	case 2: // deploy work for the newest revision
		_, err = app.Exec(ctx, `
INSERT INTO occ.controller_work (idempotency_key, namespace_id, agent_id, revision_id, actor_id)
SELECT 'agent_revision:' || r.id || ':reconcile', r.namespace_id, r.agent_id, r.id, 'prn_metrics'
  FROM occ.agent_revisions r WHERE r.agent_id = $1 ORDER BY r.revision_number DESC LIMIT 1
ON CONFLICT DO NOTHING`, agent)
	case 3: // stop work
		key := platform.AgentStopWorkKey(agent, platform.NewID("op"))
		_, err = app.Exec(ctx, `INSERT INTO occ.controller_work (idempotency_key, namespace_id, agent_id, actor_id, agent_target)
VALUES ($1, $2, $3, 'prn_metrics', 'stopped')`, key, ns, agent)
	// Each UPDATE repeats its state test outside the subquery that picks the row: a concurrent
	// writer may change the picked row first, and only the outer WHERE is checked again on the
	// row it left (READ COMMITTED), so the write never lands on a row in another state.
	case 4: // one open work row of the Agent ends
		t := terminal[rng.IntN(len(terminal))]
		_, err = app.Exec(ctx, `
UPDATE occ.controller_work SET state = $2, claim_token = NULL, lease_expires_at = NULL,
       completed_at = clock_timestamp(), reason_code = $3
 WHERE idempotency_key = (SELECT idempotency_key FROM occ.controller_work
                           WHERE agent_id = $1 AND state IN ('queued', 'claimed') ORDER BY random() LIMIT 1)
   AND state IN ('queued', 'claimed')`,
			agent, t[0], t[1])
	case 5: // one open work row is claimed, or one ended row is queued again (a retried failure)
		if rng.IntN(2) == 0 {
			_, err = app.Exec(ctx, `
UPDATE occ.controller_work SET state = 'claimed', claim_token = gen_random_uuid(), lease_expires_at = clock_timestamp() + interval '1 minute'
 WHERE idempotency_key = (SELECT idempotency_key FROM occ.controller_work
                           WHERE agent_id = $1 AND state = 'queued' ORDER BY random() LIMIT 1)
   AND state = 'queued'`, agent)
		} else {
			_, err = app.Exec(ctx, `
UPDATE occ.controller_work SET state = 'queued', completed_at = NULL, reason_code = NULL, result_data = NULL
 WHERE idempotency_key = (SELECT idempotency_key FROM occ.controller_work
                           WHERE agent_id = $1 AND state IN ('succeeded', 'failed_permanent') ORDER BY random() LIMIT 1)
   AND state IN ('succeeded', 'failed_permanent')`, agent)
		}
	}
	if code, _ := store.ServerErrorCode(err); code == "23505" {
		return nil
	}
	return err
}

// TestAgentLifecycleMigrationCountsTheAgentsThatExist: migration 0012 on an installation that
// already has Agents in every state stores each one's state and counts them.
func TestAgentLifecycleMigrationCountsTheAgentsThatExist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app, owner := db.App(t), db.Owner(t)
	w := newBacklogWorld(t, app)
	w.agent(0)
	a, r := w.agent(1)
	w.set(a, "running", "active", &r[0])
	w.deploy(a, r[0], "succeeded", "REVISION_ACTIVATED")
	a, r = w.agent(1)
	w.set(a, "stopped", "active", &r[0])
	w.deploy(a, r[0], "succeeded", "REVISION_ACTIVATED")
	w.stop(a, "stopped", "queued", "", 0)
	a, _ = w.agent(0)
	w.set(a, "stopped", "deleting", nil)
	w.stop(a, "deleted", "failed_permanent", "AGENT_DELETE_FAILED", 0)

	// Back to the schema before 0012, with the Agents above in it.
	if _, err := owner.Exec(ctx, `
DROP TABLE occ.agent_lifecycle, occ.agent_lifecycle_counts, occ.agent_lifecycle_changes;
DROP VIEW occ.agent_lifecycle_now;
DROP FUNCTION occ.note_agent_lifecycle_change() CASCADE;
DELETE FROM occ.schema_migrations WHERE version = 12`); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, db.OwnerURL)
	res, err := store.Migrate(ctx, conn, pgtest.AppRole, nil)
	if err != nil || len(res.Applied) != 1 || res.Applied[0].Version != 12 {
		t.Fatalf("migrate: %+v %v", res.Applied, err)
	}
	want := map[string]int64{"draft": 1, "deploying": 0, "running": 1, "stopping": 1, "stopped": 0, "failed": 1}
	if got, err := store.AgentStates(ctx, app); err != nil || !maps.Equal(got, want) {
		t.Fatalf("after the migration: %v %v, want %v", got, err, want)
	}
	checkFolded(t, ctx, app, owner)
}

// BenchmarkLifecycleMarks measures what the lifecycle triggers add to an Agent's writes: each
// iteration creates an Agent, admits a revision, writes its deploy work, sets it running and
// completes the work, on a database with the triggers and on one where the owner dropped them
// (the anchor, in the same run):
//
//	go test -run '^$' -bench LifecycleMarks ./internal/store
func BenchmarkLifecycleMarks(b *testing.B) {
	for _, marked := range []bool{true, false} {
		name := "marked"
		if !marked {
			name = "unmarked"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db := pgtest.New(b)
			app := db.App(b)
			if !marked {
				if _, err := db.Owner(b).Exec(ctx, `
DROP TRIGGER agents_lifecycle_insert_delete ON occ.agents;
DROP TRIGGER agents_lifecycle_update ON occ.agents;
DROP TRIGGER agent_revisions_lifecycle ON occ.agent_revisions;
DROP TRIGGER controller_work_lifecycle_insert ON occ.controller_work;
DROP TRIGGER controller_work_lifecycle_update ON occ.controller_work`); err != nil {
					b.Fatal(err)
				}
			}
			fx := fixture.New(b, app)
			ns := fx.Namespace().ID
			cfg := fx.Configuration(ns).ID
			b.ResetTimer()
			for b.Loop() {
				a := fx.Agent(store.AgentRow{NamespaceID: ns, ConfigurationID: cfg})
				r := fx.Revision(a, nil)
				for _, stmt := range []string{
					`INSERT INTO occ.controller_work (idempotency_key, namespace_id, agent_id, revision_id, actor_id)
					 VALUES ('agent_revision:' || $3 || ':reconcile', $1, $2, $3, 'prn_bench')`,
					`UPDATE occ.agents SET desired_runtime_state = 'running' WHERE id = $2 AND namespace_id = $1 AND $3 <> ''`,
					`UPDATE occ.controller_work SET state = 'succeeded', completed_at = clock_timestamp(), reason_code = 'REVISION_ACTIVATED'
					 WHERE idempotency_key = 'agent_revision:' || $3 || ':reconcile' AND namespace_id = $1 AND agent_id = $2`,
				} {
					if _, err := app.Exec(ctx, stmt, ns, a.ID, r.ID); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
