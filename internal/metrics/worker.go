package metrics

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Label values of the worker families.
var (
	// workKinds are the work_kind values: one per operation of the work vocabulary.
	workKinds = queue.MetricKinds()
	// outcomes are the outcome values.
	outcomes = []string{"success", "pending", "retry", "permanent", "claim_lost", "error"}
	// agentOperations are the operation values; deploy and stop are present from the start, delete
	// appears once observed.
	agentOperationNames = []string{"deploy", "stop", "delete"}
)

// BacklogTimeout bounds one gauge collection: connecting (500 ms) plus the statement (1500 ms).
const BacklogTimeout = PoolConnectTimeout + PoolStatementTimeout

// BacklogFunc reads the worker gauges; PoolBacklog is the production one.
type BacklogFunc func(ctx context.Context) (store.Backlog, error)

// PoolBacklog reads the worker gauges on pool (normally NewPool) on every call: the pending work
// (store.WorkPending) and the Agent lifecycle counts (store.AgentStates, counters kept by the
// worker's folds), both cheap whatever the number of Agents. A connection whose read failed is
// closed rather than returned to the pool.
func PoolBacklog(pool *pgxpool.Pool) BacklogFunc {
	return func(ctx context.Context) (store.Backlog, error) {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return store.Backlog{}, err
		}
		b, err := store.WorkBacklog(ctx, conn)
		if err != nil {
			raw := conn.Hijack()
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = raw.Close(closeCtx)
			return store.Backlog{}, err
		}
		conn.Release()
		return b, nil
	}
}

// WorkerMetrics holds the worker families. Its methods are safe for concurrent use.
type WorkerMetrics struct {
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	agentOperations *prometheus.HistogramVec
	backlog         *backlogCollector
}

// NewWorkerMetrics registers the worker families on reg (a NewRegistry(ServiceWorker) registry),
// labelled service="worker". backlog feeds the gauges on every scrape; nil leaves them out.
func NewWorkerMetrics(reg prometheus.Registerer, backlog BacklogFunc) *WorkerMetrics {
	r := withService(reg, ServiceWorker)
	m := &WorkerMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "occ_reconciliation_attempts_total",
			Help: "Reconciliation attempts by work kind and outcome.",
		}, []string{"work_kind", "outcome"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "occ_reconciliation_attempt_duration_seconds",
			Help:    "Duration of reconciliation attempts by work kind.",
			Buckets: attemptBuckets,
		}, []string{"work_kind"}),
		agentOperations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "occ_agent_operation_duration_seconds",
			Help:    "Time from admission to completion of Agent deployments and stops.",
			Buckets: agentOpBuckets,
		}, []string{"operation"}),
	}
	for _, kind := range workKinds {
		for _, outcome := range outcomes {
			m.attempts.WithLabelValues(kind, outcome)
		}
		m.attemptDuration.WithLabelValues(kind)
	}
	m.agentOperations.WithLabelValues("deploy")
	m.agentOperations.WithLabelValues("stop")
	r.MustRegister(m.attempts, m.attemptDuration, m.agentOperations)
	if backlog != nil {
		m.backlog = newBacklogCollector(backlog, BacklogTimeout)
		r.MustRegister(m.backlog)
	}
	return m
}

// ObserveAttempt records one reconciliation attempt. Unknown work kinds or outcomes are ignored.
func (m *WorkerMetrics) ObserveAttempt(workKind, outcome string, d time.Duration) {
	if !slices.Contains(workKinds, workKind) || !slices.Contains(outcomes, outcome) {
		return
	}
	m.attempts.WithLabelValues(workKind, outcome).Inc()
	m.attemptDuration.WithLabelValues(workKind).Observe(seconds(d))
}

// ObserveAgentOperation records the time from an operation's admission (the work's created_at) to
// its successful finalization. Call it once per real first activation (deploy) or real stop, not
// for maintenance, superseded or failed work. Unknown operations are ignored.
func (m *WorkerMetrics) ObserveAgentOperation(op string, d time.Duration) {
	if !slices.Contains(agentOperationNames, op) {
		return
	}
	m.agentOperations.WithLabelValues(op).Observe(seconds(d))
}

func seconds(d time.Duration) float64 {
	return max(d, 0).Seconds()
}

// errBacklogUnavailable is what a failed collection reports to the registry; the cause is not
// exposed (the scrape answers 503 without a body that could carry it).
var errBacklogUnavailable = errors.New("metrics: the work backlog could not be read")

// backlogCollector turns store.Backlog into the three gauge families. Concurrent scrapes share
// one collection: a Collect that arrives while another one is reading waits for that result.
type backlogCollector struct {
	fetch   BacklogFunc
	timeout time.Duration
	pending *prometheus.Desc
	oldest  *prometheus.Desc
	agents  *prometheus.Desc

	mu       sync.Mutex
	inflight *backlogCall
	// onJoin, when set (tests), runs when a Collect joins a collection in flight.
	onJoin func()
}

type backlogCall struct {
	done    chan struct{}
	backlog store.Backlog
	err     error
}

func newBacklogCollector(fetch BacklogFunc, timeout time.Duration) *backlogCollector {
	return &backlogCollector{
		fetch:   fetch,
		timeout: timeout,
		pending: prometheus.NewDesc("occ_work_pending",
			"Controller work that is queued or claimed, including delayed retries.", nil, nil),
		oldest: prometheus.NewDesc("occ_work_oldest_pending_age_seconds",
			"Age of the oldest pending controller work since its admission; 0 when none is pending.", nil, nil),
		agents: prometheus.NewDesc("occ_agents",
			"Agents by lifecycle state.", []string{"lifecycle_state"}, nil),
	}
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.oldest
	ch <- c.agents
}

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	b, err := c.collect()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.pending, errBacklogUnavailable)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(b.Pending))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, max(b.OldestPendingAgeSeconds, 0))
	for _, state := range store.AgentLifecycleStates() {
		ch <- prometheus.MustNewConstMetric(c.agents, prometheus.GaugeValue, float64(b.Agents[state]), state)
	}
}

// collect runs one collection, or waits for the one in flight.
func (c *backlogCollector) collect() (b store.Backlog, err error) {
	c.mu.Lock()
	if call := c.inflight; call != nil {
		join := c.onJoin
		c.mu.Unlock()
		if join != nil {
			join()
		}
		<-call.done
		return call.backlog, call.err
	}
	call := &backlogCall{done: make(chan struct{})}
	c.inflight = call
	c.mu.Unlock()

	defer func() {
		if recover() != nil {
			b, err = store.Backlog{}, errBacklogUnavailable
		}
		call.backlog, call.err = b, err
		c.mu.Lock()
		c.inflight = nil
		c.mu.Unlock()
		close(call.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	return c.fetch(ctx)
}
