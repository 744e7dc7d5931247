package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/cli"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/testkit/pgtest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// apiProcess is `occ api` running in-process for a test.
type apiProcess struct {
	URL    string
	stdout *lineWatcher
	stderr *bytes.Buffer
	cancel context.CancelFunc
	done   chan int
	code   int
	exited bool
}

// startAPI runs `occ api` in-process with env plus the listen address and waits until it listens;
// it stops when the test ends, if Stop was not called first.
func startAPI(t *testing.T, env map[string]string) *apiProcess {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	env["OCC_HOST"], env["OCC_PORT"] = "127.0.0.1", fmt.Sprint(port)
	p := &apiProcess{URL: fmt.Sprintf("http://127.0.0.1:%d", port), stdout: &lineWatcher{want: `"event":"listening"`, seen: make(chan struct{})},
		stderr: &bytes.Buffer{}, done: make(chan int, 1)}
	var ctx context.Context
	ctx, p.cancel = context.WithCancel(context.Background())
	go func() {
		p.done <- cli.Execute(ctx, cli.Env{Lookup: settings.MapLookup(env), Stdout: p.stdout, Stderr: p.stderr, Version: "test"}, []string{"api"})
	}()
	t.Cleanup(func() { p.Stop(t) })
	select {
	case <-p.stdout.seen:
	case code := <-p.done:
		t.Fatalf("occ api exited %d: %s", code, p.stderr.String())
	case <-time.After(wait.Long):
		t.Fatalf("occ api did not listen: %s %s", p.stdout.String(), p.stderr.String())
	}
	return p
}

// Stop cancels the process and returns its exit code.
func (p *apiProcess) Stop(t *testing.T) int {
	t.Helper()
	if p.exited {
		return p.code
	}
	p.cancel()
	select {
	case p.code = <-p.done:
		p.exited = true
	case <-time.After(wait.Long):
		t.Fatal("occ api did not stop")
	}
	return p.code
}

// startAPIProcess runs `occ api` as startAPI does and returns its base URL.
func startAPIProcess(t *testing.T, env map[string]string) string {
	t.Helper()
	return startAPI(t, env).URL
}

func call(t *testing.T, base, key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-api-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(res.Body).Decode(&doc)
	return res.StatusCode, doc
}

// TestAPIDeployRefusedByDockerCompute: without a startup YAML, development selects the Docker
// Compute Driver, which supports no Harness authentication; a deploy is refused at admission with
// 409 HARNESS_AUTH_UNSUPPORTED and nothing is written. The filesystem Configuration and Secret
// Drivers of the same defaults store their files under the development roots.
func TestAPIDeployRefusedByDockerCompute(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	if r := run(bootstrapEnv(db, keyFile), "bootstrap"); r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var kf bootstrap.KeyFile
	if err := json.Unmarshal(raw, &kf); err != nil {
		t.Fatal(err)
	}
	key, ns := kf.Data.Key, ""
	roots := t.TempDir()
	base := startAPIProcess(t, map[string]string{
		"NODE_ENV": "development", "OCC_DATABASE_URL": db.AppURL,
		"OCC_DEVELOPMENT_CONFIGURATION_ROOT": filepath.Join(roots, "configurations"),
		"OCC_DEVELOPMENT_SECRET_ROOT":        filepath.Join(roots, "secrets"),
	})
	owner := db.Owner(t)
	if err := owner.QueryRow(context.Background(), `UPDATE occ.namespaces SET status = 'ready' WHERE name = 'default' RETURNING id`).Scan(&ns); err != nil {
		t.Fatal(err)
	}
	path := "/namespaces/" + ns
	st, sec := call(t, base, key, "POST", path+"/secrets", map[string]any{"name": "k", "value": "docker-refusal-value-4242"})
	if st != 201 {
		t.Fatalf("secret: %d %v", st, sec)
	}
	if _, err := os.Stat(filepath.Join(roots, "secrets", ns, sec["data"].(map[string]any)["id"].(string)+".json")); err != nil {
		t.Fatalf("secret file: %v", err)
	}
	st, cfg := call(t, base, key, "POST", path+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{"a": 1}})
	if st != 201 {
		t.Fatalf("configuration: %d %v", st, cfg)
	}
	cfgID := cfg["data"].(map[string]any)["id"].(string)
	if _, err := os.Stat(filepath.Join(roots, "configurations", ns, cfgID+".json")); err != nil {
		t.Fatalf("configuration file: %v", err)
	}
	// runtime authentication needs no Secret grant for the Agent's own principal; Docker refuses it
	// like every other method.
	st, agent := call(t, base, key, "POST", path+"/agents", map[string]any{"name": "a", "configurationId": cfgID,
		"harnessAuth": map[string]any{"method": "runtime"}})
	if st != 201 {
		t.Fatalf("agent: %d %v", st, agent)
	}
	agentID := agent["data"].(map[string]any)["id"].(string)
	countRows := func() int {
		var n int
		if err := owner.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM occ.agent_revisions)
  + (SELECT count(*) FROM occ.controller_work WHERE agent_id IS NOT NULL)
  + (SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.deploy')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := countRows()
	st, doc := call(t, base, key, "POST", path+"/agents/"+agentID+"/deploy", nil)
	errDoc, _ := doc["error"].(map[string]any)
	if st != 409 || errDoc["code"] != "HARNESS_AUTH_UNSUPPORTED" || !strings.Contains(errDoc["message"].(string), "docker") {
		t.Fatalf("deploy with Docker Compute: %d %v", st, doc)
	}
	if after := countRows(); after != before {
		t.Fatalf("a refused deploy wrote %d rows", after-before)
	}
	st, got := call(t, base, key, "GET", path+"/agents/"+agentID, nil)
	if st != 200 || got["data"].(map[string]any)["desiredRuntimeState"] != "stopped" {
		t.Fatalf("agent after the refusal: %d %v", st, got)
	}
}

