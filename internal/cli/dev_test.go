package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/devstack"
	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// buildOcc builds the occ binary into the test's temporary directory: occ dev runs it as its
// children.
func buildOcc(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "occ")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/openclaw/occ/cmd/occ").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// devProcess is a running `occ dev` with its stdout lines.
type devProcess struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	url   chan string
	done  chan struct{}
}

func startDev(t *testing.T, bin, stateDir string, port int, compute ...string) *devProcess {
	t.Helper()
	if len(compute) == 0 {
		compute = []string{"--compute", "simulated"}
	}
	return startDevWith(t, bin, stateDir, port, map[string]string{"HOME": t.TempDir()}, compute...)
}

// startDevWith runs occ dev with env (besides PATH and a fast worker poll) and extra flags.
func startDevWith(t *testing.T, bin, stateDir string, port int, env map[string]string, flags ...string) *devProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"dev", "--state-dir", stateDir, "--port", fmt.Sprint(port)}, flags...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "OCC_WORKER_POLL_INTERVAL_MS=50"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return startDevCommand(t, cmd)
}

// startDevCommand starts a prepared occ dev command and follows its output.
func startDevCommand(t *testing.T, cmd *exec.Cmd) *devProcess {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	p := &devProcess{cmd: cmd, url: make(chan string, 1), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		url := ""
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			if u, ok := strings.CutPrefix(strings.TrimSpace(line), "URL:"); ok {
				url = strings.TrimSpace(u)
			}
			if line == "Press Ctrl-C to stop." { // the banner is complete
				p.url <- url
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				<-p.done
			}
		}
	})
	return p
}

func (p *devProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

func (p *devProcess) waitURL(t *testing.T) string {
	t.Helper()
	select {
	case u := <-p.url:
		return u
	case <-p.done:
		t.Fatalf("occ dev exited before serving:\n%s", p.output())
	case <-time.After(3 * time.Minute):
		t.Fatalf("occ dev did not print its URL:\n%s", p.output())
	}
	return ""
}

func (p *devProcess) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("occ dev did not stop:\n%s", p.output())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("occ dev exited %d:\n%s", code, p.output())
	}
	if !strings.Contains(p.output(), "==> Stopped") {
		t.Fatalf("no clean stop:\n%s", p.output())
	}
}

