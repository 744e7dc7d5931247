package api_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/iam"
)

// grantSpec is one exact permission a caller needs: on the Installation (kind installation), on
// the Installation's Namespace collection (kind namespace, id = installation) or on one Namespace.
type grantSpec struct {
	namespace string // binding and Role scope; empty for Installation targets
	kind, id  string
	perm      iam.Permission
}

type matrixCase struct {
	method, path string
	body         any
	need         []grantSpec
	success      int
	human        bool
	// owned, when set, makes the resource the permitted caller's own before its request (a
	// provisioning answers only its requester).
	owned func(callerID string)
}

// fixtures are the resources the matrix acts on.
type fixtures struct {
	nsA, nsB, victim       string
	roleA, spareRole       string
	spA, spBare, spSpare   string
	bindingA, spareBinding string
	installationID         string
	resources              resourceFixtures
}

func newFixtures(t *testing.T, e *env) fixtures {
	t.Helper()
	f := fixtures{installationID: e.installationID}
	f.nsA, f.nsB, f.victim = e.createNamespace("a"), e.createNamespace("b"), e.createNamespace("victim")
	role := func() string {
		r := e.expect(e.do(req{method: "POST", path: "/namespaces/" + f.nsA + "/iam/roles", key: e.adminKey,
			body: map[string]any{"name": "readers", "permissions": []any{map[string]any{"action": "read", "resourceKind": "namespace"}}}}), 201)
		return r.data()["id"].(string)
	}
	f.roleA, f.spareRole = role(), role()
	sp := func() string {
		return e.expect(e.do(req{method: "POST", path: "/namespaces/" + f.nsA + "/iam/service-principals", key: e.adminKey}), 201).data()["id"].(string)
	}
	f.spA, f.spBare, f.spSpare = sp(), sp(), sp()
	// Two bindings of one Role and target: identical bindings are refused, so their subjects differ.
	binding := func(subject string) string {
		r := e.expect(e.do(req{method: "POST", path: "/namespaces/" + f.nsA + "/iam/access-bindings", key: e.adminKey,
			body: map[string]any{"subjectKind": "identity", "subjectId": subject, "roleId": f.roleA, "resourceKind": "namespace", "resourceId": f.nsA}}), 201)
		return r.data()["id"].(string)
	}
	f.bindingA, f.spareBinding = binding(f.spA), binding(f.spSpare)
	f.resources = newResourceFixtures(t, e, f.nsA)
	return f
}

func installationGrant(ins string, action string) grantSpec {
	return grantSpec{kind: iam.KindInstallation, id: ins, perm: perm(action, iam.KindInstallation)}
}

func namespaceGrant(ns, action string) grantSpec {
	return grantSpec{namespace: ns, kind: iam.KindNamespace, id: ns, perm: perm(action, iam.KindNamespace)}
}

