package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/testkit/logbuf"
	"github.com/openclaw/occ/internal/testkit/wait"
	"github.com/openclaw/occ/internal/worker"
)

// withWorker runs a real worker next to the API, on the API's own simulated Compute Driver,
// Configuration Driver and database, until the test ends.
func withWorker(e *env, cfg *api.Config) { withWorkerOn(nil)(e, cfg) }

// withWorkerOn is withWorker whose Configuration Driver is wrap(the API's), when wrap is set.
func withWorkerOn(wrap func(driver.Configuration) driver.Configuration) envOption {
	return func(e *env, cfg *api.Config) {
		configurations := cfg.Configurations
		if wrap != nil {
			configurations = wrap(configurations)
		}
		startWorker(e, cfg, configurations)
	}
}

func startWorker(e *env, cfg *api.Config, configurations driver.Configuration) {
	t := e.t
	logs := &logbuf.Buffer{}
	log := obs.NewLogger(logs, "occ-worker", slog.LevelDebug)
	q := queue.New(e.app, queue.Options{MaxAttempts: 5, LeaseDuration: 3 * time.Second, Jitter: func() float64 { return 0 }})
	w, err := worker.New(worker.Config{
		Pool: e.app, Queue: q, Compute: cfg.Compute, Configurations: configurations, IAMDriverID: iamDriverID,
		SecretDriverID: cfg.Secrets.ID(), InstallationID: e.installationID, Concurrency: 2, PollInterval: 20 * time.Millisecond,
		ConvergenceTimeout: 15 * time.Minute, DatabaseTimeout: 5 * time.Second, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func provisioningOf(r resp) map[string]any {
	return r.data()["provisioning"].(map[string]any)
}

// settledProvisioning waits until the provisioning at path is succeeded or failed, as caller.
func settledProvisioning(t *testing.T, e *env, caller identity, path string) map[string]any {
	t.Helper()
	var p map[string]any
	wait.Eventually(t, wait.Long, "the provisioning to settle", func() bool {
		p = provisioningOf(e.expect(e.do(caller.apply(req{method: "GET", path: path})), 200))
		return p["status"] == "succeeded" || p["status"] == "failed"
	})
	return p
}

func (e *env) auditCount(action, resourceID string) int {
	return e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1 AND resource_id = $2 AND outcome = 'success'`, action, resourceID)
}

// TestProvisioningEndToEnd: one request becomes a Configuration, an Agent whose ServicePrincipal
// was granted operate on its Secret, and a first revision the worker then deploys; repeating the
// request answers the same provisioning; the same requestId with another body is refused.
func TestProvisioningEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withWorker)
	ns := e.defaultNS
	base := "/namespaces/" + ns
	wait.Eventually(t, wait.Long, "the default Namespace to become ready", func() bool {
		return e.expect(e.admin("GET", base, nil), 200).data()["status"] == "ready"
	})
	secret := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "model-key", "value": "provisioning-value-1234"}), 201).data()["id"].(string)
	admin := identity{key: e.adminKey}

	body := provisionBody(ns, secret)
	body["initialWorkspaceFiles"] = map[string]any{"AGENTS.md": "# Provisioned\n"}
	first := provisioningOf(e.expect(e.admin("POST", base+"/agents/provision", body), 202))
	workID := first["workId"].(string)
	if first["url"] != base+"/agents/provision/"+workID || first["requestId"] != body["requestId"] {
		t.Fatalf("first answer %v", first)
	}
	if again := provisioningOf(e.expect(e.admin("POST", base+"/agents/provision", body), 202)); again["workId"] != workID {
		t.Fatalf("a repeated request answered another provisioning: %v", again)
	}
	other := provisionBody(ns, secret)
	other["requestId"] = body["requestId"]
	if r := e.admin("POST", base+"/agents/provision", other); r.status != http.StatusConflict || r.errCode() != "PROVISIONING_REQUEST_CONFLICT" {
		t.Fatalf("same requestId, other body: %d %s", r.status, r.raw)
	}

	p := settledProvisioning(t, e, admin, base+"/agents/provision/"+workID)
	if p["status"] != "succeeded" || p["phase"] != "done" || p["revisionId"] == nil || p["error"] != nil {
		t.Fatalf("provisioning %v", p)
	}
	for _, st := range p["steps"].([]any) {
		if st.(map[string]any)["status"] != "succeeded" {
			t.Fatalf("steps %v", p["steps"])
		}
	}
	agentID, cfgID, revID := p["agentId"].(string), p["configurationId"].(string), p["revisionId"].(string)
	agent := e.expect(e.admin("GET", base+"/agents/"+agentID, nil), 200).data()
	if agent["name"] != body["name"] || agent["configurationId"] != cfgID || agent["desiredRuntimeState"] != "running" {
		t.Fatalf("agent %v", agent)
	}
	cfg := e.expect(e.admin("GET", base+"/configurations/"+cfgID, nil), 200).data()
	if mustJSON(cfg["values"]) != `{"agents":{}}` || cfg["generation"] != float64(1) {
		t.Fatalf("configuration %v", cfg)
	}
	sp := agent["servicePrincipalId"].(string)
	if n := e.count(`SELECT count(*) FROM occ.iam_access_bindings WHERE identity_subject_id = $1 AND resource_kind = 'secret' AND resource_id = $2`, sp, secret); n != 1 {
		t.Fatalf("%d bindings of the Agent's ServicePrincipal on its Secret", n)
	}
	wait.Eventually(t, wait.Long, "the first revision to deploy", func() bool {
		return e.expect(e.admin("GET", base+"/agents/"+agentID+"/deployments/"+revID, nil), 200).data()["status"] == "succeeded"
	})
	// One event per state change, each the action of the route the step stands for.
	for action, id := range map[string]string{
		"openclaw.agents.provision": agentID, "openclaw.configurations.create": cfgID, "openclaw.agents.create": agentID,
		"openclaw.iam.access_bindings.create": secret, "openclaw.agents.deploy": agentID, "openclaw.agents.provision.lifecycle": agentID,
	} {
		if n := e.auditCount(action, id); n != 1 {
			t.Errorf("%d %s events on %s", n, action, id)
		}
	}
	// The staged values are gone once the Configuration holds them.
	if n := e.count(`SELECT count(*) FROM occ.agent_provisioning_work WHERE id = $1 AND staged_values IS NOT NULL`, workID); n != 0 {
		t.Fatal("the Configuration's values stay staged after its step")
	}
	// The initial workspace files went, as with Agent create and deploy, into the first revision's
	// snapshot, and are staged nowhere any more.
	if n := e.count(`SELECT count(*) FROM occ.agent_revisions WHERE id = $1 AND admitted_spec->'initialWorkspaceFiles'->>'AGENTS.md' = $2`,
		revID, "# Provisioned\n"); n != 1 {
		t.Fatal("the first revision does not carry the initial workspace files")
	}
	if n := e.count(`SELECT count(*) FROM occ.agent_provisioning_work WHERE id = $1 AND staged_workspace_files IS NOT NULL`, workID) +
		e.count(`SELECT count(*) FROM occ.agent_initial_workspace_files WHERE agent_id = $1`, agentID); n != 0 {
		t.Fatal("the initial workspace files stay staged after the first revision took them")
	}
	if r := e.admin("POST", base+"/agents/provision/"+workID+"/retry", nil); r.status != http.StatusConflict || r.errCode() != "PROVISIONING_NOT_FAILED" {
		t.Fatalf("retry of a succeeded provisioning: %d %s", r.status, r.raw)
	}
}

// TestProvisioningStepsCheckTheRequester: a requester who may create the Configuration and the
// Agent but not deploy them gets both created and the admission failed with its code; once
// granted agent:deploy, a retry resumes at the admission, without repeating the earlier steps.
// Another caller, even the administrator, does not see the provisioning.
func TestProvisioningStepsCheckTheRequester(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withWorker)
	ns := e.defaultNS
	base := "/namespaces/" + ns
	wait.Eventually(t, wait.Long, "the default Namespace to become ready", func() bool {
		return e.expect(e.admin("GET", base, nil), 200).data()["status"] == "ready"
	})
	secret := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "model-key", "value": "provisioning-value-5678"}), 201).data()["id"].(string)

	caller := e.newServicePrincipal("")
	e.grant(caller.id, "", iam.KindInstallation, e.installationID, perm(iam.ActionAdminister, iam.KindInstallation))
	e.grant(caller.id, ns, "", "", perm(iam.ActionRead, iam.KindNamespace), perm(iam.ActionCreate, iam.KindAgent),
		perm(iam.ActionCreate, iam.KindConfiguration), perm(iam.ActionRead, iam.KindConfiguration), perm(iam.ActionRead, iam.KindAgent),
		perm(iam.ActionOperate, iam.KindSecret), perm(iam.ActionRead, iam.KindSecret))

	body := provisionBody(ns, secret)
	workID := provisioningOf(e.expect(e.do(caller.apply(req{method: "POST", path: base + "/agents/provision", body: body})), 202))["workId"].(string)
	path := base + "/agents/provision/" + workID
	p := settledProvisioning(t, e, caller, path)
	errDoc, _ := p["error"].(map[string]any)
	if p["status"] != "failed" || p["phase"] != "admission" || errDoc["code"] != "AUTHORIZATION_DENIED" || p["revisionId"] != nil {
		t.Fatalf("provisioning without agent:deploy: %v", p)
	}
	steps := p["steps"].([]any)
	for i, want := range []string{"succeeded", "succeeded", "succeeded", "failed"} {
		if st := steps[i].(map[string]any); st["status"] != want {
			t.Fatalf("steps %v", steps)
		}
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND actor_id = $1 AND action = 'openclaw.agents.deploy'`, caller.id); n != 1 {
		t.Fatalf("%d deploy denials audited", n)
	}
	if r := e.admin("GET", path, nil); r.status != http.StatusNotFound {
		t.Fatalf("another caller reads the provisioning: %d %s", r.status, r.raw)
	}
	if r := e.admin("POST", path+"/retry", nil); r.status != http.StatusNotFound {
		t.Fatalf("another caller retries the provisioning: %d %s", r.status, r.raw)
	}

	e.grant(caller.id, ns, "", "", perm(iam.ActionDeploy, iam.KindAgent))
	retried := provisioningOf(e.expect(e.do(caller.apply(req{method: "POST", path: path + "/retry"})), 202))
	if retried["run"] != float64(2) || retried["phase"] != "admission" {
		t.Fatalf("retry %v", retried)
	}
	p = settledProvisioning(t, e, caller, path)
	if p["status"] != "succeeded" || p["revisionId"] == nil {
		t.Fatalf("provisioning after the retry: %v", p)
	}
	agentID, cfgID := p["agentId"].(string), p["configurationId"].(string)
	for action, id := range map[string]string{"openclaw.configurations.create": cfgID, "openclaw.agents.create": agentID,
		"openclaw.iam.access_bindings.create": secret, "openclaw.agents.deploy": agentID, "openclaw.agents.provision.retry": agentID} {
		if n := e.auditCount(action, id); n != 1 {
			t.Errorf("%d %s events on %s after the retry", n, action, id)
		}
	}
	if n := e.count(`SELECT count(*) FROM occ.agents WHERE namespace_id = $1 AND name = $2`, ns, body["name"]); n != 1 {
		t.Fatalf("%d Agents for one provisioning", n)
	}
}

// countingConfigurations is the real Configuration Driver, counting its writes and refusing its
// first read: the worker's admission step reads the document back, so the first run ends there
// after the earlier steps committed.
type countingConfigurations struct {
	driver.Configuration
	creates   atomic.Int32
	readsLeft atomic.Int32 // reads still to refuse
}

func (c *countingConfigurations) Create(ctx context.Context, doc driver.ConfigurationDocument) (driver.ConfigurationDocument, error) {
	c.creates.Add(1)
	return c.Configuration.Create(ctx, doc)
}

func (c *countingConfigurations) Read(ctx context.Context, ref driver.ConfigurationRef) (driver.ConfigurationDocument, error) {
	if c.readsLeft.Add(-1) >= 0 {
		return driver.ConfigurationDocument{}, errors.New("test: the configuration store is unreachable")
	}
	return c.Configuration.Read(ctx, ref)
}

// TestProvisioningResumesAtTheNextStep: a pass that ends after some steps committed (here a
// dependency failure at the admission) leaves the record at that step; the next attempt starts
// there, and the Configuration, the Agent and the grant are each made once.
func TestProvisioningResumesAtTheNextStep(t *testing.T) {
	t.Parallel()
	counting := &countingConfigurations{}
	counting.readsLeft.Store(1)
	e := newEnv(t, withWorkerOn(func(c driver.Configuration) driver.Configuration {
		counting.Configuration = c
		return counting
	}))
	ns := e.defaultNS
	base := "/namespaces/" + ns
	wait.Eventually(t, wait.Long, "the default Namespace to become ready", func() bool {
		return e.expect(e.admin("GET", base, nil), 200).data()["status"] == "ready"
	})
	secret := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "model-key", "value": "provisioning-value-9012"}), 201).data()["id"].(string)
	workID := provisioningOf(e.expect(e.admin("POST", base+"/agents/provision", provisionBody(ns, secret)), 202))["workId"].(string)
	p := settledProvisioning(t, e, identity{key: e.adminKey}, base+"/agents/provision/"+workID)
	if p["status"] != "succeeded" || p["run"] != float64(1) || p["attemptCount"] != float64(2) {
		t.Fatalf("provisioning %v", p)
	}
	if n := counting.creates.Load(); n != 1 {
		t.Fatalf("%d Configuration documents written", n)
	}
	agentID, cfgID := p["agentId"].(string), p["configurationId"].(string)
	for action, id := range map[string]string{"openclaw.configurations.create": cfgID, "openclaw.agents.create": agentID,
		"openclaw.iam.access_bindings.create": secret, "openclaw.agents.deploy": agentID} {
		if n := e.auditCount(action, id); n != 1 {
			t.Errorf("%d %s events on %s", n, action, id)
		}
	}
}

