package kubernetes

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/drivertest"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/testkit/kubetest"
)

// tenantObjectPaths are the paths of the namespace-level objects in namespace.
func tenantObjectPaths(namespace string) map[string]string {
	return map[string]string{
		"quota":                  kubetest.CorePath(namespace, "resourcequotas", tenantQuotaName),
		"limits":                 kubetest.CorePath(namespace, "limitranges", tenantLimitRangeName),
		tenantPolicyDefaultDeny:  kubetest.GroupPath("networking.k8s.io/v1", namespace, "networkpolicies", tenantPolicyDefaultDeny),
		tenantPolicyAllowDNS:     kubetest.GroupPath("networking.k8s.io/v1", namespace, "networkpolicies", tenantPolicyAllowDNS),
		tenantPolicyGatewayInput: kubetest.GroupPath("networking.k8s.io/v1", namespace, "networkpolicies", tenantPolicyGatewayInput),
	}
}

func adminGet(t *testing.T, c *kubetest.Cluster, path string) kubetest.Object {
	t.Helper()
	obj, err := c.Admin().Get(path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return obj
}

func requireAbsent(t *testing.T, c *kubetest.Cluster, path string) {
	t.Helper()
	if _, err := c.Admin().Get(path); !kubetest.IsNotFound(err) {
		t.Fatalf("GET %s: %v, want NotFound", path, err)
	}
}

func stringMapAt(obj kubetest.Object, path ...string) map[string]string {
	out := map[string]string{}
	m, _ := kubetest.Field(obj, path...).(map[string]any)
	for k, v := range m {
		s, _ := v.(string)
		out[k] = s
	}
	return out
}

func requireOwned(t *testing.T, obj kubetest.Object, namespaceID string) {
	t.Helper()
	labels, annotations := stringMapAt(obj, "metadata", "labels"), stringMapAt(obj, "metadata", "annotations")
	if labels[labelManagedBy] != managedByValue || labels[labelNamespace] != namespaceID || annotations[annotationNamespaceID] != namespaceID {
		t.Fatalf("%s %s lacks the ownership of %s: labels %v annotations %v", kubetest.Str(obj, "kind"), kubetest.Str(obj, "metadata", "name"), namespaceID, labels, annotations)
	}
}

func resourceVersion(obj kubetest.Object) string {
	return kubetest.Str(obj, "metadata", "resourceVersion")
}

func requireFailure(t *testing.T, obs driver.NamespaceObservation, class, reasonPart string) {
	t.Helper()
	if obs.Failure != class || !strings.Contains(obs.Reason, reasonPart) {
		t.Fatalf("observation failure %q reason %q, want failure %q with a reason containing %q", obs.Failure, obs.Reason, class, reasonPart)
	}
	if obs.Ready != nil && *obs.Ready || obs.Deleted != nil && *obs.Deleted {
		t.Fatalf("a failed observation reports completion: %+v", obs)
	}
}

func TestEnsureNamespaceCreatesManagedNamespace(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	ns := drivertest.NewNamespace()
	name := ensureTestNamespace(t, d, ns)
	if name != managedNamespaceName(ns.ID) || !strings.HasPrefix(name, "oce-") || len(name) != len("oce-")+15 {
		t.Fatalf("tenant namespace %q, want oce-<15 hex>", name)
	}

	nsObj := adminGet(t, c, kubetest.CorePath("", "namespaces", name))
	requireOwned(t, nsObj, ns.ID)
	labels := stringMapAt(nsObj, "metadata", "labels")
	for _, l := range psaLabels {
		if labels[l] != "restricted" {
			t.Errorf("namespace label %s = %q, want restricted", l, labels[l])
		}
	}
	if labels[labelGatewayNamespace] != ns.ID {
		t.Errorf("namespace label %s = %q, want %s", labelGatewayNamespace, labels[labelGatewayNamespace], ns.ID)
	}
	if kubetest.Str(nsObj, "status", "phase") != "Active" {
		t.Errorf("namespace phase %q", kubetest.Str(nsObj, "status", "phase"))
	}

	paths := tenantObjectPaths(name)
	versions := map[string]string{"namespace": resourceVersion(nsObj)}
	objs := map[string]kubetest.Object{}
	for key, path := range paths {
		objs[key] = adminGet(t, c, path)
		requireOwned(t, objs[key], ns.ID)
		versions[key] = resourceVersion(objs[key])
	}

	if hard := stringMapAt(objs["quota"], "spec", "hard"); !reflect.DeepEqual(hard, d.cfg.NamespaceQuota) {
		t.Errorf("quota spec.hard %v, want %v", hard, d.cfg.NamespaceQuota)
	}
	limits := kubetest.Slice(objs["limits"], "spec", "limits")
	if len(limits) != 1 || kubetest.Str(limits[0], "type") != "Container" ||
		!reflect.DeepEqual(stringMapAt(limits[0], "default"), map[string]string{"cpu": "500m", "memory": "512Mi"}) ||
		!reflect.DeepEqual(stringMapAt(limits[0], "defaultRequest"), map[string]string{"cpu": "50m", "memory": "64Mi"}) {
		t.Errorf("limit range spec.limits %v", limits)
	}

	deny := objs[tenantPolicyDefaultDeny]
	if sel := stringMapAt(deny, "spec", "podSelector", "matchLabels"); len(sel) != 0 || !reflect.DeepEqual(kubetest.Field(deny, "spec", "policyTypes"), []any{"Ingress", "Egress"}) {
		t.Errorf("default-deny spec %v", kubetest.Field(deny, "spec"))
	}
	if kubetest.Field(deny, "spec", "ingress") != nil || kubetest.Field(deny, "spec", "egress") != nil {
		t.Errorf("default-deny allows traffic: %v", kubetest.Field(deny, "spec"))
	}

	dns := objs[tenantPolicyAllowDNS]
	if sel := stringMapAt(dns, "spec", "podSelector", "matchLabels"); !reflect.DeepEqual(sel, map[string]string{labelNetworkProfile: networkProfile}) {
		t.Errorf("allow-dns podSelector %v", sel)
	}
	egress := kubetest.Slice(dns, "spec", "egress")
	if len(egress) != 1 {
		t.Fatalf("allow-dns egress %v", egress)
	}
	requirePeer(t, "allow-dns", kubetest.Slice(egress[0], "to"), d.cfg.DNS)
	var ports []string
	for _, p := range kubetest.Slice(egress[0], "ports") {
		ports = append(ports, kubetest.Str(p, "protocol")+"/"+jsonNumber(kubetest.Field(p, "port")))
	}
	if !reflect.DeepEqual(ports, []string{"UDP/53", "TCP/53", "UDP/5353", "TCP/5353"}) {
		t.Errorf("allow-dns ports %v", ports)
	}

	gw := objs[tenantPolicyGatewayInput]
	if sel := stringMapAt(gw, "spec", "podSelector", "matchLabels"); !reflect.DeepEqual(sel, map[string]string{labelNetworkProfile: networkProfile, labelWorkloadRole: roleGateway}) {
		t.Errorf("allow-gateway-ingress podSelector %v", sel)
	}
	ingress := kubetest.Slice(gw, "spec", "ingress")
	if len(ingress) != 1 {
		t.Fatalf("allow-gateway-ingress ingress %v", ingress)
	}
	requirePeer(t, "allow-gateway-ingress", kubetest.Slice(ingress[0], "from"), d.cfg.GatewayClients[0])
	gwPorts := kubetest.Slice(ingress[0], "ports")
	if len(gwPorts) != 1 || kubetest.Str(gwPorts[0], "protocol") != "TCP" || jsonNumber(kubetest.Field(gwPorts[0], "port")) != "8080" {
		t.Errorf("allow-gateway-ingress ports %v", gwPorts)
	}

	// Repeated passes converge without writing anything.
	for i := range 2 {
		if obs := ensureOnce(t, d, ns); !*obs.Ready || obs.Failure != "" {
			t.Fatalf("ensure %d of a ready Namespace: %+v", i, obs)
		}
	}
	// The quota's status belongs to the quota controller, so only its spec is compared.
	if hard := stringMapAt(adminGet(t, c, paths["quota"]), "spec", "hard"); !reflect.DeepEqual(hard, d.cfg.NamespaceQuota) {
		t.Errorf("quota spec.hard after repeated ensures %v", hard)
	}
	delete(paths, "quota")
	paths["namespace"] = kubetest.CorePath("", "namespaces", name)
	for key, path := range paths {
		if rv := resourceVersion(adminGet(t, c, path)); rv != versions[key] {
			t.Errorf("%s changed by a repeated ensure: resourceVersion %s -> %s", key, versions[key], rv)
		}
	}
}

func jsonNumber(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return ""
}

func requirePeer(t *testing.T, policy string, peers []kubetest.Object, want Peer) {
	t.Helper()
	if len(peers) != 1 {
		t.Fatalf("%s peers %v, want one", policy, peers)
	}
	gotNS := stringMapAt(peers[0], "namespaceSelector", "matchLabels")
	gotPods := stringMapAt(peers[0], "podSelector", "matchLabels")
	if !reflect.DeepEqual(gotNS, map[string]string{labelMetadataName: want.Namespace}) || !reflect.DeepEqual(gotPods, want.PodLabels) {
		t.Errorf("%s peer namespace %v pods %v, want %s %v", policy, gotNS, gotPods, want.Namespace, want.PodLabels)
	}
}

func TestDeleteNamespaceRemovesOnlyItsNamespace(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	a, b := drivertest.NewNamespace(), drivertest.NewNamespace()
	nameA := ensureTestNamespace(t, d, a)
	nameB := ensureTestNamespace(t, d, b)

	deleteTestNamespace(t, d, a)
	requireAbsent(t, c, kubetest.CorePath("", "namespaces", nameA))
	if obs := deleteOnce(t, d, a); !*obs.Deleted || obs.Failure != "" {
		t.Fatalf("repeated delete: %+v", obs)
	}
	other := adminGet(t, c, kubetest.CorePath("", "namespaces", nameB))
	if kubetest.Str(other, "status", "phase") != "Active" || kubetest.Field(other, "metadata", "deletionTimestamp") != nil {
		t.Fatalf("deleting %s touched %s: %v", a.ID, nameB, kubetest.Field(other, "status"))
	}
	for _, path := range tenantObjectPaths(nameB) {
		adminGet(t, c, path)
	}
	if obs := ensureOnce(t, d, b); !*obs.Ready {
		t.Fatalf("the other Namespace is no longer ready: %+v", obs)
	}
}

func TestNamespaceOwnershipRefusals(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)

	t.Run("UnownedNamespaceAtTheManagedName", func(t *testing.T) {
		ns := drivertest.NewNamespace()
		name := managedNamespaceName(ns.ID)
		createTestNamespace(t, c, name, nil, nil)
		requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "Refusing unowned Kubernetes Namespace "+name)
		if labels := stringMapAt(adminGet(t, c, kubetest.CorePath("", "namespaces", name)), "metadata", "labels"); labels[labelNamespace] != "" || labels[labelManagedBy] != "" {
			t.Fatalf("a refused ensure labelled the foreign namespace: %v", labels)
		}
		requireAbsent(t, c, tenantObjectPaths(name)["quota"])
		// Nothing is labelled for the Namespace, so there is nothing to delete; the namespace stays.
		if obs := deleteOnce(t, d, ns); !*obs.Deleted {
			t.Fatalf("delete: %+v", obs)
		}
		if obj := adminGet(t, c, kubetest.CorePath("", "namespaces", name)); kubetest.Field(obj, "metadata", "deletionTimestamp") != nil {
			t.Fatal("delete removed a namespace the driver does not own")
		}
	})

	t.Run("TwoNamespacesClaimTheNamespace", func(t *testing.T) {
		ns := drivertest.NewNamespace()
		o := owner{namespaceID: ns.ID}
		for range 2 {
			createTestNamespace(t, c, uniqueName("claim"), o.labels(), o.annotations())
		}
		requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "Refusing unowned Kubernetes Namespace")
		requireFailure(t, deleteOnce(t, d, ns), driver.FailurePermanent, "Refusing unowned Kubernetes Namespace")
	})

	t.Run("ExternalNamespaceNotSelected", func(t *testing.T) {
		ns := drivertest.NewNamespace()
		name := uniqueName("external")
		createTestNamespace(t, c, name, map[string]string{labelNamespace: ns.ID},
			map[string]string{annotationNamespaceID: ns.ID, annotationNamespaceLifecycle: lifecycleExternal})
		requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "Refusing external Kubernetes namespace "+name)
		requireAbsent(t, c, tenantObjectPaths(name)["quota"])
		requireAbsent(t, c, kubetest.CorePath("", "namespaces", managedNamespaceName(ns.ID)))
		if obs := deleteOnce(t, d, ns); !*obs.Deleted {
			t.Fatalf("delete: %+v", obs)
		}
		if obj := adminGet(t, c, kubetest.CorePath("", "namespaces", name)); kubetest.Field(obj, "metadata", "deletionTimestamp") != nil {
			t.Fatal("delete removed an operator-owned namespace")
		}
	})

	t.Run("UnownedQuotaInTheTenantNamespace", func(t *testing.T) {
		ns := drivertest.NewNamespace()
		name := ensureTestNamespace(t, d, ns)
		path := tenantObjectPaths(name)["quota"]
		if err := c.Admin().Delete(path, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Admin().Create(kubetest.CorePath(name, "resourcequotas", ""), kubetest.Object{
			"apiVersion": "v1", "kind": "ResourceQuota", "metadata": kubetest.Object{"name": tenantQuotaName},
			"spec": kubetest.Object{"hard": kubetest.Object{"pods": "1"}},
		}); err != nil {
			t.Fatal(err)
		}
		requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "Refusing unowned Kubernetes ResourceQuota "+tenantQuotaName)
		if hard := stringMapAt(adminGet(t, c, path), "spec", "hard"); hard["pods"] != "1" {
			t.Fatalf("the foreign quota was changed: %v", hard)
		}
	})
}

