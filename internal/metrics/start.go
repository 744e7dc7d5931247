package metrics

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Worker is a running worker metrics listener with its families and dedicated pool.
type Worker struct {
	*WorkerMetrics
	listener *Listener
	pool     *pgxpool.Pool
	cancel   context.CancelFunc
	done     chan struct{}
}

// StartWorker builds the worker registry, the dedicated metrics pool for databaseURL (it connects
// on the first scrape) and the listener bound to addr, and serves until ctx ends or Close. A bad
// URL or an address that cannot be bound is returned before anything is served; neither error
// carries text worth logging (log an errorClass). logger, if not nil, receives
// metrics.listener-failed when serving fails later.
func StartWorker(ctx context.Context, addr, databaseURL string, logger *slog.Logger) (*Worker, error) {
	pool, err := NewPool(databaseURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	reg := NewRegistry(ServiceWorker)
	m := NewWorkerMetrics(reg, PoolBacklog(pool))
	l, err := Listen(addr, Handler(reg))
	if err != nil {
		cancel()
		pool.Close()
		return nil, err
	}
	w := &Worker{WorkerMetrics: m, listener: l, pool: pool, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		serve(ctx, l, logger)
	}()
	return w, nil
}

// Addr is the bound address.
func (w *Worker) Addr() string { return w.listener.Addr().String() }

// Close stops serving (gracefully), waits for the listener and closes the pool.
func (w *Worker) Close() {
	w.cancel()
	<-w.done
	w.pool.Close()
}

// API is a running API metrics listener with its families.
type API struct {
	*APIMetrics
	listener *Listener
	cancel   context.CancelFunc
	done     chan struct{}
}

// StartAPI builds the API registry and the listener bound to addr, and serves until ctx ends or
// Close. A bind failure is returned before anything is served.
func StartAPI(ctx context.Context, addr string, logger *slog.Logger) (*API, error) {
	reg := NewRegistry(ServiceAPI)
	m := NewAPIMetrics(reg)
	l, err := Listen(addr, Handler(reg))
	if err != nil {
		return nil, err
	}
	a := &API{APIMetrics: m, listener: l, done: make(chan struct{})}
	ctx, a.cancel = context.WithCancel(ctx)
	go func() {
		defer close(a.done)
		serve(ctx, l, logger)
	}()
	return a, nil
}

// Addr is the bound address.
func (a *API) Addr() string { return a.listener.Addr().String() }

// Close stops serving (gracefully) and waits for the listener.
func (a *API) Close() {
	a.cancel()
	<-a.done
}

func serve(ctx context.Context, l *Listener, logger *slog.Logger) {
	if err := l.Serve(ctx); err != nil && logger != nil {
		logger.Error("metrics.listener-failed", "errorClass", "MetricsListenerFailed")
	}
}
