// Package worker is the controller worker: it claims durable work under a lease, re-authorizes
// the original actor, calls its Compute Driver under the claim, and publishes results only while
// it still owns the claim. Passes run in parallel, at most one per lane
// (the queue guarantees it) and at most Concurrency at once.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Recorder receives per-pass measurements (internal/metrics implements it).
type Recorder interface {
	ObserveAttempt(workKind, outcome string, d time.Duration)
	// ObserveAgentOperation records occ_agent_operation_duration_seconds{operation} (deploy, stop,
	// delete) from the work's admission to its successful finalization.
	ObserveAgentOperation(op string, d time.Duration)
}

// Config is what a Worker needs; the cli builds it from settings and the startup YAML.
type Config struct {
	Pool    *pgxpool.Pool
	Queue   *queue.Queue
	Compute driver.Compute
	// Configurations is the selected Configuration Driver: guided provisioning writes and reads
	// Configuration documents through it. Without one, provisioning steps that need it retry.
	Configurations driver.Configuration
	IAMDriverID    string
	// SecretDriverID is the worker's selected Secret Driver; a revision admitted with another one
	// consumes Secrets this worker cannot vouch for (SECRET_DRIVER_MISMATCH). Empty skips the check.
	SecretDriverID     string
	InstallationID     string
	Concurrency        int
	PollInterval       time.Duration
	ConvergenceTimeout time.Duration
	// DatabaseTimeout bounds each of the loop's own queries, so a silent connection is abandoned.
	DatabaseTimeout time.Duration
	Logger          *slog.Logger
	Metrics         Recorder // optional
	ReadinessPath   string   // optional marker files
	LivenessPath    string
	// Notifications wakes the loop when work is enqueued (LISTEN/NOTIFY); optional, the poll
	// interval is the fallback.
	Notifications <-chan struct{}
	// EventLogPath (OCC_WORKER_EVENT_LOG) appends the claim/renew/effect/publish event log
	// (eventlog.go); empty: off. A verification aid; settings refuse it in production.
	EventLogPath string
}

// Worker runs the loop. Create it with New, run it with Run.
type Worker struct {
	cfg       Config
	log       *slog.Logger
	iam       *iam.Native
	audit     *audit.Appender
	pool      *pgxpool.Pool
	q         *queue.Queue
	markerGap time.Duration

	mu       sync.Mutex
	active   map[string]*activeClaim
	stopping bool
	passes   sync.WaitGroup
	// background counts the other goroutines the worker starts (the renewer's health checks,
	// late-renewal reports); Run joins them before it returns.
	background sync.WaitGroup
	slotFree   chan struct{}

	lastAudit *boundedMap[string] // pending lifecycle audits already written, by work key
	timings   *timingStore        // deploy timing of recent deploy work
	stopped   *stopMemory         // revisions this process stopped (exclusive replacement)
	yields    *yieldLog           // stop yields per work item and their log rate limit
	// lastRecovery is when the loop last ran stale recovery: a busy loop runs it once per poll
	// interval, not once per claim, so recovery is never later than it is for an idle worker.
	lastRecovery time.Time
	healthMu     sync.Mutex
	lastHealth   time.Time
	lastLive     time.Time
	foldMu       sync.Mutex
	lastFold     time.Time // start of the last Agent lifecycle fold
	folding      bool
	hooks        hooks // verification hooks: the event log, or noHooks
}

// New validates cfg and returns a Worker.
func New(cfg Config) (*Worker, error) {
	switch {
	case cfg.Pool == nil || cfg.Queue == nil || cfg.Compute == nil || cfg.Logger == nil:
		return nil, errors.New("worker: pool, queue, compute and logger are required")
	case cfg.InstallationID == "" || cfg.IAMDriverID == "":
		return nil, errors.New("worker: installation and IAM driver ids are required")
	case cfg.Concurrency < 1 || cfg.PollInterval <= 0 || cfg.ConvergenceTimeout <= 0:
		return nil, errors.New("worker: concurrency, poll interval and convergence timeout must be positive")
	}
	if cfg.DatabaseTimeout <= 0 {
		cfg.DatabaseTimeout = time.Minute
	}
	events, err := openEventLog(cfg.EventLogPath, cfg.Queue)
	if err != nil {
		return nil, err
	}
	var h hooks = noHooks{}
	if events != nil {
		h = events
	}
	return &Worker{
		hooks:     h,
		cfg:       cfg,
		log:       cfg.Logger,
		iam:       iam.NewNative(cfg.IAMDriverID, iam.StoreSource{DB: cfg.Pool}),
		audit:     audit.NewAppender(cfg.InstallationID),
		pool:      cfg.Pool,
		q:         cfg.Queue,
		markerGap: max(time.Second, 20*cfg.PollInterval),
		active:    map[string]*activeClaim{},
		slotFree:  make(chan struct{}, 1),
		lastAudit: newBoundedMap[string](4096),
		timings:   newTimingStore(),
		stopped:   newStopMemory(),
		yields:    newYieldLog(),
	}, nil
}

