package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/iam"
)

// readyNamespace creates a Namespace and marks it ready, as the worker would.
func (e *env) readyNamespace(name string) string {
	e.t.Helper()
	id := e.createNamespace(name)
	e.exec(`UPDATE occ.namespaces SET status = 'ready' WHERE id = $1`, id)
	return id
}

func (e *env) admin(method, path string, body any) resp {
	e.t.Helper()
	return e.do(req{method: method, path: path, key: e.adminKey, body: body})
}

func (e *env) revisionSpec(id string) map[string]any {
	e.t.Helper()
	var raw []byte
	if err := e.owner.QueryRow(ctxb(), `SELECT admitted_spec::text FROM occ.agent_revisions WHERE id = $1`, id).Scan(&raw); err != nil {
		e.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestDeployFlow: Configuration → Secret → Agent bound to both → deploy. The revision holds the
// configuration document and Secret references only, with one work row and audit events for each
// step; a second deploy is revision 2; editing the Configuration leaves both revisions unchanged.
func TestDeployFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("deploy")
	base := "/namespaces/" + ns
	const value = "sk-deploy-flow-value-0123456789"

	sec := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "openai-key", "value": value}), 201).data()
	secID := sec["id"].(string)
	if sec["name"] != "openai-key" || sec["ref"].(map[string]any)["id"] != secID || len(sec) != 4 {
		t.Fatalf("secret %v", sec)
	}
	values := map[string]any{"models": map[string]any{"providers": map[string]any{
		"openai": map[string]any{"baseUrl": "https://api.openai.com/v1", "api": "openai-responses", "apiKey": "${OPENAI_KEY}"}}},
		"agents": map[string]any{"defaults": map[string]any{"model": "openai/gpt-5"}}}
	cfg := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": values,
		"secretBindings": map[string]any{"MODEL_KEY": map[string]any{"source": secretRef(ns, secID)}}}), 201).data()
	cfgID := cfg["id"].(string)
	if cfg["generation"] != float64(1) || mustJSON(cfg["values"]) != mustJSON(values) ||
		mustJSON(cfg["secretBindings"]) != mustJSON(map[string]any{"MODEL_KEY": map[string]any{"source": secretRef(ns, secID), "delivery": map[string]any{"type": "env"}}}) {
		t.Fatalf("configuration %v", cfg)
	}
	// The values live in the Configuration Driver: one 0600 file under a 0700 directory.
	file := filepath.Join(e.storageRoot, "configurations", ns, cfgID+".json")
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("configuration file: %v %v", st, err)
	}
	if st, err := os.Stat(filepath.Dir(file)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("configuration directory: %v %v", st, err)
	}

	agent := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "triage", "configurationId": cfgID,
		"harnessAuth": map[string]any{"method": "api_key", "source": secretRef(ns, secID)}}), 201).data()
	agentID, agentSP := agent["id"].(string), agent["servicePrincipalId"].(string)
	if agent["status"] != "active" || agent["desiredRuntimeState"] != "stopped" || agent["executionMode"] != "embedded" ||
		!strings.HasPrefix(agentSP, "spn_") || agent["backendId"] != nil {
		t.Fatalf("agent %v", agent)
	}
	if n := e.count(`SELECT count(*) FROM occ.iam_identities WHERE id = $1 AND agent_id = $2 AND namespace_id = $3`, agentSP, agentID, ns); n != 1 {
		t.Fatal("the Agent's ServicePrincipal is missing")
	}

	// The Agent's own principal lacks secret:operate: 403, audited, nothing written.
	denials := e.denials()
	if r := e.admin("POST", base+"/agents/"+agentID+"/deploy", nil); r.status != 403 {
		t.Fatalf("deploy without the Agent's grant: %d %s", r.status, r.raw)
	}
	if e.denials() != denials+1 || e.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial'
	   AND details -> '__occAuditMetadata' -> 'authorization' ->> 'principalId' = $1`, agentSP) != 1 {
		t.Fatal("the Agent principal's denial is not audited")
	}
	if n := e.count(`SELECT count(*) FROM occ.agent_revisions WHERE agent_id = $1`, agentID); n != 0 {
		t.Fatal("a refused deploy wrote a revision")
	}
	e.grant(agentSP, ns, iam.KindSecret, secID, perm(iam.ActionOperate, iam.KindSecret))

	rev1 := e.expect(e.admin("POST", base+"/agents/"+agentID+"/deploy", nil), 202).data()
	rev1ID := rev1["id"].(string)
	if rev1["revision"] != float64(1) || rev1["agentId"] != agentID || rev1["configurationGeneration"] != float64(1) ||
		mustJSON(rev1["configuration"]) != mustJSON(values) || rev1["secretDriverId"] != "secret-filesystem" {
		t.Fatalf("revision %v", rev1)
	}
	spec := e.revisionSpec(rev1ID)
	if mustJSON(spec["configuration"]) != mustJSON(values) ||
		mustJSON(spec["harness"]) != `{"id":"openclaw","mode":"embedded","version":"2026.11.0"}` ||
		mustJSON(spec["compute"]) != `{"id":"compute-simulated","implementation":"simulated"}` ||
		mustJSON(spec["harnessAuth"]) != mustJSON(map[string]any{"method": "api_key", "source": secretRef(ns, secID)}) ||
		mustJSON(spec["secretBindings"]) != mustJSON(map[string]any{"MODEL_KEY": map[string]any{"delivery": map[string]any{"type": "env"}, "source": secretRef(ns, secID)}}) ||
		spec["secretDriverId"] != "secret-filesystem" || spec["servicePrincipalId"] != agentSP || spec["configurationId"] != cfgID {
		t.Fatalf("admitted spec %s", mustJSON(spec))
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE revision_id = $1 AND idempotency_key = $2 AND agent_id = $3
	   AND state = 'queued' AND actor_id = $4`, rev1ID, "agent_revision:"+rev1ID+":reconcile", agentID, e.adminSP); n != 1 {
		t.Fatal("the revision's work row is missing")
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE agent_id = $1`, agentID); n != 1 {
		t.Fatalf("work rows after deploy: %d", n)
	}
	for action, resource := range map[string]string{"openclaw.secrets.create": secID, "openclaw.configurations.create": cfgID,
		"openclaw.agents.create": agentID, "openclaw.agents.deploy": agentID} {
		if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1 AND resource_id = $2 AND outcome = 'success'`, action, resource); n != 1 {
			t.Errorf("%s: %d audit events", action, n)
		}
	}
	if got := e.expect(e.admin("GET", base+"/agents/"+agentID, nil), 200).data(); got["desiredRuntimeState"] != "running" {
		t.Fatalf("agent after deploy %v", got)
	}

	rev2 := e.expect(e.admin("POST", base+"/agents/"+agentID+"/deploy", nil), 202).data()
	rev2ID := rev2["id"].(string)
	if rev2["revision"] != float64(2) {
		t.Fatalf("second revision %v", rev2)
	}
	before1, before2 := mustJSON(e.revisionSpec(rev1ID)), mustJSON(e.revisionSpec(rev2ID))

	edited := map[string]any{"agents": map[string]any{"defaults": map[string]any{"model": "anthropic/claude"}}}
	patched := e.expect(e.admin("PATCH", base+"/configurations/"+cfgID, map[string]any{"values": edited}), 200).data()
	if patched["generation"] != float64(2) || mustJSON(patched["values"]) != mustJSON(edited) || patched["secretBindings"] == nil {
		t.Fatalf("patched %v", patched)
	}
	if mustJSON(e.revisionSpec(rev1ID)) != before1 || mustJSON(e.revisionSpec(rev2ID)) != before2 {
		t.Fatal("editing the Configuration changed a revision")
	}
	if got := e.expect(e.admin("GET", base+"/agents/"+agentID+"/revisions/"+rev1ID, nil), 200).data(); mustJSON(got["configuration"]) != mustJSON(values) {
		t.Fatalf("revision 1 after the edit %v", got)
	}
	if got := e.expect(e.admin("GET", base+"/configurations/"+cfgID, nil), 200).data(); mustJSON(got["values"]) != mustJSON(edited) {
		t.Fatalf("configuration after the edit %v", got)
	}
	list := e.expect(e.admin("GET", base+"/agents/"+agentID+"/revisions", nil), 200).list()
	if len(list) != 2 || list[0].(map[string]any)["id"] != rev1ID || list[1].(map[string]any)["id"] != rev2ID {
		t.Fatalf("revisions %v", list)
	}
	// The Secret's consumers.
	got := e.expect(e.admin("GET", base+"/secrets/"+secID, nil), 200).data()
	if mustJSON(got["consumers"]) != mustJSON([]any{map[string]any{"kind": "agent", "id": agentID}, map[string]any{"kind": "configuration", "id": cfgID}}) {
		t.Fatalf("consumers %v", got["consumers"])
	}
	// Changing the value is metadata-only in responses.
	e.expect(e.admin("PATCH", base+"/secrets/"+secID, map[string]any{"value": "sk-deploy-flow-second-value-987654"}), 200)
}

