package kubetest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// ClusterRoles the harness creates (names without the chart's release prefix).
const (
	NamespaceWorkerRole   = "occ-namespace-worker"
	TenantWorkerRole      = "occ-tenant-worker"
	TenantAPIRole         = "occ-tenant-api"
	NamespaceObserverRole = "occ-namespace-observer"
)

type rule struct {
	groups, resources, verbs, urls []string
}

func rules(rs ...rule) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		m := Object{"verbs": r.verbs}
		if len(r.urls) > 0 {
			m["nonResourceURLs"] = r.urls
		} else {
			m["apiGroups"], m["resources"] = r.groups, r.resources
		}
		out = append(out, m)
	}
	return out
}

var (
	crud      = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	clusterRB = map[string][]any{
		NamespaceWorkerRole: rules(
			rule{groups: []string{""}, resources: []string{"namespaces"},
				verbs: []string{"get", "list", "watch", "create", "patch", "update", "delete"}},
			rule{urls: []string{"/version"}, verbs: []string{"get"}},
		),
		TenantWorkerRole: rules(
			rule{groups: []string{""}, resources: []string{"secrets"},
				verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			rule{groups: []string{""}, verbs: crud,
				resources: []string{"configmaps", "serviceaccounts", "services", "resourcequotas", "limitranges"}},
			rule{groups: []string{""}, resources: []string{"pods"}, verbs: []string{"get", "list", "watch", "patch"}},
			rule{groups: []string{""}, resources: []string{"pods/proxy"}, verbs: []string{"get"}},
			rule{groups: []string{""}, resources: []string{"persistentvolumeclaims"},
				verbs: []string{"get", "list", "create", "patch", "update", "delete"}},
			rule{groups: []string{"apps"}, resources: []string{"deployments"}, verbs: crud},
			rule{groups: []string{"networking.k8s.io"}, resources: []string{"networkpolicies"},
				verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
			rule{groups: []string{"discovery.k8s.io"}, resources: []string{"endpointslices"},
				verbs: []string{"get", "list", "watch"}},
		),
		// The chart's tenant API role: what the API reads and writes in tenant namespaces (Secrets,
		// and the runtime views: Pods, their logs and Events, the gateway's endpoints).
		TenantAPIRole: rules(
			rule{groups: []string{""}, resources: []string{"secrets"}, verbs: []string{"get", "create", "update", "patch", "delete"}},
			rule{groups: []string{"apps"}, resources: []string{"deployments"}, verbs: []string{"list"}},
			rule{groups: []string{""}, resources: []string{"pods"}, verbs: []string{"get", "list"}},
			rule{groups: []string{""}, resources: []string{"pods/proxy", "pods/log"}, verbs: []string{"get"}},
			rule{groups: []string{""}, resources: []string{"events"}, verbs: []string{"list"}},
			rule{groups: []string{""}, resources: []string{"services"}, verbs: []string{"get"}},
			rule{groups: []string{"discovery.k8s.io"}, resources: []string{"endpointslices"}, verbs: []string{"list"}},
		),
		NamespaceObserverRole: rules(
			rule{groups: []string{""}, resources: []string{"namespaces"}, verbs: []string{"get", "list"}},
			rule{urls: []string{"/version"}, verbs: []string{"get"}},
		),
	}
	initialBindings = [][2]string{
		{Worker, NamespaceWorkerRole}, {Worker, TenantWorkerRole},
		{API, NamespaceObserverRole}, {API, TenantWorkerRole}, {API, TenantAPIRole},
	}
)

func (c *Cluster) setupRBAC() error {
	admin := c.Admin()
	for _, name := range []string{NamespaceWorkerRole, TenantWorkerRole, TenantAPIRole, NamespaceObserverRole} {
		role := Object{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": Object{"name": name, "labels": Object{"app.kubernetes.io/managed-by": "kubetest"}},
			"rules":    clusterRB[name],
		}
		if _, err := admin.Apply(GroupPath("rbac.authorization.k8s.io/v1", "", "clusterroles", name), role); err != nil {
			return err
		}
	}
	for _, b := range initialBindings {
		if _, err := c.bindClusterRole(b[0], b[1], ""); err != nil {
			return err
		}
	}
	return c.waitInitialBindings()
}

// waitInitialBindings waits until the authorizer applies every initial binding.
func (c *Cluster) waitInitialBindings() error {
	for _, b := range initialBindings {
		if err := c.waitBinding(b[0], b[1], "", true); err != nil {
			return err
		}
	}
	return nil
}

// BindingName is the name of the (Cluster)RoleBinding the harness creates for identity and role.
func BindingName(identity, clusterRole string) string {
	return "kubetest:" + identity + ":" + clusterRole
}

func bindingPath(identity, clusterRole, namespace string) string {
	if namespace == "" {
		return GroupPath("rbac.authorization.k8s.io/v1", "", "clusterrolebindings", BindingName(identity, clusterRole))
	}
	return GroupPath("rbac.authorization.k8s.io/v1", namespace, "rolebindings", BindingName(identity, clusterRole))
}

// bindClusterRole creates the binding; created is false when it already existed.
func (c *Cluster) bindClusterRole(identity, clusterRole, namespace string) (created bool, err error) {
	kind, coll := "ClusterRoleBinding", GroupPath("rbac.authorization.k8s.io/v1", "", "clusterrolebindings", "")
	meta := Object{"name": BindingName(identity, clusterRole)}
	if namespace != "" {
		kind, coll = "RoleBinding", GroupPath("rbac.authorization.k8s.io/v1", namespace, "rolebindings", "")
		meta["namespace"] = namespace
	}
	_, err = c.Admin().Create(coll, Object{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
		"roleRef":  Object{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": clusterRole},
		"subjects": []any{Object{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": identity}},
	})
	if IsAlreadyExists(err) {
		return false, nil
	}
	return err == nil, err
}

// waitBinding waits until the API server's authorizer sees the binding (granted) or no longer
// allows the role's first rule through it (revoked), using SubjectAccessReviews.
func (c *Cluster) waitBinding(identity, clusterRole, namespace string, granted bool) error {
	var role struct {
		Rules []struct {
			APIGroups       []string `json:"apiGroups"`
			Resources       []string `json:"resources"`
			Verbs           []string `json:"verbs"`
			NonResourceURLs []string `json:"nonResourceURLs"`
		} `json:"rules"`
	}
	admin := c.Admin()
	if err := admin.GetInto(GroupPath("rbac.authorization.k8s.io/v1", "", "clusterroles", clusterRole), &role); err != nil {
		if IsNotFound(err) && !granted {
			return nil
		}
		return err
	}
	if len(role.Rules) == 0 || len(role.Rules[0].Verbs) == 0 {
		time.Sleep(200 * time.Millisecond) // nothing to probe
		return nil
	}
	r := role.Rules[0]
	spec := Object{"user": identity, "groups": []string{"system:authenticated"}}
	if len(r.NonResourceURLs) > 0 {
		spec["nonResourceAttributes"] = Object{"path": r.NonResourceURLs[0], "verb": r.Verbs[0]}
	} else {
		res, sub, _ := strings.Cut(r.Resources[0], "/")
		attrs := Object{"verb": r.Verbs[0], "group": r.APIGroups[0], "resource": res, "subresource": sub}
		if namespace != "" {
			attrs["namespace"] = namespace
		} else {
			attrs["namespace"] = "kubetest-probe"
		}
		spec["resourceAttributes"] = attrs
	}
	sar := Object{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
	name := BindingName(identity, clusterRole)
	deadline := time.Now().Add(20 * time.Second)
	for {
		created, err := admin.Create(GroupPath("authorization.k8s.io/v1", "", "subjectaccessreviews", ""), sar)
		if err == nil {
			allowed, _ := Field(created, "status", "allowed").(bool)
			reason := Str(created, "status", "reason")
			if granted && allowed {
				return nil
			}
			if !granted && (!allowed || !strings.Contains(reason, `"`+name+`"`)) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("binding %s of %s to %s not effective (granted=%v) after 20s (last error %v)",
				name, clusterRole, identity, granted, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// GrantClusterRole binds clusterRole to identity with a ClusterRoleBinding (BindingName) and waits
// until the authorizer applies it. A binding it created is deleted when the test ends.
func (c *Cluster) GrantClusterRole(t testing.TB, identity, clusterRole string) {
	t.Helper()
	c.grant(t, identity, clusterRole, "")
}

// GrantClusterRoleInNamespace binds clusterRole to identity in one namespace with a RoleBinding (as
// the chart's per-tenant-namespace bindings do). A binding it created is deleted when the test ends.
func (c *Cluster) GrantClusterRoleInNamespace(t testing.TB, identity, clusterRole, namespace string) {
	t.Helper()
	c.grant(t, identity, clusterRole, namespace)
}

func (c *Cluster) grant(t testing.TB, identity, clusterRole, namespace string) {
	t.Helper()
	c.Token(identity) // panics on an unknown identity
	created, err := c.bindClusterRole(identity, clusterRole, namespace)
	if err != nil {
		t.Fatalf("kubetest: grant %s to %s: %v", clusterRole, identity, err)
	}
	if created {
		t.Cleanup(func() {
			if err := c.unbind(identity, clusterRole, namespace); err != nil {
				t.Errorf("kubetest: undo grant of %s to %s: %v", clusterRole, identity, err)
			}
		})
	}
	if err := c.waitBinding(identity, clusterRole, namespace, true); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
}

// RevokeClusterRole deletes the ClusterRoleBinding of clusterRole to identity made by the harness
// (including the initial ones: worker and api) and waits until the authorizer drops it. A binding
// it deleted is restored when the test ends.
func (c *Cluster) RevokeClusterRole(t testing.TB, identity, clusterRole string) {
	t.Helper()
	c.revoke(t, identity, clusterRole, "")
}

// RevokeClusterRoleInNamespace is RevokeClusterRole for a binding made by
// GrantClusterRoleInNamespace.
func (c *Cluster) RevokeClusterRoleInNamespace(t testing.TB, identity, clusterRole, namespace string) {
	t.Helper()
	c.revoke(t, identity, clusterRole, namespace)
}

func (c *Cluster) revoke(t testing.TB, identity, clusterRole, namespace string) {
	t.Helper()
	err := c.Admin().Delete(bindingPath(identity, clusterRole, namespace), nil)
	switch {
	case err == nil:
		t.Cleanup(func() {
			if _, err := c.bindClusterRole(identity, clusterRole, namespace); err != nil {
				t.Errorf("kubetest: restore grant of %s to %s: %v", clusterRole, identity, err)
				return
			}
			if err := c.waitBinding(identity, clusterRole, namespace, true); err != nil {
				t.Errorf("kubetest: %v", err)
			}
		})
	case IsNotFound(err):
		return
	default:
		t.Fatalf("kubetest: revoke %s from %s: %v", clusterRole, identity, err)
	}
	if err := c.waitBinding(identity, clusterRole, namespace, false); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
}

func (c *Cluster) unbind(identity, clusterRole, namespace string) error {
	err := c.Admin().Delete(bindingPath(identity, clusterRole, namespace), nil)
	if err != nil && !IsNotFound(err) {
		return err
	}
	return c.waitBinding(identity, clusterRole, namespace, false)
}
