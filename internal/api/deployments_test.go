package api_test

import (
	"testing"
)

// TestDeploymentStatus projects the work row and its latest evidence.
func TestDeploymentStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("status")
	base := "/namespaces/" + ns
	cfg := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	agent := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "s", "configurationId": cfg,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()["id"].(string)
	rev := e.expect(e.admin("POST", base+"/agents/"+agent+"/deploy", nil), 202).data()["id"].(string)
	key := "agent_revision:" + rev + ":reconcile"
	status := func() map[string]any {
		t.Helper()
		return e.expect(e.admin("GET", base+"/agents/"+agent+"/deployments/"+rev, nil), 200).data()
	}

	s := status()
	progress, _ := s["progress"].(map[string]any)
	if s["status"] != "queued" || s["deploymentId"] != rev || progress == nil || progress["lastAttempt"] != nil ||
		progress["nextAttemptAt"] == nil || s["error"] != nil || len(s["warnings"].([]any)) != 0 {
		t.Fatalf("queued %v", s)
	}
	evidence := func(code string) {
		e.exec(`INSERT INTO occ.audit_events (id, kind, actor_id, action, namespace_id, resource_kind, resource_id, outcome, details)
VALUES ('aud_' || gen_random_uuid(), 'mutation', 'spn_x', 'reconcile', $1, 'agent_revision', $2, 'success',
        jsonb_build_object('reasonCode', $3::text, 'workId', $4::text, 'attemptCount', 1))`, ns, rev, code, key)
	}
	evidence("REVISION_INCOMPLETE")
	e.exec(`UPDATE occ.controller_work SET state = 'claimed', claim_token = gen_random_uuid(),
  lease_expires_at = clock_timestamp() + interval '1 minute', attempt_count = 1 WHERE idempotency_key = $1`, key)
	s = status()
	progress, _ = s["progress"].(map[string]any)
	last, _ := progress["lastAttempt"].(map[string]any)
	if s["status"] != "running" || progress["nextAttemptAt"] != nil || last["code"] != "REVISION_INCOMPLETE" || last["message"] == "" {
		t.Fatalf("running %v", s)
	}
	// An expired lease reads as queued; an unknown code as RECONCILIATION_PENDING.
	evidence("WORK_KIND_UNSUPPORTED")
	e.exec(`UPDATE occ.controller_work SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE idempotency_key = $1`, key)
	s = status()
	last, _ = s["progress"].(map[string]any)["lastAttempt"].(map[string]any)
	if s["status"] != "queued" || last["code"] != "RECONCILIATION_PENDING" ||
		last["message"] != "Deployment has not completed. Another reconciliation is pending." {
		t.Fatalf("expired lease %v", s)
	}
	// Completed without activation is failed, with the fixed message.
	e.exec(`UPDATE occ.controller_work SET state = 'succeeded', claim_token = NULL, lease_expires_at = NULL,
  completed_at = clock_timestamp(), reason_code = 'REVISION_STOPPED' WHERE idempotency_key = $1`, key)
	s = status()
	errDoc, _ := s["error"].(map[string]any)
	if s["status"] != "failed" || s["progress"] != nil || errDoc["code"] != "REVISION_STOPPED" ||
		errDoc["message"] != "Deployment ended because the Agent was stopped." {
		t.Fatalf("stopped %v", s)
	}
}

// TestRequestRules: closed schemas refuse out-of-scope fields; binding names, references and values
// are checked.
func TestRequestRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("rules")
	other := e.readyNamespace("other")
	base := "/namespaces/" + ns
	sec := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "s", "value": "rules-secret-value-2718"}), 201).data()["id"].(string)
	otherSec := e.expect(e.admin("POST", "/namespaces/"+other+"/secrets", map[string]any{"name": "s", "value": "rules-other-value-1618"}), 201).data()["id"].(string)
	bind := func(name string, ref map[string]any) map[string]any {
		return map[string]any{"kind": "agent", "values": map[string]any{}, "secretBindings": map[string]any{name: map[string]any{"source": ref}}}
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
		path   string
	}{
		{bind("OPENAI_API_KEY", secretRef(ns, sec)), 400, "/secretBindings/OPENAI_API_KEY"},
		{bind("PATH", secretRef(ns, sec)), 400, "/secretBindings/PATH"},
		{bind("https_proxy", secretRef(ns, sec)), 400, "/secretBindings/https_proxy"},
		{bind("1BAD", secretRef(ns, sec)), 400, "/secretBindings/1BAD"},
		{bind("TOKEN", secretRef(other, otherSec)), 400, "/secretBindings/TOKEN/source/namespaceId"},
		{bind("TOKEN", secretRef(ns, "sec_00000000-0000-4000-8000-000000000000")), 404, ""},
		{map[string]any{"kind": "agent", "values": map[string]any{"models": map[string]any{"providers": map[string]any{
			"p": map[string]any{"baseUrl": "ftp://example.com", "api": "nope"}}}}}, 400, "/values/models/providers/p/baseUrl"},
		{map[string]any{"kind": "agent", "values": map[string]any{"models": map[string]any{"providers": map[string]any{
			"p": map[string]any{"baseUrl": "${BASE}", "models": []any{map[string]any{"id": "m", "api": "nope"}}}}}}}, 400, "/values/models/providers/p/models/0/api"},
		{map[string]any{"kind": "preset", "values": map[string]any{}}, 400, "/kind"},
	} {
		r := e.admin("POST", base+"/configurations", tc.body)
		if r.status != tc.status || (tc.path != "" && len(r.details()) > 0 && !func() bool {
			for _, d := range r.details() {
				if d["path"] == tc.path {
					return true
				}
			}
			return false
		}()) {
			t.Errorf("%v: %d %s", tc.body, r.status, r.raw)
		}
	}
	cfg := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	for field, value := range map[string]any{
		"credentialSources": []any{}, "initialWorkspaceFiles": map[string]any{"NOTES.md": "x"}, "backendId": "chatgpt",
	} {
		body := map[string]any{"name": "x-" + field, "configurationId": cfg, field: value}
		if r := e.admin("POST", base+"/agents", body); r.status != 400 {
			t.Errorf("agent with %s: %d %s", field, r.status, r.raw)
		}
	}
	e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "null-backend", "configurationId": cfg, "backendId": nil}), 201)
	if r := e.admin("POST", base+"/agents", map[string]any{"name": "null-backend", "configurationId": cfg}); r.status != 409 {
		t.Errorf("duplicate Agent name: %d %s", r.status, r.raw)
	}
	if r := e.admin("POST", base+"/agents", map[string]any{"name": "cross", "configurationId": cfg,
		"harnessAuth": map[string]any{"method": "api_key", "source": secretRef(other, otherSec)}}); r.status != 400 {
		t.Errorf("cross-Namespace harness source: %d %s", r.status, r.raw)
	}
	if r := e.admin("POST", base+"/secrets", map[string]any{"name": "nul", "value": "a\x00b"}); r.status != 400 {
		t.Errorf("NUL value: %d %s", r.status, r.raw)
	}
}