// Run processes work until ctx is cancelled, then interrupts the passes in flight (their claims
// are left to lease recovery), waits for them and returns.
func (w *Worker) Run(ctx context.Context) error {
	w.touchLiveness(true)
	w.log.Info("worker.started", "computeDriverId", w.cfg.Compute.ID())

	// Passes and renewals run on a context that outlives ctx: shutdown cancels each claim
	// explicitly, with its own cause, so the pass can tell an interruption from a lost claim.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	renewerDone := make(chan struct{})
	go func() { defer close(renewerDone); w.renewLoop(runCtx) }()

	for ctx.Err() == nil {
		w.touchLiveness(false)
		claimed := w.round(ctx, runCtx)
		w.health(runCtx)
		w.foldAgentLifecycle(runCtx)
		if claimed == 0 {
			w.idle(ctx)
		}
	}

	w.mu.Lock()
	w.stopping = true
	for _, a := range w.active {
		a.stop()
	}
	w.mu.Unlock()
	w.passes.Wait()
	cancelRun()
	<-renewerDone
	w.background.Wait()
	w.removeMarker(w.cfg.ReadinessPath)
	w.hooks.close()
	w.log.Info("worker.stopped")
	return nil
}

// round recovers stale claims when recovery is due and claims what free capacity allows; it
// returns how many passes it started.
func (w *Worker) round(parent, runCtx context.Context) int {
	ctx, cancel := context.WithTimeout(parent, w.cfg.DatabaseTimeout)
	defer cancel()
	if time.Since(w.lastRecovery) >= w.cfg.PollInterval {
		if _, err := w.q.RecoverStale(ctx); err != nil {
			if parent.Err() == nil {
				w.log.Error("worker.error", "code", "WORKER_UNAVAILABLE", "errorClass", driver.ErrorClass(err))
			}
			return 0
		}
		w.lastRecovery = time.Now()
	}
	free := w.cfg.Concurrency - w.activeCount()
	if free <= 0 {
		return 0
	}
	sentAt := time.Now()
	claims, err := w.q.Claim(ctx, free)
	if err != nil {
		if parent.Err() == nil {
			w.log.Error("worker.error", "code", "WORKER_UNAVAILABLE", "errorClass", driver.ErrorClass(err))
		}
		return 0
	}
	for _, c := range claims {
		a := newActiveClaim(runCtx, w.q, c, sentAt, w.logLateRenewal, w.spawn)
		a.hooks = w.hooks
		w.hooks.claimed(a, sentAt)
		w.mu.Lock()
		w.active[c.Work.Key] = a
		w.mu.Unlock()
		w.passes.Add(1)
		go w.runPass(a)
	}
	return len(claims)
}

// spawn runs fn in a goroutine that Run joins before it returns.
func (w *Worker) spawn(fn func()) {
	w.background.Add(1)
	go func() {
		defer w.background.Done()
		fn()
	}()
}

func (w *Worker) activeCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.active)
}

// idle waits for a notification, a freed slot, the poll interval or shutdown.
func (w *Worker) idle(ctx context.Context) {
	timer := time.NewTimer(w.cfg.PollInterval)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	case <-w.slotFree:
	case <-w.cfg.Notifications:
	}
}

// renewLoop renews every active lease in one statement every lease/3.
func (w *Worker) renewLoop(ctx context.Context) {
	ticker := time.NewTicker(max(time.Millisecond, w.q.LeaseDuration()/3))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		w.mu.Lock()
		var claims []*activeClaim
		for _, a := range w.active {
			claims = append(claims, a)
		}
		w.mu.Unlock()
		var batch []queue.Claim
		var sent []*activeClaim
		var sentAt time.Time
		for _, a := range claims {
			if at, ok := a.beginRenewal(); ok {
				batch, sent, sentAt = append(batch, a.claim), append(sent, a), at
			}
		}
		if len(batch) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, w.cfg.DatabaseTimeout)
		renewed, err := w.q.Renew(rctx, nil, batch)
		cancel()
		for _, a := range sent {
			until, ok := renewed[a.key()]
			a.endRenewal("batch", sentAt, until, ok, err)
		}
		if err == nil {
			w.touchLiveness(false)
			w.spawn(func() { w.health(ctx) })
		}
	}
}

func (w *Worker) logLateRenewal(a *activeClaim, d time.Duration) {
	w.log.Warn("worker.claim-renewal-warning", "workId", a.key(), "attempt", a.claim.Attempt(),
		"operation", queue.OperationOf(a.claim.Work), "code", CauseRenewalLate, "durationMs", ms(d))
}

