package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/testkit/fixture"
)

func permissions(pairs ...string) []any {
	out := make([]any, len(pairs))
	for i, p := range pairs {
		kind, action, _ := strings.Cut(p, ":")
		out[i] = map[string]any{"action": action, "resourceKind": kind}
	}
	return out
}

func TestRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("roles")
	path := "/namespaces/" + ns + "/iam/roles"
	post := func(body map[string]any) resp {
		return e.do(req{method: "POST", path: path, key: e.adminKey, body: body})
	}

	r := e.expect(post(map[string]any{"name": "Deployers", "permissions": permissions("agent:deploy", "namespace:read", "agent:read")}), 201)
	role := r.data()
	if role["namespaceId"] != ns || role["name"] != "Deployers" || fmt.Sprint(role["permissions"]) !=
		fmt.Sprint(permissions("namespace:read", "agent:read", "agent:deploy")) {
		t.Fatalf("role %s", r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.iam.roles.create' AND details ->> 'roleId' = $1 AND resource_id = $2`, role["id"], ns); n != 1 {
		t.Fatal("role creation not audited")
	}
	for _, tc := range []struct {
		perms []any
		path  string
		code  string
	}{
		{permissions("namespace:delete"), "/permissions/0", "INVALID_VALUE"},
		{permissions("agent:read", "agent_revision:update"), "/permissions/1", "INVALID_VALUE"},
		{permissions("secret:read", "secret:read"), "/permissions/1", "INVALID_VALUE"},
		{permissions("installation:read"), "/permissions/0/resourceKind", "INVALID_VALUE"},
		{permissions("agent:fly"), "/permissions/0/action", "INVALID_VALUE"},
		{[]any{}, "/permissions", "INVALID_VALUE"},
	} {
		if r := post(map[string]any{"permissions": tc.perms}); r.status != 400 || !r.hasDetail(tc.path, tc.code) {
			t.Errorf("%v: %d %s", tc.perms, r.status, r.raw)
		}
	}
	many := make([]string, 0, 65)
	for _, p := range iam.SupportedPermissions() {
		many = append(many, p.ResourceKind+":"+p.Action)
	}
	for len(many) < 65 {
		many = append(many, "agent:read")
	}
	if r := post(map[string]any{"permissions": permissions(many...)}); !r.hasDetail("/permissions", "TOO_LONG") {
		t.Errorf("65 permissions: %s", r.raw)
	}

	list := e.expect(e.do(req{method: "GET", path: path, key: e.adminKey}), 200).list()
	if len(list) != 1 {
		t.Fatalf("list (Installation Roles must not appear): %v", list)
	}
	e.expect(e.do(req{method: "GET", path: path + "/" + role["id"].(string), key: e.adminKey}), 200)
	var adminRole string
	if err := e.owner.QueryRow(ctxb(), `SELECT id FROM occ.iam_roles WHERE namespace_id IS NULL`).Scan(&adminRole); err != nil {
		t.Fatal(err)
	}
	e.expect(e.do(req{method: "GET", path: path + "/" + adminRole, key: e.adminKey}), 404)
	other := e.createNamespace("other")
	e.expect(e.do(req{method: "GET", path: "/namespaces/" + other + "/iam/roles/" + role["id"].(string), key: e.adminKey}), 404)

	// A referenced Role cannot be deleted.
	sp := e.expect(e.do(req{method: "POST", path: "/namespaces/" + ns + "/iam/service-principals", key: e.adminKey}), 201).data()["id"].(string)
	b := e.expect(e.do(req{method: "POST", path: "/namespaces/" + ns + "/iam/access-bindings", key: e.adminKey,
		body: map[string]any{"subjectKind": "identity", "subjectId": sp, "roleId": role["id"], "resourceKind": "namespace", "resourceId": ns}}), 201)
	e.expect(e.do(req{method: "DELETE", path: path + "/" + role["id"].(string), key: e.adminKey}), 409)
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + ns + "/iam/access-bindings/" + b.data()["id"].(string), key: e.adminKey}), 204)
	e.expect(e.do(req{method: "DELETE", path: path + "/" + role["id"].(string), key: e.adminKey}), 204)
	e.expect(e.do(req{method: "GET", path: path + "/" + role["id"].(string), key: e.adminKey}), 404)
}

func TestAccessBindingRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("bindings")
	other := e.createNamespace("elsewhere")
	base := "/namespaces/" + ns + "/iam/"
	mkRole := func(namespace string, perms ...string) string {
		return e.expect(e.do(req{method: "POST", path: "/namespaces/" + namespace + "/iam/roles", key: e.adminKey,
			body: map[string]any{"permissions": permissions(perms...)}}), 201).data()["id"].(string)
	}
	secretReader := mkRole(ns, "secret:read")
	nsReader := mkRole(ns, "namespace:read")
	creator := mkRole(ns, "secret:create", "secret:read")
	foreignRole := mkRole(other, "namespace:read")
	sp := e.expect(e.do(req{method: "POST", path: base + "service-principals", key: e.adminKey}), 201).data()["id"].(string)
	foreignSP := e.expect(e.do(req{method: "POST", path: "/namespaces/" + other + "/iam/service-principals", key: e.adminKey}), 201).data()["id"].(string)
	secretID := fixture.New(t, e.owner).Secret(ns, "token").ID

	post := func(body map[string]any) resp {
		return e.do(req{method: "POST", path: base + "access-bindings", key: e.adminKey, body: body})
	}
	binding := func(subject, role, kind, id string) map[string]any {
		return map[string]any{"subjectKind": "identity", "subjectId": subject, "roleId": role, "resourceKind": kind, "resourceId": id}
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		path string
	}{
		{"group subject", map[string]any{"subjectKind": "group", "subjectId": "g", "roleId": nsReader, "resourceKind": "namespace", "resourceId": ns}, "/subjectKind"},
		{"unknown subject", binding("prn_"+uuid.NewString(), nsReader, "namespace", ns), "/subjectId"},
		{"subject of another Namespace", binding(foreignSP, nsReader, "namespace", ns), "/subjectId"},
		{"role of another Namespace", binding(sp, foreignRole, "namespace", ns), "/roleId"},
		{"installation target", binding(sp, nsReader, "installation", e.installationID), "/resourceKind"},
		{"another Namespace as target", binding(sp, nsReader, "namespace", other), "/resourceId"},
		{"absent secret", binding(sp, secretReader, "secret", "sec_"+uuid.NewString()), "/resourceId"},
		{"wildcard", binding(sp, secretReader, "secret", "*"), "/resourceId"},
		{"role without the target kind", binding(sp, nsReader, "secret", secretID), "/roleId"},
		{"role with create", binding(sp, creator, "secret", secretID), "/roleId"},
		{"runtime role on a service principal", map[string]any{"subjectKind": "identity", "subjectId": sp, "roleId": secretReader,
			"resourceKind": "secret", "resourceId": secretID, "runtimeRole": "operator"}, "/runtimeRole"},
	} {
		if r := post(tc.body); r.status != 400 || !r.hasDetail(tc.path, "INVALID_VALUE") {
			t.Errorf("%s: %d %s", tc.name, r.status, r.raw)
		}
	}
	r := e.expect(post(binding(sp, secretReader, "secret", secretID)), 201)
	if r.data()["resourceKind"] != "secret" || r.data()["resourceId"] != secretID || r.data()["namespaceId"] != ns || r.data()["subjectKind"] != "identity" {
		t.Fatalf("binding %s", r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.iam.access_bindings.create' AND resource_kind = 'secret' AND resource_id = $1`, secretID); n != 1 {
		t.Fatal("binding creation not audited on its target")
	}
	// The new grant is effective on the next request.
	e.grant(sp, ns, "", "", perm(iam.ActionRead, iam.KindNamespace))
	// (sp has no key; check the decision through a caller that does instead)
	caller := e.newServicePrincipal("")
	e.grant(caller.id, "", iam.KindInstallation, e.installationID, perm(iam.ActionAdminister, iam.KindInstallation))
	e.grant(caller.id, ns, iam.KindNamespace, ns, perm(iam.ActionRead, iam.KindNamespace))
	// Rule 5: the caller must read the exact target. (Another subject: a binding identical to the
	// one above is a conflict, TestAccessBindingsAreStoredOnce.)
	sp2 := e.expect(e.do(req{method: "POST", path: base + "service-principals", key: e.adminKey}), 201).data()["id"].(string)
	before := e.denials()
	e.expect(e.do(caller.apply(req{method: "POST", path: base + "access-bindings", body: binding(sp2, secretReader, "secret", secretID)})), 403)
	if e.denials() != before+1 {
		t.Fatal("rule 5 denial not audited")
	}
	e.grant(caller.id, ns, iam.KindSecret, secretID, perm(iam.ActionRead, iam.KindSecret))
	e.expect(e.do(caller.apply(req{method: "POST", path: base + "access-bindings", body: binding(sp2, secretReader, "secret", secretID)})), 201)

	// Human principals may be bound; lists include broad bindings made by operators.
	e.expect(post(binding(e.adminPrincipal, nsReader, "namespace", ns)), 201)
	list := e.expect(e.do(req{method: "GET", path: base + "access-bindings", key: e.adminKey}), 200).list()
	broad := 0
	for _, item := range list {
		if _, exact := item.(map[string]any)["resourceKind"]; !exact {
			broad++
		}
	}
	if len(list) != 6 || broad != 1 {
		t.Fatalf("bindings %d (broad %d)", len(list), broad)
	}

	// A deleting Namespace accepts no new policy.
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + other, key: e.adminKey}), 202)
	if r := e.do(req{method: "POST", path: "/namespaces/" + other + "/iam/service-principals", key: e.adminKey}); r.status != 409 {
		t.Fatalf("policy in a deleting Namespace: %d", r.status)
	}
}

