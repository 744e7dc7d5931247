package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// freePort asks the kernel for a loopback port that is free right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a running `occ api` whose stdout lines are collected.
type process struct {
	cmd       *exec.Cmd
	mu        sync.Mutex
	lines     []string
	listening chan struct{}
	exited    chan error
	stderr    bytes.Buffer
}

func (p *process) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

func startAPI(t *testing.T, bin string, env []string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, "api"), listening: make(chan struct{}), exited: make(chan error, 1)}
	p.cmd.Env = env
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			if !announced && strings.Contains(line, `"event":"listening"`) {
				announced = true
				close(p.listening)
			}
		}
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// TestBlackBox builds the real binary and drives `occ api` as a separate process on a loopback
// port against real PostgreSQL, with the key `occ bootstrap` wrote.
func TestBlackBox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "occ")
	build := exec.Command("go", "build", "-o", bin, "github.com/openclaw/occ/cmd/occ")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	runBootstrap(t, db, keyFile)
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var keyDoc bootstrap.KeyFile
	if err := json.Unmarshal(raw, &keyDoc); err != nil {
		t.Fatal(err)
	}
	key := keyDoc.Data.Key

	port := freePort(t)
	p := startAPI(t, bin, []string{
		"NODE_ENV=development", "OCC_HOST=127.0.0.1", fmt.Sprintf("OCC_PORT=%d", port), "OCC_DATABASE_URL=" + db.AppURL,
	})
	select {
	case <-p.listening:
	case err := <-p.exited:
		t.Fatalf("occ api exited: %v\n%s", err, p.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("occ api did not announce listening; stdout %v stderr %s", p.output(), p.stderr.String())
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	owner := db.Owner(t)
	count := func(q string, args ...any) int {
		var n int
		if err := owner.QueryRow(ctxb(), q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	created := doHTTP(t, base, req{method: "POST", path: "/namespaces", key: key, body: map[string]any{"name": "blackbox"}})
	if created.status != 201 || created.data()["status"] != "provisioning" {
		t.Fatalf("create: %d %s", created.status, created.raw)
	}
	id := created.data()["id"].(string)
	if n := count(`SELECT count(*) FROM occ.controller_work WHERE namespace_id = $1`, id); n != 1 {
		t.Fatalf("work rows after create: %d", n)
	}
	if n := count(`SELECT count(*) FROM occ.audit_events WHERE resource_id = $1`, id); n != 1 {
		t.Fatalf("audit events after create: %d", n)
	}
	list := doHTTP(t, base, req{method: "GET", path: "/namespaces", key: key})
	found := false
	for _, item := range list.list() {
		found = found || item.(map[string]any)["id"] == id
	}
	if list.status != 200 || !found {
		t.Fatalf("list: %d %s", list.status, list.raw)
	}
	if got := doHTTP(t, base, req{method: "GET", path: "/namespaces/" + id, key: key}); got.status != 200 || got.data()["name"] != "blackbox" {
		t.Fatalf("get: %d %s", got.status, got.raw)
	}
	if del := doHTTP(t, base, req{method: "DELETE", path: "/namespaces/" + id, key: key}); del.status != 202 || del.data()["status"] != "deleting" {
		t.Fatalf("delete: %d %s", del.status, del.raw)
	}
	if n := count(`SELECT count(*) FROM occ.controller_work WHERE namespace_id = $1`, id); n != 2 {
		t.Fatalf("work rows after delete: %d", n)
	}
	if again := doHTTP(t, base, req{method: "DELETE", path: "/namespaces/" + id, key: key}); again.status != 202 {
		t.Fatalf("second delete: %d %s", again.status, again.raw)
	}
	if n := count(`SELECT count(*) FROM occ.controller_work WHERE namespace_id = $1`, id); n != 2 {
		t.Fatalf("the second delete queued work: %d rows", n)
	}
	if r := doHTTP(t, base, req{method: "GET", path: "/openapi.json"}); r.status != 200 || r.doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi: %d", r.status)
	}

	// Graceful shutdown on SIGTERM: exit 0 after shutdown.started and shutdown.completed.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("occ api did not stop after SIGTERM")
	}
	var events []string
	completedRoutes := map[string]bool{}
	for _, line := range p.output() {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		events = append(events, ev["event"].(string))
		if ev["event"] == "http.completed" {
			completedRoutes[ev["route"].(string)] = true
		}
		if strings.Contains(line, key) {
			t.Fatal("the service key reached the log")
		}
	}
	joined := strings.Join(events, ",")
	if !strings.HasPrefix(joined, "listening,") || !strings.HasSuffix(joined, "shutdown.started,shutdown.completed") {
		t.Fatalf("events %s", joined)
	}
	if !completedRoutes["/namespaces/{namespaceId}"] || !completedRoutes["/namespaces"] {
		t.Fatalf("completed routes %v", completedRoutes)
	}
	if p.stderr.Len() != 0 {
		t.Fatalf("stderr: %s", p.stderr.String())
	}
}
