package main_test

// The chaos test: the real binaries under SIGKILL, SIGSTOP, terminated backends, a PostgreSQL
// fast-shutdown restart, PostgreSQL crashes (SIGKILL of every server process, then WAL recovery)
// and SIGKILLs of one of two API replicas mid-request, checked by the history checker of
// internal/testkit/chaos.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/testkit/chaos"
	"github.com/openclaw/occ/internal/testkit/pgtest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

const (
	chaosLease       = 2 * time.Second
	chaosPoll        = 50 * time.Millisecond
	chaosMaxAttempts = 5
	// chaosSlack is added to lease + poll for the recovery bound: scheduling on 2 shared cores
	// under -race, and the database round trips of the recovery statement.
	chaosSlack = 3 * time.Second
	// chaosOperations is the minimum number of mutating API operations the clients issue.
	chaosOperations = 5000
	// chaosRounds is the number of fault rounds; the first restarts PostgreSQL with a fast
	// shutdown, the others crash it.
	chaosRounds = 3
	// chaosConcurrency is each worker's OCC_WORKER_CONCURRENCY.
	chaosConcurrency = 16
	// chaosQuiescence bounds the wait for the backlog to drain after the faults.
	chaosQuiescence = 150 * time.Second
)

// errUnknownOutcome is a request that was sent and got no answer (its replica died, or the
// connection broke): it may or may not have taken effect.
var errUnknownOutcome = errors.New("unknown outcome")

// apiReplica is one `occ api` process; the chaos test runs two and SIGKILLs one at a time.
type apiReplica struct {
	port     int
	mu       sync.Mutex
	proc     *process
	inflight atomic.Int64 // requests sent to it and not yet answered
}

func (a *apiReplica) base() string { return fmt.Sprintf("http://127.0.0.1:%d", a.port) }

// chaosClient is an API client over the replicas that reports errors instead of failing the test
// (it runs in goroutines, and the API answers 5xx while PostgreSQL restarts).
type chaosClient struct {
	replicas []*apiReplica
	key      string
	http     *http.Client
}

// call sends one request to replica prefer, or to the next one when prefer refuses the
// connection (nothing was sent: it cannot have taken effect). A request that was sent and got no
// answer is errUnknownOutcome.
func (c chaosClient) call(prefer int, method, path string, body any) (int, map[string]any, error) {
	var err error
	for i := range c.replicas {
		var st int
		var out map[string]any
		st, out, err = c.callOne(c.replicas[(prefer+i)%len(c.replicas)], method, path, body)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return st, out, err
		}
	}
	return 0, nil, err
}

func (c chaosClient) callOne(r *apiReplica, method, path string, body any) (int, map[string]any, error) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req, err := http.NewRequest(method, r.base()+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("x-api-key", c.key)
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	resp, err := c.http.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return 0, nil, err
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", errUnknownOutcome, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil && !errors.Is(err, io.EOF) {
		// The status line arrived, the body did not: the replica died mid-answer.
		return 0, nil, fmt.Errorf("%w: %v", errUnknownOutcome, err)
	}
	return resp.StatusCode, out, nil
}

// chaosWorker is one worker slot, restarted after each SIGKILL with a new event log.
type chaosWorker struct {
	slot int
	proc *process
	logs []string
}

type chaosRun struct {
	t       *testing.T
	srv     *pgtest.Server
	db      *pgtest.Database
	owner   *pgxpool.Pool
	cfg     string
	logDir  string
	mu      sync.Mutex
	workers []*chaosWorker
	deaths  []chaos.Death
	faults  map[string]int
	apis    []*apiReplica
	// served: per fault kind, the time from the fault until the API answered a request through
	// the database again.
	served map[string][]time.Duration

	probeNS  string
	admMu    sync.Mutex
	admitted map[string]string // key → agent
}

func (r *chaosRun) admit(key, agent string) {
	r.admMu.Lock()
	defer r.admMu.Unlock()
	if r.admitted[key] == "" {
		r.admitted[key] = agent
	}
}