// TestQueuedProvisioningKeepsTheNamespace: a Namespace with a provisioning still queued is not
// empty; once the provisioning failed it no longer holds the Namespace.
func TestQueuedProvisioningKeepsTheNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("provisioned")
	e.exec(`UPDATE occ.namespaces SET status = 'ready' WHERE id = $1`, ns)
	base := "/namespaces/" + ns
	body := map[string]any{"requestId": platform.NewID(platform.PrefixRequest), "name": "alone",
		"harnessAuth": map[string]any{"method": "runtime"}, "configuration": map[string]any{"kind": "agent", "values": map[string]any{}}}
	workID := provisioningOf(e.expect(e.admin("POST", base+"/agents/provision", body), 202))["workId"].(string)
	r := e.admin("DELETE", base, nil)
	if r.status != http.StatusConflict || r.errCode() != "NAMESPACE_NOT_EMPTY" || !strings.Contains(string(r.raw), "queued provisionings") {
		t.Fatalf("delete with a queued provisioning: %d %s", r.status, r.raw)
	}
	e.exec(`UPDATE occ.agent_provisioning_work SET status = 'failed', error_code = 'AUTHORIZATION_DENIED', error_message = 'denied'
 WHERE id = $1`, workID)
	e.expect(e.admin("DELETE", base, nil), 202)
}

