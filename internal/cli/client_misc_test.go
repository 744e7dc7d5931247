package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// complete runs the shell completion of a command line (the word being completed last).
func complete(t *testing.T, env map[string]string, args ...string) []string {
	t.Helper()
	r := run(env, append([]string{"__complete"}, args...)...)
	if r.code != 0 || strings.Contains(r.stderr, "Error") {
		t.Fatalf("__complete %v: %+v", args, r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	return lines
}

// TestClientCompletion: resource names and ids come from the API, flag values from fixed lists;
// an API that does not answer completes nothing, quietly; the shell scripts are generated.
func TestClientCompletion(t *testing.T) {
	t.Parallel()
	api := startSimulatedStack(t)
	env := map[string]string{"OCC_URL": api.url, "OCC_SERVICE_KEY_FILE": api.keyFile}
	waitNamespaceReady(t, api, "default")
	cfg := strings.TrimSpace(mustSucceed(t, api.occIn(map[string]string{"OCC_NAMESPACE": "default"}, `{"kind":"agent","values":{}}`,
		"configuration", "create", "-f", "-", "-o", "name"), "configuration").stdout)
	agent := strings.TrimSpace(mustSucceed(t, api.occ(map[string]string{"OCC_NAMESPACE": "default"}, "agent", "create", "tour",
		"--configuration", cfg, "-o", "name"), "agent").stdout)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"namespace", "get", ""}, []string{"default\t" + api.defaultNS + " ready", ":4"}},
		{[]string{"namespace", "get", "def"}, []string{"default\t" + api.defaultNS + " ready", ":4"}},
		{[]string{"namespace", "get", "ns_"}, []string{api.defaultNS + "\tdefault ready", ":4"}},
		{[]string{"agent", "deploy", "-n", "default", ""}, []string{"tour\t" + agent + " active", ":4"}},
		{[]string{"agent", "list", "--namespace", ""}, []string{"default\t" + api.defaultNS + " ready", ":4"}},
		{[]string{"namespace", "list", "-o", ""}, []string{"table", "wide", "name", "json", "yaml", ":4"}},
		{[]string{"agent", "create", "x", "--auth", ""}, []string{"runtime", "api_key", "codex_pat", ":4"}},
		{[]string{"agent", "create", "x", "--mode", ""}, []string{"embedded", "dedicated", ":4"}},
		{[]string{"dev", "--compute", ""}, []string{"auto", "docker", "simulated", "kubernetes", ":4"}},
		{[]string{"namespace", "get", "default", ""}, []string{":4"}},
	} {
		if got := complete(t, env, tc.args...); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
	// No API: nothing to offer, no error, and quickly.
	started := time.Now()
	if got := complete(t, map[string]string{"OCC_URL": "http://127.0.0.1:1", "OCC_SERVICE_KEY_FILE": api.keyFile}, "namespace", "get", ""); len(got) != 1 || got[0] != ":4" {
		t.Fatalf("unreachable: %q", got)
	}
	if time.Since(started) > 10*time.Second {
		t.Fatalf("completion against a dead API took %s", time.Since(started))
	}
	for shell, want := range map[string]string{"bash": "__start_occ", "zsh": "#compdef occ", "fish": "complete -c occ"} {
		if r := run(nil, "completion", shell); r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: %d %.200q", shell, r.code, r.stdout)
		}
	}
}

