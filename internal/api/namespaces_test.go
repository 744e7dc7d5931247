package api_test

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/testkit/fixture"
)

func TestNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	created := e.expect(e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, body: map[string]any{"name": "support"}}), 201)
	ns := created.data()
	id, _ := ns["id"].(string)
	if ns["status"] != "provisioning" || ns["name"] != "support" || !strings.HasPrefix(id, "ns_") {
		t.Fatalf("created %s", created.raw)
	}
	if meta, _ := created.doc["meta"].(map[string]any); !strings.HasPrefix(meta["requestId"].(string), "req_") ||
		created.header.Get("X-Request-Id") != meta["requestId"] {
		t.Fatalf("meta %v / header %q", meta, created.header.Get("X-Request-Id"))
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE namespace_id = $1`, id); n != 1 {
		t.Fatalf("work rows after create: %d", n)
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE idempotency_key = $1 AND namespace_target = 'ready' AND state = 'queued' AND actor_id = $2`,
		"namespace:"+id+":reconcile:ready", e.adminSP); n != 1 {
		t.Fatal("the ready work row is missing or has another actor")
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE resource_id = $1`, id); n != 1 {
		t.Fatalf("audit events after create: %d", n)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE resource_id = $1 AND action = 'openclaw.namespaces.create'
	   AND actor_id = $2 AND details -> 'actorServiceKeyId' IS NOT NULL`, id, e.adminSP); n != 1 {
		t.Fatal("the create audit event lacks its action, actor or key")
	}

	list := e.expect(e.do(req{method: "GET", path: "/namespaces", key: e.adminKey}), 200)
	var names []string
	for _, item := range list.list() {
		names = append(names, item.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "default,support" {
		t.Fatalf("list %v", names)
	}
	got := e.expect(e.do(req{method: "GET", path: "/namespaces/" + id, key: e.adminKey}), 200)
	if got.data()["id"] != id || got.data()["createdAt"] != ns["createdAt"] {
		t.Fatalf("get %s", got.raw)
	}

	del := e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + id, key: e.adminKey}), 202)
	if del.data()["status"] != "deleting" {
		t.Fatalf("delete %s", del.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE namespace_id = $1`, id); n != 2 {
		t.Fatalf("work rows after delete: %d", n)
	}
	again := e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + id, key: e.adminKey}), 202)
	if again.data()["status"] != "deleting" {
		t.Fatalf("second delete %s", again.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE namespace_id = $1`, id); n != 2 {
		t.Fatalf("work rows after the second delete: %d", n)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE resource_id = $1`, id); n != 2 {
		t.Fatalf("audit events after two deletes: %d", n)
	}

	// The name stays reserved, also after the tombstone; a tombstoned Namespace is 404 and unlisted.
	e.expect(e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, body: map[string]any{"name": "support"}}), 409)
	e.exec(`UPDATE occ.namespaces SET deleted_at = clock_timestamp() WHERE id = $1`, id)
	e.expect(e.do(req{method: "GET", path: "/namespaces/" + id, key: e.adminKey}), 404)
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + id, key: e.adminKey}), 404)
	if l := e.expect(e.do(req{method: "GET", path: "/namespaces", key: e.adminKey}), 200).list(); len(l) != 1 {
		t.Fatalf("tombstone listed: %v", l)
	}
	if r := e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, body: map[string]any{"name": "support"}}); r.status != 409 || r.errCode() != "RESOURCE_CONFLICT" {
		t.Fatalf("reserved name: %d %s", r.status, r.raw)
	}
}

func TestNamespaceDeleteRefusesNonEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createNamespace("busy")
	secret := fixture.New(t, e.owner).Secret(id, "k").ID
	r := e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + id, key: e.adminKey}), 409)
	msg := r.doc["error"].(map[string]any)["message"].(string)
	if r.errCode() != "NAMESPACE_NOT_EMPTY" || !strings.Contains(msg, "secret "+secret) || len([]rune(msg)) > 256 {
		t.Fatalf("not empty: %s", r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE namespace_id = $1`, id); n != 1 {
		t.Fatalf("a refused delete queued work: %d rows", n)
	}
	if st := e.expect(e.do(req{method: "GET", path: "/namespaces/" + id, key: e.adminKey}), 200).data()["status"]; st != "provisioning" {
		t.Fatalf("status %v", st)
	}
}

func TestNamespaceExistingNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.expect(e.do(req{method: "POST", path: "/namespaces", key: e.adminKey,
		body: map[string]any{"name": "adopted", "existingNamespace": "team-a"}}), 201)
	if r.data()["existingNamespace"] != "team-a" {
		t.Fatalf("created %s", r.raw)
	}
	// The same Kubernetes namespace cannot be adopted twice.
	e.expect(e.do(req{method: "POST", path: "/namespaces", key: e.adminKey,
		body: map[string]any{"name": "again", "existingNamespace": "team-a"}}), 409)
	// Adopting needs installation:administer besides namespace:create.
	creator := e.newServicePrincipal("")
	e.grant(creator.id, "", "", "", perm(iam.ActionCreate, iam.KindNamespace))
	before := e.denials()
	e.expect(e.do(creator.apply(req{method: "POST", path: "/namespaces", body: map[string]any{"name": "x", "existingNamespace": "team-b"}})), 403)
	e.expect(e.do(creator.apply(req{method: "POST", path: "/namespaces", body: map[string]any{"name": "x"}})), 201)
	if e.denials() != before+1 {
		t.Fatal("the denial was not audited")
	}
	// A Compute Driver that cannot adopt answers 409.
	plain := newEnv(t, func(_ *env, c *apiConfig) { c.AdoptsExistingNamespaces = false })
	plain.expect(plain.do(req{method: "POST", path: "/namespaces", key: plain.adminKey,
		body: map[string]any{"name": "adopted", "existingNamespace": "team-a"}}), 409)
}

func TestNamespaceDeletionRetryAndTakeover(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createNamespace("doomed")
	key := "namespace:" + id + ":reconcile:deleted"
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + id, key: e.adminKey}), 202)
	fail := func() {
		e.exec(`UPDATE occ.controller_work SET state = 'failed_permanent', completed_at = clock_timestamp(), reason_code = 'DRIVER_FAILED', attempt_count = 5 WHERE idempotency_key = $1`, key)
	}
	fail()

	// The initiator's repeat requeues the failed teardown.
	audits := e.count(`SELECT count(*) FROM occ.audit_events WHERE resource_id = $1`, id)
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + id, key: e.adminKey}), 202)
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE idempotency_key = $1 AND state = 'queued' AND attempt_count = 0 AND actor_id = $2`, key, e.adminSP); n != 1 {
		t.Fatal("the initiator's repeat did not requeue the teardown")
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE resource_id = $1 AND details ->> 'takeover' = 'false' AND details ->> 'initiatingActorId' = $2`, id, e.adminSP); n != 1 {
		t.Fatalf("retry audit missing (%d events before)", audits)
	}

	// Another permitted caller gets 403 while the initiator keeps namespace:delete.
	fail()
	other := e.newServicePrincipal("")
	e.grant(other.id, "", "", "", perm(iam.ActionDelete, iam.KindNamespace))
	before := e.denials()
	e.expect(e.do(other.apply(req{method: "DELETE", path: "/namespaces/" + id})), 403)
	if e.denials() != before+1 {
		t.Fatal("the refused takeover was not audited")
	}

	// Once the initiator lost it, the other caller takes the teardown over.
	e.exec(`DELETE FROM occ.iam_access_bindings WHERE identity_subject_id = $1`, e.adminSP)
	e.expect(e.do(other.apply(req{method: "DELETE", path: "/namespaces/" + id})), 202)
	if n := e.count(`SELECT count(*) FROM occ.controller_work WHERE idempotency_key = $1 AND state = 'queued' AND actor_id = $2`, key, other.id); n != 1 {
		t.Fatal("the takeover did not replace the actor")
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE resource_id = $1 AND details ->> 'takeover' = 'true' AND actor_id = $2`, id, other.id); n != 1 {
		t.Fatal("takeover audit missing")
	}
}

func TestAuditFailureRollsBackTheMutation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := pgtestAdmin(t, e)
	if _, err := admin.Exec(ctxb(), `REVOKE INSERT ON occ.audit_events FROM occ_app`); err != nil {
		t.Fatal(err)
	}
	r := e.expect(e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, body: map[string]any{"name": "unaudited"}}), 503)
	if r.errCode() != "DEPENDENCY_UNAVAILABLE" || strings.Contains(string(r.raw), "permission") {
		t.Fatalf("audit failure: %s", r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.namespaces WHERE name = 'unaudited'`); n != 0 {
		t.Fatal("the Namespace committed without its audit event")
	}
	if n := e.count(`SELECT count(*) FROM occ.controller_work`); n != 1 {
		t.Fatalf("work committed without its audit event: %d rows", n)
	}
}
