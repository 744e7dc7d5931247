package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type response struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, h http.Handler, method, target string, header ...string) response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

func get(t *testing.T, url string) response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// samples returns the sample lines of a text exposition whose metric name is name.
func samples(body, name string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			out = append(out, line)
		}
	}
	return out
}

func hasSample(body, sample string) bool {
	for _, line := range strings.Split(body, "\n") {
		if line == sample {
			return true
		}
	}
	return false
}

func fixedBacklog(b store.Backlog) BacklogFunc {
	return func(context.Context) (store.Backlog, error) { return b, nil }
}

func TestHandlerServesOnlyGetMetrics(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(ServiceAPI)
	NewAPIMetrics(reg)
	h := Handler(reg)

	ok := do(t, h, http.MethodGet, "/metrics")
	if ok.status != http.StatusOK || ok.header.Get("Cache-Control") != "no-store" ||
		!strings.HasPrefix(ok.header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics: %d %v", ok.status, ok.header)
	}
	proto := do(t, h, http.MethodGet, "/metrics?x=1", "Accept",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	if proto.status != http.StatusOK || !strings.HasPrefix(proto.header.Get("Content-Type"), "application/vnd.google.protobuf") {
		t.Fatalf("negotiated protobuf: %d %v", proto.status, proto.header)
	}
	for _, tc := range []struct {
		method, target string
		status         int
	}{
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/metrics/", http.StatusNotFound},
		{http.MethodGet, "/healthz", http.StatusNotFound},
		{http.MethodPost, "/other", http.StatusNotFound},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodHead, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/metrics", http.StatusMethodNotAllowed},
	} {
		r := do(t, h, tc.method, tc.target)
		if r.status != tc.status || r.header.Get("Cache-Control") != "no-store" || strings.Contains(r.body, "occ_") {
			t.Errorf("%s %s: %d %v", tc.method, tc.target, r.status, r.header)
		}
		if tc.status == http.StatusMethodNotAllowed && r.header.Get("Allow") != http.MethodGet {
			t.Errorf("%s %s: Allow %q", tc.method, tc.target, r.header.Get("Allow"))
		}
	}
}

func TestWorkerFamilies(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(ServiceWorker)
	m := NewWorkerMetrics(reg, fixedBacklog(store.Backlog{
		Pending: 3, OldestPendingAgeSeconds: 42.5,
		Agents: map[string]int64{"draft": 1, "running": 2, "failed": 4},
	}))
	m.ObserveAttempt("agent_revision", "success", 2*time.Second)
	m.ObserveAttempt("agent_revision", "success", 20*time.Millisecond)
	m.ObserveAttempt("namespace_ensure", "claim_lost", -time.Second)
	m.ObserveAttempt("agent_provisioning", "success", time.Second) // unknown kind: dropped
	m.ObserveAttempt("agent_stop", "exploded", time.Second)        // unknown outcome: dropped
	m.ObserveAgentOperation("deploy", 95*time.Second)
	m.ObserveAgentOperation("rollback", time.Second) // unknown: dropped

	body := do(t, Handler(reg), http.MethodGet, "/metrics").body

	if n := len(samples(body, "occ_reconciliation_attempts_total")); n != len(workKinds)*len(outcomes) {
		t.Errorf("%d attempt series, want every combination (%d)", n, len(workKinds)*len(outcomes))
	}
	for _, want := range []string{
		`occ_reconciliation_attempts_total{outcome="success",service="worker",work_kind="agent_revision"} 2`,
		`occ_reconciliation_attempts_total{outcome="claim_lost",service="worker",work_kind="namespace_ensure"} 1`,
		`occ_reconciliation_attempts_total{outcome="error",service="worker",work_kind="agent_credential_withdrawal"} 0`,
		`occ_reconciliation_attempts_total{outcome="success",service="worker",work_kind="agent_stop"} 0`,
		`occ_reconciliation_attempt_duration_seconds_bucket{service="worker",work_kind="agent_revision",le="0.01"} 0`,
		`occ_reconciliation_attempt_duration_seconds_bucket{service="worker",work_kind="agent_revision",le="0.1"} 1`,
		`occ_reconciliation_attempt_duration_seconds_bucket{service="worker",work_kind="agent_revision",le="5"} 2`,
		`occ_reconciliation_attempt_duration_seconds_bucket{service="worker",work_kind="agent_revision",le="900"} 2`,
		`occ_reconciliation_attempt_duration_seconds_sum{service="worker",work_kind="agent_revision"} 2.02`,
		`occ_reconciliation_attempt_duration_seconds_bucket{service="worker",work_kind="namespace_ensure",le="0.01"} 1`,
		`occ_reconciliation_attempt_duration_seconds_count{service="worker",work_kind="agent_delete"} 0`,
		`occ_agent_operation_duration_seconds_bucket{operation="deploy",service="worker",le="90"} 0`,
		`occ_agent_operation_duration_seconds_bucket{operation="deploy",service="worker",le="120"} 1`,
		`occ_agent_operation_duration_seconds_bucket{operation="deploy",service="worker",le="1800"} 1`,
		`occ_agent_operation_duration_seconds_count{operation="stop",service="worker"} 0`,
		`occ_work_pending{service="worker"} 3`,
		`occ_work_oldest_pending_age_seconds{service="worker"} 42.5`,
		`occ_agents{lifecycle_state="draft",service="worker"} 1`,
		`occ_agents{lifecycle_state="deploying",service="worker"} 0`,
		`occ_agents{lifecycle_state="running",service="worker"} 2`,
		`occ_agents{lifecycle_state="stopping",service="worker"} 0`,
		`occ_agents{lifecycle_state="stopped",service="worker"} 0`,
		`occ_agents{lifecycle_state="failed",service="worker"} 4`,
	} {
		if !hasSample(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(body, "agent_provisioning") || strings.Contains(body, "exploded") || strings.Contains(body, "rollback") {
		t.Error("an unknown label value was recorded")
	}
	if n := len(samples(body, "occ_reconciliation_attempt_duration_seconds_bucket")); n != len(workKinds)*(len(attemptBuckets)+1) {
		t.Errorf("%d attempt duration buckets", n)
	}
	checkEverySample(t, body, "worker")
}

// checkEverySample asserts that every sample is an occ_ family labelled with service.
func checkEverySample(t *testing.T, body, service string) {
	t.Helper()
	lines := 0
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines++
		if !strings.HasPrefix(line, "occ_") || !strings.Contains(line, `service="`+service+`"`) {
			t.Errorf("sample without the occ_ prefix or service label: %s", line)
		}
	}
	for _, family := range []string{"occ_go_goroutines", "occ_go_info", "occ_go_gc_duration_seconds", "occ_go_memstats_heap_alloc_bytes",
		"occ_go_sched_latencies_seconds_bucket", "occ_process_start_time_seconds", "occ_process_resident_memory_bytes",
		"occ_process_cpu_seconds_total"} {
		if len(samples(body, family)) == 0 {
			t.Errorf("runtime family %s missing", family)
		}
	}
	if lines == 0 {
		t.Error("no samples")
	}
}

func TestAPIFamilies(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(ServiceAPI)
	m := NewAPIMetrics(reg)
	m.ObserveRequest("/namespaces/{namespaceId}", "GET", 200, 3*time.Millisecond)
	m.ObserveRequest("/namespaces/{namespaceId}", "GET", 204, 30*time.Millisecond)
	m.ObserveRequest("/namespaces", "POST", 409, time.Second)
	m.ObserveRequest("", "GET", 404, time.Millisecond)
	m.ObserveRequest("not a template", "BREW", 418, time.Millisecond)
	m.ObserveRequest("/namespaces", "get", 503, time.Millisecond)
	m.ObserveRequest("/namespaces", "PATCH", 700, time.Millisecond)
	m.ObserveRequest("/namespaces", "OPTIONS", 101, time.Millisecond)
	m.ObserveRequest("/healthz", "GET", 200, time.Millisecond)  // excluded
	m.ObserveRequest("/readyz", "GET", 503, time.Millisecond)   // excluded
	m.ObserveRequest("/namespaces", "GET", 0, time.Millisecond) // aborted

	body := do(t, Handler(reg), http.MethodGet, "/metrics").body
	for _, want := range []string{
		`occ_http_requests_total{method="GET",route="/namespaces/{namespaceId}",service="api",status_class="2xx"} 2`,
		`occ_http_requests_total{method="POST",route="/namespaces",service="api",status_class="4xx"} 1`,
		`occ_http_requests_total{method="GET",route="unmatched",service="api",status_class="4xx"} 1`,
		`occ_http_requests_total{method="OTHER",route="unmatched",service="api",status_class="4xx"} 1`,
		`occ_http_requests_total{method="OTHER",route="/namespaces",service="api",status_class="5xx"} 1`,
		`occ_http_requests_total{method="PATCH",route="/namespaces",service="api",status_class="other"} 1`,
		`occ_http_requests_total{method="OPTIONS",route="/namespaces",service="api",status_class="1xx"} 1`,
		`occ_http_request_duration_seconds_bucket{method="GET",route="/namespaces/{namespaceId}",service="api",le="0.005"} 1`,
		`occ_http_request_duration_seconds_bucket{method="GET",route="/namespaces/{namespaceId}",service="api",le="0.05"} 2`,
		`occ_http_request_duration_seconds_bucket{method="POST",route="/namespaces",service="api",le="1"} 1`,
		`occ_http_request_duration_seconds_bucket{method="POST",route="/namespaces",service="api",le="10"} 1`,
	} {
		if !hasSample(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if n := len(samples(body, "occ_http_requests_total")); n != 7 {
		t.Errorf("%d request series, want 7:\n%s", n, strings.Join(samples(body, "occ_http_requests_total"), "\n"))
	}
	if strings.Contains(body, "healthz") || strings.Contains(body, "readyz") || strings.Contains(body, "occ_work_") || strings.Contains(body, "occ_agents") {
		t.Error("excluded routes or worker families in the API registry")
	}
	checkEverySample(t, body, "api")
}

func TestStatusClassAndMethod(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]string{99: "other", 100: "1xx", 200: "2xx", 399: "3xx", 451: "4xx", 599: "5xx", 600: "other", -1: "other"} {
		if got := StatusClass(status); got != want {
			t.Errorf("StatusClass(%d) = %s, want %s", status, got, want)
		}
	}
	for method, want := range map[string]string{"GET": "GET", "HEAD": "HEAD", "DELETE": "DELETE", "PROPFIND": "OTHER", "Get": "OTHER", "": "OTHER"} {
		if got := NormalizeMethod(method); got != want {
			t.Errorf("NormalizeMethod(%q) = %s, want %s", method, got, want)
		}
	}
}

func TestNewRegistryRefusesUnknownService(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	NewRegistry("controller")
}

func TestFailedCollectionAnswers503WithoutMetrics(t *testing.T) {
	t.Parallel()
	for name, fetch := range map[string]BacklogFunc{
		"error": func(context.Context) (store.Backlog, error) { return store.Backlog{}, errors.New("connection refused") },
		"panic": func(context.Context) (store.Backlog, error) { panic("boom") },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reg := NewRegistry(ServiceWorker)
			m := NewWorkerMetrics(reg, fetch)
			m.ObserveAttempt("agent_stop", "success", time.Second)
			r := do(t, Handler(reg), http.MethodGet, "/metrics")
			if r.status != http.StatusServiceUnavailable || r.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %v", r.status, r.header)
			}
			if strings.Contains(r.body, "occ_") || strings.Contains(r.body, "refused") || strings.Contains(r.body, "boom") {
				t.Fatalf("partial output or cause: %q", r.body)
			}
		})
	}
}