// TestReferencedDeletesAndNamespaceEmptiness: a referenced Secret, Configuration or ServiceAccount
// cannot be deleted; a Namespace holding any of them is not empty and says what remains.
func TestReferencedDeletesAndNamespaceEmptiness(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("refs")
	base := "/namespaces/" + ns
	secID := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "s", "value": "refs-secret-value-1234"}), 201).data()["id"].(string)
	cfgID := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{},
		"secretBindings": map[string]any{"TOKEN": map[string]any{"source": secretRef(ns, secID)}}}), 201).data()["id"].(string)
	saID := e.expect(e.admin("POST", base+"/service-accounts", map[string]any{"name": "pat"}), 201).data()["id"].(string)
	agent := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "codex", "configurationId": cfgID, "executionMode": "dedicated",
		"harnessAuth": map[string]any{"method": "codex_pat", "source": map[string]any{"kind": "service_account", "namespaceId": ns, "id": saID}}}), 201).data()
	agentID := agent["id"].(string)
	e.grant(agent["servicePrincipalId"].(string), ns, iam.KindSecret, secID, perm(iam.ActionOperate, iam.KindSecret))
	rev := e.expect(e.admin("POST", base+"/agents/"+agentID+"/deploy", nil), 202).data()
	if mustJSON(rev["harness"]) != `{"id":"codex","mode":"dedicated","version":"0.63.0"}` {
		t.Fatalf("dedicated revision %v", rev)
	}

	for _, path := range []string{"/secrets/" + secID, "/configurations/" + cfgID, "/service-accounts/" + saID} {
		if r := e.admin("DELETE", base+path, nil); r.status != 409 || r.errCode() != "RESOURCE_CONFLICT" {
			t.Errorf("DELETE %s: %d %s", path, r.status, r.raw)
		}
	}
	r := e.admin("DELETE", base, nil)
	if r.status != 409 || r.errCode() != "NAMESPACE_NOT_EMPTY" {
		t.Fatalf("namespace delete: %d %s", r.status, r.raw)
	}
	msg := r.doc["error"].(map[string]any)["message"].(string)
	if !strings.HasPrefix(msg, "The Namespace still holds Agents, Configurations, ServiceAccounts and Secrets;") {
		t.Errorf("message %q does not name the remaining kinds", msg)
	}
	for _, want := range []string{"agent " + agentID, "configuration " + cfgID} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	// Unreferenced resources delete with 204 and their exact bindings go with them.
	lone := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "lone", "value": "refs-lone-value-5678"}), 201).data()["id"].(string)
	reader := e.newServicePrincipal("")
	e.grant(reader.id, ns, iam.KindSecret, lone, perm(iam.ActionRead, iam.KindSecret))
	e.expect(e.admin("DELETE", base+"/secrets/"+lone, nil), 204)
	if n := e.count(`SELECT count(*) FROM occ.iam_access_bindings WHERE resource_id = $1`, lone); n != 0 {
		t.Fatal("the deleted Secret's bindings remain")
	}
	if _, err := os.Stat(filepath.Join(e.storageRoot, "secrets", ns, lone+".json")); !os.IsNotExist(err) {
		t.Fatalf("the deleted Secret's file remains: %v", err)
	}
}