// TestAPIDeployWithSimulatedComputeFromStartupYAML: the startup YAML's Compute, Configuration and
// Secret selections reach deploy admission and the revision snapshot.
func TestAPIDeployWithSimulatedComputeFromStartupYAML(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	if r := run(bootstrapEnv(db, keyFile), "bootstrap"); r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var kf bootstrap.KeyFile
	if err := json.Unmarshal(raw, &kf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	yaml := filepath.Join(dir, "installation.yaml")
	doc := fmt.Sprintf(`occ: {cluster: local}
drivers:
  compute: {id: compute-sim, implementation: simulated, configuration: {}}
  configuration: {id: cfg-files, implementation: filesystem, configuration: {root: %s}}
  iam: {id: native-iam, configuration: {}}
  secret: {id: secret-files, implementation: filesystem, configuration: {root: %s}}
`, filepath.Join(dir, "configurations"), filepath.Join(dir, "secrets"))
	if err := os.WriteFile(yaml, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startAPIProcess(t, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": db.AppURL, "OCC_CONFIG_PATH": yaml})
	key := kf.Data.Key
	var ns string
	if err := db.Owner(t).QueryRow(context.Background(), `UPDATE occ.namespaces SET status = 'ready' WHERE name = 'default' RETURNING id`).Scan(&ns); err != nil {
		t.Fatal(err)
	}
	path := "/namespaces/" + ns
	st, cfg := call(t, base, key, "POST", path+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{"a": 1}})
	if st != 201 {
		t.Fatalf("configuration: %d %v", st, cfg)
	}
	st, agent := call(t, base, key, "POST", path+"/agents", map[string]any{"name": "a",
		"configurationId": cfg["data"].(map[string]any)["id"], "harnessAuth": map[string]any{"method": "runtime"}})
	if st != 201 {
		t.Fatalf("agent: %d %v", st, agent)
	}
	st, rev := call(t, base, key, "POST", path+"/agents/"+agent["data"].(map[string]any)["id"].(string)+"/deploy", nil)
	data, _ := rev["data"].(map[string]any)
	if st != 202 || mustMarshal(data["compute"]) != `{"id":"compute-sim","implementation":"simulated"}` || data["secretDriverId"] != "secret-files" {
		t.Fatalf("deploy: %d %v", st, rev)
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
