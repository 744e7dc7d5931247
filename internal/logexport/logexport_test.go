package logexport_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/logexport"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/testkit/otelcoltest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// secretValue looks like a GitHub token: obs drops it from every field, and it must never reach
// the Collector's output either.
const secretValue = "ghp_0123456789abcdefghijABCDEFGHIJ012345"

func exportConfig(endpoint string) settings.LogExport {
	return settings.LogExport{Enabled: true, Endpoint: endpoint, Protocol: settings.ProtocolHTTPProtobuf, Timeout: 10 * time.Second,
		ResourceAttributes: "service.instance.id=worker-1,team=payments"}
}

func newExporter(t *testing.T, cfg settings.LogExport, service string, failed ...func()) *logexport.Exporter {
	t.Helper()
	opts := logexport.Options{Service: service, Version: "v1.2.3"}
	if len(failed) > 0 {
		opts.ExportFailed = failed[0]
	}
	e, err := logexport.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

func shutdown(t *testing.T, e *logexport.Exporter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait.Long)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// fanout hands every record to both handlers, so the two lines carry the same time.
type fanout struct{ a, b slog.Handler }

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool { return f.a.Enabled(ctx, l) }
func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	if err := f.a.Handle(ctx, r.Clone()); err != nil {
		return err
	}
	return f.b.Handle(ctx, r.Clone())
}
func (f fanout) WithAttrs(as []slog.Attr) slog.Handler {
	return fanout{f.a.WithAttrs(as), f.b.WithAttrs(as)}
}
func (f fanout) WithGroup(n string) slog.Handler { return fanout{f.a.WithGroup(n), f.b.WithGroup(n)} }

// The shipped policy exports, per event, only the fields it allows: for worker.completed the result
// code, ids and the pass's attempt, outcome, work id and operation, never reason, refusal, status,
// cause, dependency or durations; for http.completed method, status and duration, never the route.
// Events outside the exported classes do not leave at all, nor does a Secret-looking value.
// Stdout stays byte-identical to a logger without export.
func TestExportKeepsOnlyAllowedFields(t *testing.T) {
	c := otelcoltest.Start(t)
	worker := newExporter(t, exportConfig(c.Endpoint), "occ-worker")
	api := newExporter(t, exportConfig(c.Endpoint), "occ-api")

	var teed, plain bytes.Buffer
	workerLog := slog.New(fanout{obs.NewHandler(worker.Tee(&teed), "occ-worker", slog.LevelDebug), obs.NewHandler(&plain, "occ-worker", slog.LevelDebug)})
	var apiOut bytes.Buffer
	apiLog := obs.NewLogger(api.Tee(&apiOut), "occ-api", slog.LevelInfo)

	ns, agent, rev, req := "ns_"+uuid.NewString(), "agt_"+uuid.NewString(), "rev_"+uuid.NewString(), "req_"+uuid.NewString()
	workID := "agent_revision:" + rev + ":reconcile"
	workerLog.Info("worker.completed", "namespaceId", ns, "agentId", agent, "revisionId", rev, "workId", workID,
		"attempt", 2, "operation", "agent_revision.reconcile", "outcome", "permanent", "result", "permanent",
		"code", "CONFIGURATION_REFUSED", "durationMs", 12.5, "reason", "The image was refused by policy", "refusal", "IMAGE_REFUSED",
		"status", 409, "cause", "POLICY", "dependency", "kubernetes", "stopYields", 1)
	// A secret in every string field: obs drops the fields; nothing of it may reach the Collector.
	workerLog.Info("worker.completed", "namespaceId", secretValue, "workId", secretValue, "code", secretValue,
		"reason", secretValue, "outcome", "success", "attempt", 1, "operation", "namespace.ensure")
	workerLog.Warn("worker.claim-renewal-warning", "workId", workID, "attempt", 2) // not an exported class
	workerLog.Error("worker.startup-error", "code", "WORKER_STARTUP_FAILED", "message", "The worker configuration is invalid.")
	apiLog.Info("http.completed", "requestId", req, "method", "POST", "route", "/namespaces/{namespace}/agents", "status", 201, "durationMs", 3.25)
	apiLog.Info("listening", "host", "127.0.0.1", "port", 3000)

	if !bytes.Equal(teed.Bytes(), plain.Bytes()) || teed.Len() == 0 {
		t.Fatalf("stdout differs with export:\n%s\nwithout:\n%s", teed.String(), plain.String())
	}
	shutdown(t, worker)
	shutdown(t, api)
	recs := c.WaitRecords(t, wait.Long, "5 exported records", func(rs []otelcoltest.Record) bool { return len(rs) >= 5 })

	want := map[string][]string{
		"worker.completed":     {"event.name", "occ.agent.id", "occ.code", "occ.namespace.id", "occ.revision.id", "work.attempt", "work.id", "work.operation", "work.outcome"},
		"worker.startup-error": {"event.name", "occ.code"},
		"http.completed":       {"duration_ms", "event.name", "http.request.method", "http.response.status_code", "request.id"},
		"listening":            {"event.name"},
	}
	var events []string
	for _, r := range recs {
		event, _ := r.Attributes["event.name"].(string)
		events = append(events, event)
		if r.Body != event || r.EventName != event {
			t.Errorf("%s: body %v, event name %q", event, r.Body, r.EventName)
		}
		if r.SeverityNumber == 0 || r.SeverityText == "" {
			t.Errorf("%s: no severity", event)
		}
		resKeys := make([]string, 0, len(r.Resource))
		for k := range r.Resource {
			resKeys = append(resKeys, k)
		}
		slices.Sort(resKeys)
		if fmt.Sprint(resKeys) != "[service.instance.id service.name service.version]" || r.Resource["service.name"] != r.Scope {
			t.Errorf("%s: resource %v, scope %q", event, r.Resource, r.Scope)
		}
		if event == "worker.completed" && r.Attributes["occ.namespace.id"] == nil {
			// The record whose fields were all secrets keeps what obs let through.
			if got := fmt.Sprint(r.Keys()); got != "[event.name work.attempt work.operation work.outcome]" {
				t.Errorf("worker.completed with secrets: attributes %s", got)
			}
			continue
		}
		if got := fmt.Sprint(r.Keys()); got != fmt.Sprint(want[event]) {
			t.Errorf("%s: attributes %s, want %v", event, got, want[event])
		}
	}
	slices.Sort(events)
	if got := fmt.Sprint(events); got != "[http.completed listening worker.completed worker.completed worker.startup-error]" {
		t.Errorf("exported events %s", got)
	}
	for _, r := range recs {
		if r.Attributes["event.name"] != "worker.completed" || r.Attributes["occ.namespace.id"] == nil {
			continue
		}
		for k, v := range map[string]any{"occ.namespace.id": ns, "occ.agent.id": agent, "occ.revision.id": rev, "occ.code": "CONFIGURATION_REFUSED",
			"work.attempt": int64(2), "work.id": workID, "work.operation": "agent_revision.reconcile", "work.outcome": "permanent"} {
			if r.Attributes[k] != v {
				t.Errorf("worker.completed %s = %#v, want %#v", k, r.Attributes[k], v)
			}
		}
	}
	out := string(c.Output())
	for _, leak := range []string{secretValue, "refused by policy", "IMAGE_REFUSED", "/namespaces/", "payments", "kubernetes", "configuration is invalid", "127.0.0.1"} {
		if strings.Contains(out, leak) {
			t.Errorf("%q left the machine:\n%s", leak, out)
		}
	}
}

