// Package devstack is the machinery of `occ dev`: a private PostgreSQL cluster kept in a per-user
// state directory, child processes with prefixed output, and the Docker Engine probe.
//
// FindBinaries and ServerUser are shared with the test harness (internal/testkit/pgtest); the rest
// differs on purpose: this cluster is durable, password-protected and lives as long as the
// developer's data, the test clusters are throw-away.
package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Role and database names of the development cluster.
const (
	SuperuserRole = "postgres"
	MigratorRole  = "occ_migrator"
	AppRole       = "occ_app"
	DatabaseName  = "occ"
)

// ErrBinariesNotFound is returned when initdb and postgres cannot be found.
var ErrBinariesNotFound = errors.New("the PostgreSQL server binaries (initdb, postgres) were not found on PATH or under " +
	"/usr/lib/postgresql/*/bin; install them (Debian/Ubuntu: apt-get install postgresql) or set OCC_DATABASE_URL " +
	"to use an existing server")

// FindBinaries locates initdb and postgres: on PATH, else the newest /usr/lib/postgresql/*/bin.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			p = resolved
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return versionOf(matches[i]) > versionOf(matches[j]) })
	for _, m := range matches {
		if _, err := os.Stat(filepath.Join(filepath.Dir(m), "postgres")); err == nil {
			return filepath.Dir(m), nil
		}
	}
	return "", ErrBinariesNotFound
}

