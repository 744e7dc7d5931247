package devstack

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestDockerAnswersOnlyWhenTheEnginePings(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			_, _ = w.Write([]byte("OK"))
			return
		}
		http.NotFound(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	if !DockerAnswers(context.Background(), socket) {
		t.Fatal("a pinging engine was not detected")
	}
	if DockerAnswers(context.Background(), filepath.Join(t.TempDir(), "none.sock")) {
		t.Fatal("a missing socket answered")
	}
}

func TestDockerSocket(t *testing.T) {
	t.Parallel()
	lookup := func(v string) func(string) (string, bool) {
		return func(string) (string, bool) { return v, v != "" }
	}
	for _, tc := range []struct {
		host, socket string
		ok           bool
	}{
		{"", DefaultDockerSocket, true},
		{"unix:///run/user/1000/docker.sock", "/run/user/1000/docker.sock", true},
		{"tcp://10.0.0.1:2375", "", false},
	} {
		socket, ok := DockerSocket(lookup(tc.host))
		if socket != tc.socket || ok != tc.ok {
			t.Errorf("%q: %q %v", tc.host, socket, ok)
		}
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Parallel()
	got, err := DefaultStateDir(func(k string) (string, bool) {
		if k == "XDG_STATE_HOME" {
			return "/x/state", true
		}
		return "", false
	})
	if err != nil || got != "/x/state/occ/dev" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestStateLockIsExclusive(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	first, err := OpenState(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenState(dir, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	first.Close()
	second, err := OpenState(dir, false)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	second.Close()
}

func TestPrefixedLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	out := NewOutput(&buf)
	w := out.Prefixed("api")
	_, _ = w.Write([]byte("one\ntw"))
	_, _ = w.Write([]byte("o\nthree"))
	w.Flush()
	if buf.String() != "api | one\napi | two\napi | three\n" {
		t.Fatalf("%q", buf.String())
	}
}

func TestCheckReachable(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "occ-reach-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	stranger := &syscall.Credential{Uid: 54321, Gid: 54321}
	if err := CheckReachable(base, stranger); err != nil {
		t.Fatalf("traversable: %v", err)
	}
	if err := CheckReachable(filepath.Join(private, "state"), stranger); err == nil || !strings.Contains(err.Error(), private) {
		t.Fatalf("private: %v", err)
	}
	if err := CheckReachable(filepath.Join(private, "state"), nil); err != nil {
		t.Fatalf("current user: %v", err)
	}
}
