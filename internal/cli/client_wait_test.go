package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/cli"
	"github.com/openclaw/occ/internal/settings"
)

// TestClientWaitsAndTheNoWorkerWarning: deploy --wait into a provisioning Namespace waits for it
// first; without a worker the wait prints a heartbeat and one warning asking whether occ worker
// runs, and gives up with the command that follows it; with a worker it ends in success. Stop,
// delete and Namespace delete wait too.
func TestClientWaitsAndTheNoWorkerWarning(t *testing.T) {
	t.Parallel()
	api, stack := startSimulatedAPI(t)
	nsID := strings.TrimSpace(mustSucceed(t, api.occ(nil, "namespace", "create", "team-w", "-o", "name"), "namespace create").stdout)
	ns := map[string]string{"OCC_NAMESPACE": "team-w"}
	cfg := strings.TrimSpace(mustSucceed(t, api.occIn(ns, `{"kind":"agent","values":{"agents":{}}}`, "configuration", "create", "-f", "-", "-o", "name"),
		"configuration").stdout)
	mustSucceed(t, api.occ(ns, "agent", "create", "tour", "--configuration", cfg, "--auth", "runtime"), "agent create")

	// No worker: the Namespace stays provisioning.
	r := api.occ(ns, "agent", "deploy", "tour", "--wait", "--wait-timeout", "17s")
	label := "team-w (" + nsID + ")"
	if r.code != 1 ||
		!strings.Contains(r.stdout, "Namespace "+label+" is provisioning; waiting for it before deploying.\n[00:00]  provisioning\n") ||
		!strings.Contains(r.stdout, "]  still provisioning\n") ||
		!strings.Contains(r.stderr, "Warning: Namespace "+label+": no worker has acted on it after 10s. Is occ worker running? (occ dev runs one.)\n") ||
		!strings.Contains(r.stderr, "Error: Namespace "+label+" did not finish within 17s; it continues. Follow it with: occ namespace get "+nsID+"\n") {
		t.Fatalf("deploy into a provisioning Namespace without a worker: %+v", r)
	}
	if strings.Count(r.stderr, "Warning:") != 1 {
		t.Fatalf("the warning is printed once: %s", r.stderr)
	}

	stop := stack.startWorker(t)
	r = mustSucceed(t, api.occ(ns, "agent", "deploy", "tour", "--wait"), "deploy --wait with a worker")
	if !strings.Contains(r.stdout, "succeeded after") {
		t.Fatalf("deploy: %q", r.stdout)
	}
	stop()

	// A deployment nobody claims: the warning comes after a few polls.
	r = api.occ(ns, "agent", "deploy", "tour", "--wait", "--wait-timeout", "7s")
	if r.code != 1 || !strings.Contains(r.stdout, "]  queued\n") || !strings.Contains(r.stderr, ": no worker has acted on it after 5s. Is occ worker running?") ||
		!strings.Contains(r.stderr, "it continues. Follow it with: occ agent deployment-status tour rev_") {
		t.Fatalf("unclaimed deployment: %+v", r)
	}
	stack.startWorker(t)
	deadline := time.Now().Add(time.Minute)
	for jsonField(t, mustSucceed(t, api.occ(ns, "agent", "deployment-status", "tour", "-o", "json"), "status").stdout, "status") != "succeeded" {
		if time.Now().After(deadline) {
			t.Fatal("the queued deployment did not succeed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r = mustSucceed(t, api.occ(ns, "agent", "stop", "tour", "--wait"), "stop --wait")
	if !strings.Contains(r.stdout, "]  stopped\nAgent tour (") || !strings.HasSuffix(r.stdout, ") is stopped.\n") {
		t.Fatalf("stop --wait: %q", r.stdout)
	}
	var agent struct{ ActiveRevisionID *string }
	_ = json.Unmarshal([]byte(mustSucceed(t, api.occ(ns, "agent", "get", "tour", "-o", "json"), "get").stdout), &agent)
	if agent.ActiveRevisionID != nil {
		t.Fatalf("stopped Agent still has an active revision %s", *agent.ActiveRevisionID)
	}
	r = mustSucceed(t, api.occ(ns, "agent", "delete", "tour", "--wait"), "delete --wait")
	if !strings.Contains(r.stdout, "]  gone\n") || !strings.HasSuffix(r.stdout, ") is deleted.\n") {
		t.Fatalf("delete --wait: %q", r.stdout)
	}
	mustSucceed(t, api.occ(ns, "configuration", "delete", cfg), "configuration delete")
	r = mustSucceed(t, api.occ(nil, "namespace", "delete", "team-w", "--yes", "--wait"), "namespace delete --wait")
	if !strings.HasSuffix(r.stdout, "]  gone\nNamespace "+label+" is deleted.\n") {
		t.Fatalf("namespace delete --wait: %q", r.stdout)
	}
}

// TestClientWatch: get --watch prints the resource, then again when it changes, the table header
// once; Ctrl-C ends it with exit status 0.
func TestClientWatch(t *testing.T) {
	t.Parallel()
	api, stack := startSimulatedAPI(t)
	mustSucceed(t, api.occ(nil, "namespace", "create", "team-x"), "namespace create")
	out := &lineWatcher{want: "   ready   ", seen: make(chan struct{})}
	stderr := &lineWatcher{want: "\x00", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, cli.Env{Lookup: settings.MapLookup(map[string]string{"OCC_URL": api.url, "OCC_SERVICE_KEY_FILE": api.keyFile}),
			Stdout: out, Stderr: stderr, Version: "test"}, []string{"namespace", "get", "team-x", "--watch"})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "provisioning") {
		if time.Now().After(deadline) {
			t.Fatalf("no first row: %q %q", out.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stack.startWorker(t)
	select {
	case <-out.seen:
	case code := <-done:
		t.Fatalf("watch ended %d: %q %q", code, out.String(), stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("no change printed: %q", out.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[1], "provisioning") || !strings.Contains(lines[2], "ready") {
		t.Fatalf("watch output:\n%s", out.String())
	}
}
