// Command workerlatency measures how long a deployment waits for the worker: with a real `occ api`
// and one `occ worker` (simulated Compute, revisionReadyAfterMs 0, the worker's default poll
// interval) on a private PostgreSQL server, it deploys M Agents through the API and reports, per
// condition, the time from admission (the 202 response) to the worker's claim and to `succeeded`.
//
// Conditions:
//   - rest: one deploy at a time, each after the previous one succeeded, on an idle worker;
//   - backlog: 10 000 due Namespace ensure items are queued (inserted in one statement, as
//     POST /namespaces would have queued them) just before the M deploys are admitted, one after
//     the other; FIFO claiming puts every deploy behind the backlog;
//   - deferred: 10 000 queued Namespace items that are not due yet (available in a day, as work
//     in retry backoff), then the rest procedure: does a large queue alone slow the claim?
//
// Claim and success times come from a bench-only trigger on occ.controller_work that records each
// state change of deployment work (agent_revision:…:reconcile) with clock_timestamp().
//
//	cd bench && go run ./cmd/workerlatency -deploys 200 -backlog 10000
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/bench/internal/figures"
	"github.com/openclaw/occ/bench/internal/stack"
)

type config struct {
	deploys      int
	backlog      int
	conditions   []string
	pollInterval string
	concurrency  string
	jsonOut      string
	databaseURL  string
	binary       string
	timeout      time.Duration
}

var allConditions = []string{"rest", "backlog", "deferred"}

