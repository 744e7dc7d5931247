// Package pgtest gives every test its own real PostgreSQL database.
//
// One private cluster is started per test binary from the machine's PostgreSQL server binaries (as
// the `postgres` user when the tests run as root), unless OCC_TEST_DATABASE_URL names an existing
// server through a superuser URL. A template database is migrated once; each test gets a clone
// (CREATE DATABASE … TEMPLATE …), so tests run in parallel without sharing rows.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/devstack"
	"github.com/openclaw/occ/internal/store"
)

// Role names the harness creates. They mirror production: an owner that migrates and an
// application role with only the granted privileges.
const (
	OwnerRole = "occ_test_owner"
	AppRole   = "occ_app"
	password  = "occ-test"
)

type cluster struct {
	adminURL string // superuser URL, database "postgres"
	template string
	stop     func()
}

var (
	current   *cluster
	dbCounter atomic.Int64
	createMu  sync.Mutex
)

// Main starts the cluster, runs the tests and stops it. Exits the process.
func Main(m interface{ Run() int }) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m interface{ Run() int }) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := start(ctx)
	cancel()
	if err != nil {
		return 1, err
	}
	current = c
	defer c.stop()
	return m.Run(), nil
}

func start(ctx context.Context) (*cluster, error) {
	c := &cluster{stop: func() {}}
	if u := os.Getenv("OCC_TEST_DATABASE_URL"); u != "" {
		c.adminURL = u
	} else {
		adminURL, stop, err := startPrivateServer(ctx, false)
		if err != nil {
			return nil, err
		}
		c.adminURL, c.stop = adminURL, stop
	}
	if err := c.prepare(ctx); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// prepare creates the roles and the migrated template database.
func (c *cluster) prepare(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, c.adminURL)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer admin.Close(ctx)
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN CREATEDB PASSWORD '%s'`, OwnerRole, password),
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, AppRole, password),
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil && !store.AlreadyExists(err) {
			return fmt.Errorf("create role: %w", err)
		}
	}
	c.template = fmt.Sprintf("occ_tmpl_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, c.template, OwnerRole)); err != nil {
		return fmt.Errorf("create template database: %w", err)
	}
	prevStop := c.stop
	c.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, c.adminURL); err == nil {
			_, _ = conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, c.template))
			conn.Close(ctx)
		}
		prevStop()
	}
	owner, err := pgx.Connect(ctx, c.url(OwnerRole, c.template))
	if err != nil {
		return fmt.Errorf("connect to template: %w", err)
	}
	defer owner.Close(ctx)
	if _, err := store.Migrate(ctx, owner, AppRole, nil); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	return nil
}

// url returns a URL for role on database db of the cluster.
func (c *cluster) url(role, db string) string {
	u, err := url.Parse(c.adminURL)
	if err != nil {
		panic(err)
	}
	u.User = url.UserPassword(role, password)
	u.Path = "/" + db
	return u.String()
}

// Database is one test's private database.
type Database struct {
	Name     string
	OwnerURL string // the migration owner (like OCC_MIGRATION_DATABASE_URL)
	AppURL   string // the application role (like OCC_DATABASE_URL)
	AdminURL string // superuser on the same database; for fault injection only
}

// New returns a fresh clone of the migrated template, dropped when the test ends.
func New(t testing.TB) *Database {
	t.Helper()
	return create(t, current.template)
}

// NewEmpty returns an empty database owned by the owner role (nothing migrated).
func NewEmpty(t testing.TB) *Database {
	t.Helper()
	return create(t, "template0")
}

func create(t testing.TB, template string) *Database {
	t.Helper()
	if current == nil {
		t.Fatal("pgtest: call pgtest.Main(m) from TestMain")
	}
	name := fmt.Sprintf("occ_t_%d_%d", os.Getpid(), dbCounter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, current.adminURL)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer admin.Close(ctx)
	createMu.Lock()
	_, err = admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s OWNER %s`, name, template, OwnerRole))
	createMu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, current.adminURL)
		if err != nil {
			t.Errorf("pgtest: connect for cleanup: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Errorf("pgtest: drop database: %v", err)
		}
	})
	return &Database{
		Name:     name,
		OwnerURL: current.url(OwnerRole, name),
		AppURL:   current.url(AppRole, name),
		AdminURL: withDatabase(current.adminURL, name),
	}
}