// TestProvisionBodyIsTheCreateBodies: the provisioning body is the Agent create body without
// configurationId, with the Configuration create body inline, so a member either create route
// gains is accepted here too.
func TestProvisionBodyIsTheCreateBodies(t *testing.T) {
	t.Parallel()
	var agent, configuration, provision *api.Route
	for _, r := range api.Routes() {
		switch r.Method + " " + r.Path {
		case "POST /namespaces/{namespaceId}/agents":
			agent = r
		case "POST /namespaces/{namespaceId}/configurations":
			configuration = r
		case "POST /namespaces/{namespaceId}/agents/provision":
			provision = r
		}
	}
	members := map[string]bool{}
	for _, p := range provision.Body.Properties {
		members[p.Name] = p.Required
		if p.Name == "configuration" && (p.Schema != configuration.Body || !p.Required) {
			t.Error("configuration is not the required Configuration create body")
		}
	}
	if !members["requestId"] || len(members) != len(agent.Body.Properties)+1 {
		t.Fatalf("provision members %v", members)
	}
	for _, p := range agent.Body.Properties {
		if required, ok := members[p.Name]; p.Name != "configurationId" && (!ok || required != p.Required) {
			t.Errorf("Agent create member %s (required %v) is not in the provisioning body alike", p.Name, p.Required)
		}
	}
}

