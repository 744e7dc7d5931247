package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWorkerProbe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live, ready := filepath.Join(dir, "alive"), filepath.Join(dir, "ready")
	env := map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": "postgres://u:p@127.0.0.1:1/db",
		"OCC_WORKER_LIVENESS_PATH": live, "OCC_WORKER_READINESS_PATH": ready}
	write := func(path string, at time.Time) {
		if err := os.WriteFile(path, []byte(fmt.Sprintf("%d\n", at.UnixMilli())), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if r := run(env, "probe", "worker"); r.code != 1 || !strings.Contains(r.stderr, "cannot be read") {
		t.Fatalf("missing marker: %+v", r)
	}
	write(live, time.Now())
	if r := run(env, "probe", "worker"); r.code != 0 {
		t.Fatalf("fresh marker: %+v", r)
	}
	if r := run(env, "probe", "worker", "--ready"); r.code != 1 {
		t.Fatalf("no readiness marker: %+v", r)
	}
	write(ready, time.Now())
	if r := run(env, "probe", "worker", "--ready"); r.code != 0 {
		t.Fatalf("ready: %+v", r)
	}
	// Default staleness: max(120 s, 240 × 250 ms, 6 × 5 s, 2 × 60 s) = 120 s.
	write(live, time.Now().Add(-119*time.Second))
	if r := run(env, "probe", "worker"); r.code != 0 {
		t.Fatalf("119 s: %+v", r)
	}
	write(live, time.Now().Add(-125*time.Second))
	if r := run(env, "probe", "worker"); r.code != 1 || !strings.Contains(r.stderr, "stale after 2m0s") {
		t.Fatalf("stale: %+v", r)
	}
	env["OCC_WORKER_DATABASE_TIMEOUT_MS"] = "90000" // 180 s
	if r := run(env, "probe", "worker"); r.code != 0 {
		t.Fatalf("longer database timeout: %+v", r)
	}
}
