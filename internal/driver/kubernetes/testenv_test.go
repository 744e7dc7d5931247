package kubernetes

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// Shared test helpers of the package: a driver for a kubetest cluster and Namespace lifecycles.

// testComputeID is the selection id of drivers built by newTestCompute.
const testComputeID = "compute-kubernetes-test"

// testDigest is a syntactically valid image digest.
const testDigest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testComputeConfig returns a valid Config for cluster c that authenticates as identity with a
// token file (the documented example values; runtime storage left unset).
func testComputeConfig(t testing.TB, c *kubetest.Cluster, identity string) Config {
	t.Helper()
	return Config{
		Auth: kube.Auth{
			Mode:      kube.ModeTokenFile,
			Server:    c.URL,
			TokenPath: c.WriteTokenFile(t, identity),
			CAPath:    c.CAFile,
		},
		GatewayImage:           "registry.example.test/openclaw/gateway" + testDigest,
		AgentImage:             "registry.example.test/openclaw/agent" + testDigest,
		RequireImmutableDigest: true,
		GatewayResources: ContainerResources{
			Requests: Quantities{CPU: "100m", Memory: "256Mi"},
			Limits:   Quantities{CPU: "1", Memory: "1Gi"},
		},
		AgentResources: ContainerResources{
			Requests: Quantities{CPU: "100m", Memory: "256Mi"},
			Limits:   Quantities{CPU: "1", Memory: "1Gi"},
		},
		NamespaceQuota: map[string]string{
			"pods": "20", "requests.cpu": "8", "requests.memory": "16Gi", "limits.cpu": "16", "limits.memory": "32Gi",
		},
		ContainerDefaults: ContainerResources{
			Requests: Quantities{CPU: "50m", Memory: "64Mi"},
			Limits:   Quantities{CPU: "500m", Memory: "512Mi"},
		},
		DNS:                      Peer{Namespace: "kube-system", PodLabels: map[string]string{"k8s-app": "kube-dns"}},
		GatewayPort:              8080,
		GatewayTrustedProxyCIDRs: []string{"10.0.0.0/8"},
		GatewayClients: []Peer{
			{Namespace: "openclaw-system", PodLabels: map[string]string{"app.kubernetes.io/name": "occ-api"}},
		},
		ServicePrincipalTokenMode: "projectedServiceAccountToken",
		ServicePrincipalAudience:  "openclaw-enterprise",
		ServicePrincipalExpiry:    900,
	}
}

// newTestCompute returns a driver for cluster c running as the worker identity (never admin),
// after mutate (nil for none) adjusted the configuration.
func newTestCompute(t testing.TB, c *kubetest.Cluster, mutate func(*Config)) *Compute {
	t.Helper()
	cfg := testComputeConfig(t, c, kubetest.Worker)
	if mutate != nil {
		mutate(&cfg)
	}
	d, err := NewCompute(testComputeID, cfg, driver.Environment{})
	if err != nil {
		t.Fatalf("NewCompute: %v", err)
	}
	return d
}

// withIdentity is a newTestCompute mutation that authenticates as identity instead of worker.
func withIdentity(t testing.TB, c *kubetest.Cluster, identity string) func(*Config) {
	t.Helper()
	path := c.WriteTokenFile(t, identity)
	return func(cfg *Config) { cfg.Auth.TokenPath = path }
}

// tenantNamespaceName is the Kubernetes namespace of ns: the selected existing one or the managed
// name.
func tenantNamespaceName(ns driver.Namespace) string {
	if ns.ExistingNamespace != nil {
		return *ns.ExistingNamespace
	}
	return managedNamespaceName(ns.ID)
}