// TestProvisioningRefusesUnavailableFeatures: members of features this OCC does not implement
// are refused with FEATURE_NOT_AVAILABLE, as on Agent create, never accepted and lost; their empty
// forms pass, and bad initial workspace files are refused up front.
func TestProvisioningRefusesUnavailableFeatures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("provision-drop")
	base := "/namespaces/" + ns
	secret := e.expect(e.admin("POST", base+"/secrets", map[string]any{"name": "model-key", "value": "provisioning-drop-5678"}), 201).data()["id"].(string)
	for member, value := range map[string]any{
		"plugins":             map[string]any{"slack": map[string]any{}},
		"repositoryBindings":  []any{map[string]any{"repositoryRef": "r"}},
		"workspaceDefaultsId": strings.Repeat("a", 64),
	} {
		body := provisionBody(ns, secret)
		body[member] = value
		if r := e.admin("POST", base+"/agents/provision", body); r.status != 400 || r.errCode() != "FEATURE_NOT_AVAILABLE" || !r.hasDetail("/"+member, "INVALID_VALUE") {
			t.Errorf("%s: %d %s", member, r.status, r.raw)
		}
	}
	body := provisionBody(ns, secret)
	body["initialWorkspaceFiles"] = map[string]any{"SOUL.md": "a\x00b"}
	if r := e.admin("POST", base+"/agents/provision", body); r.status != 400 || !r.hasDetail("/initialWorkspaceFiles/SOUL.md", "INVALID_VALUE") {
		t.Errorf("a NUL in a workspace file: %d %s", r.status, r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.agent_provisioning_work WHERE namespace_id = $1`, ns); n != 0 {
		t.Fatalf("%d provisionings recorded for refused requests", n)
	}
	body = provisionBody(ns, secret)
	body["plugins"], body["repositoryBindings"], body["initialWorkspaceFiles"] = map[string]any{}, []any{}, map[string]any{}
	e.expect(e.admin("POST", base+"/agents/provision", body), 202)
}