// TestClientErrorsThatHelp: details with their messages, the flag that fixes a Docker deploy,
// the follow-up command on Ctrl-C, replies that are not OCC's, and grammatical messages.
func TestClientErrorsThatHelp(t *testing.T) {
	t.Parallel()
	ns, agent, rev := fakeNamespace, fakeAgent, fakeRevision
	var polled atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/namespaces" && r.Method == http.MethodPost:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":"INVALID_REQUEST","message":"The request is invalid.","details":[{"path":"/name","code":"INVALID_VALUE","message":"must be one of: a, b"},{"path":"/x","code":"UNKNOWN_FIELD"}]}}`)
		case r.URL.Path == "/namespaces/"+ns+"/agents/"+agent+"/deploy":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"data":{"id":%q,"revision":3}}`, rev)
		case strings.HasSuffix(r.URL.Path, "/deployments/"+rev):
			if polled.Add(1) > 1 {
				<-r.Context().Done() // the second poll is in flight when the test cancels
				return
			}
			fmt.Fprintf(w, `{"data":{"deploymentId":%q,"status":"queued","progress":{"lastAttempt":null,"nextAttemptAt":null},"error":null,"warnings":[]}}`, rev)
		case r.URL.Path == "/installation":
			fmt.Fprint(w, `{"hello":"world"}`)
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "<html>not here</html>")
		}
	}))
	defer srv.Close()
	keyFile := writeJSON(t, map[string]any{"data": map[string]any{"key": "occ_sk_test"}})
	env := map[string]string{"OCC_URL": srv.URL, "OCC_SERVICE_KEY_FILE": keyFile, "OCC_NAMESPACE": ns}

	r := run(env, "namespace", "create", "x")
	if r.code != 1 || r.stderr != "Error: 400 INVALID_REQUEST: The request is invalid.\n  /name: INVALID_VALUE: must be one of: a, b\n  /x: UNKNOWN_FIELD\n" {
		t.Fatalf("details: %q", r.stderr)
	}
	r = run(env, "namespace", "list")
	if r.code != 1 || !strings.Contains(r.stderr, "the server at "+srv.URL+" answered 404 Not Found with a body that is not an OCC response. Is --url the OCC API?") {
		t.Fatalf("not OCC (error): %+v", r)
	}
	r = run(env, "installation", "get")
	if r.code != 1 || !strings.Contains(r.stderr, "answered 200 with a body that is not an OCC response. Is --url the OCC API?") {
		t.Fatalf("not OCC (success): %+v", r)
	}
	// Ctrl-C during deploy --wait, while a poll is in flight, names the command that follows the
	// deployment.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for polled.Load() < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	r = runIn(ctx, env, "", "agent", "deploy", agent, "--wait")
	if r.code != 1 || !strings.Contains(r.stderr, "Stopped waiting; deployment "+rev+" continues. Follow it with: occ agent deployment-status "+agent+" "+rev+"\n") {
		t.Fatalf("Ctrl-C: %+v", r)
	}
	if r := run(env, "agent", "get", "cfg_00000000-0000-4000-8000-000000000000"); r.code != 2 || !strings.Contains(r.stderr, " is not an Agent id (agt_…).") {
		t.Fatalf("article: %+v", r)
	}
	if r := run(nil, "iam", "access-binding", "--help"); !strings.Contains(r.stdout, "Create an AccessBinding from") {
		t.Fatalf("help: %q", r.stdout)
	}
}

// TestClientDockerDeployNamesTheFix: the real API on the Docker Compute Driver refuses a deploy
// with 409 HARNESS_AUTH_UNSUPPORTED; the client adds the occ dev flag that fixes it.
func TestClientDockerDeployNamesTheFix(t *testing.T) {
	t.Parallel()
	// The API on the development defaults (Docker Compute); a simulated worker makes the
	// Namespace ready, which needs no Docker Engine.
	roots := t.TempDir()
	api, stack := startAPIAndWorkerEnv(t, func(env map[string]string) {
		delete(env, "OCC_CONFIG_PATH")
		env["OCC_DEVELOPMENT_CONFIGURATION_ROOT"] = filepath.Join(roots, "configurations")
		env["OCC_DEVELOPMENT_SECRET_ROOT"] = filepath.Join(roots, "secrets")
	})
	stack.startWorker(t)
	ns := map[string]string{"OCC_NAMESPACE": "default"}
	waitNamespaceReady(t, api, "default")
	cfg := strings.TrimSpace(mustSucceed(t, api.occIn(ns, `{"kind":"agent","values":{}}`, "configuration", "create", "-f", "-", "-o", "name"), "configuration").stdout)
	mustSucceed(t, api.occ(ns, "agent", "create", "tour", "--configuration", cfg, "--auth", "runtime"), "agent")
	r := api.occ(ns, "agent", "deploy", "tour")
	if r.code != 1 || !strings.Contains(r.stderr, "Error: 409 HARNESS_AUTH_UNSUPPORTED: ") ||
		!strings.Contains(r.stderr, "Hint: this OCC's Compute Driver cannot deploy Agents. Locally, restart occ dev with --compute simulated") {
		t.Fatalf("docker deploy: %+v", r)
	}
}