func (r *chaosRun) fault(kind string) {
	r.mu.Lock()
	r.faults[kind]++
	r.mu.Unlock()
}

func (r *chaosRun) startWorker(w *chaosWorker) {
	log := filepath.Join(r.logDir, fmt.Sprintf("worker-%d-%d.jsonl", w.slot, len(w.logs)))
	w.logs = append(w.logs, log)
	w.proc = start(r.t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": r.db.AppURL, "OCC_CONFIG_PATH": r.cfg,
		"OCC_WORKER_POLL_INTERVAL_MS": fmt.Sprint(chaosPoll.Milliseconds()), "OCC_WORKER_LEASE_DURATION_MS": fmt.Sprint(chaosLease.Milliseconds()),
		"OCC_WORKER_MAX_ATTEMPTS": fmt.Sprint(chaosMaxAttempts), "OCC_WORKER_DATABASE_TIMEOUT_MS": "5000",
		// 16 passes at a time per worker: with 4 (the default) the simulated calls' delays cap the
		// two workers below the clients' rate, and the backlog outlasts the quiescence wait.
		"OCC_WORKER_CONCURRENCY": fmt.Sprint(chaosConcurrency),
		"OCC_WORKER_EVENT_LOG":   log}, "worker")
}

// kill SIGKILLs a worker and starts a new one in its slot.
func (r *chaosRun) kill(w *chaosWorker) {
	pid := w.proc.cmd.Process.Pid
	r.mu.Lock()
	r.deaths = append(r.deaths, chaos.Death{PID: pid, At: time.Now(), Kind: "SIGKILL"})
	r.mu.Unlock()
	_ = w.proc.cmd.Process.Kill()
	<-w.proc.done
	r.fault("SIGKILL")
	time.Sleep(500 * time.Millisecond)
	r.startWorker(w)
}

// pause SIGSTOPs a worker for d (longer than its lease), then SIGCONTs it.
func (r *chaosRun) pause(w *chaosWorker, d time.Duration) {
	p := w.proc.cmd.Process
	r.mu.Lock()
	r.deaths = append(r.deaths, chaos.Death{PID: p.Pid, At: time.Now(), Kind: "SIGSTOP"})
	r.mu.Unlock()
	_ = p.Signal(syscall.SIGSTOP)
	time.Sleep(d)
	_ = p.Signal(syscall.SIGCONT)
	r.fault("SIGSTOP")
}

