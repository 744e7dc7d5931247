package api_test

import (
	"strings"
	"testing"
)

// TestUnavailableAgentFeatures: the members upstream's clients send for features this OCC does not
// implement pass in their empty forms, on create and update, and any other value is 400
// FEATURE_NOT_AVAILABLE with a detail at the member and a message naming the feature; nothing is
// stored. executionMode on update may repeat the Agent's mode, not change it.
func TestUnavailableAgentFeatures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("features")
	base := "/namespaces/" + ns
	cfg := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)

	empty := map[string]any{
		"plugins": map[string]any{}, "pluginApprovers": []any{}, "repositoryBindings": []any{},
		"repositoryAccess": nil, "workspaceDefaultsId": nil, "backendId": nil,
	}
	create := map[string]any{"name": "upstream-client", "configurationId": cfg}
	for k, v := range empty {
		create[k] = v
	}
	agent := e.expect(e.admin("POST", base+"/agents", create), 201).data()
	agentPath := base + "/agents/" + agent["id"].(string)
	for _, member := range []string{"plugins", "pluginApprovers", "repositoryBindings", "repositoryAccess", "workspaceDefaultsId"} {
		if _, ok := agent[member]; ok {
			t.Errorf("the Agent answers %s", member)
		}
	}
	nulls := map[string]any{"name": "nulls", "configurationId": cfg, "plugins": nil, "pluginApprovers": nil,
		"repositoryBindings": nil, "repositoryAccess": map[string]any{}}
	e.expect(e.admin("POST", base+"/agents", nulls), 201)

	update := map[string]any{"configurationId": cfg, "executionMode": agent["executionMode"]}
	for k, v := range empty {
		update[k] = v
	}
	e.expect(e.admin("PATCH", agentPath, update), 200)

	valued := map[string]struct {
		value   any
		feature string
	}{
		"plugins":             {map[string]any{"slack": map[string]any{"enabled": true}}, "plugins"},
		"pluginApprovers":     {[]any{map[string]any{"channel": "slack", "id": "U123"}}, "plugin approvers"},
		"repositoryBindings":  {[]any{map[string]any{"repositoryRef": "occ"}}, "repository bindings"},
		"repositoryAccess":    {map[string]any{"defaultProfile": "read", "repositories": []any{}}, "repository access"},
		"workspaceDefaultsId": {strings.Repeat("ab", 32), "workspace defaults"},
		"backendId":           {"chatgpt", "Backends"},
	}
	for member, tc := range valued {
		refused := func(r resp) {
			t.Helper()
			if r.status != 400 || r.errCode() != "FEATURE_NOT_AVAILABLE" || !r.hasDetail("/"+member, "INVALID_VALUE") {
				t.Errorf("%s: %d %s", member, r.status, r.raw)
			}
			message, _ := r.doc["error"].(map[string]any)["message"].(string)
			if !strings.Contains(message, tc.feature) || !strings.Contains(strings.ToLower(message), "not available in this occ") {
				t.Errorf("%s: message %q", member, message)
			}
		}
		refused(e.admin("POST", base+"/agents", map[string]any{"name": "with-" + member, "configurationId": cfg, member: tc.value}))
		refused(e.admin("PATCH", agentPath, map[string]any{"configurationId": cfg, "name": "renamed", member: tc.value}))
	}
	// Two at once: one detail each.
	r := e.admin("POST", base+"/agents", map[string]any{"name": "two", "configurationId": cfg,
		"plugins": map[string]any{"a": map[string]any{}}, "backendId": "b"})
	if r.status != 400 || !r.hasDetail("/plugins", "INVALID_VALUE") || !r.hasDetail("/backendId", "INVALID_VALUE") {
		t.Errorf("two features: %d %s", r.status, r.raw)
	}
	// A malformed value is still the schema's refusal.
	if r := e.admin("POST", base+"/agents", map[string]any{"name": "bad", "configurationId": cfg, "pluginApprovers": "x"}); r.status != 400 ||
		r.errCode() != "INVALID_REQUEST" || !r.hasDetail("/pluginApprovers", "INVALID_TYPE") {
		t.Errorf("malformed pluginApprovers: %d %s", r.status, r.raw)
	}

	// executionMode: the current mode passes; another is refused and nothing changes.
	r = e.admin("PATCH", agentPath, map[string]any{"configurationId": cfg, "executionMode": "dedicated", "name": "moved"})
	if r.status != 400 || r.errCode() != "FEATURE_NOT_AVAILABLE" || !r.hasDetail("/executionMode", "INVALID_VALUE") {
		t.Errorf("execution mode change: %d %s", r.status, r.raw)
	}
	got := e.expect(e.admin("GET", agentPath, nil), 200).data()
	if got["executionMode"] != "embedded" || got["name"] != "upstream-client" {
		t.Errorf("a refused update changed the Agent: %v", got)
	}
	var stored int
	if err := e.owner.QueryRow(ctxb(), `SELECT count(*) FROM occ.agents WHERE namespace_id = $1`, ns).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 2 {
		t.Errorf("%d Agents stored, want the 2 created", stored)
	}
}
