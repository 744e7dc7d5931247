// Command queuebench burns down the same number of no-op work items through OCC's work queue and
// through River on one PostgreSQL server, one engine after the other, each in a database of its
// own, and reports jobs/s, commits per job and WAL bytes per job for both.
//
//	cd bench && go run ./cmd/queuebench -n 100000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/bench/internal/figures"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

type config struct {
	n            int
	workers      int
	poolSize     int
	databaseURL  string
	durable      bool
	engines      []string
	progress     time.Duration
	walBreakdown bool
	keep         bool

	occFinalize string // "tx", "complete" or "batch"
	occRecover  bool

	riverFetchCooldown time.Duration
	riverFetchPoll     time.Duration

	jsonOut string // -json: figures for cmd/benchall
}

// result is what one engine's burn-down measured.
type result struct {
	engine   string
	database string
	jobs     int
	elapsed  time.Duration
	before   snapshot
	after    snapshot
	notes    []string // engine-specific counters
	wal      *walBreakdown
}

func main() {
	var c config
	var engines string
	flag.IntVar(&c.n, "n", 100000, "work items (jobs) to burn down per engine")
	flag.IntVar(&c.workers, "workers", 16, "River MaxWorkers; OCC worker concurrency (claims in flight)")
	flag.IntVar(&c.poolSize, "pool", 0, "max connections of each engine's pool (default workers+4)")
	flag.StringVar(&c.databaseURL, "database-url", "", "superuser URL of an existing server (default: start a private one through pgtest)")
	flag.BoolVar(&c.durable, "durable", false, "private server with fsync, synchronous_commit and full_page_writes on (default: off, as in tests)")
	flag.StringVar(&engines, "engines", "occ,river", "engines to run, in order: occ, river (riverbench fetch tuning), river-defaults (River's client defaults)")
	flag.DurationVar(&c.progress, "progress", 5*time.Second, "interval of progress lines")
	flag.BoolVar(&c.walBreakdown, "wal-breakdown", true, "attribute each run's WAL to tables and indexes with pg_walinspect (needs the contrib extension)")
	flag.BoolVar(&c.keep, "keep", false, "keep the bench databases (only with -database-url; a private server is always removed)")
	flag.StringVar(&c.occFinalize, "occ-finalize", "batch", "OCC completion: batch = completions gathered into one TransitionMany statement, the slot freed before (default), tx = the worker's finalization transaction (BEGIN; renew; complete; COMMIT), complete = Complete alone (autocommit)")
	flag.BoolVar(&c.occRecover, "occ-recover", true, "OCC: run RecoverStale at the start of a claim round once per poll interval, as the worker does")
	flag.DurationVar(&c.riverFetchCooldown, "river-fetch-cooldown", 2*time.Millisecond, "River FetchCooldown of engine river (riverbench uses 2ms; River's default is 100ms: engine river-defaults)")
	flag.DurationVar(&c.riverFetchPoll, "river-fetch-poll-interval", 20*time.Millisecond, "River FetchPollInterval of engine river (riverbench uses 20ms; default 1s)")
	flag.StringVar(&c.jsonOut, "json", "", "also write the figures as JSON to this file (for cmd/benchall)")
	flag.Parse()
	if c.poolSize <= 0 {
		c.poolSize = c.workers + 4
	}
	for e := range strings.SplitSeq(engines, ",") {
		switch e = strings.TrimSpace(e); e {
		case "occ", "river", "river-defaults":
			c.engines = append(c.engines, e)
		case "":
		default:
			fatal(fmt.Errorf("unknown engine %q", e))
		}
	}
	if c.occFinalize != "tx" && c.occFinalize != "complete" && c.occFinalize != "batch" {
		fatal(fmt.Errorf("-occ-finalize must be tx, complete or batch"))
	}
	if c.n <= 0 || c.workers <= 0 {
		fatal(errors.New("-n and -workers must be positive"))
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "queuebench:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, c config) error {
	adminURL := c.databaseURL
	if adminURL == "" {
		logf("starting a private PostgreSQL server (durable=%v)", c.durable)
		startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		u, stop, err := pgtest.StartServer(startCtx, pgtest.ServerOptions{Durable: c.durable})
		cancel()
		if err != nil {
			return err
		}
		defer stop()
		adminURL = u
		c.keep = false
	} else if c.durable {
		return errors.New("-durable applies to the private server only; set the settings on your server")
	}

	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	settings, err := readSettings(ctx, admin)
	if err != nil {
		return err
	}
	walinspect := false
	if c.walBreakdown {
		if _, err := admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`); err != nil {
			logf("WAL breakdown off: %v", err)
		} else {
			walinspect = true
		}
	}

	var results []result
	for _, engine := range c.engines {
		var r result
		var err error
		switch engine {
		case "occ":
			r, err = benchOCC(ctx, c, admin, adminURL, walinspect)
		case "river":
			r, err = benchRiver(ctx, c, admin, adminURL, engine, "river_bench", c.riverFetchCooldown, c.riverFetchPoll, walinspect)
		case "river-defaults":
			r, err = benchRiver(ctx, c, admin, adminURL, engine, "river_defaults_bench", 0, 0, walinspect)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", engine, err)
		}
		results = append(results, r)
		if !c.keep {
			if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+r.database+` WITH (FORCE)`); err != nil {
				return err
			}
		}
	}
	printReport(os.Stdout, c, settings, results)
	return writeFigures(c, settings, results)
}

// writeFigures writes the summary table's figures for cmd/benchall (-json).
func writeFigures(c config, s settings, results []result) error {
	rep := figures.Report{Tool: "queuebench",
		Notes: []string{fmt.Sprintf("n=%d workers=%d; %s", c.n, c.workers, s.summary)}}
	for _, r := range results {
		jobs := float64(r.jobs)
		rep.Add("queuebench "+r.engine+" burn-down", jobs/r.elapsed.Seconds(), "jobs/s")
		rep.Add("queuebench "+r.engine+" commits", float64(r.after.xactCommit-r.before.xactCommit)/jobs, "commits/job")
		rep.Add("queuebench "+r.engine+" WAL", float64(r.after.walBytes-r.before.walBytes)/jobs, "bytes/job")
	}
	return rep.Write(c.jsonOut)
}

// benchDatabase (re)creates an empty database for one engine.
func benchDatabase(ctx context.Context, admin *pgx.Conn, name, owner string) error {
	if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		return err
	}
	stmt := `CREATE DATABASE ` + name
	if owner != "" {
		stmt += ` OWNER ` + owner
	}
	_, err := admin.Exec(ctx, stmt)
	return err
}

// withUser returns raw with another database and, when role is set, another user.
func withUser(raw, role, password, database string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if role != "" {
		u.User = url.UserPassword(role, password)
	}
	u.Path = "/" + database
	return u.String(), nil
}

// measure runs one burn-down between two snapshots. The caller has filled the queue; burn runs
// until every item is done and returns once the engine's connections are closed (so that their
// backends have flushed their statistics).
func measure(ctx context.Context, admin *pgx.Conn, adminURL, name, database string, n int, walinspect bool,
	burn func(ctx context.Context) ([]string, error)) (result, error) {
	r := result{engine: name, database: database, jobs: n}
	// Each run starts right after a checkpoint, so full-page images (when full_page_writes is on)
	// are paid the same way by every engine.
	if _, err := admin.Exec(ctx, `CHECKPOINT`); err != nil {
		return r, err
	}
	var slot *walSlot
	if walinspect {
		var err error
		if slot, err = reserveWAL(ctx, admin); err != nil {
			logf("WAL breakdown off for %s: %v", name, err)
		}
	}
	// Setup connections must be gone (a backend flushes its statistics at the latest when it
	// exits) so that none of the setup lands in the run's counters.
	if err := waitForBackends(ctx, admin, database); err != nil {
		return r, err
	}
	before, err := takeSnapshot(ctx, admin, database)
	if err != nil {
		return r, err
	}
	start := time.Now()
	notes, err := burn(ctx)
	r.elapsed = time.Since(start)
	if err != nil {
		return r, err
	}
	if err := waitForBackends(ctx, admin, database); err != nil {
		return r, err
	}
	after, err := takeSnapshot(ctx, admin, database)
	if err != nil {
		return r, err
	}
	r.before, r.after, r.notes = before, after, notes
	if slot != nil {
		logf("%s: attributing WAL with pg_walinspect", name)
		r.wal, err = slot.breakdown(ctx, admin, adminURL, database, before.lsn, after.lsn)
		if err != nil {
			logf("WAL breakdown failed for %s: %v", name, err)
		}
		slot.release(ctx, admin)
	}
	return r, nil
}

// progress prints a line every interval until done is closed.
func progress(name string, n int, interval time.Duration, count func() int64, done <-chan struct{}) {
	start := time.Now()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-done:
			return
		case now := <-ticker.C:
			c := count()
			logf("%s: %d/%d done (%.1f%%), %.0f jobs/s over the last %s, elapsed %s", name, c, n,
				100*float64(c)/float64(n), float64(c-last)/now.Sub(lastAt).Seconds(),
				now.Sub(lastAt).Round(time.Second), now.Sub(start).Round(time.Second))
			last, lastAt = c, now
		}
	}
}

func printReport(w *os.File, c config, s settings, results []result) {
	fmt.Fprintf(w, "\nPostgreSQL %s\n", s.version)
	fmt.Fprintf(w, "settings: %s\n", s.summary)
	fmt.Fprintf(w, "machine: %d CPUs, GOMAXPROCS %d, %s %s/%s; River %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, moduleVersion("github.com/riverqueue/river"))
	fmt.Fprintf(w, "run: n=%d workers=%d pool=%d occ-finalize=%s occ-recover=%v river fetch cooldown/poll=%s/%s\n\n",
		c.n, c.workers, c.poolSize, c.occFinalize, c.occRecover, c.riverFetchCooldown, c.riverFetchPoll)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "engine\tjobs\tseconds\tjobs/s\tcommits/job\tWAL bytes/job\tWAL LSN bytes/job")
	for _, r := range results {
		jobs := float64(r.jobs)
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.2f\t%.0f\t%.0f\n", r.engine, r.jobs, r.elapsed.Seconds(),
			jobs/r.elapsed.Seconds(), float64(r.after.xactCommit-r.before.xactCommit)/jobs,
			float64(r.after.walBytes-r.before.walBytes)/jobs, float64(r.after.lsn-r.before.lsn)/jobs)
	}
	tw.Flush()
	fmt.Fprintln(w, "\ncommits/job: pg_stat_database.xact_commit of the engine's database (every committed transaction,")
	fmt.Fprintln(w, "read-only ones included); WAL bytes/job: pg_stat_wal.wal_bytes (server-wide); WAL LSN bytes/job:")
	fmt.Fprintln(w, "pg_current_wal_insert_lsn() advance (server-wide, with page headers). Engines ran one after the other.")
	for _, r := range results {
		fmt.Fprintf(w, "\n%s (database %s):\n", r.engine, r.database)
		for _, n := range r.notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
		if r.wal != nil {
			r.wal.print(w, r.jobs)
		}
	}
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}
