package api_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/driver"
)

// computeWithoutHarnessAuth hides every optional interface of a Compute Driver, so it supports no
// Harness authentication method (the Docker driver's case).
type computeWithoutHarnessAuth struct{ driver.Compute }

// TestInstallationCapabilities: GET /installation reports what the selected Compute Driver
// supports: the simulated driver deploys both execution modes with every Harness authentication
// method; a driver that supports none leaves agentProvisioning out.
func TestInstallationCapabilities(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	caps := e.expect(e.admin("GET", "/installation", nil), 200).data()["capabilities"].(map[string]any)
	if got := caps["agentProvisioning"].(map[string]any)["executionModes"]; !reflect.DeepEqual(got, []any{"embedded", "dedicated"}) {
		t.Errorf("execution modes %v", got)
	}
	all := []any{"api_key", "codex_pat", "runtime"}
	if got := caps["harnessAuth"]; !reflect.DeepEqual(got, map[string]any{"embedded": all, "dedicated": all}) {
		t.Errorf("harness auth %v", got)
	}
	if caps["presets"] != true || caps["runtime"].(map[string]any)["logs"] != true {
		t.Errorf("capabilities %v", caps)
	}

	bare := newEnv(t, func(_ *env, cfg *api.Config) { cfg.Compute = computeWithoutHarnessAuth{cfg.Compute} })
	caps = bare.expect(bare.admin("GET", "/installation", nil), 200).data()["capabilities"].(map[string]any)
	if _, ok := caps["agentProvisioning"]; ok {
		t.Errorf("a driver without Harness authentication offers provisioning: %v", caps)
	}
	if got := caps["harnessAuth"]; !reflect.DeepEqual(got, map[string]any{"embedded": []any{}, "dedicated": []any{}}) {
		t.Errorf("harness auth %v", got)
	}
}

// TestObservability: GET /observability answers the startup YAML's observability.url, null when
// unset.
func TestObservability(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if got := e.expect(e.admin("GET", "/observability", nil), 200).data(); !reflect.DeepEqual(got, map[string]any{"url": nil}) {
		t.Errorf("unset: %v", got)
	}
	const url = "https://grafana.example.com/d/occ"
	set := newEnv(t, func(_ *env, cfg *api.Config) { cfg.ObservabilityURL = url })
	if got := set.expect(set.admin("GET", "/observability", nil), 200).data(); got["url"] != url {
		t.Errorf("set: %v", got)
	}
}

// TestDeploymentInventory: every Agent of every live Namespace, grouped by Namespace, with its
// active revision's Harness, Compute and observed images; a deploy the worker has not run is in progress; pages
// of limit Agents continue with the cursor and together list every Agent once.
func TestDeploymentInventory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("inventory")
	f := newResourceFixtures(t, e, ns)
	other := e.readyNamespace("inventory-other")
	otherCfg := e.expect(e.admin("POST", "/namespaces/"+other+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	lone := e.expect(e.admin("POST", "/namespaces/"+other+"/agents", map[string]any{"name": "lone", "configurationId": otherCfg}), 201).data()["id"].(string)

	// The worker would make the revision active once deployed; its work stays queued here.
	e.exec(`UPDATE occ.agents SET active_revision_id = $1 WHERE id = $2`, f.revision, f.agent)

	r := e.expect(e.admin("GET", "/installation/deployment-inventory", nil), 200)
	if _, paged := r.doc["meta"].(map[string]any)["nextCursor"]; paged {
		t.Errorf("a complete inventory has a cursor: %s", r.raw)
	}
	inv := r.data()
	if inv["installationId"] != e.installationID {
		t.Errorf("installationId %v", inv["installationId"])
	}
	agents := map[string]map[string]any{}
	namespaceOf := map[string]string{}
	for _, n := range inv["namespaces"].([]any) {
		nm := n.(map[string]any)
		if nm["status"] != "ready" {
			t.Errorf("namespace %v", nm)
		}
		for _, a := range nm["agents"].([]any) {
			am := a.(map[string]any)
			agents[am["id"].(string)] = am
			namespaceOf[am["id"].(string)] = nm["id"].(string)
		}
	}
	if len(agents) != 3 || namespaceOf[f.agent] != ns || namespaceOf[f.spareAgent] != ns || namespaceOf[lone] != other {
		t.Fatalf("inventory %s", r.raw)
	}
	deployed := agents[f.agent]
	if deployed["activeRevisionId"] != f.revision || deployed["deploymentInProgress"] != true || deployed["desiredRuntimeState"] != "running" {
		t.Errorf("deployed Agent %v", deployed)
	}
	active := deployed["activeRevision"].(map[string]any)
	if active["revision"] != float64(1) || active["harness"].(map[string]any)["mode"] != "embedded" ||
		active["compute"].(map[string]any)["id"] != "compute-simulated" {
		t.Errorf("active revision %v", active)
	}
	images := active["images"].(map[string]any)
	if list, _ := images["images"].([]any); images["status"] != "observed" || len(list) == 0 ||
		!strings.HasPrefix(list[0].(map[string]any)["image"].(string), "occ.local/simulated/") {
		t.Errorf("images %v", images)
	}
	for _, id := range []string{f.spareAgent, lone} {
		a := agents[id]
		if _, ok := a["activeRevisionId"]; ok || a["deploymentInProgress"] != false || a["activeRevision"] != nil {
			t.Errorf("undeployed Agent %v", a)
		}
	}

	// Pages of one Agent: each Agent once, then no cursor.
	seen := map[string]bool{}
	path := "/installation/deployment-inventory?limit=1"
	for page := 0; ; page++ {
		if page > 3 {
			t.Fatal("the pages do not end")
		}
		r := e.expect(e.admin("GET", path, nil), 200)
		for _, n := range r.data()["namespaces"].([]any) {
			for _, a := range n.(map[string]any)["agents"].([]any) {
				id := a.(map[string]any)["id"].(string)
				if seen[id] {
					t.Errorf("%s listed twice", id)
				}
				seen[id] = true
			}
		}
		next, ok := r.doc["meta"].(map[string]any)["nextCursor"].(string)
		if !ok {
			break
		}
		path = "/installation/deployment-inventory?limit=1&cursor=" + next
	}
	if len(seen) != 3 {
		t.Errorf("pages listed %v", seen)
	}
}
