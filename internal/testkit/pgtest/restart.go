package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/store"
)

// Server is a private PostgreSQL cluster that can be stopped and started again on the same port
// and data directory (chaos tests restart PostgreSQL under running clients). Start it with
// StartRestartableServer; Close stops it and removes its data.
type Server struct {
	// AdminURL is a superuser URL on the database "postgres"; it stays valid across restarts.
	AdminURL string

	mu      sync.Mutex
	bin     string
	dir     string
	data    string
	port    int
	cred    *syscall.Credential
	durable bool
	pm      *postmaster // nil while the server is down
}

// StartRestartableServer initdbs and starts a cluster like StartServer, keeping what Restart
// needs.
func StartRestartableServer(ctx context.Context, o ServerOptions) (*Server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "occ-pgtest-")
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, data: filepath.Join(dir, "data"), cred: cred, durable: o.Durable}
	initArgs := []string{"-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"}
	if !o.Durable {
		initArgs = append(initArgs, "--no-sync")
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), initArgs...)
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	var lastErr error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			break
		}
		if s.pm, lastErr = runServer(ctx, bin, s.data, dir, s.port, cred, o.Durable); lastErr == nil {
			s.AdminURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("start postgres: %w", errors.Join(err, lastErr))
}

// Stop shuts the server down (fast shutdown: sessions are terminated, committed data is kept).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pm != nil {
		s.pm.stop()
		s.pm = nil
	}
}

// Crash kills the server as a machine failure would: SIGKILL of the postmaster and of every
// process it started, nothing flushed, no shutdown checkpoint. The next Start recovers from the
// WAL; only a Durable server is guaranteed to keep every committed transaction.
func (s *Server) Crash() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pm == nil {
		return nil
	}
	err := s.pm.crash()
	s.pm = nil
	return err
}

// LogPath is the server's log file; it accumulates across restarts.
func (s *Server) LogPath() string {
	return filepath.Join(s.dir, fmt.Sprintf("postgres-%d.log", s.port))
}

// Start starts a stopped (or crashed) server again on the same port and data directory.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pm != nil {
		return nil
	}
	// After a crash the kernel may still count the old server's shared memory as attached for a
	// moment after its last process is gone (seen under load); PostgreSQL then refuses to start
	// ("pre-existing shared memory block ... is still in use"), and a later attempt succeeds.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pm, err := runServer(ctx, s.bin, s.data, s.dir, s.port, s.cred, s.durable)
		if err == nil {
			s.pm = pm
			return nil
		}
		if !strings.Contains(err.Error(), "pre-existing shared memory block") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Close stops the server and removes its data directory.
func (s *Server) Close() {
	s.Stop()
	_ = os.RemoveAll(s.dir)
}

// NewDatabase creates the harness roles (if missing) and a migrated database on the server, as
// pgtest.New does on the shared cluster. It is not dropped: Close removes the whole server.
func (s *Server) NewDatabase(ctx context.Context, name string) (*Database, error) {
	c := &cluster{adminURL: s.AdminURL}
	admin, err := pgx.Connect(ctx, s.AdminURL)
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN CREATEDB PASSWORD '%s'`, OwnerRole, password),
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, AppRole, password),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, name, OwnerRole),
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil && !store.AlreadyExists(err) {
			return nil, err
		}
	}
	owner, err := pgx.Connect(ctx, c.url(OwnerRole, name))
	if err != nil {
		return nil, err
	}
	defer owner.Close(ctx)
	if _, err := store.Migrate(ctx, owner, AppRole, nil); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return &Database{Name: name, OwnerURL: c.url(OwnerRole, name), AppURL: c.url(AppRole, name),
		AdminURL: withDatabase(s.AdminURL, name)}, nil
}