func TestAdoptExistingNamespace(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	name := uniqueName("tenant")
	createTestNamespace(t, c, name, map[string]string{"team": "blue"}, map[string]string{"note": "operator"})
	ns := drivertest.NewNamespace()
	ns.ExistingNamespace = &name
	nsPath := kubetest.CorePath("", "namespaces", name)
	patch := func(p kubetest.Object) {
		t.Helper()
		if _, err := c.Admin().Patch(nsPath, kubetest.MergePatch, kubetest.Object{"metadata": p}); err != nil {
			t.Fatal(err)
		}
	}

	requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "must be annotated "+annotationNamespaceLifecycle+": external")
	patch(kubetest.Object{"annotations": kubetest.Object{annotationNamespaceLifecycle: lifecycleExternal}})
	requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "must be labelled pod-security.kubernetes.io/")
	psa := kubetest.Object{}
	for _, l := range psaLabels[:2] {
		psa[l] = "restricted"
	}
	patch(kubetest.Object{"labels": psa})
	requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "must be labelled pod-security.kubernetes.io/warn: restricted")
	patch(kubetest.Object{"labels": kubetest.Object{psaLabels[2]: "restricted"}})

	// A NetworkPolicy OCC does not own could open what the namespace policies close.
	foreign := kubetest.GroupPath("networking.k8s.io/v1", name, "networkpolicies", "allow-all")
	if _, err := c.Admin().Create(kubetest.GroupPath("networking.k8s.io/v1", name, "networkpolicies", ""), kubetest.Object{
		"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": kubetest.Object{"name": "allow-all"},
		"spec": kubetest.Object{"podSelector": kubetest.Object{}, "ingress": []any{kubetest.Object{}}},
	}); err != nil {
		t.Fatal(err)
	}
	requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "holds NetworkPolicies OCC does not own")
	if labels := stringMapAt(adminGet(t, c, nsPath), "metadata", "labels"); labels[labelNamespace] != "" {
		t.Fatalf("a refused adoption claimed the namespace: %v", labels)
	}
	if err := c.Admin().Delete(foreign, nil); err != nil {
		t.Fatal(err)
	}

	ensureTestNamespace(t, d, ns)
	obj := adminGet(t, c, nsPath)
	labels, annotations := stringMapAt(obj, "metadata", "labels"), stringMapAt(obj, "metadata", "annotations")
	if labels[labelNamespace] != ns.ID || annotations[annotationNamespaceID] != ns.ID || labels["team"] != "blue" || annotations["note"] != "operator" {
		t.Fatalf("adopted namespace labels %v annotations %v", labels, annotations)
	}
	if labels[labelManagedBy] != "" || labels[labelGatewayNamespace] != "" {
		t.Fatalf("adoption added managed-namespace labels: %v", labels)
	}
	for _, path := range tenantObjectPaths(name) {
		requireOwned(t, adminGet(t, c, path), ns.ID)
	}
	requireAbsent(t, c, kubetest.CorePath("", "namespaces", managedNamespaceName(ns.ID)))
	if obs := ensureOnce(t, d, ns); !*obs.Ready {
		t.Fatalf("repeated ensure of the adopted namespace: %+v", obs)
	}

	// The namespace is claimed: another Namespace cannot select it.
	other := drivertest.NewNamespace()
	other.ExistingNamespace = &name
	requireFailure(t, ensureOnce(t, d, other), driver.FailurePermanent, "Refusing unowned Kubernetes Namespace "+name)
	if obs := deleteOnce(t, d, other); obs.Failure != driver.FailurePermanent {
		t.Fatalf("delete through another Namespace: %+v", obs)
	}

	// Delete keeps the operator's namespace and its markers; only the driver's objects go.
	deleteTestNamespace(t, d, ns)
	obj = adminGet(t, c, nsPath)
	if kubetest.Field(obj, "metadata", "deletionTimestamp") != nil || kubetest.Str(obj, "status", "phase") != "Active" {
		t.Fatal("delete removed the adopted namespace")
	}
	if stringMapAt(obj, "metadata", "labels")[labelNamespace] != ns.ID {
		t.Fatal("delete removed the adoption marker")
	}
	for _, path := range tenantObjectPaths(name) {
		requireAbsent(t, c, path)
	}
}