func (f fixtures) cases(e *env) map[string]func() matrixCase {
	ins := f.installationID
	admin := installationGrant(ins, iam.ActionAdminister)
	policy := []grantSpec{admin, namespaceGrant(f.nsA, iam.ActionRead)}
	nsPath := "/namespaces/" + f.nsA
	cases := map[string]func() matrixCase{
		"GET /installation": func() matrixCase {
			return matrixCase{method: "GET", path: "/installation", need: []grantSpec{installationGrant(ins, iam.ActionRead)}, success: 200}
		},
		"GET /installation/deployment-inventory": func() matrixCase {
			return matrixCase{method: "GET", path: "/installation/deployment-inventory", need: []grantSpec{admin}, success: 200}
		},
		"GET /observability": func() matrixCase {
			return matrixCase{method: "GET", path: "/observability", need: []grantSpec{admin}, success: 200}
		},
		"GET /audit-events": func() matrixCase {
			return matrixCase{method: "GET", path: "/audit-events", need: []grantSpec{admin}, success: 200}
		},
		"POST /namespaces": func() matrixCase {
			return matrixCase{method: "POST", path: "/namespaces", body: map[string]any{"name": "n-" + randomSuffix()},
				need: []grantSpec{{kind: iam.KindNamespace, id: ins, perm: perm(iam.ActionCreate, iam.KindNamespace)}}, success: 201}
		},
		"GET /namespaces/{namespaceId}": func() matrixCase {
			return matrixCase{method: "GET", path: nsPath, need: []grantSpec{namespaceGrant(f.nsA, iam.ActionRead)}, success: 200}
		},
		"DELETE /namespaces/{namespaceId}": func() matrixCase {
			return matrixCase{method: "DELETE", path: "/namespaces/" + f.victim, need: []grantSpec{namespaceGrant(f.victim, iam.ActionDelete)}, success: 202}
		},
		"GET /namespaces/{namespaceId}/iam/roles": func() matrixCase {
			return matrixCase{method: "GET", path: nsPath + "/iam/roles", need: policy, success: 200}
		},
		"POST /namespaces/{namespaceId}/iam/roles": func() matrixCase {
			return matrixCase{method: "POST", path: nsPath + "/iam/roles", need: policy, success: 201,
				body: map[string]any{"permissions": []any{map[string]any{"action": "read", "resourceKind": "secret"}}}}
		},
		"GET /namespaces/{namespaceId}/iam/roles/{roleId}": func() matrixCase {
			return matrixCase{method: "GET", path: nsPath + "/iam/roles/" + f.roleA, need: policy, success: 200}
		},
		"DELETE /namespaces/{namespaceId}/iam/roles/{roleId}": func() matrixCase {
			return matrixCase{method: "DELETE", path: nsPath + "/iam/roles/" + f.spareRole, need: policy, success: 204}
		},
		"GET /namespaces/{namespaceId}/iam/access-bindings": func() matrixCase {
			return matrixCase{method: "GET", path: nsPath + "/iam/access-bindings", need: policy, success: 200}
		},
		"POST /namespaces/{namespaceId}/iam/access-bindings": func() matrixCase {
			// A Role of its own per case: a binding identical to bindingA would be a conflict.
			role := e.expect(e.do(req{method: "POST", path: nsPath + "/iam/roles", key: e.adminKey,
				body: map[string]any{"permissions": []any{map[string]any{"action": "read", "resourceKind": "namespace"}}}}), 201).data()["id"]
			return matrixCase{method: "POST", path: nsPath + "/iam/access-bindings", need: policy, success: 201,
				body: map[string]any{"subjectKind": "identity", "subjectId": f.spA, "roleId": role, "resourceKind": "namespace", "resourceId": f.nsA}}
		},
		"GET /namespaces/{namespaceId}/iam/access-bindings/{bindingId}": func() matrixCase {
			return matrixCase{method: "GET", path: nsPath + "/iam/access-bindings/" + f.bindingA, need: policy, success: 200}
		},
		"DELETE /namespaces/{namespaceId}/iam/access-bindings/{bindingId}": func() matrixCase {
			return matrixCase{method: "DELETE", path: nsPath + "/iam/access-bindings/" + f.spareBinding, need: policy, success: 204}
		},
		"GET /namespaces/{namespaceId}/iam/service-principals": func() matrixCase {
			return matrixCase{method: "GET", path: nsPath + "/iam/service-principals", need: policy, success: 200}
		},
		"POST /namespaces/{namespaceId}/iam/service-principals": func() matrixCase {
			return matrixCase{method: "POST", path: nsPath + "/iam/service-principals", need: policy, success: 201}
		},
		"GET /namespaces/{namespaceId}/iam/service-principals/{servicePrincipalId}": func() matrixCase {
			return matrixCase{method: "GET", path: nsPath + "/iam/service-principals/" + f.spA, need: policy, success: 200}
		},
		"POST /api/auth/accounts": func() matrixCase {
			return matrixCase{method: "POST", path: "/api/auth/accounts", human: true, need: []grantSpec{admin}, success: 201,
				body: map[string]any{"email": "new-" + randomSuffix() + "@example.com", "password": "a-long-enough-password"}}
		},
		"POST /api/auth/service-keys": func() matrixCase {
			return matrixCase{method: "POST", path: "/api/auth/service-keys", need: []grantSpec{admin}, success: 201,
				body: map[string]any{"servicePrincipalId": f.spBare, "namespaceId": f.nsA, "name": "ci"}}
		},
		"DELETE /api/auth/service-keys/{keyId}": func() matrixCase {
			key := e.expect(e.do(req{method: "POST", path: "/api/auth/service-keys", key: e.adminKey,
				body: map[string]any{"servicePrincipalId": f.spBare, "namespaceId": f.nsA, "name": "to-revoke"}}), 201)
			return matrixCase{method: "DELETE", path: "/api/auth/service-keys/" + key.data()["id"].(string), need: []grantSpec{admin}, success: 200}
		},
	}
	for k, v := range f.resources.cases(e, f.installationID, f.nsA) {
		cases[k] = v
	}
	for k, v := range signInCases(e) {
		cases[k] = v
	}
	return cases
}

var suffixCounter atomic.Int64

func randomSuffix() string { return fmt.Sprint(suffixCounter.Add(1)) }