// TestDeployRefusals: a Namespace that is not ready, a deleting Agent and an Agent without Harness
// authentication are refused with their codes, and nothing is written.
func TestDeployRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Agents may be created while the Namespace is provisioning, but not deployed.
	prov := e.createNamespace("provisioning")
	cfg := e.expect(e.admin("POST", "/namespaces/"+prov+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	a := e.expect(e.admin("POST", "/namespaces/"+prov+"/agents", map[string]any{"name": "early", "configurationId": cfg,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()["id"].(string)
	if r := e.admin("POST", "/namespaces/"+prov+"/agents/"+a+"/deploy", nil); r.status != 409 || r.errCode() != "NAMESPACE_NOT_READY" {
		t.Fatalf("deploy in a provisioning Namespace: %d %s", r.status, r.raw)
	}
	if r := e.admin("POST", "/namespaces/"+prov+"/secrets", map[string]any{"name": "x", "value": "provisioning-value-42"}); r.status != 409 || r.errCode() != "NAMESPACE_NOT_READY" {
		t.Fatalf("secret in a provisioning Namespace: %d %s", r.status, r.raw)
	}

	ns := e.readyNamespace("ready")
	base := "/namespaces/" + ns
	cfg = e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	bare := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "bare", "configurationId": cfg}), 201).data()["id"].(string)
	if r := e.admin("POST", base+"/agents/"+bare+"/deploy", nil); r.status != 409 || r.errCode() != "RESOURCE_CONFLICT" {
		t.Fatalf("deploy without harnessAuth: %d %s", r.status, r.raw)
	}
	a = e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "doomed", "configurationId": cfg,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()["id"].(string)
	del := e.expect(e.admin("DELETE", base+"/agents/"+a, nil), 202).data()
	if del["status"] != "deleting" || del["desiredRuntimeState"] != "stopped" {
		t.Fatalf("delete %v", del)
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE idempotency_key = $1 AND agent_target = 'deleted'`, "agent:"+a+":reconcile:deleted"); n != 1 {
		t.Fatal("the deletion work is missing")
	}
	e.expect(e.admin("DELETE", base+"/agents/"+a, nil), 202)
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE agent_id = $1`, a); n != 1 {
		t.Fatalf("a repeated delete queued work: %d rows", n)
	}
	for _, r := range []resp{
		e.admin("POST", base+"/agents/"+a+"/deploy", nil),
		e.admin("POST", base+"/agents/"+a+"/stop", nil),
		e.admin("PATCH", base+"/agents/"+a, map[string]any{"configurationId": cfg}),
	} {
		if r.status != 409 || r.errCode() != "AGENT_DELETING" {
			t.Errorf("mutation of a deleting Agent: %d %s", r.status, r.raw)
		}
	}
	if n := e.count(`SELECT count(*) FROM occ.agent_revisions`); n != 0 {
		t.Fatalf("refused deploys wrote %d revisions", n)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.deploy'`); n != 0 {
		t.Fatal("a refused deploy was audited as a success")
	}
	// Stop queues its own operation each time.
	live := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "live", "configurationId": cfg,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()["id"].(string)
	e.expect(e.admin("POST", base+"/agents/"+live+"/deploy", nil), 202)
	stopped := e.expect(e.admin("POST", base+"/agents/"+live+"/stop", nil), 202).data()
	e.expect(e.admin("POST", base+"/agents/"+live+"/stop", nil), 202)
	if stopped["desiredRuntimeState"] != "stopped" ||
		e.count(`SELECT count(*) FROM occ.controller_work WHERE agent_id = $1 AND agent_target = 'stopped' AND idempotency_key LIKE $2`, live, "agent:"+live+":reconcile:stopped:%") != 2 {
		t.Fatalf("stop %v", stopped)
	}
}

// TestDeployAuthorization: the caller needs secret:operate on every bound Secret, and so does the
// Agent's own ServicePrincipal.
func TestDeployAuthorization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("authz")
	base := "/namespaces/" + ns
	secID := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "s", "value": "authz-secret-value-31415"}), 201).data()["id"].(string)
	cfgID := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{},
		"secretBindings": map[string]any{"TOKEN": map[string]any{"source": secretRef(ns, secID)}}}), 201).data()["id"].(string)
	agent := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "a", "configurationId": cfgID,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()
	agentID, agentSP := agent["id"].(string), agent["servicePrincipalId"].(string)

	caller := e.newServicePrincipal("")
	e.grant(caller.id, ns, iam.KindAgent, agentID, perm(iam.ActionDeploy, iam.KindAgent))
	e.grant(caller.id, ns, iam.KindConfiguration, cfgID, perm(iam.ActionRead, iam.KindConfiguration))
	e.grant(agentSP, ns, iam.KindSecret, secID, perm(iam.ActionOperate, iam.KindSecret))
	deploy := req{method: "POST", path: base + "/agents/" + agentID + "/deploy"}
	if r := e.do(caller.apply(deploy)); r.status != 403 {
		t.Fatalf("caller without secret:operate: %d %s", r.status, r.raw)
	}
	e.grant(caller.id, ns, iam.KindSecret, secID, perm(iam.ActionOperate, iam.KindSecret))
	e.expect(e.do(caller.apply(deploy)), 202)

	// A second Agent whose own principal lacks the grant.
	other := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "b", "configurationId": cfgID,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()["id"].(string)
	e.grant(caller.id, ns, iam.KindAgent, other, perm(iam.ActionDeploy, iam.KindAgent))
	if r := e.do(caller.apply(req{method: "POST", path: base + "/agents/" + other + "/deploy"})); r.status != 403 {
		t.Fatalf("Agent principal without secret:operate: %d %s", r.status, r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.agent_revisions WHERE agent_id = $1`, other); n != 0 {
		t.Fatal("a refused deploy wrote a revision")
	}
}

// TestDenialsExplainWhatTheCallerMaySee: a refused deploy names the missing permission (who, what,
// on which resource) in error.details, but only when the caller may read both that principal (for
// an Agent's ServicePrincipal: the Agent) and the resource; otherwise the 403 is the bare one.
func TestDenialsExplainWhatTheCallerMaySee(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("explain")
	base := "/namespaces/" + ns
	secID := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "s", "value": "explain-secret-value-2718"}), 201).data()["id"].(string)
	cfgID := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{},
		"secretBindings": map[string]any{"TOKEN": map[string]any{"source": secretRef(ns, secID)}}}), 201).data()["id"].(string)
	agent := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "a", "configurationId": cfgID,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()
	agentID, agentSP := agent["id"].(string), agent["servicePrincipalId"].(string)
	deploy := req{method: "POST", path: base + "/agents/" + agentID + "/deploy"}
	secret := map[string]any{"kind": iam.KindSecret, "id": secID, "namespaceId": ns}
	explained := func(r resp, principalKind, principalID string) {
		t.Helper()
		want := map[string]any{"path": "", "code": "PERMISSION_DENIED", "permission": map[string]any{
			"principal": map[string]any{"kind": principalKind, "id": principalID}, "action": iam.ActionOperate, "resource": secret}}
		if r.status != 403 || len(r.details()) != 1 || !reflect.DeepEqual(r.details()[0], want) {
			t.Fatalf("want 403 explained by %v, got %d %s", want, r.status, r.raw)
		}
	}
	bare := func(r resp) {
		t.Helper()
		if r.status != 403 || r.errCode() != "FORBIDDEN" || len(r.details()) != 0 {
			t.Fatalf("want a bare 403, got %d %s", r.status, r.raw)
		}
	}

	// The administrator reads everything: told that the Agent's own principal lacks secret:operate.
	explained(e.admin("POST", deploy.path, nil), iam.IdentityKindServicePrincipal, agentSP)

	// A caller that may deploy but read neither the Agent nor the Secret learns nothing new, about
	// the Agent's principal or about itself.
	caller := e.newServicePrincipal("")
	e.grant(caller.id, ns, iam.KindAgent, agentID, perm(iam.ActionDeploy, iam.KindAgent))
	e.grant(caller.id, ns, iam.KindConfiguration, cfgID, perm(iam.ActionRead, iam.KindConfiguration))
	bare(e.do(caller.apply(deploy)))
	e.grant(caller.id, ns, iam.KindSecret, secID, perm(iam.ActionRead, iam.KindSecret))
	explained(e.do(caller.apply(deploy)), iam.IdentityKindServicePrincipal, caller.id) // its own missing operate, on a Secret it reads

	// Holding operate itself, the caller is next refused for the Agent's principal: explained only
	// once it may read the Agent too.
	e.grant(caller.id, ns, iam.KindSecret, secID, perm(iam.ActionOperate, iam.KindSecret))
	bare(e.do(caller.apply(deploy)))
	e.grant(caller.id, ns, iam.KindAgent, agentID, perm(iam.ActionRead, iam.KindAgent))
	explained(e.do(caller.apply(deploy)), iam.IdentityKindServicePrincipal, agentSP)

	// The explanation is right: granting exactly what it names admits the deploy.
	e.grant(agentSP, ns, iam.KindSecret, secID, perm(iam.ActionOperate, iam.KindSecret))
	e.expect(e.do(caller.apply(deploy)), 202)
}

// TestDriverEffectsFollowTheTransaction: a Secret value written before a failed transaction is
// removed again, and nothing of it stays in storage.
func TestDriverEffectsFollowTheTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("rollback")
	admin := pgtestAdmin(t, e)
	if _, err := admin.Exec(ctxb(), `REVOKE INSERT ON occ.audit_events FROM occ_app`); err != nil {
		t.Fatal(err)
	}
	e.expect(e.admin("POST", "/namespaces/"+ns+"/secrets", map[string]any{"name": "s", "value": "rollback-value-8080"}), 503)
	e.expect(e.admin("POST", "/namespaces/"+ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 503)
	for _, dir := range []string{"secrets", "configurations"} {
		entries, _ := os.ReadDir(filepath.Join(e.storageRoot, dir, ns))
		if len(entries) != 0 {
			t.Errorf("%s left behind: %v", dir, entries)
		}
	}
	if n := e.count(`SELECT count(*) FROM occ.secrets`) + e.count(`SELECT count(*) FROM occ.configurations`); n != 0 {
		t.Fatalf("%d rows committed without their audit events", n)
	}
}

// TestLiveRevisionKeepsItsInputs: a Configuration and a Secret that only a pending deployment still
// uses cannot be deleted; once that deployment finished without activation, they can.
func TestLiveRevisionKeepsItsInputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("live")
	base := "/namespaces/" + ns
	secID := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "s", "value": "live-secret-value-6174"}), 201).data()["id"].(string)
	old := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{"v": 1},
		"secretBindings": map[string]any{"TOKEN": map[string]any{"source": secretRef(ns, secID)}}}), 201).data()["id"].(string)
	next := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{"v": 2}}), 201).data()["id"].(string)
	agent := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "a", "configurationId": old,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()
	e.grant(agent["servicePrincipalId"].(string), ns, iam.KindSecret, secID, perm(iam.ActionOperate, iam.KindSecret))
	rev := e.expect(e.admin("POST", base+"/agents/"+agent["id"].(string)+"/deploy", nil), 202).data()["id"].(string)
	e.expect(e.admin("PATCH", base+"/agents/"+agent["id"].(string), map[string]any{"configurationId": next}), 200)
	e.expect(e.admin("PATCH", base+"/configurations/"+old, map[string]any{"values": map[string]any{}, "secretBindings": map[string]any{}}), 200)

	// Only the pending deployment still uses them.
	for _, path := range []string{"/configurations/" + old, "/secrets/" + secID} {
		if r := e.admin("DELETE", base+path, nil); r.status != 409 || !strings.Contains(string(r.raw), "AgentRevisions") {
			t.Errorf("DELETE %s while deploying: %d %s", path, r.status, r.raw)
		}
	}
	e.exec(`UPDATE occ.controller_work SET state = 'succeeded', completed_at = clock_timestamp(), reason_code = 'REVISION_SUPERSEDED'
 WHERE idempotency_key = $1`, "agent_revision:"+rev+":reconcile")
	e.expect(e.admin("DELETE", base+"/secrets/"+secID, nil), 204)
	e.expect(e.admin("DELETE", base+"/configurations/"+old, nil), 204)
}

// TestConcurrentDeploysNumberRevisionsOnce: parallel deploys of one Agent serialize on the Agent's
// row lock and get distinct, consecutive numbers.
func TestConcurrentDeploysNumberRevisionsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, agents := e.deployableAgents("parallel", 1)
	agent := agents[0]
	const n = 6
	statuses := make(chan int, n)
	for range n {
		go func() {
			statuses <- doHTTP(t, e.http.URL, req{method: "POST", path: base + "/agents/" + agent + "/deploy", key: e.adminKey}).status
		}()
	}
	for range n {
		if s := <-statuses; s != 202 {
			t.Errorf("deploy: %d", s)
		}
	}
	if got := e.count(`SELECT count(DISTINCT revision_number) FROM occ.agent_revisions WHERE agent_id = $1 AND revision_number BETWEEN 1 AND $2`, agent, n); got != n {
		t.Fatalf("%d distinct revision numbers, want %d", got, n)
	}
	if got := e.count(`SELECT count(*) FROM occ.controller_work WHERE agent_id = $1 AND revision_id IS NOT NULL`, agent); got != n {
		t.Fatalf("%d revision work rows, want %d", got, n)
	}
}
