package devstack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// RootStateDir is the default state directory when running as root: PostgreSQL runs as the
// postgres user, which must be able to reach the data directory, and /root is private.
const RootStateDir = "/var/lib/occ/dev"

// DefaultStateDir is $XDG_STATE_HOME/occ/dev, else ~/.local/state/occ/dev, else (as root without
// XDG_STATE_HOME) RootStateDir.
func DefaultStateDir(lookup func(string) (string, bool)) (string, error) {
	if v, ok := lookup("XDG_STATE_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "occ", "dev"), nil
	}
	if os.Geteuid() == 0 {
		return RootStateDir, nil
	}
	home, ok := lookup("HOME")
	if !ok || !filepath.IsAbs(home) {
		return "", errors.New("HOME is not set: pass --state-dir")
	}
	return filepath.Join(home, ".local", "state", "occ", "dev"), nil
}

// State is an opened, locked state directory.
type State struct {
	Dir  string
	lock *os.File
}

// Paths inside the state directory.
func (s *State) PostgresDir() string       { return filepath.Join(s.Dir, "postgres") }
func (s *State) CredentialsFile() string   { return filepath.Join(s.Dir, "postgres-credentials.json") }
func (s *State) ServiceKeyFile() string    { return filepath.Join(s.Dir, "bootstrap-key.json") }
func (s *State) StartupConfigFile() string { return filepath.Join(s.Dir, "installation.yaml") }
func (s *State) ConfigurationRoot() string { return filepath.Join(s.Dir, "configurations") }
func (s *State) SecretRoot() string        { return filepath.Join(s.Dir, "secrets") }
func (s *State) WorkerMarkerDir() string   { return filepath.Join(s.Dir, "worker") }

// ComputeFile records the Compute Driver the last run selected, so that --reset knows what the
// old Installation's Compute made.
func (s *State) ComputeFile() string { return filepath.Join(s.Dir, "compute") }

// ErrLocked means another `occ dev` uses the state directory.
var ErrLocked = errors.New("another occ dev is running with this state directory")

const lockName = "lock"

// SetOwner writes a line about the running occ dev (its process and URL) into the lock file, for
// the message a second occ dev prints.
func (s *State) SetOwner(owner string) error {
	if err := s.lock.Truncate(0); err != nil {
		return err
	}
	_, err := s.lock.WriteAt([]byte(owner+"\n"), 0)
	return err
}

// LockOwner is what the occ dev holding dir's lock wrote with SetOwner ("" when unknown).
func LockOwner(dir string) string {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, line)
}

// OpenState creates dir (0700, or 0711 when others must traverse it to reach PostgreSQL's data) and
// takes its lock, released when the process ends, however it ends.
func OpenState(dir string, traversable bool) (*State, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	mode := os.FileMode(0o700)
	if traversable {
		mode = 0o711
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return nil, err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s belongs to another user", dir)
	}
	if err := os.Chmod(dir, mode); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, err
	}
	return &State{Dir: dir, lock: f}, nil
}

// Reset removes everything in the state directory except the lock.
func (s *State) Reset() error {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == lockName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.Dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the lock.
func (s *State) Close() error { return s.lock.Close() }
