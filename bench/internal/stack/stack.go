// Package stack runs a real OCC Installation for the end-to-end benchmarks: the `occ` binary built
// from this repository, a private PostgreSQL server (pgtest.StartServer) or an existing one,
// `occ migrate`, `occ bootstrap`, `occ worker` processes and `occ api`, all as separate processes
// on loopback, with the simulated Compute Driver.
package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/devstack"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

const (
	ownerRole = "occ_bench_owner"
	appRole   = "occ_app"
	password  = "occ-bench"
)

// Options shape the Installation.
type Options struct {
	// Database is the database created (dropped first) on the server.
	Database string
	// DatabaseURL is a superuser URL of an existing server; empty starts a private one.
	DatabaseURL string
	// Binary is an existing `occ` binary; empty builds ../cmd/occ into a temporary directory.
	Binary string
	// Compute is the simulated driver's configuration, a YAML flow mapping such as
	// "{revisionReadyAfterMs: 0}".
	Compute string
	// Workers is the number of `occ worker` processes (0: none).
	Workers int
	// WorkerEnv and APIEnv are extra environment variables of the worker and API processes.
	WorkerEnv, APIEnv map[string]string
	// Logf reports progress (stderr).
	Logf func(format string, args ...any)
}

// Stack is a running Installation.
type Stack struct {
	AdminURL  string // superuser on the bench database
	AppURL    string // the application role on the bench database
	BaseURL   string // http://127.0.0.1:port of `occ api`
	Key       string // the bootstrap service key
	DefaultNS string // the bootstrapped default Namespace
	ActorID   string // the bootstrap service principal
	Admin     *pgxpool.Pool
	HTTP      *http.Client
	Server    string // PostgreSQL version and settings

	dir      string
	procs    []*Proc
	cleanups []func()
	logf     func(string, ...any)
}

// Proc is one running `occ` process; its stdout and stderr go to files in the stack's directory.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	out  string
	err  string
}

