package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/cli"
	"github.com/openclaw/occ/internal/settings"
)

// runIn runs a command with standard input and a context.
func runIn(ctx context.Context, env map[string]string, stdin string, args ...string) result {
	var out, errOut bytes.Buffer
	code := cli.Execute(ctx, cli.Env{Lookup: settings.MapLookup(env), Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Version: "test"}, args)
	return result{code, out.String(), errOut.String()}
}

// occIn is occ with standard input.
func (a clientAPI) occIn(env map[string]string, stdin string, args ...string) result {
	full := map[string]string{"OCC_URL": a.url, "OCC_SERVICE_KEY_FILE": a.keyFile}
	for k, v := range env {
		full[k] = v
	}
	return runIn(context.Background(), full, stdin, args...)
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClientRefusesUnknownSubcommands: a typo inside a group is a usage error with suggestions,
// as at the top level, never its help with exit status 0.
func TestClientRefusesUnknownSubcommands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args              []string
		typo, group, want string
	}{
		{[]string{"agent", "lst"}, "lst", "occ agent", "list"},
		{[]string{"namespace", "delet", "ns_x"}, "delet", "occ namespace", "delete"},
		{[]string{"service-key", "lst"}, "lst", "occ service-key", "list"},
		{[]string{"iam", "role", "lst"}, "lst", "occ iam role", "list"},
		{[]string{"config", "use-contex", "dev"}, "use-contex", "occ config", "use-context"},
		{[]string{"completion", "bsh"}, "bsh", "occ completion", "bash"},
	} {
		r := run(nil, tc.args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, `Error: unknown command "`+tc.typo+`" for "`+tc.group+`"`) ||
			!strings.Contains(r.stderr, "Did you mean this?\n\t") || !strings.Contains(r.stderr, "\t"+tc.want+"\n") {
			t.Errorf("%v: %+v", tc.args, r)
		}
	}
	// A group alone still prints its help.
	if r := run(nil, "agent"); r.code != 0 || !strings.Contains(r.stdout, "Available Commands:") {
		t.Fatalf("agent: %+v", r)
	}
}

// TestClientFileInputErrors: a document that cannot be used is refused locally (exit 2) with the
// parse error's line and column, or the operating system's reason.
func TestClientFileInputErrors(t *testing.T) {
	t.Parallel()
	keyFile := writeJSON(t, map[string]any{"data": map[string]any{"key": "occ_sk_test"}})
	env := map[string]string{"OCC_URL": "http://127.0.0.1:1", "OCC_SERVICE_KEY_FILE": keyFile,
		"OCC_NAMESPACE": "ns_00000000-0000-4000-8000-000000000000"}
	dir := t.TempDir()
	badJSON := writeFile(t, "cfg.json", "{\n  \"kind\": \"agent\",\n  \"values\": {,}\n}\n")
	truncated := writeFile(t, "short.json", "{\"kind\": \"agent\", \"values\": {")
	badYAML := writeFile(t, "cfg.yaml", "kind: agent\nvalues: [\n")
	list := writeFile(t, "list.yaml", "- a\n- b\n")
	for _, tc := range []struct {
		name, file, stdin, want string
	}{
		{"json syntax", badJSON, "", badJSON + ": line 3, column 14: invalid character ',' looking for beginning of object key string"},
		{"json truncated", truncated, "", truncated + ": line 1, column 30: unexpected end of the document"},
		{"yaml syntax", badYAML, "", badYAML + ": invalid YAML: line 2: did not find expected node content"},
		{"not an object", list, "", list + ": the document is not an object (a JSON object or a YAML mapping)"},
		{"directory", dir, "", "cannot read " + dir + ": is a directory."},
		{"missing", filepath.Join(dir, "missing.json"), "", "cannot read " + filepath.Join(dir, "missing.json") + ": no such file or directory."},
		{"empty stdin", "-", "", "standard input: the document is empty"},
		{"trailing data", "-", "{\"kind\": \"agent\"} {}", "standard input: line 1, column 19: unexpected content after the JSON object"},
	} {
		r := runIn(context.Background(), env, tc.stdin, "configuration", "create", "-f", tc.file)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "Error: "+tc.want) {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

// TestClientStdinYAMLAndSecretValues: --file reads JSON or YAML from a file or standard input;
// Secret values come from --from-literal, --from-file or --from-stdin and are never printed.
func TestClientStdinYAMLAndSecretValues(t *testing.T) {
	t.Parallel()
	api := startSimulatedStack(t)
	ns := map[string]string{"OCC_NAMESPACE": "default"}
	waitNamespaceReady(t, api, "default")

	cfg := strings.TrimSpace(mustSucceed(t, api.occIn(ns, "kind: agent\nvalues:\n  agents: {}\n", "configuration", "create", "-f", "-", "-o", "name"),
		"configuration from YAML on stdin").stdout)
	if !strings.HasPrefix(cfg, "cfg_") || strings.Contains(cfg, "\n") {
		t.Fatalf("-o name: %q", cfg)
	}
	update := writeFile(t, "update.yaml", "# a comment\nvalues: {agents: {}}\n")
	if r := mustSucceed(t, api.occ(ns, "configuration", "update", cfg, "-f", update, "-o", "json"), "update from a YAML file"); jsonField(t, r.stdout, "id") != cfg ||
		!strings.Contains(r.stdout, `"generation": 2`) {
		t.Fatalf("update: %s", r.stdout)
	}
	role := writeFile(t, "role.yaml", "name: readers\npermissions:\n  - {action: read, resourceKind: namespace}\n")
	mustSucceed(t, api.occ(ns, "iam", "role", "create", "-f", role), "role from YAML")

	const value = "tour-secret-value-from-stdin"
	created := mustSucceed(t, api.occIn(ns, value+"\n", "secret", "create", "token", "--from-stdin", "-o", "json"), "secret --from-stdin")
	if jsonField(t, created.stdout, "name") != "token" || strings.Contains(created.stdout, value) {
		t.Fatalf("secret create: %s", created.stdout)
	}
	valueFile := writeFile(t, "value", "from-a-file-1234")
	mustSucceed(t, api.occ(ns, "secret", "update", "token", "--from-file", valueFile), "secret update --from-file")
	mustSucceed(t, api.occ(ns, "secret", "update", "token", "--from-literal", "literal-value-1234"), "secret update --from-literal")
	mustSucceed(t, api.occ(ns, "secret", "create", "-f", writeJSON(t, map[string]string{"name": "other", "value": "v-1234"})), "secret -f")
	for _, bad := range [][]string{
		{"secret", "create", "x"},
		{"secret", "create", "x", "--from-literal", "a", "--from-stdin"},
		{"secret", "create", "x", "--from-literal", ""},
		{"secret", "update", "token"},
		{"secret", "create", "x", "--from-file", t.TempDir()},
	} {
		if r := api.occ(ns, bad...); r.code != 2 || !strings.HasPrefix(r.stderr, "Error: ") {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	list := mustSucceed(t, api.occ(ns, "secret", "list"), "secret list").stdout
	for _, leaked := range []string{value, "from-a-file-1234", "literal-value-1234"} {
		if strings.Contains(list, leaked) {
			t.Fatalf("a value reached the output: %s", list)
		}
	}
}

// waitNamespaceReady polls until the Namespace (name or id) is ready.
func waitNamespaceReady(t *testing.T, api clientAPI, ns string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for jsonField(t, mustSucceed(t, api.occ(nil, "namespace", "get", ns, "-o", "json"), "namespace get").stdout, "status") != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("the Namespace %s did not become ready", ns)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