func TestConcurrentScrapesShareOneCollection(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	fetch := func(ctx context.Context) (store.Backlog, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		return store.Backlog{Pending: 7, Agents: map[string]int64{}}, nil
	}
	reg := NewRegistry(ServiceWorker)
	m := NewWorkerMetrics(reg, fetch)
	const scrapers = 4
	joined := make(chan struct{}, scrapers)
	m.backlog.onJoin = func() { joined <- struct{}{} }
	h := Handler(reg)

	var wg sync.WaitGroup
	bodies := make([]string, scrapers)
	scrape := func(i int) {
		defer wg.Done()
		bodies[i] = do(t, h, http.MethodGet, "/metrics").body
	}
	wg.Add(1)
	go scrape(0)
	<-entered
	for i := 1; i < scrapers; i++ {
		wg.Add(1)
		go scrape(i)
	}
	for i := 1; i < scrapers; i++ {
		<-joined
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d collections for %d concurrent scrapes", n, scrapers)
	}
	for i, body := range bodies {
		if !hasSample(body, `occ_work_pending{service="worker"} 7`) {
			t.Errorf("scrape %d: no shared result", i)
		}
	}
	// The next scrape collects again.
	do(t, h, http.MethodGet, "/metrics")
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d collections after a later scrape", n)
	}
}

