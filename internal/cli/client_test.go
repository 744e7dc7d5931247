package cli_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/cli"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the client commands")

// clientAPI is an in-process occ api on a bootstrapped database.
type clientAPI struct {
	url, keyFile, defaultNS string
}

func startClientAPI(t *testing.T) clientAPI {
	t.Helper()
	db := pgtest.New(t)
	keyFile := filepath.Join(t.TempDir(), "bootstrap-key.json")
	r := run(bootstrapEnv(db, keyFile), "bootstrap")
	if r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	defaultNS, _ := lastEvent(t, r.stdout)["namespaceId"].(string)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	stdout := &lineWatcher{want: `"event":"listening"`, seen: make(chan struct{})}
	stderr := &lineWatcher{want: "\x00", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, cli.Env{Lookup: settings.MapLookup(map[string]string{
			"NODE_ENV": "development", "OCC_HOST": "127.0.0.1", "OCC_PORT": fmt.Sprint(port), "OCC_DATABASE_URL": db.AppURL,
			"OCC_AUTH_BASE_URL": fmt.Sprintf("http://127.0.0.1:%d", port),
		}), Stdout: stdout, Stderr: stderr, Version: "test"}, []string{"api"})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-stdout.seen:
	case code := <-done:
		t.Fatalf("occ api exited %d: %s", code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("occ api did not listen: %s", stderr.String())
	}
	return clientAPI{url: fmt.Sprintf("http://127.0.0.1:%d", port), keyFile: keyFile, defaultNS: defaultNS}
}

// occ runs a client command against the API with the bootstrap key.
func (a clientAPI) occ(env map[string]string, args ...string) result {
	full := map[string]string{"OCC_URL": a.url, "OCC_SERVICE_KEY_FILE": a.keyFile}
	for k, v := range env {
		full[k] = v
	}
	return run(full, args...)
}