func (r *chaosRun) startAPI(a *apiReplica) {
	p := start(r.t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": r.db.AppURL, "OCC_CONFIG_PATH": r.cfg,
		"OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(a.port)}, "api")
	wait.Eventually(r.t, wait.Medium, "api listening", func() bool { return len(p.events(false, "listening")) == 1 })
	a.mu.Lock()
	a.proc = p
	a.mu.Unlock()
}

// killAPI SIGKILLs replica a while it has requests in flight (or after a bounded wait for one),
// then starts it again on its port. It returns how many requests were in flight.
func (r *chaosRun) killAPI(ctx context.Context, c chaosClient, a *apiReplica) int64 {
	for range 200 {
		if a.inflight.Load() > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.mu.Lock()
	p := a.proc
	a.mu.Unlock()
	began := time.Now()
	inflight := a.inflight.Load()
	_ = p.cmd.Process.Kill()
	<-p.done
	r.fault("api-kill")
	time.Sleep(300 * time.Millisecond)
	r.startAPI(a)
	r.servedAgain(ctx, "api-kill", began, c, a)
	return inflight
}

// servedAgain records when replica a first answers a read through the database after a fault
// that began at began (bounded: a fault the API never recovers from fails the test).
func (r *chaosRun) servedAgain(ctx context.Context, kind string, began time.Time, c chaosClient, a *apiReplica) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if st, _, err := c.callOne(a, "GET", "/namespaces/"+r.probeNS, nil); err == nil && st == 200 {
			r.mu.Lock()
			r.served[kind] = append(r.served[kind], time.Since(began))
			r.mu.Unlock()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	r.t.Errorf("%s: the API did not answer again within 60 s", kind)
}

// terminateBackends runs pg_terminate_backend on every worker connection (application_name
// occ-worker) of the database.
func (r *chaosRun) terminateBackends(ctx context.Context) int {
	var n int
	err := r.owner.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
	  WHERE application_name = 'occ-worker' AND datname = $1`, r.db.Name).Scan(&n)
	if err != nil {
		r.t.Logf("pg_terminate_backend: %v", err)
	}
	r.fault("pg_terminate_backend")
	return n
}

func TestChaosWorkersUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: several minutes of processes and faults")
	}
	began := time.Now()
	ctx := context.Background()
	// A server of its own, durable, so that it can be restarted under the clients.
	srv, err := pgtest.StartRestartableServer(ctx, pgtest.ServerOptions{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	db, err := srv.NewDatabase(ctx, "occ_chaos")
	if err != nil {
		t.Fatal(err)
	}
	ownerPool, err := pgxpool.New(ctx, db.AdminURL) // superuser: pg_terminate_backend of occ_app sessions
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ownerPool.Close)
	keyFile := filepath.Join(t.TempDir(), "key.json")
	boot := run(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": db.AppURL,
		"OCC_BOOTSTRAP_SERVICE_KEY_FILE": keyFile}, "bootstrap")
	if boot.exitCode() != 0 {
		t.Fatalf("bootstrap: %s %s", boot.stdout.String(), boot.stderr.String())
	}
	defaultNS, _ := boot.events(false, "installation.bootstrapped")[0]["namespaceId"].(string)

	logDir := os.Getenv("OCC_CHAOS_LOG_DIR") // keep the event logs for a post-mortem
	if logDir == "" {
		// Kept when the test fails, so that a violation can be read again from its history.
		dir, err := os.MkdirTemp("", "occ-chaos-")
		if err != nil {
			t.Fatal(err)
		}
		logDir = dir
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("chaos event logs kept in %s", dir)
				return
			}
			_ = os.RemoveAll(dir)
		})
	}
	r := &chaosRun{t: t, srv: srv, db: db, owner: ownerPool, logDir: logDir, faults: map[string]int{}, probeNS: defaultNS,
		served:   map[string][]time.Duration{},
		admitted: map[string]string{"namespace:" + defaultNS + ":reconcile:ready": ""},
		cfg:      simulatedConfig(t, "{callDelayMs: 40, revisionReadyAfterMs: 100}")}
	for slot := range 2 {
		w := &chaosWorker{slot: slot}
		r.startWorker(w)
		r.workers = append(r.workers, w)
	}
	// Two API replicas on one database; the clients spread their requests over both.
	for range 2 {
		a := &apiReplica{port: freePort(t)}
		r.startAPI(a)
		r.apis = append(r.apis, a)
	}
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var keyDoc struct {
		Data struct{ Key string } `json:"data"`
	}
	_ = json.Unmarshal(raw, &keyDoc)
	c := chaosClient{replicas: r.apis, key: keyDoc.Data.Key, http: &http.Client{Timeout: 15 * time.Second}}

	// Setup: two more Namespaces, a Configuration in each.
	namespaces := []string{defaultNS}
	for i := range 2 {
		st, body, err := c.call(0, "POST", "/namespaces", map[string]any{"name": fmt.Sprintf("chaos-%d", i)})
		if err != nil || st != 201 {
			t.Fatalf("namespace: %d %v %v", st, body, err)
		}
		id := data(body)["id"].(string)
		r.admit("namespace:"+id+":reconcile:ready", "")
		namespaces = append(namespaces, id)
	}
	status := func(ns string) string {
		var s string
		_ = ownerPool.QueryRow(ctx, `SELECT status FROM occ.namespaces WHERE id = $1`, ns).Scan(&s)
		return s
	}
	wait.Eventually(t, wait.Long, "namespaces ready", func() bool {
		for _, ns := range namespaces {
			if status(ns) != "ready" {
				return false
			}
		}
		return true
	})
	configs := map[string]string{}
	for _, ns := range namespaces {
		st, body, err := c.call(0, "POST", "/namespaces/"+ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})
		if err != nil || st != 201 {
			t.Fatalf("configuration: %d %v %v", st, body, err)
		}
		configs[ns] = data(body)["id"].(string)
	}

	// Admission snapshots: every work row that ever existed, even if its Agent's deletion removed
	// it.
	stopSnap := make(chan struct{})
	snapDone := make(chan struct{})
	go func() {
		defer close(snapDone)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			rows, err := ownerPool.Query(ctx, `SELECT idempotency_key, COALESCE(agent_id, '') FROM occ.controller_work`)
			if err == nil {
				for rows.Next() {
					var k, a string
					if rows.Scan(&k, &a) == nil {
						r.admit(k, a)
					}
				}
				rows.Close()
			}
			select {
			case <-stopSnap:
				return
			case <-tick.C:
			}
		}
	}()

	// Clients: a steady stream of Agent operations on every Namespace, spread over both replicas.
	// A request without an answer is an unknown outcome: it admits nothing (the checker is not told
	// to expect its work), and if it did take effect, the work row it created is found by the
	// admission snapshots, the workers' claims or the final state, like any other row; so it is
	// neither counted lost nor expected twice.
	var issued, accepted, unknown, reads atomic.Int64
	statuses := sync.Map{}
	chaosDone := make(chan struct{})
	var clients sync.WaitGroup
	deadline := time.Now().Add(420 * time.Second)
	// A steady stream: about 50 operations a second in all, so the workers keep up and the
	// backlog at the end stays small.
	pace := time.NewTicker(20 * time.Millisecond)
	defer pace.Stop()
	// Eight goroutines, so that the pace holds when a loaded machine slows each answer down.
	for g := range 8 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			type agentRef struct{ ns, id string }
			var agents []agentRef
			// sent reports whether a request was answered; an unknown outcome is counted as issued.
			sent := func(op string, err error) bool {
				if errors.Is(err, errUnknownOutcome) {
					issued.Add(1)
					unknown.Add(1)
					v, _ := statuses.LoadOrStore(op+" unknown", new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
				if err != nil {
					time.Sleep(100 * time.Millisecond) // a replica is away: do not spin
				}
				return err == nil
			}
			note := func(op string, st int) {
				issued.Add(1)
				if st >= 200 && st < 300 {
					accepted.Add(1)
				}
				if st >= 500 {
					time.Sleep(250 * time.Millisecond) // the database is away: do not spin
				}
				v, _ := statuses.LoadOrStore(fmt.Sprintf("%s %d", op, st), new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
			for n := 0; ; n++ {
				select {
				case <-chaosDone:
					if issued.Load() >= chaosOperations {
						return
					}
				default:
				}
				if time.Now().After(deadline) {
					return
				}
				<-pace.C
				ns := namespaces[(g+n)%len(namespaces)]
				replica := (g + n) % len(r.apis)
				switch p := rng.IntN(100); {
				case len(agents) < 4 || p < 12:
					st, body, err := c.call(replica, "POST", "/namespaces/"+ns+"/agents", map[string]any{
						"name": fmt.Sprintf("a-%d-%d", g, n), "configurationId": configs[ns], "harnessAuth": map[string]any{"method": "runtime"}})
					if !sent("create", err) {
						continue
					}
					note("create", st)
					if st == 201 {
						agents = append(agents, agentRef{ns, data(body)["id"].(string)})
					}
				case p < 60: // deploy (a redeploy when the Agent already runs)
					a := agents[rng.IntN(len(agents))]
					st, body, err := c.call(replica, "POST", "/namespaces/"+a.ns+"/agents/"+a.id+"/deploy", nil)
					if !sent("deploy", err) {
						continue
					}
					note("deploy", st)
					if st == 202 {
						r.admit("agent_revision:"+data(body)["id"].(string)+":reconcile", a.id)
					}
				case p < 82:
					a := agents[rng.IntN(len(agents))]
					st, _, err := c.call(replica, "POST", "/namespaces/"+a.ns+"/agents/"+a.id+"/stop", nil)
					if !sent("stop", err) {
						continue
					}
					note("stop", st)
				case p < 92:
					i := rng.IntN(len(agents))
					a := agents[i]
					st, _, err := c.call(replica, "DELETE", "/namespaces/"+a.ns+"/agents/"+a.id, nil)
					if !sent("delete", err) {
						continue
					}
					note("delete", st)
					if st == 202 {
						r.admit("agent:"+a.id+":reconcile:deleted", a.id)
						agents = append(agents[:i], agents[i+1:]...)
					}
				default:
					a := agents[rng.IntN(len(agents))]
					if _, _, err := c.call(replica, "GET", "/namespaces/"+a.ns+"/agents/"+a.id, nil); err == nil {
						reads.Add(1)
					}
				}
			}
		}()
	}

	// Chaos: one fault at a time, each given lease + a margin to be recovered from.
	gap := func() { time.Sleep(chaosLease + 1500*time.Millisecond) }
	time.Sleep(3 * time.Second)
	for round := range chaosRounds {
		a, b := r.workers[round%2], r.workers[(round+1)%2]
		r.kill(a)
		gap()
		// Stopped well beyond the lease: its claims are recovered and usually finished by the
		// other worker before it wakes.
		r.pause(b, 2*chaosLease+time.Second)
		gap()
		// Stopped just beyond the lease: it wakes while the other worker holds some of its
		// recovered claims, so its renewals, effects and publishes must be refused (the fence).
		r.pause(a, chaosLease+1200*time.Millisecond)
		gap()
		for range 3 {
			t.Logf("pg_terminate_backend: %d worker backends", r.terminateBackends(ctx))
			time.Sleep(700 * time.Millisecond)
		}
		gap()
		t.Logf("api-kill: replica %d SIGKILLed with %d requests in flight", round%2, r.killAPI(ctx, c, r.apis[round%2]))
		gap()
		began := time.Now()
		kind := "postgres-crash"
		if round == 0 {
			srv.Stop()
			kind = "postgres-restart"
		} else if err := srv.Crash(); err != nil {
			t.Fatalf("crash PostgreSQL: %v", err)
		}
		time.Sleep(1500 * time.Millisecond)
		if err := srv.Start(ctx); err != nil {
			t.Fatalf("restart PostgreSQL after %s: %v", kind, err)
		}
		r.fault(kind)
		r.servedAgain(ctx, kind, began, c, r.apis[(round+1)%2])
		gap()
		gap()
	}
	close(chaosDone)
	clients.Wait()
	t.Logf("clients: %d mutating operations issued (%d accepted, %d unknown outcome), %d reads, after %v", issued.Load(), accepted.Load(),
		unknown.Load(), reads.Load(), time.Since(began).Round(time.Second))
	statuses.Range(func(k, v any) bool { t.Logf("  %s: %d", k, v.(*atomic.Int64).Load()); return true })
	if issued.Load() < chaosOperations {
		t.Errorf("only %d operations issued, want ≥ %d", issued.Load(), chaosOperations)
	}
	for _, op := range refusedMostly(&statuses) {
		t.Errorf("%s: most answers were 5xx, so the run exercised little of it (the faults alone refuse a few percent)", op)
	}

	// Quiescence: nothing claimed and nothing claimable, or a bounded wait.
	quiet := 0
	qDeadline := time.Now().Add(chaosQuiescence)
	for quiet < 3 && time.Now().Before(qDeadline) {
		var busy int
		err := ownerPool.QueryRow(ctx, `SELECT count(*) FROM occ.controller_work WHERE state = 'claimed'
		  OR (state = 'queued' AND available_at <= clock_timestamp() AND attempt_count < $1)`, chaosMaxAttempts).Scan(&busy)
		if err == nil && busy == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(250 * time.Millisecond)
	}
	if quiet < 3 {
		t.Errorf("no quiescence within %v", chaosQuiescence)
	}
	end := time.Now()
	close(stopSnap)
	<-snapDone
	for _, w := range r.workers {
		_ = w.proc.cmd.Process.Signal(syscall.SIGTERM)
		<-w.proc.done
	}

	var logs []string
	for _, w := range r.workers {
		logs = append(logs, w.logs...)
	}
	events, err := chaos.ReadEventLogs(logs...)
	if err != nil {
		t.Fatal(err)
	}
	state, err := chaos.LoadState(ctx, ownerPool)
	if err != nil {
		t.Fatal(err)
	}
	h := chaos.History{Events: events, Deaths: r.deaths}
	for k, a := range r.admitted {
		h.Admitted = append(h.Admitted, chaos.Admission{Key: k, AgentID: a})
	}
	report := chaos.Check(h, state, chaos.Options{MaxAttempts: chaosMaxAttempts, Lease: chaosLease, Poll: chaosPoll, Slack: chaosSlack, End: end})
	p50, p90, maxD := report.RecoveryDistribution()
	t.Logf("faults: %v", r.faults)
	t.Logf("history: %v", report.Counts)
	t.Logf("recovery after a worker death (%d orphaned claims): p50 %v, p90 %v, max %v (bound lease+poll+slack = %v)",
		len(report.Recoveries), p50.Round(time.Millisecond), p90.Round(time.Millisecond), maxD.Round(time.Millisecond),
		chaosLease+chaosPoll+chaosSlack)
	for _, kind := range slices.Sorted(maps.Keys(r.served)) {
		d := slices.Sorted(slices.Values(r.served[kind]))
		t.Logf("API serving again after %s: %v", kind, roundAll(d))
	}
	t.Logf("total %v", time.Since(began).Round(time.Second))
	// One line to copy into docs/performance.md.
	t.Logf("chaos figures: operations %d (accepted %d, unknown outcome %d); faults %s; recovery of orphaned claims (%d) p50 %v p90 %v max %v; violations %d",
		issued.Load(), accepted.Load(), unknown.Load(), faultList(r.faults), len(report.Recoveries),
		p50.Round(time.Millisecond), p90.Round(time.Millisecond), maxD.Round(time.Millisecond), len(report.Violations))
	if err := report.Err(); err != nil {
		t.Fatal(err)
	}
}

// refusedMostly names each operation that more than half of its answers refused with a 5xx: the
// faults make a few percent of answers 5xx, so a run where most are is a run that tested little
// (one such run answered every deploy 503 and passed).
func refusedMostly(statuses *sync.Map) []string {
	answered, refused := map[string]int64{}, map[string]int64{}
	statuses.Range(func(k, v any) bool {
		var op string
		var st int
		if _, err := fmt.Sscanf(k.(string), "%s %d", &op, &st); err != nil {
			return true // "op unknown": no answer
		}
		answered[op] += v.(*atomic.Int64).Load()
		if st >= 500 {
			refused[op] += v.(*atomic.Int64).Load()
		}
		return true
	})
	var out []string
	for _, op := range slices.Sorted(maps.Keys(answered)) {
		if refused[op]*2 > answered[op] {
			out = append(out, fmt.Sprintf("%s (%d of %d refused)", op, refused[op], answered[op]))
		}
	}
	return out
}

func roundAll(d []time.Duration) []time.Duration {
	out := make([]time.Duration, len(d))
	for i, x := range d {
		out[i] = x.Round(time.Millisecond)
	}
	return out
}

// faultList is "kind n, …" in kind order.
func faultList(faults map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(faults)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, faults[k]))
	}
	return strings.Join(parts, ", ")
}