func TestListenerServesAndStopsGracefully(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(ServiceAPI)
	NewAPIMetrics(reg).ObserveRequest("/namespaces", "GET", 200, time.Millisecond)
	l, err := Listen("127.0.0.1:0", Handler(reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()

	base := "http://" + l.Addr().String()
	r := get(t, base+"/metrics")
	if r.status != http.StatusOK || r.header.Get("Cache-Control") != "no-store" ||
		!hasSample(r.body, `occ_http_requests_total{method="GET",route="/namespaces",service="api",status_class="2xx"} 1`) {
		t.Fatalf("%d %v", r.status, r.header)
	}
	if r := get(t, base+"/"); r.status != http.StatusNotFound {
		t.Fatalf("GET /: %d", r.status)
	}
	resp, err := http.Post(base+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}

	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := l.ln.Accept(); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

func TestListenFailsOnABusyAddress(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := Listen(busy.Addr().String(), Handler(NewRegistry(ServiceAPI))); err == nil {
		t.Fatal("bound a busy address")
	}
	if err := Serve(context.Background(), busy.Addr().String(), http.NotFoundHandler()); err == nil {
		t.Fatal("Serve bound a busy address")
	}
	if _, err := StartAPI(context.Background(), busy.Addr().String(), nil); err == nil {
		t.Fatal("StartAPI bound a busy address")
	}
	if _, err := StartWorker(context.Background(), busy.Addr().String(), "postgres://occ@127.0.0.1:1/occ", nil); err == nil {
		t.Fatal("StartWorker bound a busy address")
	}
}

func TestListenerLimitsConnections(t *testing.T) {
	t.Parallel()
	// Long socket limits, so the held connections cannot time out while the test runs.
	l, err := listen("127.0.0.1:0", Handler(NewRegistry(ServiceAPI)), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Serve(ctx) }()
	addr := l.Addr().String()

	var held []net.Conn
	for range MaxConnections {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The server accepts in order, so by the time it accepts this one the others hold every slot.
	over, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = over.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := over.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("connection over the limit was not closed: %v", err)
	}
	over.Close()

	// A held connection still works.
	if _, err := held[0].Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = held[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	reply, err := io.ReadAll(held[0])
	if err != nil || !strings.HasPrefix(string(reply), "HTTP/1.1 200") {
		t.Fatalf("held connection: %v %.40q", err, reply)
	}
	for _, c := range held {
		c.Close()
	}
	// Once the server has seen the closes, slots are free again; retry until it has.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	wait.NoError(t, wait.Short, "a slot to come free", func() error {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

func TestWorkerGaugesFromPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	fx := fixture.New(t, app)
	ns := fx.Namespace().ID
	fx.Agent(store.AgentRow{NamespaceID: ns, Name: "triage"})
	// The pending work is 90 s old: created_at is backdated, which no store path does.
	if _, err := app.Exec(ctx, `INSERT INTO occ.controller_work (idempotency_key, namespace_id, actor_id, namespace_target, created_at)
	  VALUES ($1, $2, 'prn_metrics', 'ready', clock_timestamp() - interval '90 seconds')`,
		platform.NamespaceWorkKey(ns, platform.NamespaceTargetReady), ns); err != nil {
		t.Fatal(err)
	}
	w, err := StartWorker(ctx, "127.0.0.1:0", db.AppURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.ObserveAttempt("namespace_ensure", "pending", time.Second)

	// The first scrape counts the Agent, which no fold has counted yet (no worker runs here).
	r := get(t, "http://"+w.Addr()+"/metrics")
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	for _, want := range []string{
		`occ_work_pending{service="worker"} 1`,
		`occ_agents{lifecycle_state="draft",service="worker"} 1`,
		`occ_agents{lifecycle_state="running",service="worker"} 0`,
		`occ_reconciliation_attempts_total{outcome="pending",service="worker",work_kind="namespace_ensure"} 1`,
	} {
		if !hasSample(r.body, want) {
			t.Errorf("missing %s", want)
		}
	}
	age := samples(r.body, "occ_work_oldest_pending_age_seconds")
	if len(age) != 1 || !strings.HasPrefix(age[0], `occ_work_oldest_pending_age_seconds{service="worker"} 9`) {
		t.Errorf("oldest pending age %v", age)
	}
	if st := w.pool.Stat(); st.MaxConns() != 2 {
		t.Errorf("metrics pool max conns %d", st.MaxConns())
	}
	before := w.pool.Stat().TotalConns()

	// A failing statement answers 503 and discards the connection; the next scrape recovers.
	owner := db.Owner(t)
	if _, err := owner.Exec(ctx, `REVOKE SELECT ON occ.controller_work FROM `+pgtest.AppRole); err != nil {
		t.Fatal(err)
	}
	if r := get(t, "http://"+w.Addr()+"/metrics"); r.status != http.StatusServiceUnavailable || strings.Contains(r.body, "occ_") {
		t.Fatalf("scrape without privileges: %d %q", r.status, r.body)
	}
	if n := w.pool.Stat().TotalConns(); n != before-1 {
		t.Errorf("%d connections after a failed collection, want %d (the failed one closed)", n, before-1)
	}
	if _, err := owner.Exec(ctx, `GRANT SELECT ON occ.controller_work TO `+pgtest.AppRole); err != nil {
		t.Fatal(err)
	}
	if r := get(t, "http://"+w.Addr()+"/metrics"); r.status != http.StatusOK {
		t.Fatalf("scrape after recovery: %d", r.status)
	}
}

func TestWorkerScrapeWhileDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	// A port that was just free: connecting is refused at once.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := probe.Addr().String()
	probe.Close()

	w, err := StartWorker(context.Background(), "127.0.0.1:0", "postgres://occ_app:x@"+dead+"/occ?sslmode=disable", nil)
	if err != nil {
		t.Fatalf("startup must not need the database: %v", err)
	}
	defer w.Close()
	w.ObserveAttempt("agent_stop", "success", time.Second)
	r := get(t, "http://"+w.Addr()+"/metrics")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	if strings.Contains(r.body, "occ_") || strings.Contains(r.body, dead) {
		t.Fatalf("partial output or cause: %q", r.body)
	}
}

func TestStartAPIServesWithoutADatabase(t *testing.T) {
	t.Parallel()
	a, err := StartAPI(context.Background(), "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	a.ObserveRequest("/namespaces", "DELETE", 202, time.Millisecond)
	r := get(t, "http://"+a.Addr()+"/metrics")
	if r.status != http.StatusOK ||
		!hasSample(r.body, `occ_http_requests_total{method="DELETE",route="/namespaces",service="api",status_class="2xx"} 1`) {
		t.Fatalf("%d", r.status)
	}
	a.Close()
	if _, err := a.listener.ln.Accept(); err == nil {
		t.Fatal("still accepting after Close")
	}
}
