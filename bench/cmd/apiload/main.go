// Command apiload drives a real `occ api` (built from this repository, with one `occ worker`, the
// simulated Compute Driver and a private PostgreSQL server) with N concurrent clients over
// loopback, one scenario at a time for a fixed duration, and reports requests, errors (non-2xx),
// throughput and p50/p99 latency per scenario. Beside the read scenarios it measures a ceiling: a
// bare net/http + pgxpool handler in this process running the one indexed query each read needs,
// against the same database, with the same client and concurrency.
//
//	cd bench && go run ./cmd/apiload -clients 16 -duration 10s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/bench/internal/figures"
	"github.com/openclaw/occ/bench/internal/stack"
	"github.com/openclaw/occ/internal/store"
)

type config struct {
	clients      int
	duration     time.Duration
	agents       int
	scenarios    []string
	jsonOut      string
	databaseURL  string
	binary       string
	poolMax      int
	drainTimeout time.Duration
	apiEnv       envFlag
	workerEnv    envFlag
}

// envFlag collects repeated KEY=VALUE flags.
type envFlag map[string]string

func (e envFlag) String() string { return fmt.Sprint(map[string]string(e)) }

func (e envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	e[k] = val
	return nil
}

var allScenarios = []string{"ceiling-get-namespace", "get-namespace", "ceiling-list-agents", "list-agents",
	"create-namespace", "create-agent", "deploy"}

func main() {
	c := config{apiEnv: envFlag{}, workerEnv: envFlag{}}
	var scenarios string
	flag.IntVar(&c.clients, "clients", 16, "concurrent clients (each one request at a time, keep-alive)")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "duration of each scenario")
	flag.IntVar(&c.agents, "agents", 1000, "Agents in the Namespace the reads use (created through the API)")
	flag.StringVar(&scenarios, "scenarios", strings.Join(allScenarios, ","), "scenarios to run, in order")
	flag.StringVar(&c.jsonOut, "json", "", "write the results as JSON to this file")
	flag.StringVar(&c.databaseURL, "database-url", "", "superuser URL of an existing server (default: a private server); database occ_apiload is dropped and recreated")
	flag.StringVar(&c.binary, "occ-binary", "", "an existing occ binary (default: go build ../cmd/occ)")
	flag.IntVar(&c.poolMax, "pool", 10, "OCC_DATABASE_POOL_MAX of occ api, and the ceiling's pool size")
	flag.DurationVar(&c.drainTimeout, "drain-timeout", 3*time.Minute, "after each scenario, wait at most this long for the worker to finish the work it left")
	flag.Var(c.apiEnv, "api-env", "KEY=VALUE added to the environment of occ api (repeatable; for example OCC_PPROF_ADDR=127.0.0.1:6061 with a -tags pprof binary)")
	flag.Var(c.workerEnv, "worker-env", "KEY=VALUE added to the environment of occ worker (repeatable)")
	flag.Parse()
	for s := range strings.SplitSeq(scenarios, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(allScenarios, s) {
			fatal(fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(allScenarios, ", ")))
		}
		c.scenarios = append(c.scenarios, s)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "apiload:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

type result struct {
	scenario string
	requests int
	errors   int
	elapsed  time.Duration
	lat      []time.Duration
	statuses map[int]int
	// work the scenario left queued or claimed, and how long the worker took to finish it
	drained   int
	drainTime time.Duration
}