func TestServicePrincipals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("sps")
	other := e.createNamespace("other")
	path := "/namespaces/" + ns + "/iam/service-principals"
	created := e.expect(e.do(req{method: "POST", path: path, key: e.adminKey, body: map[string]any{}}), 201)
	id := created.data()["id"].(string)
	if !strings.HasPrefix(id, "spn_") || created.data()["namespaceId"] != ns {
		t.Fatalf("created %s", created.raw)
	}
	e.expect(e.do(req{method: "GET", path: path + "/" + id, key: e.adminKey}), 200)
	e.expect(e.do(req{method: "GET", path: "/namespaces/" + other + "/iam/service-principals/" + id, key: e.adminKey}), 404)
	e.expect(e.do(req{method: "GET", path: path + "/" + e.adminSP, key: e.adminKey}), 404)
	if l := e.expect(e.do(req{method: "GET", path: path, key: e.adminKey}), 200).list(); len(l) != 1 {
		t.Fatalf("list %v", l)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.iam.service_principals.create' AND details ->> 'servicePrincipalId' = $1`, id); n != 1 {
		t.Fatal("not audited")
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := 0; i < 5; i++ {
		e.createNamespace(fmt.Sprintf("page-%d", i))
	}
	var names []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		p := "/namespaces?limit=2"
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := e.expect(e.do(req{method: "GET", path: p, key: e.adminKey}), 200)
		if len(r.list()) > 2 {
			t.Fatalf("page of %d", len(r.list()))
		}
		for _, item := range r.list() {
			names = append(names, item.(map[string]any)["name"].(string))
		}
		meta := r.doc["meta"].(map[string]any)
		next, _ := meta["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(names, ",") != "default,page-0,page-1,page-2,page-3,page-4" {
		t.Fatalf("paged names %v", names)
	}
	// A cursor of one list is refused by another.
	ns := e.createNamespace("roles-page")
	first := e.expect(e.do(req{method: "GET", path: "/namespaces?limit=1", key: e.adminKey}), 200)
	cur := first.doc["meta"].(map[string]any)["nextCursor"].(string)
	if r := e.do(req{method: "GET", path: "/namespaces/" + ns + "/iam/roles?cursor=" + cur, key: e.adminKey}); !r.hasDetail("/cursor", "INVALID_FORMAT") {
		t.Fatalf("foreign cursor: %s", r.raw)
	}
}

func TestAuditEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.createNamespace("audited-a")
	e.createNamespace("audited-b")
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + a, key: e.adminKey}), 202)

	all := e.expect(e.do(req{method: "GET", path: "/audit-events", key: e.adminKey}), 200).list()
	// bootstrap (2) + two creates + one delete
	if len(all) != 5 {
		t.Fatalf("%d events", len(all))
	}
	newest := all[0].(map[string]any)
	if newest["action"] != "openclaw.namespaces.delete" || newest["installationId"] != e.installationID ||
		newest["kind"] != "mutation" || newest["outcome"] != "success" || newest["actorId"] != e.adminSP {
		t.Fatalf("newest %v", newest)
	}
	if details := newest["details"].(map[string]any); details["actorServiceKeyId"] != e.adminKeyID {
		t.Fatalf("details %v", details)
	}
	if !strings.HasPrefix(newest["requestId"].(string), "req_") || newest["iamDriverId"] != iamDriverID {
		t.Fatalf("envelope %v", newest)
	}

	byNS := e.expect(e.do(req{method: "GET", path: "/audit-events?namespaceId=" + a, key: e.adminKey}), 200).list()
	if len(byNS) != 2 {
		t.Fatalf("by Namespace: %d", len(byNS))
	}
	byResource := e.expect(e.do(req{method: "GET", path: "/audit-events?resourceKind=installation&resourceId=" + e.installationID, key: e.adminKey}), 200).list()
	if len(byResource) != 1 || byResource[0].(map[string]any)["kind"] != "bootstrap" {
		t.Fatalf("by resource: %v", byResource)
	}
	if l := e.expect(e.do(req{method: "GET", path: "/audit-events?until=2000-01-01T00:00:00.000Z", key: e.adminKey}), 200).list(); len(l) != 0 {
		t.Fatalf("until 2000: %d", len(l))
	}
	if l := e.expect(e.do(req{method: "GET", path: "/audit-events?since=2000-01-01T00:00:00.000Z", key: e.adminKey}), 200).list(); len(l) != 5 {
		t.Fatalf("since 2000: %d", len(l))
	}
	if r := e.do(req{method: "GET", path: "/audit-events?since=2000-02-30T00:00:00.000Z", key: e.adminKey}); !r.hasDetail("/since", "INVALID_VALUE") {
		t.Fatalf("impossible date: %s", r.raw)
	}

	// Pages of two, newest first, without overlap.
	var ids []string
	cursor := ""
	for i := 0; i < 5; i++ {
		p := "/audit-events?limit=2"
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := e.expect(e.do(req{method: "GET", path: p, key: e.adminKey}), 200)
		for _, item := range r.list() {
			ids = append(ids, item.(map[string]any)["id"].(string))
		}
		next, _ := r.doc["meta"].(map[string]any)["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	var want []string
	for _, item := range all {
		want = append(want, item.(map[string]any)["id"].(string))
	}
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("paged %v, want %v", ids, want)
	}
}