// pollObservation repeats op until done accepts its observation, failing the test on an error, an
// invalid observation or timeout. It returns the last observation.
func pollObservation(t testing.TB, what string, op func(context.Context) (driver.NamespaceObservation, error),
	check func(driver.NamespaceObservation) error, done func(driver.NamespaceObservation) bool) driver.NamespaceObservation {
	t.Helper()
	var obs driver.NamespaceObservation
	wait.NoError(t, wait.Long, what, func() error {
		var err error
		if obs, err = op(context.Background()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := check(obs); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if done(obs) {
			return nil
		}
		if obs.Failure == driver.FailurePermanent {
			t.Fatalf("%s: permanent failure: %s", what, obs.Reason)
		}
		return fmt.Errorf("failure %q, reason %q", obs.Failure, obs.Reason)
	})
	return obs
}

// ensureTestNamespace calls EnsureNamespace until ns is ready and returns its Kubernetes namespace
// name. The Namespace is deleted (until the driver reports it deleted) when the test ends.
func ensureTestNamespace(t testing.TB, d *Compute, ns driver.Namespace) string {
	t.Helper()
	t.Cleanup(func() { deleteTestNamespace(t, d, ns) })
	pollObservation(t, "EnsureNamespace "+ns.ID,
		func(ctx context.Context) (driver.NamespaceObservation, error) { return d.EnsureNamespace(ctx, ns) },
		func(o driver.NamespaceObservation) error { return driver.CheckEnsureObservation(ns.ID, o) },
		func(o driver.NamespaceObservation) bool { return *o.Ready && o.Failure == "" })
	return tenantNamespaceName(ns)
}

// deleteTestNamespace calls DeleteNamespace until the driver reports ns deleted.
func deleteTestNamespace(t testing.TB, d *Compute, ns driver.Namespace) {
	t.Helper()
	pollObservation(t, "DeleteNamespace "+ns.ID,
		func(ctx context.Context) (driver.NamespaceObservation, error) { return d.DeleteNamespace(ctx, ns) },
		func(o driver.NamespaceObservation) error { return driver.CheckDeleteObservation(ns.ID, o) },
		func(o driver.NamespaceObservation) bool { return *o.Deleted && o.Failure == "" })
}

// ensureOnce calls EnsureNamespace once and checks the observation.
func ensureOnce(t testing.TB, d *Compute, ns driver.Namespace) driver.NamespaceObservation {
	t.Helper()
	obs, err := d.EnsureNamespace(context.Background(), ns)
	if err != nil {
		t.Fatalf("EnsureNamespace %s: %v", ns.ID, err)
	}
	if err := driver.CheckEnsureObservation(ns.ID, obs); err != nil {
		t.Fatalf("EnsureNamespace %s: %v", ns.ID, err)
	}
	return obs
}

// deleteOnce calls DeleteNamespace once and checks the observation.
func deleteOnce(t testing.TB, d *Compute, ns driver.Namespace) driver.NamespaceObservation {
	t.Helper()
	obs, err := d.DeleteNamespace(context.Background(), ns)
	if err != nil {
		t.Fatalf("DeleteNamespace %s: %v", ns.ID, err)
	}
	if err := driver.CheckDeleteObservation(ns.ID, obs); err != nil {
		t.Fatalf("DeleteNamespace %s: %v", ns.ID, err)
	}
	return obs
}

// createTestNamespace creates a Kubernetes namespace as admin (an operator's namespace) with the
// given labels and annotations and deletes it when the test ends.
func createTestNamespace(t testing.TB, c *kubetest.Cluster, name string, labels, annotations map[string]string) {
	t.Helper()
	meta := kubetest.Object{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	if _, err := c.Admin().Create(kubetest.CorePath("", "namespaces", ""), kubetest.Object{"apiVersion": "v1", "kind": "Namespace", "metadata": meta}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Admin().Delete(kubetest.CorePath("", "namespaces", name), nil); err != nil && !kubetest.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
}

// uniqueName returns a DNS label that starts with prefix and is unique in the cluster.
func uniqueName(prefix string) string { return prefix + "-" + uuid.NewString()[:13] }