// TestClientAuditKeysAccountsAndVersion: audit list with filters and pages, the service key list
// read from the audit log, service accounts, whoami, account create and version.
func TestClientAuditKeysAccountsAndVersion(t *testing.T) {
	t.Parallel()
	api := startClientAPI(t)
	var boot struct{ Data struct{ ID string } }
	raw, _ := os.ReadFile(api.keyFile)
	_ = json.Unmarshal(raw, &boot)
	keys := mustSucceed(t, api.occ(nil, "service-key", "list"), "service-key list").stdout
	if !strings.Contains(keys, "*        "+boot.Data.ID+"   bootstrap-admin") {
		t.Fatalf("service-key list:\n%s", keys)
	}
	ns := map[string]string{"OCC_NAMESPACE": "default"}
	sp := jsonField(t, mustSucceed(t, api.occ(ns, "iam", "service-principal", "create", "-o", "json"), "sp").stdout, "id")
	keyFile := filepath.Join(t.TempDir(), "ci.json")
	ci := strings.TrimSpace(mustSucceed(t, api.occ(ns, "service-key", "create", "--service-principal", sp, "--name", "ci", "--out", keyFile, "-o", "name"), "key").stdout)
	if r := mustSucceed(t, api.occ(nil, "service-key", "list"), "list"); !strings.Contains(r.stdout, ci+"   ci ") {
		t.Fatalf("new key not listed:\n%s", r.stdout)
	}
	mustSucceed(t, api.occ(nil, "service-key", "revoke", ci), "revoke")
	if r := mustSucceed(t, api.occ(nil, "service-key", "list"), "list"); strings.Contains(r.stdout, ci) {
		t.Fatalf("revoked key listed:\n%s", r.stdout)
	}
	var all []struct {
		ID        string
		RevokedAt *string
	}
	_ = json.Unmarshal([]byte(mustSucceed(t, api.occ(nil, "service-key", "list", "--all", "-o", "json"), "list --all").stdout), &all)
	if len(all) != 2 || all[1].ID != ci || all[1].RevokedAt == nil {
		t.Fatalf("list --all: %+v", all)
	}

	mustSucceed(t, api.occ(ns, "service-account", "create", "builder"), "service-account create")
	if r := api.occ(ns, "service-account", "credential", "builder", "--kind", "api_key"); r.code != 2 {
		t.Fatalf("credential without its secret: %+v", r)
	}
	cred := api.occ(ns, "service-account", "credential", "builder", "--kind", "api_key", "--secret-name", "openai", "--secret-key", "token", "-o", "wide")
	if cred.code != 0 || !strings.Contains(cred.stdout, "openai/token") {
		t.Fatalf("service-account credential: %+v", cred)
	}

	who := mustSucceed(t, api.occ(nil, "whoami"), "whoami").stdout
	for _, want := range []string{"URL:         " + api.url, "service key " + boot.Data.ID + ` "bootstrap-admin"`, "Scope:       the Installation", "Accepted:    yes"} {
		if !strings.Contains(who, want) {
			t.Fatalf("whoami lacks %q:\n%s", want, who)
		}
	}
	if r := mustSucceed(t, api.occ(nil, "whoami", "-o", "json"), "whoami json"); !strings.Contains(r.stdout, `"accepted": true`) {
		t.Fatalf("whoami json: %s", r.stdout)
	}

	password := writeFile(t, "admin-password", "openclaw-development-password\n")
	account := api.occIn(nil, "a-new-password-1234\n", "account", "create", "person@example.com", "--name", "Person",
		"--password-file", "-", "--sign-in-email", "admin@openclaw.local", "--sign-in-password-file", password, "-o", "json")
	if account.code != 0 || jsonField(t, account.stdout, "email") != "person@example.com" || !strings.HasPrefix(jsonField(t, account.stdout, "principalId"), "prn_") {
		t.Fatalf("account create: %+v", account)
	}
	if r := api.occ(nil, "account", "create", "x@example.com", "--password-file", password); r.code != 2 || !strings.Contains(r.stderr, "a service key cannot create accounts") {
		t.Fatalf("account create without sign-in: %+v", r)
	}
	wrong := writeFile(t, "wrong", "not-the-password-at-all\n")
	if r := api.occ(nil, "account", "create", "x@example.com", "--password-file", password, "--sign-in-email", "admin@openclaw.local",
		"--sign-in-password-file", wrong); r.code != 1 || !strings.Contains(r.stderr, "401 UNAUTHENTICATED") {
		t.Fatalf("wrong sign-in password: %+v", r)
	}

	first := api.occ(nil, "audit", "list", "-A", "--limit", "2")
	if first.code != 0 || len(strings.Split(strings.TrimSpace(first.stdout), "\n")) != 3 || !strings.Contains(first.stderr, "More events: occ audit list -A --limit 2 --cursor ") {
		t.Fatalf("audit list page 1: %+v", first)
	}
	cursor := strings.TrimSpace(first.stderr[strings.LastIndex(first.stderr, "--cursor ")+len("--cursor "):])
	second := api.occ(nil, "audit", "list", "-A", "--limit", "2", "--cursor", cursor, "--no-headers")
	if second.code != 0 || second.stdout == "" || strings.Contains(first.stdout, strings.Split(second.stdout, "\n")[0]) {
		t.Fatalf("audit list page 2: %+v", second)
	}
	var events []struct{ Resource struct{ Kind string } }
	_ = json.Unmarshal([]byte(mustSucceed(t, api.occ(nil, "audit", "list", "-A", "--resource-kind", "namespace", "--since", "1h", "-o", "json"), "filtered").stdout), &events)
	if len(events) == 0 {
		t.Fatal("no namespace events")
	}
	for _, ev := range events {
		if ev.Resource.Kind != "namespace" {
			t.Fatalf("filter: %+v", events)
		}
	}
	if r := api.occ(nil, "audit", "list", "--since", "yesterday"); r.code != 2 {
		t.Fatalf("bad --since: %+v", r)
	}

	if r := mustSucceed(t, api.occ(nil, "version"), "version"); r.stdout != "Client: test\nServer: test ("+api.url+")\n" {
		t.Fatalf("version: %q", r.stdout)
	}
	if r := mustSucceed(t, api.occ(nil, "version", "-o", "json"), "version json"); jsonField(t, r.stdout, "serverVersion") != "test" {
		t.Fatalf("version json: %s", r.stdout)
	}
}

// TestClientWatchInterruptedDuringAFetch: Ctrl-C while a watch's fetch is in flight ends the watch
// with exit status 0, as between fetches. The server is a stand-in that answers the first read and
// holds the second until the client goes away.
func TestClientWatchInterruptedDuringAFetch(t *testing.T) {
	t.Parallel()
	ns := fakeNamespace
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/namespaces/"+ns {
			http.NotFound(w, r)
			return
		}
		if reads.Add(1) > 1 {
			<-r.Context().Done()
			return
		}
		fmt.Fprintf(w, `{"data":{"id":%q,"name":"team-x","status":"ready","createdAt":"2026-12-03T00:00:00Z","updatedAt":"2026-12-03T00:00:00Z"}}`, ns)
	}))
	defer srv.Close()
	keyFile := writeJSON(t, map[string]any{"data": map[string]any{"key": "occ_sk_test"}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for reads.Load() < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	r := runIn(ctx, map[string]string{"OCC_URL": srv.URL, "OCC_SERVICE_KEY_FILE": keyFile}, "", "namespace", "get", ns, "--watch")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("watch interrupted during a fetch: %+v", r)
	}
}
