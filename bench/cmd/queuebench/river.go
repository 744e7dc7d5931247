package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is the one job kind of the River run.
type noopArgs struct{}

func (noopArgs) Kind() string { return "queuebench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// benchRiver runs River in database, with the given fetch cooldown and poll interval (zero: River's
// defaults).
func benchRiver(ctx context.Context, c config, admin *pgx.Conn, adminURL, name, database string,
	fetchCooldown, fetchPoll time.Duration, walinspect bool) (result, error) {
	if err := benchDatabase(ctx, admin, database, ""); err != nil {
		return result{}, err
	}
	dbURL, err := withUser(adminURL, "", "", database)
	if err != nil {
		return result{}, err
	}
	pool, err := newPool(ctx, dbURL, c.poolSize)
	if err != nil {
		return result{}, err
	}
	closePool := true
	defer func() {
		if closePool {
			pool.Close()
		}
	}()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	logf("%s: migrating %s", name, database)
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: logger})
	if err != nil {
		return result{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return result{}, fmt.Errorf("migrate: %w", err)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	newClient := func(pool *pgxpool.Pool) (*river.Client[pgx.Tx], error) {
		return river.NewClient(riverpgxv5.New(pool), &river.Config{
			FetchCooldown:     fetchCooldown,
			FetchPollInterval: fetchPoll,
			Logger:            logger,
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.workers}},
			Workers:           workers,
		})
	}
	client, err := newClient(pool)
	if err != nil {
		return result{}, err
	}
	params := make([]river.InsertManyParams, 0, 5000)
	for done := 0; done < c.n; {
		params = params[:0]
		for range min(5000, c.n-done) {
			params = append(params, river.InsertManyParams{Args: noopArgs{}})
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return result{}, fmt.Errorf("insert: %w", err)
		}
		done += len(params)
		if done%20000 == 0 || done == c.n {
			logf("%s: inserted %d/%d", name, done, c.n)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) river_job`); err != nil {
		return result{}, err
	}
	// The setup connections count in the database's statistics: close them, and measure with a
	// new pool and client.
	pool.Close()
	if pool, err = newPool(ctx, dbURL, c.poolSize); err != nil {
		closePool = false
		return result{}, err
	}
	if client, err = newClient(pool); err != nil {
		return result{}, err
	}

	closePool = false
	r, err := measure(ctx, admin, adminURL, name, database, c.n, walinspect, func(ctx context.Context) ([]string, error) {
		defer pool.Close()
		return burnRiver(ctx, c, name, client)
	})
	if err != nil {
		return r, err
	}
	notes, err := verifyRiver(ctx, dbURL, c.n)
	r.notes = append(r.notes, fmt.Sprintf("River client: MaxWorkers=%d FetchCooldown=%s FetchPollInterval=%s",
		c.workers, orDefault(fetchCooldown, river.FetchCooldownDefault), orDefault(fetchPoll, river.FetchPollIntervalDefault)))
	r.notes = append(r.notes, notes...)
	return r, err
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// burnRiver starts the client and counts completion events (emitted once the completer's
// update has committed) until every job is done, then stops the client.
func burnRiver(ctx context.Context, c config, name string, client *river.Client[pgx.Tx]) ([]string, error) {
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
		ChanSize: c.n + 1000, // never drop an event
	})
	defer cancelSub()
	var completed atomic.Int64
	stopProgress := make(chan struct{})
	go progress(name, c.n, c.progress, completed.Load, stopProgress)
	defer close(stopProgress)

	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	var runErr error
	for completed.Load() < int64(c.n) && runErr == nil {
		select {
		case ev := <-events:
			if ev.Kind == river.EventKindJobCompleted {
				completed.Add(1)
			} else {
				runErr = fmt.Errorf("job %d: %s", ev.Job.ID, ev.Kind)
			}
		case <-ctx.Done():
			runErr = ctx.Err()
		}
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil && runErr == nil {
		runErr = fmt.Errorf("stop: %w", err)
	}
	return nil, runErr
}

func verifyRiver(ctx context.Context, dbURL string, n int) ([]string, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var completed, bytes, autovacuums int64
	if err := conn.QueryRow(ctx, `
SELECT (SELECT count(*) FROM river_job WHERE state = 'completed'), pg_total_relation_size('river_job'),
       (SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = 'river_job'::regclass)`).
		Scan(&completed, &bytes, &autovacuums); err != nil {
		return nil, err
	}
	if completed != int64(n) {
		return nil, fmt.Errorf("%d of %d jobs completed", completed, n)
	}
	return []string{
		fmt.Sprintf("after the run: %d completed", completed),
		fmt.Sprintf("on disk (table with indexes): river_job %.0f B/job; %d autovacuums of river_job", float64(bytes)/float64(n), autovacuums),
	}, nil
}