func withDatabase(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + db
	return u.String()
}

// Pool opens a pool on url that is closed when the test ends.
func Pool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// App opens a pool as the application role.
func (d *Database) App(t testing.TB) *pgxpool.Pool { return Pool(t, d.AppURL) }

// Owner opens a pool as the migration owner.
func (d *Database) Owner(t testing.TB) *pgxpool.Pool { return Pool(t, d.OwnerURL) }

// --- private server ----------------------------------------------------------------------------

// startPrivateServer initdbs and starts a cluster in a new temporary directory. Tests run it with
// fsync, synchronous_commit and full_page_writes off; durable keeps PostgreSQL's defaults
// (benchmarks that must pay for commits).
func startPrivateServer(ctx context.Context, durable bool) (string, func(), error) {
	bin, err := findBinaries()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "occ-pgtest-")
	if err != nil {
		return "", nil, err
	}
	cleanupDir := func() { _ = os.RemoveAll(dir) }
	cred, err := serverCredential(dir)
	if err != nil {
		cleanupDir()
		return "", nil, err
	}
	data := filepath.Join(dir, "data")
	initArgs := []string{"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"}
	if !durable {
		initArgs = append(initArgs, "--no-sync")
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), initArgs...)
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		cleanupDir()
		return "", nil, fmt.Errorf("initdb: %v: %s", err, out)
	}

	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			cleanupDir()
			return "", nil, err
		}
		pm, err := runServer(ctx, bin, data, dir, port, cred, durable)
		if err != nil {
			lastErr = err
			continue
		}
		adminURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		return adminURL, func() { pm.stop(); cleanupDir() }, nil
	}
	cleanupDir()
	return "", nil, fmt.Errorf("start postgres: %w", lastErr)
}

// postmaster is one running postgres process.
type postmaster struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile *os.File
}

// stop shuts the server down (fast shutdown), killing it if it does not stop within 20 s.
func (p *postmaster) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.logFile.Close()
}

// crash SIGKILLs the postmaster and then its whole process group (the postmaster leads its own
// group), so that no backend outlives it still attached to the shared memory a new postmaster
// must create, and waits until none is left.
func (p *postmaster) crash() error {
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-p.exited
	p.logFile.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		if !groupAlive(pid) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: processes of group %d survive SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupAlive reports whether a process of group pgid is still running. Zombies do not count: the
// reaper of an orphaned backend may be slow or absent, and a zombie holds no shared memory.
func groupAlive(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may contain spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 3 && f[0] != "Z" && f[0] != "X" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

func runServer(ctx context.Context, bin, data, sockDir string, port int, cred *syscall.Credential, durable bool) (*postmaster, error) {
	logFile, err := os.OpenFile(filepath.Join(sockDir, fmt.Sprintf("postgres-%d.log", port)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := []string{"-D", data, "-p", strconv.Itoa(port), "-k", sockDir, "-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB"}
	if !durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = sockDir
	// Pdeathsig: if the test binary dies, the postmaster gets an immediate shutdown instead of
	// outliving it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &postmaster{cmd: cmd, exited: make(chan struct{}), logFile: logFile}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	adminURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	// A start after a crash replays the WAL first: allow for it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.exited:
			log, _ := os.ReadFile(logFile.Name())
			logFile.Close()
			return nil, fmt.Errorf("postgres exited during startup: %s", log)
		default:
		}
		pingCtx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(pingCtx, adminURL)
		cancel()
		if err == nil {
			conn.Close(ctx)
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("postgres did not accept connections: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serverCredential returns the identity to run PostgreSQL as (devstack.ServerUser: the current
// user, or `postgres` as root) and gives it the cluster directory.
func serverCredential(dir string) (*syscall.Credential, error) {
	cred, err := devstack.ServerUser()
	if err != nil || cred == nil {
		return nil, err
	}
	return cred, os.Chown(dir, int(cred.Uid), int(cred.Gid))
}

// findBinaries locates initdb and postgres the way `occ dev` does.
func findBinaries() (string, error) {
	dir, err := devstack.FindBinaries()
	if err != nil {
		return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found: install them " +
			"(Debian: apt-get install postgresql) or set OCC_TEST_DATABASE_URL to a superuser URL")
	}
	return dir, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