// TestAuthorizationMatrix: for every authorized route, a caller without grants gets 403 and one
// denial audit event; a caller with exactly the documented permissions on the exact resources
// succeeds; and one permission short is still 403.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOfflineSignIn)
	f := newFixtures(t, e)
	cases := f.cases(e)
	for _, route := range api.Routes() {
		key := route.Method + " " + route.Path
		if route.Scope == api.ScopeNone || route.Scope == api.ScopeCollection {
			continue
		}
		build, ok := cases[key]
		if !ok {
			t.Errorf("no matrix case for %s", key)
			continue
		}
		c := build()
		newCaller := func() identity {
			if c.human {
				return e.newHuman("h" + randomSuffix() + "@example.com")
			}
			return e.newServicePrincipal("")
		}

		// No grant at all.
		caller := newCaller()
		before := e.denials()
		r := e.do(caller.apply(req{method: c.method, path: c.path, body: c.body}))
		if r.status != 403 || r.errCode() != "FORBIDDEN" {
			t.Errorf("%s without grants: %d %s", key, r.status, r.raw)
		}
		if got := e.denials(); got != before+1 {
			t.Errorf("%s without grants: %d denial events, want 1", key, got-before)
		}
		if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND actor_id = $1 AND action = $2`,
			caller.id, route.Action); n != 1 {
			t.Errorf("%s: the denial names another actor or action", key)
		}

		// Every permission but one.
		if len(c.need) > 1 {
			for skip := range c.need {
				partial := newCaller()
				for i, g := range c.need {
					if i != skip {
						e.grant(partial.id, g.namespace, g.kind, g.id, g.perm)
					}
				}
				if r := e.do(partial.apply(req{method: c.method, path: c.path, body: c.body})); r.status != 403 {
					t.Errorf("%s without %v: %d %s", key, c.need[skip].perm, r.status, r.raw)
				}
			}
		}

		// Exactly the documented permissions.
		allowed := newCaller()
		for _, g := range c.need {
			e.grant(allowed.id, g.namespace, g.kind, g.id, g.perm)
		}
		if c.owned != nil {
			c.owned(allowed.id)
		}
		if r := e.do(allowed.apply(req{method: c.method, path: c.path, body: c.body})); r.status != c.success {
			t.Errorf("%s with %v: %d %s", key, c.need, r.status, r.raw)
		}
	}
}

// TestListIsFilteredPerItem: GET /namespaces returns exactly the Namespaces the caller may read.
func TestListIsFilteredPerItem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.createNamespace("a"), e.createNamespace("b")
	_ = b
	caller := e.newServicePrincipal("")
	if l := e.expect(e.do(caller.apply(req{method: "GET", path: "/namespaces"})), 200).list(); len(l) != 0 {
		t.Fatalf("no grant lists %v", l)
	}
	e.grant(caller.id, a, iam.KindNamespace, a, perm(iam.ActionRead, iam.KindNamespace))
	l := e.expect(e.do(caller.apply(req{method: "GET", path: "/namespaces"})), 200).list()
	if len(l) != 1 || l[0].(map[string]any)["id"] != a {
		t.Fatalf("exact read lists %v", l)
	}
}

// TestNamespaceScopedKey: a key scoped to one Namespace never reaches an Installation route or
// another Namespace, whatever its grants.
func TestNamespaceScopedKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOfflineSignIn)
	f := newFixtures(t, e)
	scoped := e.newServicePrincipal(f.nsA)
	// Broad grants inside its own Namespace.
	e.grant(scoped.id, f.nsA, "", "", perm(iam.ActionRead, iam.KindNamespace), perm(iam.ActionDelete, iam.KindNamespace))

	e.expect(e.do(scoped.apply(req{method: "GET", path: "/namespaces/" + f.nsA})), 200)
	if l := e.expect(e.do(scoped.apply(req{method: "GET", path: "/namespaces"})), 200).list(); len(l) != 1 || l[0].(map[string]any)["id"] != f.nsA {
		t.Fatalf("scoped list %v", l)
	}
	cases := f.cases(e)
	for _, route := range api.Routes() {
		key := route.Method + " " + route.Path
		switch route.Scope {
		case api.ScopeInstallation:
			c := cases[key]()
			before := e.denials()
			if r := e.do(scoped.apply(req{method: c.method, path: c.path, body: c.body})); r.status != 403 && !(c.human && r.status == 401) {
				t.Errorf("scoped key on %s: %d %s", key, r.status, r.raw)
			} else if r.status == 403 && e.denials() != before+1 {
				t.Errorf("scoped key on %s: denial not audited", key)
			}
		case api.ScopeNamespace:
			c := cases[key]()
			other := strings.Replace(c.path, f.nsA, f.nsB, 1)
			other = strings.Replace(other, f.victim, f.nsB, 1)
			if r := e.do(scoped.apply(req{method: c.method, path: other, body: c.body})); r.status != 403 {
				t.Errorf("scoped key on %s in another Namespace: %d %s", key, r.status, r.raw)
			}
		}
	}
}
