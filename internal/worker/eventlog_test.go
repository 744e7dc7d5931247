package worker_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/testkit/chaos"
	"github.com/openclaw/occ/internal/testkit/logbuf"
	"github.com/openclaw/occ/internal/testkit/wait"
	"github.com/openclaw/occ/internal/worker"
)

// TestEventLogRecordsAPassAndPassesTheChecker: with OCC_WORKER_EVENT_LOG set, one Namespace pass
// is logged claim → renew → effect-start → effect-end → publish → release, and the history checker
// accepts it against the database.
func TestEventLogRecordsAPassAndPassesTheChecker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	pool := h.app
	lease := 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	w, err := worker.New(worker.Config{
		Pool: pool, Queue: queue.New(pool, queue.Options{MaxAttempts: 5, LeaseDuration: lease}),
		Compute:     simulated.New("compute-simulated", simulated.Config{}, simulated.Options{}),
		IAMDriverID: bootstrap.IAMDriverID, InstallationID: h.installation, Concurrency: 2,
		PollInterval: 20 * time.Millisecond, ConvergenceTimeout: time.Minute, DatabaseTimeout: 5 * time.Second,
		Logger: obs.NewLogger(&logbuf.Buffer{}, "occ-worker", slog.LevelInfo), EventLogPath: path,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return h.nsStatus(h.defaultNS) == "ready" })
	cancel()
	<-done
	end := time.Now()

	events, err := chaos.ReadEventLogs(path)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
		if e.PID == 0 || e.Process == "" || e.At.IsZero() || e.At.Location() != time.UTC || e.Token == "" ||
			e.WorkID != "namespace:"+h.defaultNS+":reconcile:ready" || e.Lane != h.defaultNS {
			t.Errorf("incomplete event %+v", e)
		}
		switch e.Type {
		case worker.EventClaim:
			if e.ClaimedAt == nil || e.LeaseExpiresAt == nil || e.Attempt != 1 || e.LeaseMs != lease.Milliseconds() || e.MaxAttempts != 5 {
				t.Errorf("claim %+v", e)
			}
		case worker.EventPublish:
			if e.Result != worker.ResultAccepted || e.Transition != "complete" || e.State != string(queue.StateSucceeded) ||
				e.Code != queue.CodeReconcileSucceeded || e.LeaseExpiresAt == nil {
				t.Errorf("publish %+v", e)
			}
		case worker.EventEffectEnd:
			if e.Call != "EnsureNamespace" || e.Result != worker.ResultOK {
				t.Errorf("effect-end %+v", e)
			}
		}
	}
	want := []string{"claim", "renew", "effect-start", "effect-end", "publish", "release"}
	if len(types) != len(want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events %v, want %v", types, want)
		}
	}
	state, err := chaos.LoadState(context.Background(), h.owner)
	if err != nil {
		t.Fatal(err)
	}
	r := chaos.Check(chaos.History{Events: events}, state, chaos.Options{MaxAttempts: 5, Lease: lease,
		Poll: 20 * time.Millisecond, Slack: time.Second, End: end})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}