// runPass runs one claimed pass to its end and reports it.
func (w *Worker) runPass(a *activeClaim) {
	defer w.passes.Done()
	defer func() {
		select {
		case w.slotFree <- struct{}{}:
		default:
		}
	}()
	started := time.Now()
	work := a.claim.Work
	r, rep, err := w.dispatch(a)
	outcome := r.outcome
	if rep.outcome != "" {
		outcome = rep.outcome // an exhausted retry of Agent work is permanent; result stays retry
	}
	lost, cause := a.outcomeState()
	switch {
	case cause == CauseWorkerStopping:
		outcome = outcomeError
		w.log.Info("worker.pass-interrupted", "workId", work.Key, "attempt", a.claim.Attempt(),
			"operation", queue.OperationOf(work), "cause", CauseWorkerStopping)
	case errors.Is(err, queue.ErrClaimLost) || lost:
		outcome = outcomeClaimLost
		if cause == "" {
			cause = CauseRenewalRefused // the finalization's own renewal found the claim gone
		}
		w.log.Error("worker.error", "code", "CLAIM_LOST", "workId", work.Key, "attempt", a.claim.Attempt(),
			"operation", queue.OperationOf(work), "cause", cause)
	case err != nil:
		outcome = outcomeError
		attrs := []any{"code", "WORKER_UNAVAILABLE", "workId", work.Key, "attempt", a.claim.Attempt(),
			"operation", queue.OperationOf(work), "errorClass", driver.ErrorClass(err)}
		var refusal *refusalUnavailableError
		if errors.As(err, &refusal) {
			// The stored refusal could not be read: the claim is left to lease recovery.
			attrs = append(attrs, "cause", driver.ErrorClass(refusal.err))
		}
		w.log.Error("worker.error", attrs...)
	default:
		logged, stopYields := w.yields.pass(work.Key, rep.yielded, rep.predecessor, time.Now())
		if !logged {
			break // a repeated stop yield within a minute of the last one logged
		}
		attrs := []any{"namespaceId", work.NamespaceID, "workId", work.Key, "attempt", a.claim.Attempt(),
			"operation", queue.OperationOf(work), "outcome", outcome, "result", r.outcome, "code", r.code,
			"durationMs", ms(time.Since(started))}
		if work.AgentID != nil {
			attrs = append(attrs, "agentId", *work.AgentID)
		}
		if work.RevisionID != nil {
			attrs = append(attrs, "revisionId", *work.RevisionID)
		}
		reason := r.reason
		if reason == "" {
			reason = r.statusReason // a driver's own reason sentence wins over the HTTP reason word
		}
		for k, v := range map[string]string{"reason": reason, "cause": r.cause, "dependency": r.dependency} {
			if v != "" {
				attrs = append(attrs, k, v)
			}
		}
		if r.status != 0 {
			attrs = append(attrs, "status", r.status)
		}
		attrs = append(attrs, rep.attrs...)
		if stopYields > 0 {
			attrs = append(attrs, "stopYields", stopYields)
		}
		w.log.Info("worker.completed", attrs...)
	}
	// The claim is released before its release line, so that no renewal follows that line.
	a.release()
	w.mu.Lock()
	delete(w.active, a.key())
	w.mu.Unlock()
	w.hooks.released(a, string(outcome), cause)
	if w.cfg.Metrics != nil {
		w.cfg.Metrics.ObserveAttempt(queue.MetricKind(work), string(outcome), time.Since(started))
	}
}

// passFunc is one kind of pass.
type passFunc func(w *Worker, a *activeClaim) (result, passReport, error)

// passes maps each operation of the work vocabulary (queue.Operations) to its pass; an operation
// without one waits as unsupported.
var passes = map[queue.Operation]passFunc{
	queue.OpNamespaceEnsure: func(w *Worker, a *activeClaim) (result, passReport, error) {
		r, err := w.namespacePass(a, ensurePass)
		return r, passReport{}, err
	},
	queue.OpNamespaceDelete: func(w *Worker, a *activeClaim) (result, passReport, error) {
		r, err := w.namespacePass(a, deletePass)
		return r, passReport{}, err
	},
	queue.OpAgentStop:         (*Worker).agentStopPass,
	queue.OpAgentDelete:       (*Worker).agentDeletePass,
	queue.OpRevisionReconcile: (*Worker).revisionReconcile,
	queue.OpAgentProvision:    (*Worker).provisionPass,
}

// dispatch picks the pass for a claimed row by its operation.
func (w *Worker) dispatch(a *activeClaim) (result, passReport, error) {
	if pass, ok := passes[queue.OperationOf(a.claim.Work)]; ok {
		return pass(w, a)
	}
	return w.unsupportedPass(a)
}