func versionOf(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// ServerUser is the identity PostgreSQL runs as: nil for the current user, or the `postgres` user
// when running as root (PostgreSQL refuses to run as root).
func ServerUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root needs a `postgres` user to run PostgreSQL as (PostgreSQL refuses to run as root)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// CheckReachable reports an error naming the first directory on the way to dir that cred (the
// server's identity) cannot enter. A nil cred is the current user: nothing to check.
func CheckReachable(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err == nil {
			st := info.Sys().(*syscall.Stat_t)
			mode := info.Mode().Perm()
			ok := mode&0o001 != 0 || (st.Uid == cred.Uid && mode&0o100 != 0) || (st.Gid == cred.Gid && mode&0o010 != 0)
			if !ok {
				return fmt.Errorf("PostgreSQL runs as the postgres user, which cannot enter %s (mode %04o); "+
					"choose a --state-dir it can reach, such as %s", d, mode, RootStateDir)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// Credentials are the generated passwords of the development cluster, kept in a 0600 file.
type Credentials struct {
	Superuser string `json:"superuserPassword"`
	Migrator  string `json:"migratorPassword"`
	App       string `json:"appPassword"`
}

func randomSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// LoadOrCreateCredentials reads path, or creates it with new passwords when create is true.
func LoadOrCreateCredentials(path string, create bool) (Credentials, error) {
	var c Credentials
	data, err := os.ReadFile(path)
	if err == nil {
		if err := json.Unmarshal(data, &c); err != nil || c.Superuser == "" || c.Migrator == "" || c.App == "" {
			return c, fmt.Errorf("%s is damaged; start over with --reset", path)
		}
		return c, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	if !create {
		return c, fmt.Errorf("%s is missing but the PostgreSQL data exists; start over with --reset", path)
	}
	c = Credentials{Superuser: randomSecret(), Migrator: randomSecret(), App: randomSecret()}
	data, _ = json.MarshalIndent(c, "", "  ")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return c, err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return c, err
	}
	return c, f.Close()
}

// Postgres is a private, durable PostgreSQL cluster in Dir.
type Postgres struct {
	Dir  string // owned by the server user; holds data/ and postgres.log
	Bin  string // directory of initdb and postgres
	Cred *syscall.Credential
	Port int

	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// DataDir is the cluster's data directory.
func (p *Postgres) DataDir() string { return filepath.Join(p.Dir, "data") }

// Initialized reports whether the data directory holds a cluster.
func (p *Postgres) Initialized() bool {
	_, err := os.Stat(filepath.Join(p.DataDir(), "PG_VERSION"))
	return err == nil
}

// Version is the major version of the server binaries (from `postgres --version`).
func (p *Postgres) Version() string {
	out, err := exec.Command(filepath.Join(p.Bin, "postgres"), "--version").Output()
	if err != nil {
		return "?"
	}
	// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	_, rest, _ := strings.Cut(string(out), "(PostgreSQL)")
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// Prepare creates Dir with the right owner and runs initdb when the cluster does not exist yet.
func (p *Postgres) Prepare(ctx context.Context, superuserPassword string) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(p.Dir, 0o700); err != nil {
		return err
	}
	if p.Cred != nil {
		if err := os.Chown(p.Dir, int(p.Cred.Uid), int(p.Cred.Gid)); err != nil {
			return err
		}
	}
	if p.Initialized() {
		return nil
	}
	_ = os.RemoveAll(p.DataDir()) // a half-finished initdb
	pwfile := filepath.Join(p.Dir, "initdb-password")
	if err := os.WriteFile(pwfile, []byte(superuserPassword+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	if p.Cred != nil {
		if err := os.Chown(pwfile, int(p.Cred.Uid), int(p.Cred.Gid)); err != nil {
			return err
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(p.Bin, "initdb"), "-D", p.DataDir(), "-U", SuperuserRole,
		"--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "--pwfile="+pwfile, "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.Cred}
	initdb.Dir = p.Dir
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(p.DataDir())
		return fmt.Errorf("initdb failed: %v\n%s", err, out)
	}
	return nil
}

// Start starts the server on a free loopback port and waits until it accepts connections.
func (p *Postgres) Start(ctx context.Context, superuserPassword string) error {
	var lastErr error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			return err
		}
		if err := p.start(ctx, port, superuserPassword); err != nil {
			lastErr = err
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		return nil
	}
	return lastErr
}

func (p *Postgres) start(ctx context.Context, port int, password string) error {
	logPath := filepath.Join(p.Dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	offset, _ := logFile.Seek(0, 2)
	cmd := exec.Command(filepath.Join(p.Bin, "postgres"), "-D", p.DataDir(), "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=100")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = p.Dir
	// Own process group: a terminal's Ctrl-C reaches occ dev only, which stops the server last.
	// Pdeathsig: if occ dev is killed, the postmaster gets an immediate shutdown.
	cmd.SysProcAttr = procAttr(p.Cred, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited, p.log, p.Port = cmd, exited, logFile, port
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		pingCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(pingCtx, p.URL(SuperuserRole, password, "postgres"))
		cancel()
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			logFile.Close()
			p.cmd = nil
			return fmt.Errorf("PostgreSQL exited during startup; its log says:\n%s", tail(logPath, offset))
		case <-ctx.Done():
			p.Stop()
			return ctx.Err()
		case <-deadline:
			p.Stop()
			return fmt.Errorf("PostgreSQL did not accept connections within 60 s: %v", err)
		case <-tick.C:
		}
	}
}

func tail(path string, offset int64) string {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < offset {
		return ""
	}
	return strings.TrimSpace(string(data[offset:]))
}

// Stop shuts the server down (fast shutdown; immediate after 30 s) and waits for it.
func (p *Postgres) Stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	p.log.Close()
	p.cmd = nil
}

// URL is a connection URL for role on database db of the running server.
func (p *Postgres) URL(role, password, db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(role, password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// EnsureRolesAndDatabase creates (or re-keys) the migration owner and the application role and
// the database owned by the migration owner. Idempotent.
func (p *Postgres) EnsureRolesAndDatabase(ctx context.Context, creds Credentials) error {
	conn, err := pgx.Connect(ctx, p.URL(SuperuserRole, creds.Superuser, "postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for role, pw := range map[string]string{MigratorRole: creds.Migrator, AppRole: creds.App} {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
			return err
		}
		verb := "CREATE"
		if exists {
			verb = "ALTER"
		}
		stmt := fmt.Sprintf(`%s ROLE %s LOGIN PASSWORD %s`, verb, pgx.Identifier{role}.Sanitize(), quoteLiteral(pw))
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, DatabaseName).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, DatabaseName, MigratorRole)); err != nil {
			return err
		}
	}
	return nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// FreePort returns a currently free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