func main() {
	var c config
	var conditions string
	flag.IntVar(&c.deploys, "deploys", 200, "deploys measured per condition (one Agent each)")
	flag.IntVar(&c.backlog, "backlog", 10000, "queued Namespace work items of the backlog and deferred conditions")
	flag.StringVar(&conditions, "conditions", strings.Join(allConditions, ","), "conditions to run, in order: rest, backlog, deferred")
	flag.StringVar(&c.pollInterval, "poll-interval-ms", "", "OCC_WORKER_POLL_INTERVAL_MS of the worker (default: unset, the worker's default)")
	flag.StringVar(&c.concurrency, "worker-concurrency", "", "OCC_WORKER_CONCURRENCY of the worker (default: unset, the worker's default)")
	flag.StringVar(&c.jsonOut, "json", "", "write the results as JSON to this file")
	flag.StringVar(&c.databaseURL, "database-url", "", "superuser URL of an existing server (default: a private server); database occ_workerlatency is dropped and recreated")
	flag.StringVar(&c.binary, "occ-binary", "", "an existing occ binary (default: go build ../cmd/occ)")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up on a condition after this long")
	flag.Parse()
	for s := range strings.SplitSeq(conditions, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(allConditions, s) {
			fatal(fmt.Errorf("unknown condition %q", s))
		}
		c.conditions = append(c.conditions, s)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "workerlatency:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

type deploy struct {
	agent, rev string
	admitted   time.Time // the 202 response arrived
	claimed    time.Time // first transition to claimed
	succeeded  time.Time
}

type outcome struct {
	condition     string
	deploys       []deploy
	toClaim       []time.Duration
	toSuccess     []time.Duration
	backlogDrain  time.Duration // backlog: from the insert until the last backlog item finished
	backlogItems  int
	admissionSpan time.Duration // backlog: time to admit all deploys
}

const triggerSQL = `
CREATE SCHEMA IF NOT EXISTS bench;
CREATE TABLE bench.work_transitions (key text NOT NULL, state text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE INDEX ON bench.work_transitions (key);
CREATE FUNCTION bench.record_transition() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO bench.work_transitions (key, state) VALUES (NEW.idempotency_key, NEW.state);
  RETURN NULL;
END
$$;
CREATE TRIGGER bench_work_transitions AFTER UPDATE OF state ON occ.controller_work FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.idempotency_key LIKE 'agent_revision:%')
  EXECUTE FUNCTION bench.record_transition();`

func run(ctx context.Context, c config) error {
	workerEnv := map[string]string{}
	if c.pollInterval != "" {
		workerEnv["OCC_WORKER_POLL_INTERVAL_MS"] = c.pollInterval
	}
	if c.concurrency != "" {
		workerEnv["OCC_WORKER_CONCURRENCY"] = c.concurrency
	}
	st, err := stack.Start(ctx, stack.Options{Database: "occ_workerlatency", DatabaseURL: c.databaseURL, Binary: c.binary,
		Workers: 1, Compute: "{revisionReadyAfterMs: 0}", WorkerEnv: workerEnv, Logf: logf})
	if err != nil {
		return err
	}
	defer st.Close()
	logf("occ api at %s; %s", st.BaseURL, st.Server)
	if _, err := st.Admin.Exec(ctx, triggerSQL); err != nil {
		return fmt.Errorf("transition trigger: %w", err)
	}

	ns := st.DefaultNS
	_, cfg, err := st.Call(ctx, "POST", "/namespaces/"+ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})
	if err != nil {
		return err
	}
	cfgID := stack.ID(cfg)
	var agents []string
	for i := range c.deploys {
		_, data, err := st.Call(ctx, "POST", "/namespaces/"+ns+"/agents", map[string]any{
			"name": fmt.Sprintf("agent-%04d", i), "configurationId": cfgID, "harnessAuth": map[string]any{"method": "runtime"}})
		if err != nil {
			return err
		}
		agents = append(agents, stack.ID(data))
	}
	logf("created %d Agents", len(agents))

	var outcomes []outcome
	for _, cond := range c.conditions {
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		o, err := runCondition(cctx, st, c, cond, agents)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", cond, err)
		}
		outcomes = append(outcomes, o)
		if exited := st.Exited(); len(exited) > 0 {
			return fmt.Errorf("an occ process exited: %v", exited)
		}
	}

	poll := c.pollInterval
	if poll == "" {
		poll = "default (250)"
	}
	fmt.Printf("\n%s; %d CPUs, %s\n", st.Server, runtime.NumCPU(), runtime.Version())
	fmt.Printf("1 occ worker (simulated Compute, revisionReadyAfterMs 0, OCC_WORKER_POLL_INTERVAL_MS %s), deploys=%d, backlog=%d\n\n",
		poll, c.deploys, c.backlog)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "condition\tinterval\tn\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	rep := figures.Report{Tool: "workerlatency"}
	for _, o := range outcomes {
		for _, iv := range []struct {
			name string
			s    []time.Duration
		}{{"admission→claim", o.toClaim}, {"admission→succeeded", o.toSuccess}} {
			p := func(q float64) float64 { return figures.Ms(figures.Percentile(iv.s, q)) }
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", o.condition, iv.name, len(iv.s), p(0.5), p(0.9), p(0.99), p(1))
			short := strings.ReplaceAll(strings.TrimPrefix(iv.name, "admission→"), "succeeded", "success")
			for _, q := range []struct {
				label string
				v     float64
			}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1}} {
				rep.Add(fmt.Sprintf("workerlatency %s admission→%s %s", o.condition, short, q.label), p(q.v), "ms")
			}
		}
	}
	tw.Flush()
	for _, o := range outcomes {
		if o.backlogItems > 0 && o.backlogDrain > 0 {
			rate := float64(o.backlogItems) / o.backlogDrain.Seconds()
			fmt.Printf("\n%s: %d backlog items finished %.1fs after their insert (%.0f items/s); the %d deploys were admitted in %.1fs",
				o.condition, o.backlogItems, o.backlogDrain.Seconds(), rate, len(o.deploys), o.admissionSpan.Seconds())
			rep.Add("workerlatency "+o.condition+" drain rate", rate, "items/s")
		}
	}
	fmt.Println()
	fmt.Println("\nadmission: the client received the 202 of POST …/deploy; claim: the work row's first change to")
	fmt.Println("claimed; succeeded: its change to succeeded (server clock_timestamp(), same host clock). A claim")
	fmt.Println("can precede the 202 by a fraction of a millisecond: the worker is notified at the commit.")
	rep.Notes = append(rep.Notes, fmt.Sprintf("deploys=%d backlog=%d poll=%s; %s", c.deploys, c.backlog, poll, st.Server))
	return rep.Write(c.jsonOut)
}

