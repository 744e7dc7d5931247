package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/batch"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
)

const (
	occDatabase  = "occ_bench"
	occOwnerRole = "occ_bench_owner"
	occAppRole   = "occ_bench_app"
	occPassword  = "occ-bench"
	// occPollInterval is the worker's default OCC_WORKER_POLL_INTERVAL_MS: how long an idle claimer
	// waits when no slot frees (it never does here: every completion frees one).
	occPollInterval = 250 * time.Millisecond
	// pendingLimit bounds the finished items waiting for their batched completion (and the size of
	// one completion statement).
	pendingLimit = 1000
)

func benchOCC(ctx context.Context, c config, admin *pgx.Conn, adminURL string, walinspect bool) (result, error) {
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, occOwnerRole, occPassword),
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, occAppRole, occPassword),
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil && !store.AlreadyExists(err) {
			return result{}, err
		}
	}
	if err := benchDatabase(ctx, admin, occDatabase, occOwnerRole); err != nil {
		return result{}, err
	}
	ownerURL, err := withUser(adminURL, occOwnerRole, occPassword, occDatabase)
	if err != nil {
		return result{}, err
	}
	appURL, err := withUser(adminURL, occAppRole, occPassword, occDatabase)
	if err != nil {
		return result{}, err
	}

	owner, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		return result{}, err
	}
	defer owner.Close(context.WithoutCancel(ctx))
	logf("occ: migrating %s", occDatabase)
	if _, err := store.Migrate(ctx, owner, occAppRole, nil); err != nil {
		return result{}, fmt.Errorf("migrate: %w", err)
	}

	fill, err := newPool(ctx, appURL, 1)
	if err != nil {
		return result{}, err
	}
	defer fill.Close()
	actor := "prn_" + uuid.NewString()
	for done := 0; done < c.n; {
		batch := min(10000, c.n-done)
		if err := fixture.FillNamespaceWork(ctx, fill, batch, actor); err != nil {
			return result{}, fmt.Errorf("fill: %w", err)
		}
		done += batch
		logf("occ: enqueued %d/%d", done, c.n)
	}
	for _, table := range []string{"occ.controller_work", "occ.namespaces"} {
		if _, err := owner.Exec(ctx, `VACUUM (ANALYZE) `+table); err != nil {
			return result{}, err
		}
	}
	// Setup connections count in the database's statistics: close them before measuring, and
	// measure on a pool of its own.
	fill.Close()
	owner.Close(ctx)
	pool, err := newPool(ctx, appURL, c.poolSize)
	if err != nil {
		return result{}, err
	}

	r, err := measure(ctx, admin, adminURL, "occ", occDatabase, c.n, walinspect, func(ctx context.Context) ([]string, error) {
		defer pool.Close()
		return burnOCC(ctx, c, pool)
	})
	if err != nil {
		return r, err
	}
	notes, err := verifyOCC(ctx, adminURL, c.n)
	r.notes = append(r.notes, notes...)
	return r, err
}

