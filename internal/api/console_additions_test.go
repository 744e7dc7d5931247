package api_test

import (
	"testing"

	"github.com/openclaw/occ/internal/iam"
)

// The API additions the web console needs: the newest deployment of every Agent in one read, a
// compare-and-set on Configuration updates, and the audit log filtered by actor.

// TestLatestDeployments: one item per Agent with a revision, its newest revision and status, and
// only where the caller may read that revision.
func TestLatestDeployments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("latest")
	base := "/namespaces/" + ns
	cfg := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	agent := func(name string) string {
		return e.expect(e.admin("POST", base+"/agents", map[string]any{"name": name, "configurationId": cfg,
			"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()["id"].(string)
	}
	deployed, twice, never := agent("deployed"), agent("twice"), agent("never")
	_ = never
	first := e.expect(e.admin("POST", base+"/agents/"+deployed+"/deploy", nil), 202).data()["id"].(string)
	e.expect(e.admin("POST", base+"/agents/"+twice+"/deploy", nil), 202)
	second := e.expect(e.admin("POST", base+"/agents/"+twice+"/deploy", nil), 202).data()["id"].(string)
	e.exec(`UPDATE occ.controller_work SET state = 'failed_permanent', completed_at = clock_timestamp(), reason_code = 'RUNTIME_START_FAILED'
 WHERE idempotency_key = $1`, "agent_revision:"+second+":reconcile")

	items := e.expect(e.admin("GET", base+"/latest-deployments", nil), 200).list()
	if len(items) != 2 {
		t.Fatalf("items %v", items)
	}
	a, b := items[0].(map[string]any), items[1].(map[string]any)
	if a["agentId"] != deployed || a["deploymentId"] != first || a["revision"] != float64(1) || a["status"] != "queued" || a["error"] != nil {
		t.Fatalf("first %v", a)
	}
	errDoc, _ := b["error"].(map[string]any)
	if b["agentId"] != twice || b["deploymentId"] != second || b["revision"] != float64(2) || b["status"] != "failed" || errDoc["code"] != "RUNTIME_START_FAILED" {
		t.Fatalf("second %v", b)
	}
	// Paging keeps creation order and visits every Agent once.
	page := e.expect(e.admin("GET", base+"/latest-deployments?limit=1", nil), 200)
	if l := page.list(); len(l) != 1 || l[0].(map[string]any)["agentId"] != deployed {
		t.Fatalf("page 1 %v", l)
	}

	// A reader of the Namespace and of one revision sees that one only.
	reader := e.newServicePrincipal("")
	e.grant(reader.id, ns, iam.KindNamespace, ns, perm(iam.ActionRead, iam.KindNamespace))
	if l := e.expect(e.do(reader.apply(req{method: "GET", path: base + "/latest-deployments"})), 200).list(); len(l) != 0 {
		t.Fatalf("without revision grants %v", l)
	}
	e.grant(reader.id, ns, iam.KindAgentRevision, second, perm(iam.ActionRead, iam.KindAgentRevision))
	if l := e.expect(e.do(reader.apply(req{method: "GET", path: base + "/latest-deployments"})), 200).list(); len(l) != 1 ||
		l[0].(map[string]any)["deploymentId"] != second {
		t.Fatalf("with one revision grant %v", l)
	}
}

// TestConfigurationExpectedGeneration: a PATCH naming a generation other than the stored one is
// 409 and changes nothing; the right one succeeds.
func TestConfigurationExpectedGeneration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("cas")
	path := "/namespaces/" + ns + "/configurations/" +
		e.expect(e.admin("POST", "/namespaces/"+ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	r := e.admin("PATCH", path, map[string]any{"values": map[string]any{"a": 1}, "expectedGeneration": 2})
	if r.status != 409 || r.errCode() != "RESOURCE_CONFLICT" {
		t.Fatalf("stale: %d %s", r.status, r.raw)
	}
	if got := e.expect(e.admin("GET", path, nil), 200).data(); got["generation"] != float64(1) || len(got["values"].(map[string]any)) != 0 {
		t.Fatalf("after a refused update %v", got)
	}
	if got := e.expect(e.admin("PATCH", path, map[string]any{"values": map[string]any{"a": 1}, "expectedGeneration": 1}), 200).data(); got["generation"] != float64(2) {
		t.Fatalf("current: %v", got)
	}
	if r := e.admin("PATCH", path, map[string]any{"values": map[string]any{}, "expectedGeneration": 0}); r.status != 400 || !r.hasDetail("/expectedGeneration", "INVALID_VALUE") {
		t.Fatalf("zero: %d %s", r.status, r.raw)
	}
}

// TestAuditEventsByActor: actorId keeps the events of that actor only.
func TestAuditEventsByActor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.newServicePrincipal("")
	e.grant(other.id, "", iam.KindInstallation, e.installationID, perm(iam.ActionAdminister, iam.KindInstallation))
	e.expect(e.do(other.apply(req{method: "POST", path: "/namespaces", body: map[string]any{"name": "by-other"}})), 403)
	events := e.expect(e.admin("GET", "/audit-events?actorId="+other.id, nil), 200).list()
	if len(events) == 0 {
		t.Fatal("no events of the actor")
	}
	for _, ev := range events {
		if ev.(map[string]any)["actorId"] != other.id {
			t.Fatalf("another actor's event %v", ev)
		}
	}
}
