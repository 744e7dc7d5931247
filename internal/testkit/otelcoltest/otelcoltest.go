// Package otelcoltest runs a real OpenTelemetry Collector on loopback for the log export tests.
//
// The Collector is the minimal build of tools/otelcol (`make otelcol-bin` puts it into
// $OCC_OTELCOL_BIN, default ${XDG_CACHE_HOME:-$HOME/.cache}/occ/otelcol/<Version>). It runs the
// shipped policy, deploy/logging/collector.yaml, unchanged, with an overlay that moves the OTLP/HTTP
// receiver to a free loopback port, turns the Collector's own metrics off and replaces the
// pipeline's exporter with the file exporter, so a test reads exactly what would leave the machine.
//
//	c := otelcoltest.Start(t)
//	// point the exporter at c.Endpoint, log, then
//	recs := c.WaitRecords(t, wait.Long, func(rs []otelcoltest.Record) bool { return len(rs) >= 3 })
//
// Restart stops the Collector (SIGTERM: it drains its pipeline) and starts it again on the same port
// with a new output file; Records reads all of them. The process is stopped when the test ends; its
// directory (configuration, output, the Collector's own log) is t.TempDir().
package otelcoltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/testkit/wait"
)

// Version is the collector release tools/otelcol pins.
const Version = "v0.161.0"

// BinDir returns $OCC_OTELCOL_BIN, else ${XDG_CACHE_HOME:-$HOME/.cache}/occ/otelcol/<Version>.
func BinDir() string {
	if d := os.Getenv("OCC_OTELCOL_BIN"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "occ", "otelcol", Version)
}

// Binary returns the Collector's path, or an error naming the command that builds it.
func Binary() (string, error) {
	p := filepath.Join(BinDir(), "otelcol")
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("the test OpenTelemetry Collector is missing at %s; run `make otelcol-bin` "+
			"(tools/otelcol/build.sh, a few minutes the first time) or set OCC_OTELCOL_BIN to a directory holding otelcol", p)
	}
	return p, nil
}

// PolicyPath is deploy/logging/collector.yaml of this checkout.
func PolicyPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/openclaw/occ\n")) {
			return filepath.Join(dir, "deploy", "logging", "collector.yaml"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("otelcoltest: the repository root (go.mod of github.com/openclaw/occ) is not above the working directory")
		}
		dir = parent
	}
}

// Collector is one running Collector.
type Collector struct {
	// Endpoint is the full OTLP/HTTP logs URL: http://127.0.0.1:<port>/v1/logs.
	Endpoint string
	// Dir holds the overlay configurations, the output files and collector.log.
	Dir string

	bin, policy string
	port        int
	mu          sync.Mutex
	cmd         *exec.Cmd
	done        chan struct{}
	outputs     []string
}

// Start starts a Collector with the shipped policy and waits until its receiver accepts
// connections.
func Start(t testing.TB) *Collector {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	policy, err := PolicyPath()
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	c := &Collector{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port) + "/v1/logs",
		Dir:      t.TempDir(), bin: bin, policy: policy, port: port,
	}
	t.Cleanup(func() { c.stop() })
	c.start(t)
	return c
}

// Stop stops the Collector; it drains its pipeline into the output file first.
func (c *Collector) Stop(t testing.TB) {
	t.Helper()
	if !c.stop() {
		t.Fatal("otelcoltest: Stop: the Collector is not running")
	}
}

// Restart stops the Collector and starts it again on the same port.
func (c *Collector) Restart(t testing.TB) {
	t.Helper()
	c.Stop(t)
	c.start(t)
}

// StartAgain starts a stopped Collector on the same port.
func (c *Collector) StartAgain(t testing.TB) {
	t.Helper()
	c.start(t)
}