func newPool(ctx context.Context, url string, size int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(size)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// burnOCC is one worker process's claim loop without the worker's Compute path: each round runs
// RecoverStale when a poll interval has passed since the last one (unless disabled) and claims up
// to the free capacity; every claim is handled in a goroutine of its own by a no-op handler and
// finalized as c.occFinalize says (batch: its slot is freed and the claimer woken at once, and the
// completion joins the next TransitionMany; otherwise in its own transaction, which then frees the
// slot). An item counts as done once the statement or commit that finalized it has returned.
func burnOCC(ctx context.Context, c config, pool *pgxpool.Pool) ([]string, error) {
	q := queue.New(pool, queue.Options{}) // the worker's defaults: 60 s lease, 10 attempts
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var active, completed atomic.Int64
	slotFree := make(chan struct{}, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	stopProgress := make(chan struct{})
	defer close(stopProgress)
	go progress("occ", c.n, c.progress, completed.Load, stopProgress)

	// Batched completions free the handler's slot at once, as River's completer does: the claim
	// loop claims again while the completion waits for its group. At most pendingLimit finished
	// items wait for their completion (backpressure), each still fenced by its own claim.
	completions := batch.NewRunner(pendingLimit, func(reqs []queue.TransitionRequest) ([]queue.TransitionResult, error) {
		return q.TransitionMany(ctx, pool, reqs)
	})
	pending := make(chan struct{}, pendingLimit)
	freeSlot := func() {
		active.Add(-1)
		select {
		case slotFree <- struct{}{}:
		default:
		}
	}
	finish := func(cl queue.Claim) error {
		// No-op handler: nothing to do before the finalization.
		if c.occFinalize == "batch" {
			pending <- struct{}{}
			defer func() { <-pending }()
			freeSlot()
			res, err := completions.Do(queue.TransitionRequest{Claim: cl, To: queue.TransitionComplete})
			if err == nil {
				err = res.Err
			}
			return err
		}
		if c.occFinalize == "complete" {
			_, err := q.Complete(ctx, pool, cl, "", nil)
			return err
		}
		// The worker's finalization transaction: renew the claim inside it, then the transition
		// (the worker also writes the resource change and its audit here).
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := q.RenewOne(ctx, tx, cl); err != nil {
				return err
			}
			_, err := q.Complete(ctx, tx, cl, "", nil)
			return err
		})
	}
	var finishNanos atomic.Int64
	pass := func(cl queue.Claim) {
		defer wg.Done()
		start := time.Now()
		err := finish(cl)
		finishNanos.Add(int64(time.Since(start)))
		if err != nil {
			cancel(fmt.Errorf("complete %s: %w", cl.Work.Key, err))
			return
		}
		if c.occFinalize != "batch" {
			freeSlot()
		}
		if completed.Add(1) == int64(c.n) {
			close(done)
		}
	}

	var claimStatements, emptyClaims, claimed, rounds, recoveries int64
	var lastRecovery time.Time
	var claimTime, recoverTime time.Duration
	var loopErr error
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctx.Done():
			loopErr = context.Cause(ctx)
			break loop
		default:
		}
		rounds++
		if c.occRecover && time.Since(lastRecovery) >= occPollInterval {
			lastRecovery = time.Now()
			recoveries++
			start := time.Now()
			_, err := q.RecoverStale(ctx)
			recoverTime += time.Since(start)
			if err != nil {
				loopErr = err
				break loop
			}
		}
		if free := c.workers - int(active.Load()); free > 0 {
			start := time.Now()
			claims, err := q.Claim(ctx, free)
			claimTime += time.Since(start)
			claimStatements++
			if err != nil {
				loopErr = err
				break loop
			}
			if len(claims) > 0 {
				claimed += int64(len(claims))
				for _, cl := range claims {
					active.Add(1)
					wg.Add(1)
					go pass(cl)
				}
				continue
			}
			emptyClaims++
		}
		timer := time.NewTimer(occPollInterval)
		select {
		case <-done:
		case <-slotFree:
		case <-ctx.Done():
		case <-timer.C:
		}
		timer.Stop()
	}
	if loopErr != nil {
		cancel(loopErr)
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && loopErr == nil && completed.Load() < int64(c.n) {
		loopErr = err
	}
	if loopErr != nil {
		return nil, loopErr
	}
	full := claimStatements - emptyClaims
	recoverNote := "RecoverStale off"
	if c.occRecover {
		recoverNote = fmt.Sprintf("%d rounds, %d RecoverStale calls (at most one per poll interval, as the worker; 2 statements each, %.3f/job), %.2f ms each on average",
			rounds, recoveries, 2*float64(recoveries)/float64(c.n), ms(recoverTime)/float64(max(recoveries, 1)))
	}
	finalize := "BEGIN; renew; Complete; COMMIT (the worker's finalization transaction)"
	switch c.occFinalize {
	case "complete":
		finalize = "Complete alone (autocommit)"
	case "batch":
		finalize = fmt.Sprintf("TransitionMany (the completions waiting at once, in one fenced statement; the slot is freed before, at most %d wait)", pendingLimit)
	}
	return []string{
		fmt.Sprintf("claim statements: %d (%d empty), %.2f items per non-empty claim, %.3f claim statements/job, %.2f ms each on average",
			claimStatements, emptyClaims, float64(claimed)/float64(max(full, 1)), float64(claimStatements)/float64(c.n),
			ms(claimTime)/float64(max(claimStatements, 1))),
		"rounds: " + recoverNote,
		fmt.Sprintf("finalization per item: %s, %.2f ms each on average (%d in flight at most)",
			finalize, ms(time.Duration(finishNanos.Load()))/float64(c.n), c.workers),
	}, nil
}

// verifyOCC checks the outcome after the measurement and reads what it left on disk.
func verifyOCC(ctx context.Context, adminURL string, n int) ([]string, error) {
	u, err := withUser(adminURL, "", "", occDatabase)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var succeeded, evidence, workBytes, auditBytes, autovacuums int64
	if err := conn.QueryRow(ctx, `
SELECT (SELECT count(*) FROM occ.controller_work WHERE state = 'succeeded'),
       (SELECT count(*) FROM occ.audit_events WHERE action = 'reconcile'),
       pg_total_relation_size('occ.controller_work'), pg_total_relation_size('occ.audit_events'),
       (SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = 'occ.controller_work'::regclass)`).
		Scan(&succeeded, &evidence, &workBytes, &auditBytes, &autovacuums); err != nil {
		return nil, err
	}
	if succeeded != int64(n) {
		return nil, fmt.Errorf("%d of %d work items succeeded", succeeded, n)
	}
	return []string{
		fmt.Sprintf("after the run: %d succeeded, %d evidence rows (occ.audit_events, one per transition)", succeeded, evidence),
		fmt.Sprintf("on disk (tables with indexes): controller_work %.0f B/job, audit_events %.0f B/job; %d autovacuums of controller_work",
			float64(workBytes)/float64(n), float64(auditBytes)/float64(n), autovacuums),
	}, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
