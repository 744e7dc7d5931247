package worker_test

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/testkit/logbuf"
	"github.com/openclaw/occ/internal/testkit/pgtest"
	"github.com/openclaw/occ/internal/testkit/wait"
	"github.com/openclaw/occ/internal/worker"
)

// Stopping the worker joins every goroutine it started: passes, the renewer, its health checks
// and late-renewal reports. Not parallel: it counts the goroutines of the whole test process.
func TestStopJoinsEveryGoroutineTheWorkerStarted(t *testing.T) {
	h := newHarness(t)
	pool := pgtest.Pool(t, h.db.AppURL)
	var logs logbuf.Buffer
	w, err := worker.New(worker.Config{
		Pool: pool, Queue: queue.New(pool, queue.Options{MaxAttempts: 5, LeaseDuration: 300 * time.Millisecond}),
		Compute: simulated.New("compute-simulated", simulated.Config{}, simulated.Options{}), IAMDriverID: bootstrap.IAMDriverID,
		InstallationID: h.installation, Concurrency: 4, PollInterval: 20 * time.Millisecond, ConvergenceTimeout: time.Minute,
		DatabaseTimeout: 5 * time.Second, Logger: obs.NewLogger(&logs, "occ-worker", slog.LevelDebug),
	})
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	ns := h.createNamespace("goroutines")
	wait.Eventually(t, wait.Medium, "the Namespace ready", func() bool { return h.nsStatus(ns) == "ready" })
	// Let the renewer run a few rounds (each one starts a health check).
	wait.Eventually(t, wait.Short, "health checks", func() bool { return len(logs.Events("worker.health")) >= 3 })
	cancel()
	<-done
	wait.Eventually(t, wait.Short, "no goroutine of the worker left", func() bool { return runtime.NumGoroutine() <= before })
}
