package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/cli"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func TestAPIStartupErrors(t *testing.T) {
	t.Parallel()
	migrated := pgtest.New(t) // migrated but never bootstrapped
	roots := t.TempDir()
	missingPreset := filepath.Join(roots, "installation.yaml")
	if err := os.WriteFile(missingPreset, []byte(fmt.Sprintf(`occ: {cluster: local}
drivers:
  compute: {id: compute-simulated, implementation: simulated, configuration: {}}
  configuration: {id: configuration-filesystem, implementation: filesystem, configuration: {root: %q}}
  iam: {id: native-iam, configuration: {}}
  secret: {id: secret-filesystem, implementation: filesystem, configuration: {root: %q}}
presets: {files: [missing-preset.json]}
`, filepath.Join(roots, "configurations"), filepath.Join(roots, "secrets"))), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		code string
	}{
		{"no mode", map[string]string{"OCC_HOST": "127.0.0.1", "OCC_PORT": "3000", "OCC_DATABASE_URL": migrated.AppURL}, "CONFIG_ENV_INVALID"},
		{"bad port", map[string]string{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "0", "OCC_DATABASE_URL": migrated.AppURL}, "CONFIG_ENV_INVALID"},
		{"no database url", map[string]string{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "3000"}, "DATABASE_CONFIGURATION_INVALID"},
		{"short secret", map[string]string{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "3000",
			"OCC_DATABASE_URL": migrated.AppURL, "OCC_AUTH_SECRET": "too-short"}, "AUTH_SECRET_INVALID"},
		{"bad base url", map[string]string{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "3000",
			"OCC_DATABASE_URL": migrated.AppURL, "OCC_AUTH_BASE_URL": "ftp://127.0.0.1"}, "AUTH_BASE_URL_INVALID"},
		{"missing startup yaml", map[string]string{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "3000",
			"OCC_DATABASE_URL": migrated.AppURL, "OCC_CONFIG_PATH": "/nonexistent/occ.yaml"}, "STARTUP_CONFIGURATION_UNAVAILABLE"},
		{"missing preset file", map[string]string{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "3000",
			"OCC_DATABASE_URL": migrated.AppURL, "OCC_CONFIG_PATH": missingPreset}, "DRIVER_CONFIGURATION_INVALID"},
		{"unreachable database", map[string]string{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "3000",
			"OCC_DATABASE_URL": "postgres://u:secret-pw@127.0.0.1:1/db"}, "PERSISTENCE_UNAVAILABLE"},
		{"not bootstrapped", map[string]string{"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": "3000",
			"OCC_DATABASE_URL": migrated.AppURL}, "STARTUP_FAILED"},
	} {
		r := run(tc.env, "api")
		if r.code != 1 || r.stdout != "" {
			t.Errorf("%s: %+v", tc.name, r)
			continue
		}
		ev := events(t, r.stderr)
		if len(ev) != 1 || ev[0]["event"] != "startup-error" || ev[0]["service"] != "occ-api" || ev[0]["code"] != tc.code {
			t.Errorf("%s: %v", tc.name, ev)
		}
		if strings.Contains(r.stderr, "secret-pw") || strings.Contains(r.stderr, "too-short") {
			t.Errorf("%s: a secret reached stderr", tc.name)
		}
	}
}

// lineWatcher is a concurrency-safe writer that reports when a line containing want arrives.
type lineWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestAPIServesAndStopsGracefully(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	if r := run(bootstrapEnv(db, keyFile), "bootstrap"); r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	metricsListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsPort := metricsListener.Addr().(*net.TCPAddr).Port
	metricsListener.Close()

	stdout := &lineWatcher{want: `"event":"listening"`, seen: make(chan struct{})}
	var stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, cli.Env{Lookup: settings.MapLookup(map[string]string{
			"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(port), "OCC_DATABASE_URL": db.AppURL,
			"OCC_METRICS_ENABLED": "true", "OCC_METRICS_HOST": "127.0.0.1", "OCC_METRICS_PORT": fmt.Sprint(metricsPort),
		}), Stdout: stdout, Stderr: &stderr, Version: "test"}, []string{"api"})
	}()
	select {
	case <-stdout.seen:
	case code := <-done:
		t.Fatalf("occ api exited %d: %s", code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("occ api did not listen: %s %s", stdout.String(), stderr.String())
	}
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", res, err)
	}
	res.Body.Close()
	res, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/nope", port))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(res.Body)
	res.Body.Close()
	if !strings.Contains(body.String(), `occ_http_requests_total{method="GET",route="unmatched",service="api",status_class="4xx"} 1`) ||
		strings.Contains(body.String(), `route="/readyz"`) {
		t.Fatalf("metrics:\n%s", body.String())
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("occ api did not stop")
	}
	out := stdout.String()
	if !strings.Contains(out, `"event":"shutdown.started"`) || !strings.Contains(out, `"event":"shutdown.completed"`) {
		t.Fatalf("stdout %s", out)
	}
}