func runCondition(ctx context.Context, st *stack.Stack, c config, cond string, agents []string) (outcome, error) {
	o := outcome{condition: cond}
	deployOne := func(agent string) (deploy, error) {
		_, data, err := st.Call(ctx, "POST", "/namespaces/"+st.DefaultNS+"/agents/"+agent+"/deploy", nil)
		if err != nil {
			return deploy{}, err
		}
		return deploy{agent: agent, rev: stack.ID(data), admitted: time.Now()}, nil
	}
	var backlogStart time.Time
	var backlogKeys string
	switch cond {
	case "backlog", "deferred":
		avail := "clock_timestamp()"
		if cond == "deferred" {
			avail = "clock_timestamp() + interval '1 day'"
		}
		tag := fmt.Sprintf("%s-%d", cond, time.Now().UnixNano()%1e9)
		start := time.Now()
		// One statement: every item becomes due at once, as if POST /namespaces had queued them.
		if _, err := st.Admin.Exec(ctx, fmt.Sprintf(`
WITH b AS (INSERT INTO occ.namespaces (id, name)
  SELECT 'ns_' || gen_random_uuid(), '%s-' || i FROM generate_series(1, %d) i RETURNING id)
INSERT INTO occ.controller_work (idempotency_key, namespace_id, actor_id, namespace_target, available_at, created_at)
SELECT 'namespace:' || id || ':reconcile:ready', id, $1, 'ready', %s, clock_timestamp() FROM b`, tag, c.backlog, avail), st.ActorID); err != nil {
			return o, fmt.Errorf("backlog: %w", err)
		}
		if _, err := st.Admin.Exec(ctx, `ANALYZE occ.controller_work`); err != nil {
			return o, err
		}
		backlogStart, backlogKeys = start, tag
		o.backlogItems = c.backlog
		logf("%s: queued %d Namespace ensure items in %.1fs", cond, c.backlog, time.Since(start).Seconds())
	}
	switch cond {
	case "rest", "deferred":
		for i, a := range agents {
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) // off the worker's poll rhythm
			d, err := deployOne(a)
			if err != nil {
				return o, err
			}
			if err := waitSucceeded(ctx, st, []string{d.rev}); err != nil {
				return o, err
			}
			o.deploys = append(o.deploys, d)
			if (i+1)%50 == 0 {
				logf("%s: %d/%d deploys succeeded", cond, i+1, len(agents))
			}
		}
	case "backlog":
		start := time.Now()
		for _, a := range agents {
			d, err := deployOne(a)
			if err != nil {
				return o, err
			}
			o.deploys = append(o.deploys, d)
		}
		o.admissionSpan = time.Since(start)
		logf("%s: admitted %d deploys in %.1fs; waiting for the backlog and the deploys", cond, len(agents), o.admissionSpan.Seconds())
		var revs []string
		for _, d := range o.deploys {
			revs = append(revs, d.rev)
		}
		if err := waitSucceeded(ctx, st, revs); err != nil {
			return o, err
		}
		var last time.Time
		var open int
		if err := st.Admin.QueryRow(ctx, `SELECT max(w.completed_at), count(*) FILTER (WHERE w.completed_at IS NULL)
  FROM occ.controller_work w JOIN occ.namespaces n ON n.id = w.namespace_id WHERE n.name LIKE $1 || '-%'`, backlogKeys).Scan(&last, &open); err != nil {
			return o, err
		}
		if open == 0 {
			o.backlogDrain = last.Sub(backlogStart)
		} else {
			logf("%s: %d backlog items still open when the deploys had succeeded", cond, open)
		}
	}
	// Claim and success times from the transition log.
	for i := range o.deploys {
		d := &o.deploys[i]
		key := "agent_revision:" + d.rev + ":reconcile"
		if err := st.Admin.QueryRow(ctx, `SELECT min(at) FILTER (WHERE state = 'claimed'), min(at) FILTER (WHERE state = 'succeeded')
  FROM bench.work_transitions WHERE key = $1`, key).Scan(&d.claimed, &d.succeeded); err != nil {
			return o, fmt.Errorf("transitions of %s: %w", key, err)
		}
		o.toClaim = append(o.toClaim, d.claimed.Sub(d.admitted))
		o.toSuccess = append(o.toSuccess, d.succeeded.Sub(d.admitted))
	}
	// The API agrees: every deployment reads succeeded.
	for _, d := range o.deploys {
		_, data, err := st.Call(ctx, "GET", "/namespaces/"+st.DefaultNS+"/agents/"+d.agent+"/deployments/"+d.rev, nil)
		if err != nil {
			return o, err
		}
		if !strings.Contains(string(data), `"status":"succeeded"`) {
			return o, fmt.Errorf("deployment %s: %s", d.rev, data)
		}
	}
	logf("%s: claim p50 %.1f ms p99 %.1f ms; succeeded p50 %.1f ms p99 %.1f ms", cond,
		figures.Ms(figures.Percentile(o.toClaim, 0.5)), figures.Ms(figures.Percentile(o.toClaim, 0.99)),
		figures.Ms(figures.Percentile(o.toSuccess, 0.5)), figures.Ms(figures.Percentile(o.toSuccess, 0.99)))
	return o, nil
}

// waitSucceeded waits until every revision's deployment work has succeeded; a permanent failure is
// an error.
func waitSucceeded(ctx context.Context, st *stack.Stack, revs []string) error {
	keys := make([]string, len(revs))
	for i, r := range revs {
		keys[i] = "agent_revision:" + r + ":reconcile"
	}
	for {
		rows, err := st.Admin.Query(ctx, `SELECT idempotency_key, state FROM occ.controller_work WHERE idempotency_key = ANY($1)`, keys)
		if err != nil {
			return err
		}
		done := 0
		type ks struct{ key, state string }
		states, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ks, error) {
			var v ks
			return v, r.Scan(&v.key, &v.state)
		})
		if err != nil {
			return err
		}
		for _, s := range states {
			switch s.state {
			case "succeeded":
				done++
			case "failed_permanent":
				return fmt.Errorf("work %s failed permanently", s.key)
			}
		}
		if done == len(keys) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d deployments succeeded: %w", done, len(keys), ctx.Err())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
