package api_test

import (
	"testing"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
)

// resourceFixtures are the Namespace-owned resources the authorization matrix acts on, in a ready
// Namespace.
type resourceFixtures struct {
	cfg, spareCfg, lone string
	secret, spareSecret string
	sa, spareSA         string
	agent, spareAgent   string
	agentSP, revision   string
	preset, sparePreset string
	// provisioning is queued (no worker runs here); failedProvisioning failed at its first step.
	provisioning, failedProvisioning string
}

// fixturePresetTemplate is a template using each kind of variable the matrix needs.
func fixturePresetTemplate() map[string]any {
	return map[string]any{
		"variables": map[string]any{"name": map[string]any{"type": "string"}},
		"agent":     map[string]any{"name": "{{ vars.name }}", "executionMode": "embedded"},
	}
}

// provisionBody is a guided provisioning request binding the Secret as the Configuration's TOKEN
// and as the api_key source.
func provisionBody(ns, secret string) map[string]any {
	return map[string]any{"requestId": platform.NewID(platform.PrefixRequest), "name": "provisioned-" + randomSuffix(),
		"harnessAuth": map[string]any{"method": "api_key", "source": secretRef(ns, secret)},
		"configuration": map[string]any{"kind": "agent", "values": map[string]any{"agents": map[string]any{}},
			"secretBindings": map[string]any{"TOKEN": map[string]any{"source": secretRef(ns, secret)}}}}
}

func secretRef(ns, id string) map[string]any {
	return map[string]any{"kind": "secret", "namespaceId": ns, "id": id}
}

