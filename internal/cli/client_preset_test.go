package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/testkit/wait"
)

// TestClientPresets: the startup YAML's presets reach a Namespace, the preset commands manage
// them, and agent create --preset renders one into a Secret, a Configuration and an Agent.
func TestClientPresets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	team := filepath.Join(dir, "team.json")
	if err := os.WriteFile(team, []byte(`{"name": "team", "template": {"agent": {"executionMode": "embedded"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	api, stack := startAPIAndWorkerEnv(t, func(env map[string]string) {
		base, err := os.ReadFile(env["OCC_CONFIG_PATH"])
		if err != nil {
			t.Fatal(err)
		}
		config := filepath.Join(dir, "installation.yaml")
		doc := string(base) + "presets:\n  includeDefaults: true\n  files: [team.json]\n"
		if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		env["OCC_CONFIG_PATH"] = config
	})
	stack.startWorker(t)
	nsEnv := map[string]string{"OCC_NAMESPACE": api.defaultNS}
	wait.Eventually(t, wait.Long, "the default Namespace to become ready", func() bool {
		return jsonField(t, mustSucceed(t, api.occ(nil, "namespace", "get", api.defaultNS, "-o", "json"), "namespace get").stdout, "status") == "ready"
	})

	list := mustSucceed(t, api.occ(nsEnv, "preset", "list"), "preset list").stdout
	for _, name := range []string{"Embedded OpenClaw", "Dedicated Codex", "team", "apiKey:password"} {
		if !strings.Contains(list, name) {
			t.Fatalf("preset list lacks %q:\n%s", name, list)
		}
	}

	created := mustSucceed(t, api.occ(nsEnv, "preset", "create", "-o", "json", "-f", writeJSON(t, map[string]any{
		"name": "workers",
		"template": map[string]any{
			"variables": map[string]any{"name": map[string]any{"type": "string"}, "replicas": map[string]any{"type": "number", "default": 1}},
			"agent":     map[string]any{"name": "worker-{{ vars.name }}"},
			"configuration": map[string]any{"values": map[string]any{"agents": map[string]any{
				"defaults": map[string]any{"model": "openai/gpt-5"}, "replicas": "{{ vars.replicas }}"}}},
		}})), "preset create").stdout
	id := jsonField(t, created, "id")
	if !strings.HasPrefix(id, "pre_") {
		t.Fatalf("preset create: %s", created)
	}
	mustSucceed(t, api.occ(nsEnv, "preset", "update", "workers", "-f", writeJSON(t, map[string]any{"name": "workers-2"})), "preset update")
	if got := jsonField(t, mustSucceed(t, api.occ(nsEnv, "preset", "get", id, "-o", "json"), "preset get").stdout, "name"); got != "workers-2" {
		t.Fatalf("renamed to %q", got)
	}

	// A wrong type names the variable, never the value.
	r := api.occ(nsEnv, "agent", "create", "--preset", "workers-2", "--set", "name=a", "--set", "replicas=many-secret-words")
	if r.code != 2 || !strings.Contains(r.stderr, "Preset variables.replicas: expects a finite number.") || strings.Contains(r.stderr, "many-secret-words") {
		t.Fatalf("wrong type: %+v", r)
	}
	// Typed rendering: the whole-string token became a number in the Configuration.
	agent := mustSucceed(t, api.occ(nsEnv, "agent", "create", "--preset", "workers-2", "--set", "name=a", "--set", "replicas=3", "-o", "json"), "agent create --preset").stdout
	if jsonField(t, agent, "name") != "worker-a" {
		t.Fatalf("agent %s", agent)
	}
	cfg := mustSucceed(t, api.occ(nsEnv, "configuration", "get", jsonField(t, agent, "configurationId"), "-o", "json"), "configuration get").stdout
	if !strings.Contains(cfg, `"replicas": 3`) {
		t.Fatalf("configuration %s", cfg)
	}

	// A bundled Preset: NAME fills the name variable and the password becomes a new Secret.
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("sk-preset-test-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = api.occ(nsEnv, "agent", "create", "bob", "--preset", "Embedded OpenClaw", "--set-file", "apiKey="+keyFile, "--set", "model=gpt-x", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stderr, "Created the Secret bob-harness") || strings.Contains(r.stdout+r.stderr, "sk-preset-test-value") {
		t.Fatalf("agent create from the bundled Preset: %+v", r)
	}
	var bob struct {
		Name          string `json:"name"`
		ExecutionMode string `json:"executionMode"`
		HarnessAuth   struct {
			Method string `json:"method"`
			Source struct {
				Kind, ID string
			} `json:"source"`
		} `json:"harnessAuth"`
		ConfigurationID string `json:"configurationId"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &bob); err != nil {
		t.Fatal(err)
	}
	if bob.Name != "bob" || bob.ExecutionMode != "embedded" || bob.HarnessAuth.Method != "api_key" || bob.HarnessAuth.Source.Kind != "secret" {
		t.Fatalf("bob %s", r.stdout)
	}
	if secrets := mustSucceed(t, api.occ(nsEnv, "secret", "list"), "secret list").stdout; !strings.Contains(secrets, "bob-harness") ||
		!strings.Contains(secrets, bob.HarnessAuth.Source.ID) {
		t.Fatalf("secret list %s", secrets)
	}
	cfg = mustSucceed(t, api.occ(nsEnv, "configuration", "get", bob.ConfigurationID, "-o", "json"), "configuration get").stdout
	if !strings.Contains(cfg, `"model": "openai/gpt-x"`) {
		t.Fatalf("configuration %s", cfg)
	}

	if r := api.occ(nsEnv, "agent", "create", "--set", "x=1"); r.code != 2 || !strings.Contains(r.stderr, "give --preset NAME") {
		t.Fatalf("--set without --preset: %+v", r)
	}
	mustSucceed(t, api.occ(nsEnv, "preset", "delete", "workers-2"), "preset delete")
	if r := api.occ(nsEnv, "preset", "get", id); r.code != 1 {
		t.Fatalf("get after delete: %+v", r)
	}
}