var (
	uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z`)
)

// normalize replaces the values that differ between runs: uuids and timestamps keep their length,
// so table alignment is preserved.
func normalize(s string) string {
	s = uuidPattern.ReplaceAllString(s, "00000000-0000-4000-8000-000000000000")
	return timePattern.ReplaceAllString(s, "2026-01-01T00:00:00.000Z")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "client", name+".golden")
	got = normalize(got)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: output differs from %s\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}

func mustSucceed(t *testing.T, r result, what string) result {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%s: %+v", what, r)
	}
	return r
}

func writeJSON(t *testing.T, v any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "body.json")
	data, _ := json.Marshal(v)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func jsonField(t *testing.T, out, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not a JSON object: %q", out)
	}
	s, _ := m[name].(string)
	return s
}

func TestClientInstallationAndNamespaces(t *testing.T) {
	t.Parallel()
	api := startClientAPI(t)

	for _, o := range []string{"table", "json", "yaml"} {
		golden(t, "installation-get."+o, mustSucceed(t, api.occ(nil, "installation", "get", "-o", o), "installation get").stdout)
		golden(t, "namespace-list."+o, mustSucceed(t, api.occ(nil, "namespace", "list", "-o", o), "namespace list").stdout)
	}
	created := mustSucceed(t, api.occ(nil, "namespace", "create", "team-a", "-o", "json"), "namespace create")
	ns := jsonField(t, created.stdout, "id")
	if jsonField(t, created.stdout, "status") != "provisioning" || jsonField(t, created.stdout, "name") != "team-a" {
		t.Fatalf("created %s", created.stdout)
	}
	golden(t, "namespace-get.table", mustSucceed(t, api.occ(nil, "namespace", "get", ns), "namespace get").stdout)
	if r := api.occ(nil, "namespace", "get", ns, "-o", "yaml"); r.code != 0 || !strings.Contains(r.stdout, "name: team-a\n") {
		t.Fatalf("yaml: %+v", r)
	}

	// A conflict shows status, code and message on stderr and exits 1.
	r := api.occ(nil, "namespace", "create", "team-a")
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("duplicate: %+v", r)
	}
	golden(t, "namespace-create-conflict.stderr", r.stderr)
	// Ids are checked locally, with a hint.
	r = api.occ(nil, "namespace", "get", "agt_00000000-0000-4000-8000-000000000000")
	if r.code != 2 || !strings.Contains(r.stderr, "is not a Namespace id (ns_…). List them with: occ namespace list") {
		t.Fatalf("bad id: %+v", r)
	}
	r = api.occ(nil, "namespace", "get", "ns_00000000-0000-4000-8000-000000000000")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Error: 404 NOT_FOUND: ") {
		t.Fatalf("unknown: %+v", r)
	}
	if r := api.occ(nil, "namespace", "create", "x", "--existing-namespace", "Not_A_Label"); r.code != 2 {
		t.Fatalf("existing namespace: %+v", r)
	}
	deleted := mustSucceed(t, api.occ(nil, "namespace", "delete", ns, "--yes"), "namespace delete")
	if deleted.stdout != "Namespace "+ns+" is being deleted.\n" {
		t.Fatalf("delete: %q", deleted.stdout)
	}
	if r := api.occ(nil, "namespace", "delete", ns, "-o", "json", "--yes"); r.code != 0 || jsonField(t, r.stdout, "status") != "deleting" {
		t.Fatalf("repeated delete: %+v", r)
	}
}

func TestClientIAMAndServiceKeys(t *testing.T) {
	t.Parallel()
	api := startClientAPI(t)
	nsEnv := map[string]string{"OCC_NAMESPACE": api.defaultNS}

	if r := api.occ(nil, "iam", "role", "list"); r.code != 2 || !strings.Contains(r.stderr, "--namespace") {
		t.Fatalf("no namespace: %+v", r)
	}
	if r := mustSucceed(t, api.occ(nsEnv, "iam", "role", "list"), "role list"); r.stdout != "No resources found.\n" {
		t.Fatalf("empty list: %q", r.stdout)
	}
	if r := mustSucceed(t, api.occ(nsEnv, "iam", "role", "list", "-o", "json"), "role list json"); r.stdout != "[]\n" {
		t.Fatalf("empty json list: %q", r.stdout)
	}
	roleFile := writeJSON(t, map[string]any{"name": "readers", "permissions": []map[string]string{
		{"action": "read", "resourceKind": "namespace"}}})
	role := jsonField(t, mustSucceed(t, api.occ(nsEnv, "iam", "role", "create", "--file", roleFile, "-o", "json"), "role create").stdout, "id")
	golden(t, "role-list.table", mustSucceed(t, api.occ(nsEnv, "iam", "role", "list"), "role list").stdout)
	golden(t, "role-get.yaml", mustSucceed(t, api.occ(nsEnv, "iam", "role", "get", role, "-o", "yaml"), "role get").stdout)

	sp := jsonField(t, mustSucceed(t, api.occ(nsEnv, "iam", "service-principal", "create", "-o", "json"), "sp create").stdout, "id")
	golden(t, "service-principal-list.table", mustSucceed(t, api.occ(nsEnv, "iam", "service-principal", "list"), "sp list").stdout)
	mustSucceed(t, api.occ(nsEnv, "iam", "service-principal", "get", sp), "sp get")
	if r := api.occ(nsEnv, "iam", "service-principal", "get", "prn_00000000-0000-4000-8000-000000000000"); r.code != 2 ||
		!strings.Contains(r.stderr, "occ iam service-principal list") {
		t.Fatalf("wrong prefix: %+v", r)
	}

	bindingFile := writeJSON(t, map[string]any{"subjectKind": "identity", "subjectId": sp, "roleId": role,
		"resourceKind": "namespace", "resourceId": api.defaultNS})
	binding := jsonField(t, mustSucceed(t, api.occ(nsEnv, "iam", "access-binding", "create", "--file", bindingFile, "-o", "json"),
		"binding create").stdout, "id")
	golden(t, "access-binding-list.table", mustSucceed(t, api.occ(nsEnv, "iam", "access-binding", "list"), "binding list").stdout)
	mustSucceed(t, api.occ(nsEnv, "iam", "access-binding", "get", binding), "binding get")

	// A key for the ServicePrincipal: written to a new 0600 file, never printed.
	keyFile := filepath.Join(t.TempDir(), "sp-key.json")
	issued := mustSucceed(t, api.occ(nsEnv, "service-key", "create", "--service-principal", sp, "--name", "ci", "--out", keyFile,
		"--expires-in-days", "7"), "service-key create")
	info, err := os.Stat(keyFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	var doc struct {
		Data struct{ ID, Key, NamespaceID string } `json:"data"`
	}
	raw, _ := os.ReadFile(keyFile)
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Data.Key == "" || doc.Data.NamespaceID != api.defaultNS {
		t.Fatalf("key file content: %v", err)
	}
	if strings.Contains(issued.stdout, doc.Data.Key) || !strings.Contains(issued.stdout, "Wrote service key "+doc.Data.ID) {
		t.Fatalf("create output: %q", issued.stdout)
	}
	if r := api.occ(nsEnv, "service-key", "create", "--service-principal", sp, "--name", "ci", "--out", keyFile); r.code != 2 ||
		!strings.Contains(r.stderr, "already exists") {
		t.Fatalf("existing out file: %+v", r)
	}
	// The new key reads the Namespace it was granted, and nothing else.
	asSP := map[string]string{"OCC_SERVICE_KEY_FILE": keyFile}
	mustSucceed(t, api.occ(asSP, "namespace", "get", api.defaultNS), "namespace get as the ServicePrincipal")
	if r := api.occ(asSP, "installation", "get"); r.code != 1 || !strings.HasPrefix(r.stderr, "Error: 403 ") {
		t.Fatalf("installation as the ServicePrincipal: %+v", r)
	}
	if r := mustSucceed(t, api.occ(nil, "service-key", "revoke", doc.Data.ID), "revoke"); r.stdout != "Revoked service key "+doc.Data.ID+".\n" {
		t.Fatalf("revoke: %q", r.stdout)
	}
	if r := api.occ(asSP, "namespace", "get", api.defaultNS); r.code != 1 || !strings.HasPrefix(r.stderr, "Error: 401 ") {
		t.Fatalf("revoked key: %+v", r)
	}
	if r := api.occ(nil, "service-key", "revoke", "oops"); r.code != 2 {
		t.Fatalf("bad key id: %+v", r)
	}

	if r := mustSucceed(t, api.occ(nsEnv, "iam", "access-binding", "delete", binding), "binding delete"); r.stdout != "Deleted access binding "+binding+".\n" {
		t.Fatalf("binding delete: %q", r.stdout)
	}
	r := mustSucceed(t, api.occ(nsEnv, "iam", "role", "delete", role, "-o", "json"), "role delete")
	if jsonField(t, r.stdout, "id") != role || jsonField(t, r.stdout, "kind") != "role" {
		t.Fatalf("role delete: %q", r.stdout)
	}
	if r := api.occ(nsEnv, "iam", "role", "create", "--file", filepath.Join(t.TempDir(), "missing.json")); r.code != 2 {
		t.Fatalf("missing file: %+v", r)
	}
}

func TestClientGlobalOptionsAndErrors(t *testing.T) {
	t.Parallel()
	keyFile := writeJSON(t, map[string]any{"data": map[string]any{"key": "occ_sk_test"}})
	var redirected atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/namespaces":
			if r.Header.Get("x-api-key") != "occ_sk_test" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"code":"RATE_LIMITED","message":"Too many requests.","details":[{"path":"/limit","code":"INVALID_VALUE"}]},"meta":{"requestId":"req_x"}}`))
		case "/namespaces/ns_00000000-0000-4000-8000-000000000000":
			_, _ = w.Write([]byte(`{"data":{"id":"ns_00000000-0000-4000-8000-000000000000","name":"evil\u001b[31m\u202etxt.exe","status":"ready","createdAt":"2026-01-01T00:00:00.000Z"},"meta":{"requestId":"req_x"}}`))
		case "/installation":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/elsewhere":
			redirected.Store(true)
		}
	}))
	defer srv.Close()
	env := map[string]string{"OCC_URL": "http://127.0.0.1:1", "OCC_SERVICE_KEY_FILE": keyFile}

	// The flag beats the environment variable.
	r := run(env, "namespace", "list", "--url", srv.URL)
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("%+v", r)
	}
	golden(t, "rate-limited.stderr", r.stderr)
	// Control and bidi characters are escaped and quoted in tables.
	r = run(env, "namespace", "get", "ns_00000000-0000-4000-8000-000000000000", "--url", srv.URL)
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	golden(t, "namespace-escaped.table", r.stdout)
	if r := run(env, "installation", "get", "--url", srv.URL); r.code != 1 || !strings.Contains(r.stderr, "redirect") || redirected.Load() {
		t.Fatalf("redirect: %+v followed=%v", r, redirected.Load())
	}
	if r := run(env, "namespace", "list"); r.code != 1 || !strings.Contains(r.stderr, "cannot reach http://127.0.0.1:1") {
		t.Fatalf("unreachable: %+v", r)
	}
	for _, bad := range [][]string{
		{"--url", "http://user:pw@127.0.0.1:3000"}, {"--url", "http://127.0.0.1:3000/api"}, {"--url", "ftp://127.0.0.1"},
		{"--timeout-seconds", "0"}, {"-o", "xml"}, {"--context", "nowhere"}, {"--service-key-file", "/nonexistent"},
	} {
		if r := run(env, append([]string{"namespace", "list"}, bad...)...); r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "Error: ") {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	if r := run(map[string]string{"OCC_SERVICE_KEY_FILE": keyFile}, "namespace", "list"); r.code != 2 || !strings.Contains(r.stderr, "OCC_URL") {
		t.Fatalf("no url: %+v", r)
	}
}