// revisionReconcile runs the deploy pass of a revision's own reconcile key; maintenance keys of
// a revision are not supported yet.
func (w *Worker) revisionReconcile(a *activeClaim) (result, passReport, error) {
	work := a.claim.Work
	if work.RevisionID == nil || work.Key != platform.RevisionWorkKey(*work.RevisionID) {
		return w.unsupportedPass(a)
	}
	return w.revisionPass(a)
}

// unsupportedPass defers work this build has no pass for. Credential withdrawal and maintenance
// keys arrive with later issues; until then a newer worker must be able to take this work over,
// so it waits five minutes without spending attempts.
func (w *Worker) unsupportedPass(a *activeClaim) (result, passReport, error) {
	r := result{outcome: outcomePending, code: codeWorkKindUnsupported}
	delay := 5 * time.Minute
	return r, passReport{}, w.finalize(a, func(ctx context.Context, tx txDB) error {
		_, err := w.deferWork(ctx, tx, a, r.code, queue.DeferOptions{Delay: &delay})
		return err
	})
}

// health reads the backlog, refreshes the readiness marker and logs worker.health, at most once
// per marker gap. Upstream forces it after every processed claim; the backlog count reads every
// queued row, so a busy worker paid it once per pass (decision 39 in docs/architecture.md).
func (w *Worker) health(ctx context.Context) {
	w.healthMu.Lock()
	defer w.healthMu.Unlock()
	if time.Since(w.lastHealth) < w.markerGap {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.DatabaseTimeout)
	defer cancel()
	pending, err := w.q.Pending(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Error("worker.error", "code", "HEALTH_UNAVAILABLE", "errorClass", driver.ErrorClass(err))
		}
		return
	}
	w.lastHealth = time.Now()
	w.writeMarker(w.cfg.ReadinessPath)
	w.log.Debug("worker.health", "status", "ready", "pending", pending)
}

// agentLifecycleFoldGap spaces the folds of the Agent lifecycle changes into the occ_agents
// counters. A scrape recomputes the Agents changed since the last fold, so the gap bounds its cost
// by the changes of about one second.
const agentLifecycleFoldGap = time.Second

// foldAgentLifecycle starts a fold in the background when the last one started a gap ago and has
// finished. A failed fold leaves its marks for the next one; scrapes stay exact meanwhile.
func (w *Worker) foldAgentLifecycle(ctx context.Context) {
	w.foldMu.Lock()
	defer w.foldMu.Unlock()
	if w.folding || time.Since(w.lastFold) < agentLifecycleFoldGap {
		return
	}
	w.folding, w.lastFold = true, time.Now()
	w.spawn(func() {
		defer func() {
			w.foldMu.Lock()
			w.folding = false
			w.foldMu.Unlock()
		}()
		fctx, cancel := context.WithTimeout(ctx, w.cfg.DatabaseTimeout)
		defer cancel()
		if _, err := store.FoldAgentLifecycle(fctx, w.pool); err != nil && ctx.Err() == nil {
			w.log.Error("worker.error", "code", "AGENT_COUNTS_UNAVAILABLE", "errorClass", driver.ErrorClass(err))
		}
	})
}

// touchLiveness rewrites the liveness marker, at most once per marker gap unless forced.
func (w *Worker) touchLiveness(force bool) {
	if w.cfg.LivenessPath == "" {
		return
	}
	w.healthMu.Lock()
	due := force || time.Since(w.lastLive) >= w.markerGap
	if due {
		w.lastLive = time.Now()
	}
	w.healthMu.Unlock()
	if due {
		w.writeMarker(w.cfg.LivenessPath)
	}
}

// writeMarker writes "<epoch-ms>\n" with mode 0600, atomically (rename), so a probe never reads a
// half-written file.
func (w *Worker) writeMarker(path string) {
	if path == "" {
		return
	}
	tmp := path + ".tmp"
	body := []byte(strconv.FormatInt(time.Now().UnixMilli(), 10) + "\n")
	if err := os.WriteFile(tmp, body, 0o600); err == nil {
		err = os.Rename(tmp, path)
		if err == nil {
			return
		}
	}
	w.log.Error("worker.error", "code", "PROGRESS_UNAVAILABLE")
}

func (w *Worker) removeMarker(path string) {
	if path != "" {
		_ = os.Remove(path)
	}
}

// PrepareMarkers deletes both markers and writes the liveness marker: the first thing a starting
// worker does, so that a stale readiness marker never outlives a failed start.
func PrepareMarkers(readiness, liveness string) error {
	for _, p := range []string{readiness, liveness} {
		if p == "" {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove marker: %w", err)
		}
	}
	if liveness != "" {
		body := []byte(strconv.FormatInt(time.Now().UnixMilli(), 10) + "\n")
		return os.WriteFile(liveness, body, 0o600)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
