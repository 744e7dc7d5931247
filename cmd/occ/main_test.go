package main_test

// Process-level tests: the real `occ` binary, run as separate processes against a private
// PostgreSQL, killed and stopped with real signals.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/driver/docker"
	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/logbuf"
	"github.com/openclaw/occ/internal/testkit/pgtest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "occ-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "occ")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build occ: " + err.Error())
	}
	defer os.RemoveAll(dir)
	pgtest.Main(kubetest.Wrap(m))
}

// process is one running `occ` command with its output captured line by line.
type process struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout logbuf.Buffer
	stderr logbuf.Buffer
	done   chan struct{}
	err    error
}

func start(t *testing.T, env map[string]string, args ...string) *process {
	t.Helper()
	p := &process{t: t, cmd: exec.Command(binary, args...), done: make(chan struct{})}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// run runs a command to completion.
func run(t *testing.T, env map[string]string, args ...string) *process {
	t.Helper()
	p := start(t, env, args...)
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("occ %v did not finish", args)
	}
	return p
}

func (p *process) exitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// events decodes the JSON lines of stdout (or stderr) with the given event name ("" for all).
func (p *process) events(stderr bool, name string) []map[string]any {
	if stderr {
		return p.stderr.Events(name)
	}
	return p.stdout.Events(name)
}

type installation struct {
	db        *pgtest.Database
	owner     *pgxpool.Pool
	defaultNS string
	keyFile   string
}

// bootstrapped runs `occ bootstrap` (development) on a migrated clone.
func bootstrapped(t *testing.T) installation {
	t.Helper()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "key.json")
	p := run(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": db.AppURL,
		"OCC_BOOTSTRAP_SERVICE_KEY_FILE": keyFile}, "bootstrap")
	if p.exitCode() != 0 {
		t.Fatalf("bootstrap: %s %s", p.stdout.String(), p.stderr.String())
	}
	ev := p.events(false, "installation.bootstrapped")
	if len(ev) != 1 {
		t.Fatalf("bootstrap output %s", p.stdout.String())
	}
	return installation{db: db, owner: db.Owner(t), defaultNS: ev[0]["namespaceId"].(string), keyFile: keyFile}
}