func newResourceFixtures(t *testing.T, e *env, ns string) resourceFixtures {
	t.Helper()
	e.exec(`UPDATE occ.namespaces SET status = 'ready' WHERE id = $1`, ns)
	var f resourceFixtures
	base := "/namespaces/" + ns
	post := func(path string, body any) map[string]any {
		return e.expect(e.do(req{method: "POST", path: base + path, key: e.adminKey, body: body}), 201).data()
	}
	f.secret = post("/secrets", map[string]any{"name": "fixture", "value": "fixture-value-" + randomSuffix()})["id"].(string)
	f.spareSecret = post("/secrets", map[string]any{"name": "spare", "value": "spare-value-" + randomSuffix()})["id"].(string)
	f.cfg = post("/configurations", map[string]any{"kind": "agent", "values": map[string]any{"agents": map[string]any{}},
		"secretBindings": map[string]any{"TOKEN": map[string]any{"source": secretRef(ns, f.secret)}}})["id"].(string)
	f.spareCfg = post("/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})["id"].(string)
	f.lone = post("/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})["id"].(string)
	f.preset = post("/presets", map[string]any{"name": "preset-" + randomSuffix(), "template": fixturePresetTemplate()})["id"].(string)
	f.sparePreset = post("/presets", map[string]any{"name": "preset-" + randomSuffix(), "template": map[string]any{}})["id"].(string)
	f.sa = post("/service-accounts", map[string]any{"name": "sa-" + randomSuffix()})["id"].(string)
	f.spareSA = post("/service-accounts", map[string]any{"name": "sa-" + randomSuffix()})["id"].(string)
	agent := post("/agents", map[string]any{"name": "agent-" + randomSuffix(), "configurationId": f.cfg,
		"harnessAuth": map[string]any{"method": "api_key", "source": secretRef(ns, f.secret)}})
	f.agent, f.agentSP = agent["id"].(string), agent["servicePrincipalId"].(string)
	f.spareAgent = post("/agents", map[string]any{"name": "agent-" + randomSuffix(), "configurationId": f.spareCfg})["id"].(string)
	e.grant(f.agentSP, ns, iam.KindSecret, f.secret, perm(iam.ActionOperate, iam.KindSecret))
	rev := e.expect(e.do(req{method: "POST", path: base + "/agents/" + f.agent + "/deploy", key: e.adminKey}), 202)
	f.revision = rev.data()["id"].(string)
	provision := func() string {
		r := e.expect(e.do(req{method: "POST", path: base + "/agents/provision", key: e.adminKey, body: provisionBody(ns, f.secret)}), 202)
		return r.data()["provisioning"].(map[string]any)["workId"].(string)
	}
	f.provisioning, f.failedProvisioning = provision(), provision()
	e.exec(`UPDATE occ.agent_provisioning_work SET status = 'failed', error_code = 'AUTHORIZATION_DENIED',
  error_message = 'The requester may no longer create this configuration.' WHERE id = $1`, f.failedProvisioning)
	e.exec(`UPDATE occ.controller_work SET state = 'failed_permanent', completed_at = now(), reason_code = 'AUTHORIZATION_DENIED'
 WHERE idempotency_key = $1`, platform.ProvisioningWorkKey(f.failedProvisioning, 1))
	return f
}

// ownProvisioning hands a fixture provisioning to the matrix's permitted caller: only its
// requester may read or retry a provisioning.
func ownProvisioning(e *env, id string) func(callerID string) {
	return func(callerID string) {
		e.exec(`UPDATE occ.agent_provisioning_work SET actor_id = $1 WHERE id = $2`, callerID, id)
	}
}

func exactGrant(ns, kind, id, action string) grantSpec {
	return grantSpec{namespace: ns, kind: kind, id: id, perm: perm(action, kind)}
}

func collectionGrant(ns, kind string) grantSpec {
	return grantSpec{namespace: ns, kind: kind, id: ns, perm: perm(iam.ActionCreate, kind)}
}

func (f resourceFixtures) cases(e *env, installationID, ns string) map[string]func() matrixCase {
	base := "/namespaces/" + ns
	nsRead := namespaceGrant(ns, iam.ActionRead)
	operateSecret := exactGrant(ns, iam.KindSecret, f.secret, iam.ActionOperate)
	readCfg := exactGrant(ns, iam.KindConfiguration, f.cfg, iam.ActionRead)
	harness := map[string]any{"method": "api_key", "source": secretRef(ns, f.secret)}
	c := func(method, path string, body any, success int, need ...grantSpec) func() matrixCase {
		return func() matrixCase {
			return matrixCase{method: method, path: base + path, body: body, need: need, success: success}
		}
	}
	provisionPath := []grantSpec{collectionGrant(ns, iam.KindAgent), collectionGrant(ns, iam.KindConfiguration)}
	return map[string]func() matrixCase{
		"POST /namespaces/{namespaceId}/agents/provision": func() matrixCase {
			return matrixCase{method: "POST", path: base + "/agents/provision", success: 202, body: provisionBody(ns, f.secret),
				need: append(provisionPath, installationGrant(installationID, iam.ActionAdminister), nsRead, operateSecret)}
		},
		"GET /namespaces/{namespaceId}/agents/provision/{workId}": func() matrixCase {
			return matrixCase{method: "GET", path: base + "/agents/provision/" + f.provisioning, success: 200, need: provisionPath,
				owned: ownProvisioning(e, f.provisioning)}
		},
		"POST /namespaces/{namespaceId}/agents/provision/{workId}/retry": func() matrixCase {
			return matrixCase{method: "POST", path: base + "/agents/provision/" + f.failedProvisioning + "/retry", success: 202, need: provisionPath,
				owned: ownProvisioning(e, f.failedProvisioning)}
		},
		"POST /namespaces/{namespaceId}/configurations": c("POST", "/configurations",
			map[string]any{"kind": "agent", "values": map[string]any{}, "secretBindings": map[string]any{"A": map[string]any{"source": secretRef(ns, f.secret)}}},
			201, collectionGrant(ns, iam.KindConfiguration), operateSecret),
		"GET /namespaces/{namespaceId}/configurations/{configurationId}": c("GET", "/configurations/"+f.cfg, nil, 200, readCfg),
		"PATCH /namespaces/{namespaceId}/configurations/{configurationId}": c("PATCH", "/configurations/"+f.cfg,
			map[string]any{"values": map[string]any{"agents": map[string]any{}}}, 200,
			exactGrant(ns, iam.KindConfiguration, f.cfg, iam.ActionUpdate), operateSecret),
		"DELETE /namespaces/{namespaceId}/configurations/{configurationId}": c("DELETE", "/configurations/"+f.lone, nil, 204,
			exactGrant(ns, iam.KindConfiguration, f.lone, iam.ActionDelete)),
		"GET /namespaces/{namespaceId}/presets": c("GET", "/presets", nil, 200, nsRead),
		"POST /namespaces/{namespaceId}/presets": c("POST", "/presets",
			map[string]any{"name": "matrix-" + randomSuffix(), "template": fixturePresetTemplate()}, 201, collectionGrant(ns, iam.KindPreset)),
		"GET /namespaces/{namespaceId}/presets/{presetId}": c("GET", "/presets/"+f.preset, nil, 200,
			exactGrant(ns, iam.KindPreset, f.preset, iam.ActionRead)),
		"PATCH /namespaces/{namespaceId}/presets/{presetId}": c("PATCH", "/presets/"+f.preset,
			map[string]any{"template": fixturePresetTemplate()}, 200, exactGrant(ns, iam.KindPreset, f.preset, iam.ActionUpdate)),
		"DELETE /namespaces/{namespaceId}/presets/{presetId}": c("DELETE", "/presets/"+f.sparePreset, nil, 204,
			exactGrant(ns, iam.KindPreset, f.sparePreset, iam.ActionDelete)),
		"GET /namespaces/{namespaceId}/secrets":  c("GET", "/secrets", nil, 200, nsRead),
		"POST /namespaces/{namespaceId}/secrets": c("POST", "/secrets", map[string]any{"name": "n", "value": "matrix-value"}, 201, collectionGrant(ns, iam.KindSecret)),
		"GET /namespaces/{namespaceId}/secrets/{secretId}": c("GET", "/secrets/"+f.secret, nil, 200,
			exactGrant(ns, iam.KindSecret, f.secret, iam.ActionRead)),
		"PATCH /namespaces/{namespaceId}/secrets/{secretId}": c("PATCH", "/secrets/"+f.secret, map[string]any{"value": "matrix-value-2"}, 200,
			exactGrant(ns, iam.KindSecret, f.secret, iam.ActionUpdate)),
		"DELETE /namespaces/{namespaceId}/secrets/{secretId}": c("DELETE", "/secrets/"+f.spareSecret, nil, 204,
			exactGrant(ns, iam.KindSecret, f.spareSecret, iam.ActionDelete)),
		"GET /namespaces/{namespaceId}/service-accounts":  c("GET", "/service-accounts", nil, 200, nsRead),
		"POST /namespaces/{namespaceId}/service-accounts": c("POST", "/service-accounts", map[string]any{"name": "matrix-" + randomSuffix()}, 201, collectionGrant(ns, iam.KindServiceAccount)),
		"GET /namespaces/{namespaceId}/service-accounts/{serviceAccountId}": c("GET", "/service-accounts/"+f.sa, nil, 200,
			exactGrant(ns, iam.KindServiceAccount, f.sa, iam.ActionRead)),
		"PATCH /namespaces/{namespaceId}/service-accounts/{serviceAccountId}/credential": c("PATCH", "/service-accounts/"+f.sa+"/credential",
			map[string]any{"kind": "api_key", "secretRef": map[string]any{"name": "model-key", "key": "api-key"}}, 200,
			exactGrant(ns, iam.KindServiceAccount, f.sa, iam.ActionUpdate)),
		"DELETE /namespaces/{namespaceId}/service-accounts/{serviceAccountId}": c("DELETE", "/service-accounts/"+f.spareSA, nil, 204,
			exactGrant(ns, iam.KindServiceAccount, f.spareSA, iam.ActionDelete)),
		"GET /namespaces/{namespaceId}/agents": c("GET", "/agents", nil, 200, nsRead),
		"POST /namespaces/{namespaceId}/agents": func() matrixCase {
			return matrixCase{method: "POST", path: base + "/agents", success: 201,
				body: map[string]any{"name": "matrix-" + randomSuffix(), "configurationId": f.cfg, "harnessAuth": harness},
				need: []grantSpec{collectionGrant(ns, iam.KindAgent), readCfg, operateSecret}}
		},
		"GET /namespaces/{namespaceId}/agents/{agentId}": c("GET", "/agents/"+f.agent, nil, 200, exactGrant(ns, iam.KindAgent, f.agent, iam.ActionRead)),
		"PATCH /namespaces/{namespaceId}/agents/{agentId}": c("PATCH", "/agents/"+f.agent,
			map[string]any{"configurationId": f.cfg, "harnessAuth": harness}, 200,
			exactGrant(ns, iam.KindAgent, f.agent, iam.ActionUpdate), readCfg, operateSecret),
		"DELETE /namespaces/{namespaceId}/agents/{agentId}": c("DELETE", "/agents/"+f.spareAgent, nil, 202,
			exactGrant(ns, iam.KindAgent, f.spareAgent, iam.ActionDelete)),
		"POST /namespaces/{namespaceId}/agents/{agentId}/deploy": c("POST", "/agents/"+f.agent+"/deploy", nil, 202,
			exactGrant(ns, iam.KindAgent, f.agent, iam.ActionDeploy), readCfg, operateSecret),
		"POST /namespaces/{namespaceId}/agents/{agentId}/stop": c("POST", "/agents/"+f.agent+"/stop", nil, 202,
			exactGrant(ns, iam.KindAgent, f.agent, iam.ActionOperate)),
		"GET /namespaces/{namespaceId}/agents/{agentId}/revisions": c("GET", "/agents/"+f.agent+"/revisions", nil, 200,
			exactGrant(ns, iam.KindAgent, f.agent, iam.ActionRead)),
		"GET /namespaces/{namespaceId}/agents/{agentId}/revisions/{revisionId}": c("GET", "/agents/"+f.agent+"/revisions/"+f.revision, nil, 200,
			exactGrant(ns, iam.KindAgentRevision, f.revision, iam.ActionRead)),
		"GET /namespaces/{namespaceId}/latest-deployments": c("GET", "/latest-deployments", nil, 200, nsRead),
		"GET /namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}": c("GET", "/agents/"+f.agent+"/deployments/"+f.revision, nil, 200,
			exactGrant(ns, iam.KindAgentRevision, f.revision, iam.ActionRead)),
		"GET /namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}/runtime": c("GET", "/agents/"+f.agent+"/deployments/"+f.revision+"/runtime", nil, 200,
			exactGrant(ns, iam.KindAgent, f.agent, iam.ActionOperate), exactGrant(ns, iam.KindAgent, f.agent, iam.ActionRead),
			exactGrant(ns, iam.KindAgentRevision, f.revision, iam.ActionRead)),
		"POST /namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}/diagnostics": c("POST", "/agents/"+f.agent+"/deployments/"+f.revision+"/diagnostics", nil, 200,
			exactGrant(ns, iam.KindAgent, f.agent, iam.ActionOperate), exactGrant(ns, iam.KindAgent, f.agent, iam.ActionRead),
			exactGrant(ns, iam.KindAgentRevision, f.revision, iam.ActionRead)),
		"GET /namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}/runtime/logs": c("GET", "/agents/"+f.agent+"/deployments/"+f.revision+"/runtime/logs?source=gateway", nil, 200,
			exactGrant(ns, iam.KindAgent, f.agent, iam.ActionReadLogs), exactGrant(ns, iam.KindAgent, f.agent, iam.ActionRead)),
		"GET /namespaces/{namespaceId}/agents/{agentId}/runtime-images": c("GET", "/agents/"+f.agent+"/runtime-images", nil, 200,
			exactGrant(ns, iam.KindAgent, f.agent, iam.ActionRead)),
	}
}
