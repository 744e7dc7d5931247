package cli_test

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/testkit/wait"
)

// TestClientAgentRuntimeViews: describe, logs and diagnose of a deployed Agent, against the real
// API with the simulated Compute Driver (the API process never prepared the revision, so the
// driver shows it running since its admission with its startup log).
func TestClientAgentRuntimeViews(t *testing.T) {
	t.Parallel()
	api := startSimulatedStack(t)
	nsEnv := map[string]string{"OCC_NAMESPACE": api.defaultNS}
	wait.Eventually(t, wait.Long, "the default Namespace to become ready", func() bool {
		return jsonField(t, mustSucceed(t, api.occ(nil, "namespace", "get", api.defaultNS, "-o", "json"), "namespace get").stdout, "status") == "ready"
	})
	cfg := jsonField(t, mustSucceed(t, api.occ(nsEnv, "configuration", "create", "--file",
		writeJSON(t, map[string]any{"kind": "agent", "values": map[string]any{"agents": map[string]any{}}}), "-o", "json"),
		"configuration create").stdout, "id")
	agent := jsonField(t, mustSucceed(t, api.occ(nsEnv, "agent", "create", "--file",
		writeJSON(t, map[string]any{"name": "watched", "configurationId": cfg, "harnessAuth": map[string]any{"method": "runtime"}}), "-o", "json"),
		"agent create").stdout, "id")
	if r := api.occ(nsEnv, "agent", "logs", agent); r.code != 1 || !strings.Contains(r.stderr, "no revision yet") {
		t.Fatalf("logs before a deploy: %+v", r)
	}
	mustSucceed(t, api.occ(nsEnv, "agent", "deploy", agent, "--wait"), "agent deploy --wait")

	d := mustSucceed(t, api.occ(nsEnv, "agent", "describe", "watched"), "describe").stdout
	for _, want := range []string{"Deployment:", "succeeded", "POD", "gateway", "running", "Events (newest first):"} {
		if !strings.Contains(d, want) {
			t.Fatalf("describe lacks %q:\n%s", want, d)
		}
	}
	if r := mustSucceed(t, api.occ(nsEnv, "agent", "describe", agent, "-o", "json"), "describe -o json"); !strings.Contains(r.stdout, `"runtime"`) ||
		!strings.Contains(r.stdout, `"deployment"`) {
		t.Fatalf("describe -o json: %s", r.stdout)
	}

	// The revision read is named on stderr (the default choice).
	logs := api.occ(nsEnv, "agent", "logs", agent, "--tail", "10")
	if logs.code != 0 || !strings.Contains(logs.stdout, "INFO wrapper runtime.startup_phase") || !strings.Contains(logs.stdout, "gateway started") ||
		!strings.Contains(logs.stderr, "Reading revision rev_") {
		t.Fatalf("logs: %+v", logs)
	}
	rev := jsonField(t, mustSucceed(t, api.occ(nsEnv, "agent", "get", agent, "-o", "json"), "agent get").stdout, "activeRevisionId")
	if r := mustSucceed(t, api.occ(nsEnv, "agent", "logs", agent, "--revision", rev, "-o", "json"), "logs -o json"); strings.Count(r.stdout, "\n") != 2 ||
		!strings.Contains(r.stdout, `"type":"line"`) {
		t.Fatalf("logs -o json (one record per line): %q", r.stdout)
	}
	for _, bad := range [][]string{{"--container", "harness"}, {"--tail", "0"}, {"--since", "48h"}, {"--follow", "--previous"}, {"--level", "trace"}} {
		if r := api.occ(nsEnv, append([]string{"agent", "logs", agent}, bad...)...); r.code != 2 {
			t.Errorf("logs %v: %+v, want a usage error", bad, r)
		}
	}
	if r := api.occ(nsEnv, "agent", "logs", agent, "-c", "agent"); r.code != 1 || !strings.Contains(r.stderr, "RUNTIME_LOGS_SOURCE_UNAVAILABLE") {
		t.Fatalf("the agent source of an embedded revision: %+v", r)
	}

	diag := mustSucceed(t, api.occ(nsEnv, "agent", "diagnose", agent), "diagnose").stdout
	if !strings.Contains(diag, "COMPONENT") || !strings.Contains(diag, "container-ready") || !strings.Contains(diag, "succeeded") {
		t.Fatalf("diagnose:\n%s", diag)
	}
}
