package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientContexts: the config file's contexts supply URL, credentials and Namespace; flags and
// environment variables win; the file is 0600 in a 0700 directory and a loose mode is refused.
func TestClientContexts(t *testing.T) {
	t.Parallel()
	api := startClientAPI(t)
	home := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": home}
	path := filepath.Join(home, "occ", "config.yaml")
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{"XDG_CONFIG_HOME": home}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}

	if r := run(env, "namespace", "list"); r.code != 2 || !strings.Contains(r.stderr, "no API URL") || !strings.Contains(r.stderr, "occ dev writes the context dev") {
		t.Fatalf("no context: %+v", r)
	}
	if r := mustSucceed(t, run(env, "config", "get-contexts"), "get-contexts"); !strings.HasPrefix(r.stdout, "No contexts in "+path) {
		t.Fatalf("empty: %q", r.stdout)
	}
	if r := mustSucceed(t, run(env, "config", "set-context", "local", "--url", api.url+"/", "--service-key-file", api.keyFile, "--namespace", "default"),
		"set-context"); r.stdout != "Created context local in "+path+".\n" {
		t.Fatalf("set-context: %q", r.stdout)
	}
	if r := run(env, "config", "current-context"); r.code != 1 || !strings.Contains(r.stderr, "no current context") {
		t.Fatalf("current-context before use: %+v", r)
	}
	if r := mustSucceed(t, run(env, "config", "use-context", "local"), "use-context"); r.stdout != "Switched to context local.\n" {
		t.Fatalf("use-context: %q", r.stdout)
	}
	if r := mustSucceed(t, run(env, "config", "current-context"), "current-context"); r.stdout != "local\n" {
		t.Fatalf("current-context: %q", r.stdout)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
			t.Fatalf("%s: %v %v", p, info.Mode(), err)
		}
	}
	raw, _ := os.ReadFile(path)
	for _, want := range []string{"currentContext: local", "serviceKeyFile: " + api.keyFile, "url: " + api.url + "\n", "namespace: default"} {
		if !strings.Contains(string(raw), want) {
			t.Fatalf("config file lacks %q:\n%s", want, raw)
		}
	}

	// The context supplies everything; its Namespace is a name.
	golden(t, "namespace-list.table", mustSucceed(t, run(env, "namespace", "list"), "namespace list from the context").stdout)
	if r := mustSucceed(t, run(env, "iam", "role", "list"), "role list in the context's Namespace"); r.stdout != "No resources found.\n" {
		t.Fatalf("role list: %q", r.stdout)
	}
	// Flags and environment variables win over the context.
	for _, r := range []result{
		run(env, "namespace", "list", "--url", "http://127.0.0.1:1"),
		run(with(map[string]string{"OCC_URL": "http://127.0.0.1:1"}), "namespace", "list"),
	} {
		if r.code != 1 || !strings.Contains(r.stderr, "cannot reach http://127.0.0.1:1") {
			t.Fatalf("override: %+v", r)
		}
	}
	if r := run(with(map[string]string{"OCC_NAMESPACE": "team-nowhere"}), "iam", "role", "list"); r.code != 1 || !strings.Contains(r.stderr, "no Namespace named team-nowhere") {
		t.Fatalf("OCC_NAMESPACE: %+v", r)
	}
	// --context and OCC_CONTEXT select another context for one command.
	mustSucceed(t, run(env, "config", "set-context", "broken", "--url", "http://127.0.0.1:1", "--service-key-file", api.keyFile), "second context")
	for _, r := range []result{
		run(env, "namespace", "list", "--context", "broken"),
		run(with(map[string]string{"OCC_CONTEXT": "broken"}), "namespace", "list"),
	} {
		if r.code != 1 || !strings.Contains(r.stderr, "cannot reach http://127.0.0.1:1") {
			t.Fatalf("--context: %+v", r)
		}
	}
	if r := run(env, "namespace", "list", "--context", "nowhere"); r.code != 2 || !strings.Contains(r.stderr, "there is no context nowhere") {
		t.Fatalf("unknown --context: %+v", r)
	}
	table := mustSucceed(t, run(env, "config", "get-contexts"), "get-contexts").stdout
	if !strings.Contains(table, "*         local ") || !strings.Contains(table, "-         broken ") {
		t.Fatalf("get-contexts:\n%s", table)
	}
	if r := mustSucceed(t, run(env, "config", "get-contexts", "-o", "name"), "get-contexts -o name"); r.stdout != "broken\nlocal\n" {
		t.Fatalf("-o name: %q", r.stdout)
	}
	if r := run(env, "__complete", "config", "use-context", ""); r.code != 0 || r.stdout != "broken\nlocal\n:4\n" {
		t.Fatalf("completion: %q", r.stdout)
	}
	// An empty value clears a field.
	mustSucceed(t, run(env, "config", "set-context", "local", "--namespace", ""), "clear namespace")
	if raw, _ := os.ReadFile(path); strings.Contains(string(raw), "namespace: default") {
		t.Fatalf("namespace not cleared:\n%s", raw)
	}
	if r := run(env, "config", "set-context", "bad", "--url", "ftp://x"); r.code != 2 {
		t.Fatalf("bad url: %+v", r)
	}
	if r := run(env, "config", "set-context", "bad", "--service-key-file", filepath.Join(home, "missing.json")); r.code != 2 {
		t.Fatalf("missing key file: %+v", r)
	}
	if r := mustSucceed(t, run(env, "config", "delete-context", "local"), "delete-context"); !strings.Contains(r.stdout, "There is no current context now") {
		t.Fatalf("delete-context: %q", r.stdout)
	}
	if r := run(env, "config", "use-context", "local"); r.code != 2 {
		t.Fatalf("use a deleted context: %+v", r)
	}

	// A file others may read is refused: it names credentials.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(env, "namespace", "list", "--context", "broken"); r.code != 2 || !strings.Contains(r.stderr, "chmod 600 "+path) {
		t.Fatalf("loose mode: %+v", r)
	}
}
