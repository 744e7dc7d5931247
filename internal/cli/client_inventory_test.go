package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestClientDeploymentInventory: occ installation deployment-inventory prints one row per Agent,
// -o json the API's document, and with --limit the command of the next page.
func TestClientDeploymentInventory(t *testing.T) {
	t.Parallel()
	api := startClientAPI(t)
	ns := map[string]string{"OCC_NAMESPACE": "default"}

	if r := mustSucceed(t, api.occ(nil, "installation", "deployment-inventory"), "empty inventory"); r.stdout != "No resources found.\n" {
		t.Fatalf("empty: %q", r.stdout)
	}
	cfg := strings.TrimSpace(mustSucceed(t, api.occIn(ns, "kind: agent\nvalues: {}\n", "configuration", "create", "-f", "-", "-o", "name"),
		"configuration").stdout)
	var agents []string
	for _, name := range []string{"first", "second"} {
		agents = append(agents, strings.TrimSpace(mustSucceed(t, api.occIn(ns, `{"name":"`+name+`","configurationId":"`+cfg+`"}`,
			"agent", "create", "-f", "-", "-o", "name"), "agent").stdout))
	}

	table := mustSucceed(t, api.occ(nil, "installation", "deployment-inventory"), "inventory").stdout
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE") || !strings.Contains(lines[0], "IN PROGRESS") ||
		!strings.Contains(lines[1], agents[0]) || !strings.Contains(lines[1], api.defaultNS) || !strings.Contains(lines[2], agents[1]) ||
		!strings.Contains(lines[1], "embedded") || !strings.Contains(lines[1], "false") {
		t.Fatalf("table:\n%s", table)
	}

	var doc struct {
		InstallationID string `json:"installationId"`
		Namespaces     []struct {
			ID     string           `json:"id"`
			Agents []map[string]any `json:"agents"`
		} `json:"namespaces"`
	}
	out := mustSucceed(t, api.occ(nil, "installation", "deployment-inventory", "-o", "json"), "inventory json").stdout
	if err := json.Unmarshal([]byte(out), &doc); err != nil || !strings.HasPrefix(doc.InstallationID, "ins_") ||
		len(doc.Namespaces) != 1 || doc.Namespaces[0].ID != api.defaultNS || len(doc.Namespaces[0].Agents) != 2 {
		t.Fatalf("json: %v %s", err, out)
	}

	r := api.occ(nil, "installation", "deployment-inventory", "--limit", "1")
	if r.code != 0 || !strings.Contains(r.stdout, agents[0]) || strings.Contains(r.stdout, agents[1]) ||
		!strings.Contains(r.stderr, "More Agents: occ installation deployment-inventory --limit 1 --cursor ") {
		t.Fatalf("first page: %+v", r)
	}
	next := strings.Fields(r.stderr)
	r = mustSucceed(t, api.occ(nil, "installation", "deployment-inventory", "--limit", "1", "--cursor", next[len(next)-1]), "second page")
	if !strings.Contains(r.stdout, agents[1]) || strings.Contains(r.stdout, agents[0]) {
		t.Fatalf("second page: %+v", r)
	}
	if r := api.occ(nil, "installation", "deployment-inventory", "--limit", "501"); r.code != 2 {
		t.Fatalf("--limit 501: %+v", r)
	}
}