func getJSON(t *testing.T, url, key string, into any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if into != nil {
		if err := json.NewDecoder(res.Body).Decode(into); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return res.StatusCode
}

func readKey(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Data struct{ Key string } `json:"data"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Data.Key == "" {
		t.Fatalf("key file: %v", err)
	}
	return doc.Data.Key
}

// devStateDir is a state directory the postgres user can reach when the tests run as root.
func devStateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "occ-dev-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "state")
}

func TestDevRunsTheStackAndARerunReusesIt(t *testing.T) {
	t.Parallel()
	state := devStateDir(t)
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(state, "bootstrap-key.json")

	bin := buildOcc(t)
	first := startDev(t, bin, state, port)
	url := first.waitURL(t)
	if url != fmt.Sprintf("http://127.0.0.1:%d", port) {
		t.Fatalf("URL %q", url)
	}
	if !strings.Contains(first.output(), "Service key file: "+keyFile) {
		t.Fatalf("no key file line:\n%s", first.output())
	}
	if code := getJSON(t, url+"/healthz", "", nil); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	key := readKey(t, keyFile)
	var inst struct{ Data struct{ ID string } }
	if code := getJSON(t, url+"/installation", key, &inst); code != 200 || inst.Data.ID == "" {
		t.Fatalf("installation %d %+v", code, inst)
	}
	wait.NoError(t, wait.Long, "the default Namespace to be ready", func() error {
		var list struct {
			Data []struct{ Name, Status string }
		}
		if code := getJSON(t, url+"/namespaces", key, &list); code != 200 {
			t.Fatalf("namespaces %d", code)
		}
		if len(list.Data) == 1 && list.Data[0].Name == "default" && list.Data[0].Status == "ready" {
			return nil
		}
		return fmt.Errorf("%+v\n%s", list, first.output())
	})
	for _, prefix := range []string{"api | ", "worker | "} {
		if !strings.Contains(first.output(), prefix) {
			t.Fatalf("no %q lines:\n%s", prefix, first.output())
		}
	}
	first.stop(t, syscall.SIGINT)
	if _, err := os.Stat(filepath.Join(state, "postgres", "data", "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("PostgreSQL left its pid file: %v", err)
	}

	// A rerun reuses the cluster, the Installation and the key file.
	second := startDev(t, bin, state, port)
	url = second.waitURL(t)
	if got := readKey(t, keyFile); got != key {
		t.Fatal("the key file changed")
	}
	var again struct{ Data struct{ ID string } }
	if code := getJSON(t, url+"/installation", key, &again); code != 200 || again.Data.ID != inst.Data.ID {
		t.Fatalf("installation %d %q, want %q", code, again.Data.ID, inst.Data.ID)
	}
	if out := second.output(); !strings.Contains(out, "reusing the cluster") || !strings.Contains(out, "already exists; reusing it") ||
		!strings.Contains(out, "the schema is up to date") {
		t.Fatalf("rerun output:\n%s", out)
	}
	second.stop(t, syscall.SIGTERM)
}

func TestDevRefusesATakenPort(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	r := run(map[string]string{"HOME": t.TempDir()}, "dev", "--port", fmt.Sprint(port), "--state-dir", devStateDir(t))
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("port %d on 127.0.0.1 is taken", port)) || strings.Contains(r.stderr, "goroutine") {
		t.Fatalf("%+v", r)
	}
}

// TestDevWithKubernetes: occ dev --compute kubernetes against a test cluster makes the default
// Namespace ready with its Kubernetes namespace; a cluster that does not answer is refused before
// anything starts.
func TestDevWithKubernetes(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	kubeconfig := c.WriteKubeconfig(t, kubetest.Worker, "occ-dev")
	state := devStateDir(t)
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	bin := buildOcc(t)
	dev := startDev(t, bin, state, port, "--compute", "kubernetes", "--kubeconfig", kubeconfig, "--context", "occ-dev",
		"--gateway-image", "registry.example/openclaw-gateway:dev", "--agent-image", "registry.example/codex:dev")
	url := dev.waitURL(t)
	key := readKey(t, filepath.Join(state, "bootstrap-key.json"))
	var nsID string
	wait.Until(t, wait.Long, "default Namespace ready", func() (bool, error) {
		var list struct {
			Data []struct{ ID, Status string }
		}
		if code := getJSON(t, url+"/namespaces", key, &list); code != 200 || len(list.Data) != 1 {
			return false, fmt.Errorf("namespaces %d %+v", code, list)
		}
		nsID = list.Data[0].ID
		return list.Data[0].Status == "ready", nil
	})
	items, err := c.Admin().List(kubetest.CorePath("", "namespaces", ""), kubetest.Selector(map[string]string{"openclaw.dev/namespace": nsID}))
	if err != nil || len(items) != 1 {
		t.Fatalf("Kubernetes namespace of %s: %v %d\n%s", nsID, err, len(items), dev.output())
	}
	if !strings.Contains(dev.output(), "Compute: kubernetes (context occ-dev") {
		t.Fatalf("no compute line:\n%s", dev.output())
	}
	dev.stop(t, syscall.SIGINT)

	// An unreachable cluster: a clear sentence naming host and port, no stack trace.
	dead, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	deadConfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(deadConfig, []byte(strings.ReplaceAll(string(raw), c.URL, fmt.Sprintf("https://127.0.0.1:%d", dead))), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(map[string]string{"HOME": t.TempDir()}, "dev", "--port", fmt.Sprint(port), "--state-dir", state,
		"--compute", "kubernetes", "--kubeconfig", deadConfig, "--context", "occ-dev",
		"--gateway-image", "g:dev", "--agent-image", "a:dev")
	want := fmt.Sprintf("the cluster at 127.0.0.1:%d refused the preflight (KUBERNETES_API_UNAVAILABLE)", dead)
	if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "goroutine") {
		t.Fatalf("%+v", r)
	}
	if r := run(map[string]string{"HOME": t.TempDir()}, "dev", "--compute", "kubernetes", "--state-dir", t.TempDir()); r.code != 1 ||
		!strings.Contains(r.stderr, "--compute kubernetes needs --kubeconfig, --context, --gateway-image and --agent-image") {
		t.Fatalf("%+v", r)
	}
}
