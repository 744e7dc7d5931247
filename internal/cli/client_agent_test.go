package cli_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openclaw/occ/internal/cli"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/testkit/pgtest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// startSimulatedStack runs occ api and occ worker in-process on the simulated Compute Driver.
func startSimulatedStack(t *testing.T) clientAPI {
	t.Helper()
	api, stack := startSimulatedAPI(t)
	stack.startWorker(t)
	return api
}

// simulatedStack starts workers for an API on the simulated Compute Driver.
type simulatedStack struct {
	workerEnv map[string]string
}

// startSimulatedAPI runs occ api in-process on the simulated Compute Driver, without a worker.
func startSimulatedAPI(t *testing.T) (clientAPI, simulatedStack) {
	t.Helper()
	return startAPIAndWorkerEnv(t, nil)
}

// startAPIAndWorkerEnv is startSimulatedAPI; adjust, when set, changes the API's environment
// (the worker's stays simulated).
func startAPIAndWorkerEnv(t *testing.T, adjust func(apiEnv map[string]string)) (clientAPI, simulatedStack) {
	t.Helper()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	r := run(bootstrapEnv(db, keyFile), "bootstrap")
	if r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	defaultNS, _ := lastEvent(t, r.stdout)["namespaceId"].(string)
	roots := t.TempDir()
	config := filepath.Join(t.TempDir(), "installation.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`occ: {cluster: local}
drivers:
  compute: {id: compute-simulated, implementation: simulated, configuration: {}}
  configuration: {id: configuration-filesystem, implementation: filesystem, configuration: {root: %q}}
  iam: {id: native-iam, configuration: {}}
  secret: {id: secret-filesystem, implementation: filesystem, configuration: {root: %q}}
`, filepath.Join(roots, "configurations"), filepath.Join(roots, "secrets"))), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": db.AppURL, "OCC_CONFIG_PATH": config}
	if adjust != nil {
		adjust(env)
	}
	url := startAPIProcess(t, env)
	workerEnv := map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": db.AppURL, "OCC_CONFIG_PATH": config,
		"OCC_WORKER_POLL_INTERVAL_MS": "50"}
	return clientAPI{url: url, keyFile: keyFile, defaultNS: defaultNS}, simulatedStack{workerEnv: workerEnv}
}

// startWorker runs an occ worker in-process until the returned stop (or the test's end).
func (st simulatedStack) startWorker(t *testing.T) (stop func()) {
	t.Helper()
	stderr := &lineWatcher{want: "\x00", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, cli.Env{Lookup: settings.MapLookup(st.workerEnv), Stdout: &lineWatcher{want: "\x00", seen: make(chan struct{})},
			Stderr: stderr, Version: "test"}, []string{"worker"})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestClientAgentDeployWait(t *testing.T) {
	t.Parallel()
	api := startSimulatedStack(t)
	nsEnv := map[string]string{"OCC_NAMESPACE": api.defaultNS}

	wait.Eventually(t, wait.Long, "the default Namespace to become ready", func() bool {
		return jsonField(t, mustSucceed(t, api.occ(nil, "namespace", "get", api.defaultNS, "-o", "json"), "namespace get").stdout, "status") == "ready"
	})

	secret := jsonField(t, mustSucceed(t, api.occ(nsEnv, "secret", "create", "--file",
		writeJSON(t, map[string]any{"name": "token", "value": "tour-secret-value-1234"}), "-o", "json"), "secret create").stdout, "id")
	if r := mustSucceed(t, api.occ(nsEnv, "secret", "list"), "secret list"); strings.Contains(r.stdout, "tour-secret-value") ||
		!strings.Contains(r.stdout, secret) {
		t.Fatalf("secret list: %q", r.stdout)
	}
	cfg := jsonField(t, mustSucceed(t, api.occ(nsEnv, "configuration", "create", "--file",
		writeJSON(t, map[string]any{"kind": "agent", "values": map[string]any{"agents": map[string]any{}}}), "-o", "json"),
		"configuration create").stdout, "id")
	if r := api.occ(nsEnv, "configuration", "update", cfg, "--file", writeJSON(t, map[string]any{"kind": "agent", "values": map[string]any{}})); r.code != 2 {
		t.Fatalf("update with kind: %+v", r)
	}
	mustSucceed(t, api.occ(nsEnv, "configuration", "update", cfg, "--file", writeJSON(t, map[string]any{"values": map[string]any{"agents": map[string]any{}}})), "configuration update")
	if r := mustSucceed(t, api.occ(nsEnv, "configuration", "get", cfg, "-o", "json"), "configuration get"); !strings.Contains(r.stdout, `"generation": 2`) {
		t.Fatalf("configuration get: %q", r.stdout)
	}
	agent := jsonField(t, mustSucceed(t, api.occ(nsEnv, "agent", "create", "--file",
		writeJSON(t, map[string]any{"name": "tour", "configurationId": cfg, "harnessAuth": map[string]any{"method": "runtime"}}), "-o", "json"),
		"agent create").stdout, "id")
	golden(t, "agent-list.table", mustSucceed(t, api.occ(nsEnv, "agent", "list"), "agent list").stdout)
	golden(t, "configuration-get.table", mustSucceed(t, api.occ(nsEnv, "configuration", "get", cfg), "configuration get").stdout)
	golden(t, "secret-list.table", mustSucceed(t, api.occ(nsEnv, "secret", "list"), "secret list").stdout)
	if r := api.occ(nsEnv, "agent", "deployment-status", agent); r.code != 1 || !strings.Contains(r.stderr, "no revision yet") {
		t.Fatalf("status before deploy: %+v", r)
	}

	r := mustSucceed(t, api.occ(nsEnv, "agent", "deploy", agent, "--wait"), "agent deploy --wait")
	if !strings.Contains(r.stdout, "succeeded after") || !strings.Contains(r.stdout, "]  queued") && !strings.Contains(r.stdout, "]  running") {
		t.Fatalf("deploy --wait: %q", r.stdout)
	}
	revisions := mustSucceed(t, api.occ(nsEnv, "agent", "revisions", agent), "revisions").stdout
	if lines := strings.Split(strings.TrimSpace(revisions), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "*") {
		t.Fatalf("revisions: %q", revisions)
	}
	golden(t, "agent-revisions.table", revisions)
	golden(t, "agent-deployment-status.table", mustSucceed(t, api.occ(nsEnv, "agent", "deployment-status", agent), "deployment-status").stdout)
	if r := mustSucceed(t, api.occ(nsEnv, "agent", "deployment-status", agent, "-o", "json"), "deployment-status"); jsonField(t, r.stdout, "status") != "succeeded" {
		t.Fatalf("deployment-status: %q", r.stdout)
	}
	if r := api.occ(nsEnv, "agent", "get", cfg); r.code != 2 || !strings.Contains(r.stderr, "occ agent list") {
		t.Fatalf("wrong prefix: %+v", r)
	}
	if r := api.occ(nsEnv, "agent", "update", agent, "--file", writeJSON(t, map[string]any{"name": "x"})); r.code != 2 ||
		!strings.Contains(r.stderr, "configurationId") {
		t.Fatalf("update without configurationId: %+v", r)
	}
	mustSucceed(t, api.occ(nsEnv, "agent", "stop", agent), "agent stop")
	if r := mustSucceed(t, api.occ(nsEnv, "agent", "delete", agent), "agent delete"); r.stdout != "Agent "+agent+" is being deleted.\n" {
		t.Fatalf("agent delete: %q", r.stdout)
	}
	if r := api.occ(nsEnv, "secret", "get", secret); r.code != 0 || !strings.Contains(r.stdout, "CONSUMERS") {
		t.Fatalf("secret get: %+v", r)
	}
}

// Ids the fake API servers of the tests answer for.
const (
	fakeNamespace = "ns_00000000-0000-4000-8000-000000000000"
	fakeAgent     = "agt_00000000-0000-4000-8000-000000000000"
	fakeRevision  = "rev_00000000-0000-4000-8000-000000000000"
)

func TestClientAgentDeployWaitReportsAFailure(t *testing.T) {
	t.Parallel()
	ns, agent, rev := fakeNamespace, fakeAgent, fakeRevision
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && r.URL.Path == "/namespaces/"+ns+"/agents/"+agent+"/deploy":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"data":{"id":%q,"revision":1},"meta":{"requestId":"req_x"}}`, rev)
		case r.Method == "GET" && r.URL.Path == "/namespaces/"+ns+"/agents/"+agent+"/deployments/"+rev:
			if polls.Add(1) == 1 {
				fmt.Fprint(w, `{"data":{"deploymentId":"`+rev+`","status":"running","progress":{"lastAttempt":{"at":"2026-01-01T00:00:00.000Z","code":"REVISION_NOT_READY","message":"The gateway is starting."},"nextAttemptAt":null},"error":null,"warnings":[]}}`)
				return
			}
			fmt.Fprint(w, `{"data":{"deploymentId":"`+rev+`","status":"failed","progress":null,"error":{"code":"RUNTIME_FAILED","message":"The gateway crashed."},"warnings":[]}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	keyFile := writeJSON(t, map[string]any{"data": map[string]any{"key": "occ_sk_test"}})
	r := run(map[string]string{"OCC_URL": srv.URL, "OCC_SERVICE_KEY_FILE": keyFile, "OCC_NAMESPACE": ns}, "agent", "deploy", agent, "--wait")
	if r.code != 1 || !strings.Contains(r.stdout, "running · last attempt REVISION_NOT_READY: The gateway is starting.") ||
		!strings.Contains(r.stderr, "Error: deployment "+rev+" failed: RUNTIME_FAILED: The gateway crashed.") {
		t.Fatalf("%+v", r)
	}
}