func run(ctx context.Context, c config) error {
	c.apiEnv["OCC_DATABASE_POOL_MAX"] = fmt.Sprint(c.poolMax)
	st, err := stack.Start(ctx, stack.Options{Database: "occ_apiload", DatabaseURL: c.databaseURL, Binary: c.binary,
		Workers: 1, Compute: "{}", APIEnv: c.apiEnv, WorkerEnv: c.workerEnv, Logf: logf})
	if err != nil {
		return err
	}
	defer st.Close()
	logf("occ api at %s, default Namespace %s ready; %s", st.BaseURL, st.DefaultNS, st.Server)

	// Fixture, through the API: the default Namespace holds c.agents Agents (the reads and the
	// deploys use it); a second Namespace receives the created Agents.
	readNS := st.DefaultNS
	_, cfg, err := st.Call(ctx, "POST", "/namespaces/"+readNS+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})
	if err != nil {
		return err
	}
	cfgID := stack.ID(cfg)
	start := time.Now()
	agentIDs := make([]string, c.agents)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range c.clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= c.agents {
					return
				}
				_, data, err := st.Call(ctx, "POST", "/namespaces/"+readNS+"/agents", map[string]any{
					"name": fmt.Sprintf("agent-%05d", i), "configurationId": cfgID, "harnessAuth": map[string]any{"method": "runtime"}})
				if err != nil {
					mu.Lock()
					firstErr = cmpOr(firstErr, err)
					mu.Unlock()
					return
				}
				agentIDs[i] = stack.ID(data)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	logf("created %d Agents through the API in %.1fs", c.agents, time.Since(start).Seconds())
	_, wns, err := st.Call(ctx, "POST", "/namespaces", map[string]any{"name": "apiload-writes"})
	if err != nil {
		return err
	}
	writeNS := stack.ID(wns)
	if err := st.WaitNamespaceReady(ctx, writeNS); err != nil {
		return err
	}
	_, wcfg, err := st.Call(ctx, "POST", "/namespaces/"+writeNS+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})
	if err != nil {
		return err
	}
	writeCfg := stack.ID(wcfg)
	if _, err := st.Admin.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
		return err
	}

	// The ceiling: bare net/http + pgxpool (the application role, the API's pool size) in this
	// process, running the read's one indexed query (the same store functions the API calls).
	pcfg, err := pgxpool.ParseConfig(st.AppURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns = int32(c.poolMax)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	ceiling, err := startCeiling(pool)
	if err != nil {
		return err
	}
	defer ceiling.Close()

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: c.clients * 2, MaxIdleConnsPerHost: c.clients * 2, DisableCompression: true}}
	var seq atomic.Int64
	runID := time.Now().Format("150405")
	scenario := func(name string) (func(ctx context.Context) (*http.Request, error), error) {
		get := func(base, path string, key bool) func(ctx context.Context) (*http.Request, error) {
			return func(ctx context.Context) (*http.Request, error) {
				req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
				if key && err == nil {
					req.Header.Set("x-api-key", st.Key)
				}
				return req, err
			}
		}
		post := func(path func() string, body func() any) func(ctx context.Context) (*http.Request, error) {
			return func(ctx context.Context) (*http.Request, error) {
				var rd io.Reader = http.NoBody
				if body != nil {
					raw, _ := json.Marshal(body())
					rd = bytes.NewReader(raw)
				}
				req, err := http.NewRequestWithContext(ctx, "POST", st.BaseURL+path(), rd)
				if err == nil {
					req.Header.Set("x-api-key", st.Key)
					if body != nil {
						req.Header.Set("content-type", "application/json")
					}
				}
				return req, err
			}
		}
		switch name {
		case "ceiling-get-namespace":
			return get("http://"+ceiling.Addr().String(), "/ns/"+readNS, false), nil
		case "get-namespace":
			return get(st.BaseURL, "/namespaces/"+readNS, true), nil
		case "ceiling-list-agents":
			return get("http://"+ceiling.Addr().String(), "/ns/"+readNS+"/agents", false), nil
		case "list-agents":
			return get(st.BaseURL, "/namespaces/"+readNS+"/agents", true), nil
		case "create-namespace":
			return post(func() string { return "/namespaces" },
				func() any { return map[string]any{"name": fmt.Sprintf("apiload-%s-%d", runID, seq.Add(1))} }), nil
		case "create-agent":
			return post(func() string { return "/namespaces/" + writeNS + "/agents" },
				func() any {
					return map[string]any{"name": fmt.Sprintf("w-%s-%d", runID, seq.Add(1)), "configurationId": writeCfg,
						"harnessAuth": map[string]any{"method": "runtime"}}
				}), nil
		case "deploy":
			return post(func() string {
				return "/namespaces/" + readNS + "/agents/" + agentIDs[int(seq.Add(1))%len(agentIDs)] + "/deploy"
			}, nil), nil
		}
		return nil, fmt.Errorf("unknown scenario %s", name)
	}

	var results []result
	for _, name := range c.scenarios {
		mk, err := scenario(name)
		if err != nil {
			return err
		}
		// A short warm-up (connections, prepared statements), then the measured run.
		if _, err := drive(ctx, client, name, c.clients, 500*time.Millisecond, mk); err != nil {
			return err
		}
		r, err := drive(ctx, client, name, c.clients, c.duration, mk)
		if err != nil {
			return err
		}
		results = append(results, r)
		logf("%-22s %7d requests %5d errors %8.0f req/s p50 %s p99 %s statuses %v", name, r.requests, r.errors,
			float64(r.requests)/r.elapsed.Seconds(), fmtMs(figures.Percentile(r.lat, 0.5)), fmtMs(figures.Percentile(r.lat, 0.99)), r.statuses)
		if exited := st.Exited(); len(exited) > 0 {
			return fmt.Errorf("an occ process exited: %v", exited)
		}
		// Writes leave work for the worker; let it drain so the next scenario starts at rest.
		if drained, n, err := drain(ctx, st, c.drainTimeout); err != nil {
			return err
		} else if n > 0 {
			logf("%-22s worker drained %d work items in %.1fs", name, n, drained.Seconds())
			r.drained, r.drainTime = n, drained
			results[len(results)-1] = r
		}
	}
	fmt.Printf("\n%s; %d CPUs, GOMAXPROCS %d, %s\n", st.Server, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Printf("clients=%d duration=%s per scenario, read Namespace with %d Agents, occ api pool=%d, 1 occ worker (simulated Compute)\n\n",
		c.clients, c.duration, c.agents, c.poolMax)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\trequests\terrors\treq/s\tp50 ms\tp99 ms\twork left\tdrained in s\t")
	rep := figures.Report{Tool: "apiload"}
	for _, r := range results {
		rps := float64(r.requests) / r.elapsed.Seconds()
		p50, p99 := figures.Percentile(r.lat, 0.5), figures.Percentile(r.lat, 0.99)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%d\t%.1f\t\n", r.scenario, r.requests, r.errors, rps, figures.Ms(p50), figures.Ms(p99),
			r.drained, r.drainTime.Seconds())
		rep.Add("apiload "+r.scenario+" throughput", rps, "req/s")
		rep.Add("apiload "+r.scenario+" p50", figures.Ms(p50), "ms")
		rep.Add("apiload "+r.scenario+" p99", figures.Ms(p99), "ms")
		rep.Add("apiload "+r.scenario+" errors", float64(r.errors), "requests")
		if r.drained > 0 {
			rep.Add("apiload "+r.scenario+" worker drain rate", float64(r.drained)/r.drainTime.Seconds(), "items/s")
		}
	}
	tw.Flush()
	fmt.Printf("\nceiling-*: bare net/http + pgxpool in the bench process, one indexed query (store.GetNamespace;\n")
	fmt.Printf("store.ListAgents LIMIT 1000), no authentication, authorization, transaction or logging.\n")
	fmt.Printf("work left: items queued or claimed when the scenario ended; drained in: until the one worker had finished\n")
	fmt.Printf("them (the next scenario starts after that).\n")
	var failed int
	_ = st.Admin.QueryRow(ctx, `SELECT count(*) FROM occ.controller_work WHERE state = 'failed_permanent'`).Scan(&failed)
	fmt.Printf("work failed permanently: %d\n", failed)
	rep.Notes = append(rep.Notes, fmt.Sprintf("clients=%d duration=%s agents=%d pool=%d; %s", c.clients, c.duration, c.agents, c.poolMax, st.Server))
	return rep.Write(c.jsonOut)
}