// Start builds and starts everything. On error, what was started is stopped.
func Start(ctx context.Context, o Options) (s *Stack, err error) {
	s = &Stack{logf: o.Logf}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	if s.dir, err = os.MkdirTemp("", "occ-bench-"); err != nil {
		return s, err
	}
	s.cleanups = append(s.cleanups, func() { _ = os.RemoveAll(s.dir) })
	binary := o.Binary
	if binary == "" {
		if binary, err = Build(ctx, s.dir); err != nil {
			return s, err
		}
	}
	adminURL := o.DatabaseURL
	if adminURL == "" {
		s.logf("starting a private PostgreSQL server")
		u, stop, err := pgtest.StartServer(ctx, pgtest.ServerOptions{})
		if err != nil {
			return s, err
		}
		s.cleanups = append(s.cleanups, stop)
		adminURL = u
	}
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return s, err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	_ = admin.QueryRow(ctx, `SELECT 'PostgreSQL ' || current_setting('server_version') || ', shared_buffers=' || current_setting('shared_buffers')
  || ', fsync=' || current_setting('fsync') || ', synchronous_commit=' || current_setting('synchronous_commit')`).Scan(&s.Server)
	db := o.Database
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, ownerRole, password),
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, appRole, password),
		`DROP DATABASE IF EXISTS ` + db + ` WITH (FORCE)`,
		`CREATE DATABASE ` + db + ` OWNER ` + ownerRole,
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil && !store.AlreadyExists(err) {
			return s, err
		}
	}
	if o.DatabaseURL != "" {
		s.cleanups = append(s.cleanups, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if c, err := pgx.Connect(ctx, adminURL); err == nil {
				_, _ = c.Exec(ctx, `DROP DATABASE IF EXISTS `+db+` WITH (FORCE)`)
				c.Close(ctx)
			}
		})
	}
	s.AdminURL = withUser(adminURL, "", "", db)
	s.AppURL = withUser(adminURL, appRole, password, db)
	ownerURL := withUser(adminURL, ownerRole, password, db)

	if _, err := s.run(ctx, binary, map[string]string{"OCC_MIGRATION_DATABASE_URL": ownerURL}, "migrate"); err != nil {
		return s, err
	}
	keyFile := filepath.Join(s.dir, "key.json")
	out, err := s.run(ctx, binary, map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": s.AppURL,
		"OCC_BOOTSTRAP_SERVICE_KEY_FILE": keyFile}, "bootstrap")
	if err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(out, "\n") {
		var ev struct {
			Event       string `json:"event"`
			NamespaceID string `json:"namespaceId"`
			Attempt     struct {
				ServicePrincipalID string `json:"servicePrincipalId"`
			} `json:"attempt"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "installation.bootstrapped" {
			s.DefaultNS, s.ActorID = ev.NamespaceID, ev.Attempt.ServicePrincipalID
		}
	}
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		return s, err
	}
	var keyDoc struct {
		Data struct{ Key string } `json:"data"`
	}
	_ = json.Unmarshal(raw, &keyDoc)
	s.Key = keyDoc.Data.Key
	if s.DefaultNS == "" || s.Key == "" {
		return s, fmt.Errorf("bootstrap: no namespace or key in %q", out)
	}
	if s.Admin, err = pgxpool.New(ctx, s.AdminURL); err != nil {
		return s, err
	}
	s.cleanups = append(s.cleanups, s.Admin.Close)

	cfg := filepath.Join(s.dir, "installation.yaml")
	compute := o.Compute
	if compute == "" {
		compute = "{}"
	}
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `occ: {cluster: local}
drivers:
  configuration: {id: configuration-filesystem, implementation: filesystem, configuration: {root: %s/configurations}}
  iam: {id: native-iam, configuration: {}}
  compute: {id: compute-simulated, implementation: simulated, configuration: %s}
  secret: {id: secret-filesystem, implementation: filesystem, configuration: {root: %s/secrets}}
`, s.dir, compute, s.dir), 0o600); err != nil {
		return s, err
	}
	for i := range o.Workers {
		env := map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": s.AppURL, "OCC_CONFIG_PATH": cfg}
		for k, v := range o.WorkerEnv {
			env[k] = v
		}
		if _, err := s.start(binary, fmt.Sprintf("worker-%d", i+1), env, "worker"); err != nil {
			return s, err
		}
	}
	port, err := devstack.FreePort()
	if err != nil {
		return s, err
	}
	env := map[string]string{"NODE_ENV": "development", "OCC_DATABASE_URL": s.AppURL, "OCC_CONFIG_PATH": cfg,
		"OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(port)}
	for k, v := range o.APIEnv {
		env[k] = v
	}
	api, err := s.start(binary, "api", env, "api")
	if err != nil {
		return s, err
	}
	s.BaseURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	s.HTTP = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	if err := s.waitFor(ctx, 60*time.Second, "occ api ready", func() bool {
		select {
		case <-api.done:
			return true
		default:
		}
		resp, err := s.HTTP.Get(s.BaseURL + "/readyz")
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200
	}); err != nil {
		return s, err
	}
	select {
	case <-api.done:
		return s, fmt.Errorf("occ api exited: %s", tail(api.err))
	default:
	}
	if o.Workers > 0 {
		if err := s.WaitNamespaceReady(ctx, s.DefaultNS); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Build builds ../cmd/occ (the module github.com/openclaw/occ this bench module replaces) into dir.
func Build(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/openclaw/occ").Output()
	if err != nil {
		return "", fmt.Errorf("locate the occ module: %w", err)
	}
	root := strings.TrimSpace(string(out))
	binary := filepath.Join(dir, "occ")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/occ")
	build.Dir = root
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build occ: %w", err)
	}
	return binary, nil
}

// WaitNamespaceReady waits until the worker has made the Namespace ready.
func (s *Stack) WaitNamespaceReady(ctx context.Context, ns string) error {
	return s.waitFor(ctx, 60*time.Second, "namespace "+ns+" ready", func() bool {
		var st string
		_ = s.Admin.QueryRow(ctx, `SELECT status FROM occ.namespaces WHERE id = $1`, ns).Scan(&st)
		return st == "ready"
	})
}

func (s *Stack) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Call sends one API request with the bootstrap service key and returns the status and the
// response's "data" member.
func (s *Stack) Call(ctx context.Context, method, path string, body any) (int, json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.BaseURL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("x-api-key", s.Key)
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Data json.RawMessage `json:"data"`
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &doc)
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, raw, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, doc.Data, nil
}

// ID extracts data.id.
func ID(data json.RawMessage) string {
	var v struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(data, &v)
	return v.ID
}

// Close stops the processes (SIGTERM, then SIGKILL after 10 s) and removes what Start created.
func (s *Stack) Close() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	s.procs = nil
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// Exited reports processes that have ended (a crash during a run).
func (s *Stack) Exited() []string {
	var out []string
	for _, p := range s.procs {
		select {
		case <-p.done:
			out = append(out, p.Name+": "+tail(p.err))
		default:
		}
	}
	return out
}

// Events returns the JSON lines of a process's stdout with the given event name.
func (s *Stack) Events(proc, event string) []map[string]any {
	for _, p := range s.procs {
		if p.Name != proc {
			continue
		}
		f, err := os.Open(p.out)
		if err != nil {
			return nil
		}
		defer f.Close()
		var out []map[string]any
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if !bytes.Contains(sc.Bytes(), []byte(event)) {
				continue
			}
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["event"] == event {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func (s *Stack) run(ctx context.Context, binary string, env map[string]string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = environment(s.dir, env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("occ %s: %w: %s %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func (s *Stack) start(binary, name string, env map[string]string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, cmd: exec.Command(binary, args...), done: make(chan struct{}),
		out: filepath.Join(s.dir, name+".out"), err: filepath.Join(s.dir, name+".err")}
	p.cmd.Env = environment(s.dir, env)
	stdout, err := os.Create(p.out)
	if err != nil {
		return nil, err
	}
	stderr, err := os.Create(p.err)
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = stdout, stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); stdout.Close(); stderr.Close(); close(p.done) }()
	s.procs = append(s.procs, p)
	return p, nil
}

func environment(home string, env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func tail(path string) string {
	raw, _ := os.ReadFile(path)
	if len(raw) > 2000 {
		raw = raw[len(raw)-2000:]
	}
	return strings.TrimSpace(string(raw))
}

func withUser(raw, role, pw, database string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	if role != "" {
		u.User = url.UserPassword(role, pw)
	}
	u.Path = "/" + database
	return u.String()
}