func TestAdoptionRefusesUnusableSelections(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	for _, tc := range []struct {
		name, existing, reason string
	}{
		{"InvalidName", "Not_A_Namespace", "not a valid Kubernetes namespace name"},
		{"Missing", uniqueName("missing"), "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := drivertest.NewNamespace()
			ns.ExistingNamespace = &tc.existing
			requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, tc.reason)
			if obs := deleteOnce(t, d, ns); !*obs.Deleted {
				t.Fatalf("delete: %+v", obs)
			}
		})
	}
	t.Run("ManagedNamespace", func(t *testing.T) {
		owned := drivertest.NewNamespace()
		name := ensureTestNamespace(t, d, owned)
		ns := drivertest.NewNamespace()
		ns.ExistingNamespace = &name
		requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "Refusing unowned Kubernetes Namespace "+name)
		requireFailure(t, deleteOnce(t, d, ns), driver.FailurePermanent, "Refusing unowned Kubernetes Namespace "+name)
		if obs := ensureOnce(t, d, owned); !*obs.Ready {
			t.Fatalf("the managed namespace's own Namespace: %+v", obs)
		}
	})
}

// TestNamespaceFailureObservations checks classes and reasons without a cluster: the reason is one
// of the driver's sentences, never the server's message.
func TestNamespaceFailureObservations(t *testing.T) {
	const secret = "tenant-secret-value"
	for _, tc := range []struct {
		name   string
		err    error
		class  string
		reason string
	}{
		{"Unreachable", &kube.TransportError{Code: "ECONNREFUSED"}, driver.FailureRetryable, "The Kubernetes API server is unreachable."},
		{"Timeout", &kube.TransportError{Code: "TIMEOUT"}, driver.FailureRetryable, "The Kubernetes API server is unreachable."},
		{"Forbidden", &kube.APIError{Status: 403, Reason: "Forbidden", Message: secret}, driver.FailurePermanent, "A Namespace preparation request failed with HTTP status 403."},
		// A restarted API server refuses everyone until its RBAC authorizer has loaded.
		{"ForbiddenJustAfterAnOutage", &kube.APIError{Status: 403, Reason: "Forbidden", Message: secret, AfterOutage: true}, driver.FailureRetryable, "A Namespace preparation request failed with HTTP status 403."},
		{"Invalid", &kube.APIError{Status: 422, Reason: "Invalid", Message: secret}, driver.FailurePermanent, "A Namespace preparation request failed with HTTP status 422."},
		{"Conflict", &kube.APIError{Status: 409, Reason: "Conflict", Message: secret}, driver.FailureRetryable, "A Namespace preparation request failed with HTTP status 409."},
		{"Unavailable", &kube.APIError{Status: 503, Message: secret}, driver.FailureRetryable, "A Namespace preparation request failed with HTTP status 503."},
		{"ClassifiedUnavailable", classify(&kube.APIError{Status: 500, Message: secret}), driver.FailureRetryable, "A Namespace preparation request failed with HTTP status 500."},
		{"ClassifiedUnreachable", classify(&kube.TransportError{Code: "ECONNRESET"}), driver.FailureRetryable, "The Kubernetes API server is unreachable."},
		{"ClassifiedForbidden", classify(&kube.APIError{Status: 403, Message: secret}), driver.FailurePermanent, "A Kubernetes API request failed with HTTP status 403."},
		{"ClassifiedForbiddenJustAfterAnOutage", classify(&kube.APIError{Status: 403, Message: secret, AfterOutage: true}), driver.FailureRetryable, "A Namespace preparation request failed with HTTP status 403."},
		{"Ownership", ownershipError("Namespace", "oce-x"), driver.FailurePermanent, "Refusing unowned Kubernetes Namespace oce-x."},
		{"Other", errors.New(secret), driver.FailureRetryable, "Namespace preparation failed."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := namespaceFailure(driver.NamespaceEnsureFailed, "ns_1", tc.err, "preparation", reasonEnsureFailed)
			if err := driver.CheckEnsureObservation("ns_1", obs); err != nil {
				t.Fatal(err)
			}
			if obs.Failure != tc.class || obs.Reason != tc.reason || *obs.Ready {
				t.Fatalf("observation %+v, want failure %q reason %q", obs, tc.class, tc.reason)
			}
			if strings.Contains(obs.Reason, secret) {
				t.Fatal("the reason carries the server's message")
			}
		})
	}
	// The worker spends no attempt on a transient dependency failure.
	var td *driver.TransientDependencyError
	if err := classify(&kube.APIError{Status: 403, AfterOutage: true}); !errors.As(err, &td) {
		t.Fatalf("a 403 just after an outage classified as %#v, want a transient dependency failure", err)
	}
	obs := namespaceFailure(driver.NamespaceDeleteFailed, "ns_1", &kube.APIError{Status: 403}, "teardown", reasonDeleteFailed)
	if err := driver.CheckDeleteObservation("ns_1", obs); err != nil || obs.Failure != driver.FailurePermanent || obs.Reason != "A Namespace teardown request failed with HTTP status 403." {
		t.Fatalf("delete observation %+v (%v)", obs, err)
	}
}