// drain waits until no work is queued or claimed (at most timeout) and returns how long that took and
// how many items were open at the start.
func drain(ctx context.Context, st *stack.Stack, timeout time.Duration) (time.Duration, int, error) {
	start := time.Now()
	count := func() int {
		var n int
		_ = st.Admin.QueryRow(ctx, `SELECT count(*) FROM occ.controller_work WHERE state IN ('queued', 'claimed')`).Scan(&n)
		return n
	}
	// The poll asks only whether a row is still open, each state through its own partial index: a
	// count(*) twenty times a second read the queue whole, about a tenth of a core taken from the
	// worker it measures.
	anyOpen := func() bool {
		var open bool
		_ = st.Admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM occ.controller_work WHERE state = 'queued')
    OR EXISTS (SELECT 1 FROM occ.controller_work WHERE state = 'claimed')`).Scan(&open)
		return open
	}
	first := count()
	for open := first > 0; open; open = anyOpen() {
		if time.Since(start) > timeout {
			return time.Since(start), first, fmt.Errorf("%d work items still open after %s", count(), timeout)
		}
		if ctx.Err() != nil {
			return 0, first, ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start), first, nil
}

// drive runs clients closed-loop clients for d and collects every request's latency.
func drive(ctx context.Context, client *http.Client, name string, clients int, d time.Duration,
	mk func(ctx context.Context) (*http.Request, error)) (result, error) {
	r := result{scenario: name, statuses: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failure error
	start := time.Now()
	deadline := start.Add(d)
	for range clients {
		wg.Go(func() {
			var lat []time.Duration
			statuses := map[int]int{}
			errs := 0
			for time.Now().Before(deadline) && ctx.Err() == nil {
				req, err := mk(ctx)
				if err != nil {
					mu.Lock()
					failure = err
					mu.Unlock()
					return
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				status := 0
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
				} else if errors.Is(err, context.Canceled) {
					break
				}
				lat = append(lat, time.Since(t0))
				statuses[status]++
				if status/100 != 2 {
					errs++
				}
			}
			mu.Lock()
			r.lat = append(r.lat, lat...)
			r.errors += errs
			for k, v := range statuses {
				r.statuses[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	r.requests = len(r.lat)
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	return r, failure
}

// startCeiling serves GET /ns/{id} and GET /ns/{id}/agents straight from the pool.
func startCeiling(pool *pgxpool.Pool) (net.Listener, error) {
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, v any, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": v})
	}
	mux.HandleFunc("GET /ns/{id}", func(w http.ResponseWriter, r *http.Request) {
		ns, err := store.GetNamespace(r.Context(), pool, r.PathValue("id"), store.NoLock)
		write(w, ns, err)
	})
	mux.HandleFunc("GET /ns/{id}/agents", func(w http.ResponseWriter, r *http.Request) {
		agents, err := store.ListAgents(r.Context(), pool, r.PathValue("id"), nil, 1000)
		write(w, agents, err)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = http.Serve(l, mux) }()
	return l, nil
}

func fmtMs(d time.Duration) string { return fmt.Sprintf("%.2fms", figures.Ms(d)) }

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