// Records logged while the Collector restarts are delivered once it is back: the batch processor
// queues them and the exporter retries.
func TestExportSurvivesCollectorRestart(t *testing.T) {
	c := otelcoltest.Start(t)
	var failures atomic.Int64
	e := newExporter(t, exportConfig(c.Endpoint), "occ-worker", func() { failures.Add(1) })
	log := obs.NewLogger(e.Tee(&bytes.Buffer{}), "occ-worker", slog.LevelInfo)

	var sent []string
	emit := func(n int) {
		for range n {
			id := "namespace:ns_" + uuid.NewString() + ":reconcile:ready"
			sent = append(sent, id)
			log.Info("worker.completed", "workId", id, "attempt", 1, "operation", "namespace.ensure", "outcome", "success", "code", "READY")
		}
	}
	received := func(rs []otelcoltest.Record) map[string]bool {
		got := map[string]bool{}
		for _, r := range rs {
			if id, ok := r.Attributes["work.id"].(string); ok {
				got[id] = true
			}
		}
		return got
	}

	emit(100)
	c.WaitRecords(t, wait.Long, "the first 100 records", func(rs []otelcoltest.Record) bool { return len(received(rs)) == 100 })
	emit(50)
	c.Stop(t) // mid-stream: some of these may be in flight, the rest queued
	emit(100)
	before := failures.Load()
	// At least one export must meet the stopped Collector, or the test proves nothing.
	wait.Eventually(t, wait.Medium, "an export to the stopped Collector", func() bool { return failures.Load() > before })
	c.StartAgain(t)
	emit(50)
	shutdown(t, e)
	recs := c.WaitRecords(t, wait.Long, "all 300 records", func(rs []otelcoltest.Record) bool { return len(received(rs)) == len(sent) })
	got := received(recs)
	for _, id := range sent {
		if !got[id] {
			t.Errorf("lost %s", id)
		}
	}
}