func (c *Collector) start(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	n := len(c.outputs) + 1
	out := filepath.Join(c.Dir, fmt.Sprintf("output-%d.jsonl", n))
	c.outputs = append(c.outputs, out)
	c.mu.Unlock()
	overlay := filepath.Join(c.Dir, fmt.Sprintf("overlay-%d.yaml", n))
	// JSON is YAML: the paths are quoted safely whatever the temporary directory's name.
	cfg := map[string]any{
		"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{
			"http": map[string]any{"endpoint": "127.0.0.1:" + strconv.Itoa(c.port)}}}},
		"exporters": map[string]any{"file": map[string]any{"path": out, "flush_interval": "100ms"}},
		"service": map[string]any{
			"telemetry": map[string]any{"metrics": map[string]any{"level": "none", "readers": []any{}}},
			"pipelines": map[string]any{"logs": map[string]any{"exporters": []string{"file"}}},
		},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.OpenFile(filepath.Join(c.Dir, "collector.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "--config", "file:"+c.policy, "--config", "file:"+overlay)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.Dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("otelcoltest: start %s: %v", c.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	c.mu.Lock()
	c.cmd, c.done = cmd, done
	c.mu.Unlock()
	addr := "127.0.0.1:" + strconv.Itoa(c.port)
	wait.Until(t, wait.Long, "the Collector's OTLP receiver on "+addr, func() (bool, error) {
		select {
		case <-done:
			t.Fatalf("otelcoltest: the Collector exited at start; its log:\n%s", c.Log())
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
}

// stop sends SIGTERM and waits for the exit (SIGKILL after wait.Long). It reports whether a
// Collector was running.
func (c *Collector) stop() bool {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.cmd, c.done = nil, nil
	c.mu.Unlock()
	if cmd == nil {
		return false
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(wait.Long):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	return true
}

// Log returns the Collector's own log so far (for failure messages).
func (c *Collector) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "collector.log"))
	return string(b)
}

// Output returns the raw bytes of every output file so far, in order: what left the machine.
func (c *Collector) Output() []byte {
	c.mu.Lock()
	outputs := append([]string(nil), c.outputs...)
	c.mu.Unlock()
	var all []byte
	for _, p := range outputs {
		b, _ := os.ReadFile(p)
		all = append(all, b...)
	}
	return all
}

// Record is one exported log record with its resource and scope.
type Record struct {
	Resource       map[string]any
	Scope          string
	SeverityNumber int
	SeverityText   string
	EventName      string
	Body           any
	// Attributes holds the record's attributes: strings, int64, float64, bool, maps and slices.
	Attributes map[string]any
}

// Records parses every output file. A line cut short by a concurrent write is skipped: the next
// call sees it whole.
func (c *Collector) Records() ([]Record, error) {
	var recs []Record
	sc := bufio.NewScanner(bytes.NewReader(c.Output()))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var req otlpLogs
		if err := json.Unmarshal(line, &req); err != nil {
			continue
		}
		for _, rl := range req.ResourceLogs {
			res := attrMap(rl.Resource.Attributes)
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					recs = append(recs, Record{
						Resource: res, Scope: sl.Scope.Name,
						SeverityNumber: lr.SeverityNumber, SeverityText: lr.SeverityText,
						EventName: lr.EventName, Body: anyValue(lr.Body), Attributes: attrMap(lr.Attributes),
					})
				}
			}
		}
	}
	return recs, sc.Err()
}

// WaitRecords polls Records until done accepts them, and returns them.
func (c *Collector) WaitRecords(t testing.TB, budget time.Duration, what string, done func([]Record) bool) []Record {
	t.Helper()
	var recs []Record
	wait.Until(t, budget, what, func() (bool, error) {
		var err error
		recs, err = c.Records()
		if err != nil {
			return false, err
		}
		return done(recs), nil
	})
	return recs
}

// The OTLP JSON encoding the file exporter writes (the parts tests read).
type otlpLogs struct {
	ResourceLogs []struct {
		Resource struct {
			Attributes []otlpKeyValue `json:"attributes"`
		} `json:"resource"`
		ScopeLogs []struct {
			Scope struct {
				Name string `json:"name"`
			} `json:"scope"`
			LogRecords []struct {
				SeverityNumber int            `json:"severityNumber"`
				SeverityText   string         `json:"severityText"`
				EventName      string         `json:"eventName"`
				Body           otlpAnyValue   `json:"body"`
				Attributes     []otlpKeyValue `json:"attributes"`
			} `json:"logRecords"`
		} `json:"scopeLogs"`
	} `json:"resourceLogs"`
}

type otlpKeyValue struct {
	Key   string       `json:"key"`
	Value otlpAnyValue `json:"value"`
}

type otlpAnyValue struct {
	StringValue *string  `json:"stringValue"`
	BoolValue   *bool    `json:"boolValue"`
	IntValue    *string  `json:"intValue"` // int64 is a JSON string in OTLP/JSON
	DoubleValue *float64 `json:"doubleValue"`
	ArrayValue  *struct {
		Values []otlpAnyValue `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []otlpKeyValue `json:"values"`
	} `json:"kvlistValue"`
}

func attrMap(kvs []otlpKeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = anyValue(kv.Value)
	}
	return m
}

func anyValue(v otlpAnyValue) any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.IntValue != nil:
		n, err := strconv.ParseInt(*v.IntValue, 10, 64)
		if err != nil {
			return *v.IntValue
		}
		return n
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.ArrayValue != nil:
		out := make([]any, 0, len(v.ArrayValue.Values))
		for _, item := range v.ArrayValue.Values {
			out = append(out, anyValue(item))
		}
		return out
	case v.KvlistValue != nil:
		return attrMap(v.KvlistValue.Values)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Keys returns a record's attribute names, sorted, for failure messages.
func (r Record) Keys() []string {
	keys := make([]string, 0, len(r.Attributes))
	for k := range r.Attributes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