// serviceKey is the bootstrap service key that `occ bootstrap` wrote to the key file.
func (i installation) serviceKey(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(i.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Data struct{ Key string } `json:"data"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Data.Key == "" {
		t.Fatalf("the service key file %s: %v", i.keyFile, err)
	}
	return doc.Data.Key
}

func (i installation) scalar(t *testing.T, sql string, args ...any) string {
	t.Helper()
	var v *string
	_ = i.owner.QueryRow(context.Background(), sql, args...).Scan(&v)
	if v == nil {
		return ""
	}
	return *v
}

func (i installation) status(t *testing.T) string {
	return i.scalar(t, `SELECT status FROM occ.namespaces WHERE id = $1`, i.defaultNS)
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "installation.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func simulatedConfig(t *testing.T, computeConfiguration string) string {
	root := t.TempDir()
	return writeConfig(t, fmt.Sprintf(`occ: {cluster: local}
drivers:
  configuration: {id: configuration-filesystem, implementation: filesystem, configuration: {root: %s/configurations}}
  iam: {id: native-iam, configuration: {}}
  compute: {id: compute-simulated, implementation: simulated, configuration: %s}
  secret: {id: secret-filesystem, implementation: filesystem, configuration: {root: %s/secrets}}
`, root, computeConfiguration, root))
}

func workerEnv(i installation, configPath string, extra map[string]string) map[string]string {
	env := map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": i.db.AppURL,
		"OCC_WORKER_POLL_INTERVAL_MS": "50"}
	if configPath != "" {
		env["OCC_CONFIG_PATH"] = configPath
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func TestSimulatedWorkerMakesTheDefaultNamespaceReady(t *testing.T) {
	t.Parallel()
	inst := bootstrapped(t)
	w := start(t, workerEnv(inst, simulatedConfig(t, "{}"), nil), "worker")
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return inst.status(t) == "ready" })
	wait.Eventually(t, wait.Short, "worker.completed", func() bool { return len(w.events(false, "worker.completed")) == 1 })
	if started := w.events(false, "worker.started"); len(started) != 1 || started[0]["computeDriverId"] != "compute-simulated" {
		t.Fatalf("worker.started %v", started)
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	if code := w.exitCode(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if stopped := w.events(false, "worker.stopped"); len(stopped) != 1 {
		t.Fatalf("worker.stopped missing: %s", w.stdout.String())
	}
}

func TestSIGKILLedWorkerIsRecoveredByAnother(t *testing.T) {
	t.Parallel()
	inst := bootstrapped(t)
	key := "namespace:" + inst.defaultNS + ":reconcile:ready"
	// Each EnsureNamespace call takes 6 s, longer than the 3 s lease: the first worker is certainly
	// inside the pass when it is killed, and its lease must be recovered, not completed.
	cfg := simulatedConfig(t, "{callDelayMs: 6000}")
	env := workerEnv(inst, cfg, map[string]string{"OCC_WORKER_LEASE_DURATION_MS": "3000"})
	first := start(t, env, "worker")
	wait.Eventually(t, wait.Medium, "first claim", func() bool {
		return inst.scalar(t, `SELECT state FROM occ.controller_work WHERE idempotency_key = $1`, key) == "claimed"
	})
	second := start(t, env, "worker")
	wait.Eventually(t, wait.Medium, "second worker started", func() bool { return len(second.events(false, "worker.started")) == 1 })
	_ = first.cmd.Process.Kill()
	<-first.done
	wait.Eventually(t, wait.Medium, "recovery by the second worker", func() bool { return inst.status(t) == "ready" })
	evidence := inst.scalar(t, `SELECT string_agg(details->>'reasonCode', ',' ORDER BY occurred_at) FROM occ.audit_events
	  WHERE action = 'reconcile' AND details->>'workId' = $1`, key)
	// The killed worker's claim is recovered (LEASE_EXPIRED) and the work completes exactly once.
	if !strings.HasPrefix(evidence, "LEASE_EXPIRED,") || strings.Count(evidence, "RECONCILE_SUCCEEDED") != 1 ||
		!strings.HasSuffix(evidence, "RECONCILE_SUCCEEDED") {
		t.Fatalf("evidence %q", evidence)
	}
	// worker.completed follows the commit; once it is there, there must be exactly one.
	successes := func() int {
		n := 0
		for _, ev := range second.events(false, "worker.completed") {
			if ev["outcome"] == "success" {
				n++
			}
		}
		return n
	}
	wait.Eventually(t, wait.Short, "the second worker's completion", func() bool { return successes() > 0 })
	if n := successes(); n != 1 {
		t.Fatalf("%d successful completions by the second worker", n)
	}
}

func TestSIGTERMInterruptsAHangingPass(t *testing.T) {
	t.Parallel()
	inst := bootstrapped(t)
	key := "namespace:" + inst.defaultNS + ":reconcile:ready"
	w := start(t, workerEnv(inst, simulatedConfig(t, "{callDelayMs: 600000}"), nil), "worker")
	wait.Eventually(t, wait.Medium, "claim", func() bool {
		return inst.scalar(t, `SELECT state FROM occ.controller_work WHERE idempotency_key = $1`, key) == "claimed"
	})
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	if code := w.exitCode(); code != 0 {
		t.Fatalf("exit %d: %s", code, w.stderr.String())
	}
	var names []string
	for _, ev := range w.events(false, "") {
		switch ev["event"] {
		case "worker.pass-interrupted", "worker.stopped", "worker.error":
			names = append(names, ev["event"].(string))
		}
	}
	if strings.Join(names, ",") != "worker.pass-interrupted,worker.stopped" {
		t.Fatalf("events %v\n%s", names, w.stdout.String())
	}
	if interrupted := w.events(false, "worker.pass-interrupted")[0]; interrupted["cause"] != "WorkerStopping" || interrupted["workId"] != key {
		t.Fatalf("%v", interrupted)
	}
}

func TestWorkerRefusesInvalidStartupConfiguration(t *testing.T) {
	t.Parallel()
	inst := bootstrapped(t)
	root := t.TempDir()
	base := func(compute string) string {
		return fmt.Sprintf(`occ: {cluster: local}
drivers:
  configuration: {id: configuration-filesystem, implementation: filesystem, configuration: {root: %s}}
  iam: {id: native-iam, configuration: {}}
  compute: %s
  secret: {id: secret-filesystem, implementation: filesystem, configuration: {root: %s}}
`, root, compute, root)
	}
	const secret = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
	for _, tc := range []struct {
		name, yaml, path string
	}{
		{"unknown field", base("{id: c, implementation: simulated, configuration: {}, colour: blue}"), "/drivers/compute/colour"},
		{"plaintext credential", base("{id: c, implementation: simulated, configuration: {token: " + secret + "}}"), "/drivers/compute/configuration/token"},
		{"unknown implementation", base("{id: c, implementation: mainframe, configuration: {}}"), "/drivers/compute/implementation"},
		{"unknown driver field", base("{id: c, implementation: simulated, configuration: {colour: blue}}"), "/drivers/compute/configuration/colour"},
	} {
		p := run(t, workerEnv(inst, writeConfig(t, tc.yaml), nil), "worker")
		if code := p.exitCode(); code != 1 {
			t.Errorf("%s: exit %d", tc.name, code)
			continue
		}
		ev := p.events(true, "worker.startup-error")
		if len(ev) != 1 || ev[0]["code"] != "DRIVER_CONFIGURATION_INVALID" {
			t.Errorf("%s: %s", tc.name, p.stderr.String())
			continue
		}
		found := false
		for _, d := range ev[0]["details"].([]any) {
			if d.(map[string]any)["path"] == tc.path {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no detail at %s: %v", tc.name, tc.path, ev[0]["details"])
		}
		if strings.Contains(p.stderr.String()+p.stdout.String(), secret) || strings.Contains(p.stderr.String(), "blue") {
			t.Errorf("%s: the submitted value reached the output", tc.name)
		}
	}
}

func TestWorkerStartupContract(t *testing.T) {
	t.Parallel()
	fresh := pgtest.New(t) // migrated, never bootstrapped
	p := run(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": fresh.AppURL,
		"OCC_CONFIG_PATH": simulatedConfig(t, "{}")}, "worker")
	if ev := p.events(true, "worker.startup-error"); p.exitCode() != 1 || len(ev) != 1 || ev[0]["code"] != "WORKER_STARTUP_FAILED" {
		t.Fatalf("unbootstrapped: %s", p.stderr.String())
	}
	p = run(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": fresh.AdminURL,
		"OCC_CONFIG_PATH": simulatedConfig(t, "{}")}, "worker")
	if ev := p.events(true, "worker.startup-error"); p.exitCode() != 1 || len(ev) != 1 || ev[0]["code"] != "WORKER_STARTUP_FAILED" ||
		!strings.Contains(ev[0]["message"].(string), "superuser") {
		t.Fatalf("superuser: %s", p.stderr.String())
	}
	p = run(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": fresh.AppURL, "OCC_WORKER_LEASE_DURATION_MS": "0"}, "worker")
	if ev := p.events(true, "worker.startup-error"); p.exitCode() != 1 || len(ev) != 1 || ev[0]["code"] != "CONFIG_ENV_INVALID" {
		t.Fatalf("bad setting: %s", p.stderr.String())
	}
}

func dockerAvailable() bool {
	out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").Output()
	return err == nil && len(bytes.TrimSpace(out)) > 0
}

func TestDevelopmentWorkerCreatesTheDockerNetwork(t *testing.T) {
	t.Parallel()
	if !dockerAvailable() {
		t.Skip("Docker Engine not reachable at /var/run/docker.sock: the Docker Compute Driver is not exercised")
	}
	inst := bootstrapped(t)
	w := start(t, workerEnv(inst, "", nil), "worker")
	wait.Eventually(t, wait.Medium, "default namespace ready on Docker", func() bool { return inst.status(t) == "ready" })
	out, err := exec.Command("docker", "network", "ls", "--quiet", "--filter", "label="+docker.LabelNamespaceID+"="+inst.defaultNS).Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("no labelled network for %s: %v", inst.defaultNS, err)
	}
	t.Cleanup(func() {
		for _, id := range strings.Fields(string(out)) {
			_ = exec.Command("docker", "network", "rm", id).Run()
		}
	})
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	if code := w.exitCode(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// apiClient calls a running `occ api` with the bootstrap service key.
type apiClient struct {
	t    *testing.T
	base string
	key  string
}

func (c apiClient) call(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("x-api-key", c.key)
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func data(m map[string]any) map[string]any {
	d, _ := m["data"].(map[string]any)
	return d
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestDeployThroughTheAPIWithTwoWorkers: API and two worker processes, simulated Compute. A
// deployment goes queued → running → succeeded and the Agent's active revision is the new one.
func TestDeployThroughTheAPIWithTwoWorkers(t *testing.T) {
	t.Parallel()
	inst := bootstrapped(t)
	// Preparing takes 400 ms per call and a revision is ready 1.5 s after its first prepare, so
	// the deployment is observably queued, then running, before it succeeds.
	cfg := simulatedConfig(t, "{callDelayMs: 400, revisionReadyAfterMs: 1500}")
	for range 2 {
		start(t, workerEnv(inst, cfg, map[string]string{"OCC_WORKER_LEASE_DURATION_MS": "5000"}), "worker")
	}
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return inst.status(t) == "ready" })

	port := freePort(t)
	api := start(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": inst.db.AppURL, "OCC_CONFIG_PATH": cfg,
		"OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(port)}, "api")
	wait.Eventually(t, wait.Medium, "api listening", func() bool { return len(api.events(false, "listening")) == 1 })
	c := apiClient{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), key: inst.serviceKey(t)}

	ns := "/namespaces/" + inst.defaultNS
	st, cfgResp := c.call("POST", ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})
	if st != 201 {
		t.Fatalf("configuration: %d %v", st, cfgResp)
	}
	st, agentResp := c.call("POST", ns+"/agents", map[string]any{"name": "triage", "configurationId": data(cfgResp)["id"],
		"harnessAuth": map[string]any{"method": "runtime"}})
	if st != 201 {
		t.Fatalf("agent: %d %v", st, agentResp)
	}
	agentPath := ns + "/agents/" + data(agentResp)["id"].(string)
	st, revResp := c.call("POST", agentPath+"/deploy", nil)
	if st != 202 {
		t.Fatalf("deploy: %d %v", st, revResp)
	}
	revID := data(revResp)["id"].(string)

	seen := map[string]bool{}
	var order []string
	wait.Eventually(t, wait.Long, "deployment succeeded", func() bool {
		st, dep := c.call("GET", agentPath+"/deployments/"+revID, nil)
		if st != 200 {
			t.Fatalf("deployment status: %d %v", st, dep)
		}
		status := data(dep)["status"].(string)
		if !seen[status] {
			seen[status] = true
			order = append(order, status)
		}
		if status == "failed" {
			t.Fatalf("deployment failed: %v", dep)
		}
		return status == "succeeded"
	})
	// A pending readiness wait requeues the work, so "queued" may come back after "running";
	// what matters is that it was seen running and ended succeeded.
	if !seen["running"] || order[len(order)-1] != "succeeded" || (order[0] != "queued" && order[0] != "running") {
		t.Fatalf("deployment went %v", order)
	}
	_, agent := c.call("GET", agentPath, nil)
	if data(agent)["activeRevisionId"] != revID {
		t.Fatalf("active revision %v, want %s", data(agent)["activeRevisionId"], revID)
	}
}

// TestRevocationReachesEveryAPIProcessAtOnce: each `occ api` process reuses authorization
// decisions while the policy is unchanged (decision 42) and remembers the service keys it admitted
// (decision 48). With two processes that have both decided a service key's reads, a binding
// removed or a key revoked through one is refused by the very next request on the other.
func TestRevocationReachesEveryAPIProcessAtOnce(t *testing.T) {
	t.Parallel()
	inst := bootstrapped(t)
	cfg := simulatedConfig(t, "{}")
	var apis [2]apiClient
	for i := range apis {
		port := freePort(t)
		p := start(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": inst.db.AppURL, "OCC_CONFIG_PATH": cfg,
			"OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(port)}, "api")
		wait.Eventually(t, wait.Medium, "api listening", func() bool { return len(p.events(false, "listening")) == 1 })
		apis[i] = apiClient{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), key: inst.serviceKey(t)}
	}
	admin, other := apis[0], apis[1]
	ns := "/namespaces/" + inst.defaultNS
	do := func(want int, api apiClient, method, path string, body any) map[string]any {
		t.Helper()
		st, resp := api.call(method, path, body)
		if st != want {
			t.Fatalf("%s %s on %s: %d, want %d: %v", method, path, api.base, st, want, resp)
		}
		return data(resp)
	}
	sp := do(201, admin, "POST", ns+"/iam/service-principals", nil)["id"].(string)
	role := do(201, admin, "POST", ns+"/iam/roles", map[string]any{
		"permissions": []any{map[string]any{"action": "read", "resourceKind": "namespace"}}})["id"].(string)
	bind := func() string {
		return do(201, admin, "POST", ns+"/iam/access-bindings", map[string]any{"subjectKind": "identity",
			"subjectId": sp, "roleId": role, "resourceKind": "namespace", "resourceId": inst.defaultNS})["id"].(string)
	}
	binding := bind()
	issued := do(201, admin, "POST", "/api/auth/service-keys", map[string]any{
		"servicePrincipalId": sp, "namespaceId": inst.defaultNS, "name": "reader"})
	reader := func(api apiClient) apiClient { api.key = issued["key"].(string); return api }
	readAll := func(want int) {
		t.Helper()
		// Twice on each process: the second read of each is the one a kept decision would answer.
		// The list is decided per item (AuthorizeEach): the Namespace is listed only while granted.
		for range 2 {
			for _, api := range apis {
				do(want, reader(api), "GET", ns, nil)
				st, list := reader(api).call("GET", "/namespaces", nil)
				items, _ := list["data"].([]any)
				if listed := len(items) == 1; st != 200 || listed != (want == 200) {
					t.Fatalf("list on %s: %d %v (want the Namespace listed: %v)", api.base, st, list, want == 200)
				}
			}
		}
	}
	readAll(200)

	do(204, admin, "DELETE", ns+"/iam/access-bindings/"+binding, nil)
	do(403, reader(other), "GET", ns, nil)
	readAll(403)

	bind()
	readAll(200)

	// Both processes remember the key (decision 48); each still refuses it at its next request.
	do(200, admin, "DELETE", "/api/auth/service-keys/"+issued["id"].(string), nil)
	do(401, reader(other), "GET", ns, nil)
	do(401, reader(admin), "GET", ns, nil)
}
