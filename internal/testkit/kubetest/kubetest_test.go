package kubetest_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

type obj = kubetest.Object

func TestMain(m *testing.M) { kubetest.Main(m) }

func uniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// newNamespace creates a namespace as identity and deletes it (as admin) when the test ends.
func newNamespace(t *testing.T, c *kubetest.Cluster, identity, prefix string, labels obj) string {
	t.Helper()
	name := uniqueName(prefix)
	meta := obj{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	if _, err := c.As(identity).Create(kubetest.CorePath("", "namespaces", ""),
		obj{"apiVersion": "v1", "kind": "Namespace", "metadata": meta}); err != nil {
		t.Fatalf("create namespace as %s: %v", identity, err)
	}
	t.Cleanup(func() {
		if err := c.Admin().Delete(kubetest.CorePath("", "namespaces", name), nil); err != nil && !kubetest.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

func conditionStatus(o obj, typ string) string {
	for _, c := range kubetest.Slice(o, "status", "conditions") {
		if kubetest.Str(c, "type") == typ {
			return kubetest.Str(c, "status")
		}
	}
	return ""
}

func restrictedPodSpec(serviceAccount string) obj {
	return obj{
		"serviceAccountName":           serviceAccount,
		"automountServiceAccountToken": false,
		"securityContext": obj{
			"runAsNonRoot": true, "runAsUser": 65532,
			"seccompProfile": obj{"type": "RuntimeDefault"},
		},
		"containers": []any{obj{
			"name": "web", "image": "registry.invalid/occ/web:1",
			"ports": []any{obj{"name": "http", "containerPort": 8080}},
			"securityContext": obj{
				"allowPrivilegeEscalation": false,
				"capabilities":             obj{"drop": []any{"ALL"}},
				"runAsNonRoot":             true,
				"seccompProfile":           obj{"type": "RuntimeDefault"},
			},
		}},
	}
}

// endpointReady returns the ready condition of the endpoint with address ip in the slices of
// service svc ("" when the endpoint is not listed).
func endpointReady(cl *kubetest.Client, ns, svc, ip string) (string, error) {
	slices, err := cl.List(kubetest.GroupPath("discovery.k8s.io/v1", ns, "endpointslices", ""),
		kubetest.Selector(map[string]string{"kubernetes.io/service-name": svc}))
	if err != nil {
		return "", err
	}
	for _, s := range slices {
		for _, ep := range kubetest.Slice(s, "endpoints") {
			addrs, _ := ep["addresses"].([]any)
			for _, a := range addrs {
				if a == ip {
					if r, ok := kubetest.Field(ep, "conditions", "ready").(bool); ok && r {
						return "true", nil
					}
					return "false", nil
				}
			}
		}
	}
	return "", nil
}

func TestDeploymentServiceLifecycle(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := kubetest.Shared(t)
	t.Logf("shared cluster ready in %s (startup %s)", time.Since(begin).Round(time.Millisecond),
		kubetest.SharedStartup().Round(time.Millisecond))
	w := c.As(kubetest.Worker)
	ns := newNamespace(t, c, kubetest.Worker, "kt-deploy", obj{
		"pod-security.kubernetes.io/enforce": "restricted", "openclaw.dev/test": "kubetest"})

	if _, err := w.Create(kubetest.CorePath(ns, "serviceaccounts", ""), obj{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": obj{"name": "app"},
		"automountServiceAccountToken": false,
	}); err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"app": "web"}
	if _, err := w.Create(kubetest.GroupPath("apps/v1", ns, "deployments", ""), obj{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": obj{"name": "web"},
		"spec": obj{
			"replicas": 1, "strategy": obj{"type": "Recreate"},
			"selector": obj{"matchLabels": sel},
			"template": obj{"metadata": obj{"labels": sel}, "spec": restrictedPodSpec("app")},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Create(kubetest.CorePath(ns, "services", ""), obj{
		"apiVersion": "v1", "kind": "Service", "metadata": obj{"name": "web"},
		"spec": obj{"selector": sel, "ports": []any{obj{"name": "http", "port": 80, "targetPort": "http"}}},
	}); err != nil {
		t.Fatal(err)
	}

	var podIP, podName string
	created := time.Now()
	wait.Until(t, wait.Long, "pod ready", func() (bool, error) {
		pods, err := w.List(kubetest.CorePath(ns, "pods", ""), kubetest.Selector(sel))
		if err != nil || len(pods) != 1 {
			return false, err
		}
		p := pods[0]
		podIP, podName = kubetest.Str(p, "status", "podIP"), kubetest.Str(p, "metadata", "name")
		return conditionStatus(p, "Ready") == "True" && kubetest.Str(p, "spec", "nodeName") == kubetest.NodeName &&
			podIP != "", nil
	})
	t.Logf("pod %s ready with IP %s after %s", podName, podIP, time.Since(created).Round(time.Millisecond))
	wait.Until(t, wait.Long, "deployment available", func() (bool, error) {
		d, err := w.Get(kubetest.GroupPath("apps/v1", ns, "deployments", "web"))
		if err != nil {
			return false, err
		}
		ready, _ := kubetest.Field(d, "status", "readyReplicas").(float64)
		return ready == 1 && conditionStatus(d, "Available") == "True", nil
	})
	wait.Until(t, wait.Long, "endpoint ready", func() (bool, error) {
		r, err := endpointReady(w, ns, "web", podIP)
		return r == "true", err
	})
	t.Logf("endpoint ready after %s", time.Since(created).Round(time.Millisecond))

	// A failing container makes the Pod and its endpoint not ready, and back.
	k := c.Kubelet()
	k.SetFailing(ns, sel, true)
	wait.Until(t, wait.Medium, "endpoint not ready", func() (bool, error) {
		r, err := endpointReady(w, ns, "web", podIP)
		return r == "false", err
	})
	p, err := w.Get(kubetest.CorePath(ns, "pods", podName))
	if err != nil {
		t.Fatal(err)
	}
	cs := kubetest.Slice(p, "status", "containerStatuses")
	if len(cs) != 1 || kubetest.Str(cs[0], "state", "waiting", "reason") != "CrashLoopBackOff" ||
		cs[0]["restartCount"].(float64) < 1 || conditionStatus(p, "Ready") != "False" {
		t.Fatalf("failing pod status: %v", p["status"])
	}
	k.SetFailing(ns, sel, false)
	wait.Until(t, wait.Medium, "endpoint ready again", func() (bool, error) {
		r, err := endpointReady(w, ns, "web", podIP)
		return r == "true", err
	})

	// Deleting the Deployment removes its ReplicaSet and Pod (garbage collector + simulator).
	if err := w.Delete(kubetest.GroupPath("apps/v1", ns, "deployments", "web"), nil); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, wait.Long, "pod removed", func() (bool, error) {
		pods, err := w.List(kubetest.CorePath(ns, "pods", ""), nil)
		return err == nil && len(pods) == 0, err
	})

	// Deleting the namespace completes.
	delStart := time.Now()
	if err := w.Delete(kubetest.CorePath("", "namespaces", ns), nil); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, wait.Long, "namespace gone", func() (bool, error) {
		_, err := w.Get(kubetest.CorePath("", "namespaces", ns))
		if kubetest.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	t.Logf("namespace deleted in %s", time.Since(delStart).Round(time.Millisecond))
}

func TestRBAC(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)

	if _, err := c.As(kubetest.Nobody).List(kubetest.CorePath("", "namespaces", ""), nil); !kubetest.IsForbidden(err) {
		t.Fatalf("nobody lists namespaces: want 403, got %v", err)
	}
	_, err := c.As(kubetest.Worker).Create(kubetest.GroupPath("rbac.authorization.k8s.io/v1", "", "clusterroles", ""), obj{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": obj{"name": uniqueName("kt-escalate")},
		"rules":    []any{obj{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"*"}}},
	})
	var se *kubetest.StatusError
	if !errors.As(err, &se) || se.Code != 403 || se.Reason != "Forbidden" {
		t.Fatalf("worker creates a ClusterRole: want 403 Forbidden, got %v", err)
	}
	if _, err := c.As(kubetest.API).Create(kubetest.CorePath("", "namespaces", ""), obj{
		"apiVersion": "v1", "kind": "Namespace", "metadata": obj{"name": uniqueName("kt-api")}}); !kubetest.IsForbidden(err) {
		t.Fatalf("api creates a namespace: want 403, got %v", err)
	}
	if _, err := c.As(kubetest.API).List(kubetest.CorePath("", "namespaces", ""), nil); err != nil {
		t.Fatalf("api lists namespaces: %v", err)
	}
	for _, id := range []string{kubetest.Worker, kubetest.API} {
		v, err := c.As(id).Raw("/version")
		if err != nil || !strings.Contains(string(v), kubetest.KubeVersion) {
			t.Fatalf("%s GET /version: %s %v", id, v, err)
		}
	}
	if _, err := c.Anonymous().List(kubetest.CorePath("", "namespaces", ""), nil); kubetest.StatusCode(err) != 403 &&
		kubetest.StatusCode(err) != 401 {
		t.Fatalf("anonymous lists namespaces: want 401/403, got %v", err)
	}

	t.Run("grant", func(t *testing.T) {
		c.GrantClusterRole(t, kubetest.Nobody, kubetest.NamespaceObserverRole)
		if _, err := c.As(kubetest.Nobody).List(kubetest.CorePath("", "namespaces", ""), nil); err != nil {
			t.Fatalf("nobody with the observer role lists namespaces: %v", err)
		}
	})
	// The grant was undone when the subtest ended.
	if _, err := c.As(kubetest.Nobody).List(kubetest.CorePath("", "namespaces", ""), nil); !kubetest.IsForbidden(err) {
		t.Fatalf("nobody after the grant ended: want 403, got %v", err)
	}
}

func TestKubeletRules(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	admin := c.Admin()
	k := c.Kubelet()
	ns := newNamespace(t, c, kubetest.Admin, "kt-kubelet", nil)
	// The ServiceAccount admission plugin needs the namespace's default ServiceAccount (created by
	// the serviceaccount controller).
	wait.Until(t, wait.Medium, "default service account", func() (bool, error) {
		_, err := admin.Get(kubetest.CorePath(ns, "serviceaccounts", "default"))
		return err == nil, nil
	})
	newPod := func(name string) {
		t.Helper()
		if _, err := admin.Create(kubetest.CorePath(ns, "pods", ""), obj{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": obj{"name": name, "labels": obj{"app": name}},
			"spec":     restrictedPodSpec("default"),
		}); err != nil {
			t.Fatal(err)
		}
	}
	getPod := func(name string) obj {
		t.Helper()
		p, err := admin.Get(kubetest.CorePath(ns, "pods", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitRunning := func(name string) {
		t.Helper()
		wait.Until(t, wait.Medium, name+" running", func() (bool, error) {
			p := getPod(name)
			return kubetest.Str(p, "status", "phase") == "Running" && conditionStatus(p, "Ready") == "True", nil
		})
	}

	// Unschedulable.
	k.SetUnschedulable(ns, map[string]string{"app": "sched"}, true)
	newPod("sched")
	wait.Until(t, wait.Medium, "unschedulable condition", func() (bool, error) {
		p := getPod("sched")
		for _, cd := range kubetest.Slice(p, "status", "conditions") {
			if kubetest.Str(cd, "type") == "PodScheduled" && kubetest.Str(cd, "status") == "False" &&
				kubetest.Str(cd, "reason") == "Unschedulable" &&
				strings.HasPrefix(kubetest.Str(cd, "message"), "0/1 nodes are available") {
				return kubetest.Str(p, "spec", "nodeName") == "", nil
			}
		}
		return false, nil
	})
	k.SetUnschedulable(ns, map[string]string{"app": "sched"}, false)
	waitRunning("sched")

	// Held: stays Pending and unbound until released.
	k.SetHeld(ns, map[string]string{"app": "held"}, true)
	newPod("held")
	time.Sleep(time.Second)
	if p := getPod("held"); kubetest.Str(p, "spec", "nodeName") != "" || kubetest.Str(p, "status", "phase") != "Pending" {
		t.Fatalf("held pod was acted on: %v %v", p["spec"], p["status"])
	}
	k.SetHeld(ns, map[string]string{"app": "held"}, false)
	waitRunning("held")
	if a, b := kubetest.Str(getPod("held"), "status", "podIP"), kubetest.Str(getPod("sched"), "status", "podIP"); a == b {
		t.Fatalf("two pods share IP %s", a)
	}

	// Deleting a bound Pod completes (the simulator removes it once it has a deletionTimestamp).
	if err := admin.Delete(kubetest.CorePath(ns, "pods", "held"), nil); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, wait.Medium, "pod deleted", func() (bool, error) {
		_, err := admin.Get(kubetest.CorePath(ns, "pods", "held"))
		return kubetest.IsNotFound(err), nil
	})
}

func TestKubeconfigAndTokenFile(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	path := c.WriteKubeconfig(t, kubetest.Worker, "kind-test")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		CurrentContext string `json:"current-context"`
		Clusters       []struct {
			Cluster struct {
				Server string `json:"server"`
				CA     string `json:"certificate-authority"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			Name string `json:"name"`
			User struct {
				Token string `json:"token"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "kind-test" || len(cfg.Clusters) != 1 || cfg.Clusters[0].Cluster.Server != c.URL ||
		cfg.Clusters[0].Cluster.CA != c.CAFile || len(cfg.Users) != 1 || cfg.Users[0].User.Token != c.Token(kubetest.Worker) {
		t.Fatalf("kubeconfig:\n%s", b)
	}
	tok, err := os.ReadFile(c.WriteTokenFile(t, kubetest.API))
	if err != nil || string(tok) != c.Token(kubetest.API) {
		t.Fatalf("token file: %q %v", tok, err)
	}
}

func TestPrivateClusterRestart(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := kubetest.Start(t, kubetest.Options{ExtraIdentities: []string{"tenant-b"}})
	t.Logf("private cluster started in %s", time.Since(begin).Round(time.Millisecond))
	admin := c.Admin()

	if _, err := admin.Create(kubetest.CorePath("default", "configmaps", ""), obj{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj{"name": "persist"}, "data": obj{"k": "v"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.As("tenant-b").Get(kubetest.CorePath("default", "configmaps", "persist")); !kubetest.IsForbidden(err) {
		t.Fatalf("extra identity reads a configmap: want 403, got %v", err)
	}

	t.Run("revoke", func(t *testing.T) {
		c.RevokeClusterRole(t, kubetest.Worker, kubetest.TenantWorkerRole)
		if _, err := c.As(kubetest.Worker).Get(kubetest.CorePath("default", "configmaps", "persist")); !kubetest.IsForbidden(err) {
			t.Fatalf("worker without tenant-worker: want 403, got %v", err)
		}
	})
	if _, err := c.As(kubetest.Worker).Get(kubetest.CorePath("default", "configmaps", "persist")); err != nil {
		t.Fatalf("worker after the revocation ended: %v", err)
	}

	stop := time.Now()
	c.StopAPIServer(t)
	t.Logf("kube-apiserver stopped in %s", time.Since(stop).Round(time.Millisecond))
	_, err := admin.Get(kubetest.CorePath("default", "configmaps", "persist"))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("request with the API server stopped: want connection refused, got %v", err)
	}

	restart := time.Now()
	c.StartAPIServer(t)
	t.Logf("kube-apiserver restarted in %s", time.Since(restart).Round(time.Millisecond))
	cm, err := admin.Get(kubetest.CorePath("default", "configmaps", "persist"))
	if err != nil || kubetest.Str(cm, "data", "k") != "v" {
		t.Fatalf("configmap after restart: %v %v", cm, err)
	}
	// The simulator carries on after the restart.
	wait.Until(t, wait.Medium, "default service account", func() (bool, error) {
		_, err := admin.Get(kubetest.CorePath("default", "serviceaccounts", "default"))
		return err == nil, nil
	})
	if _, err := admin.Create(kubetest.CorePath("default", "pods", ""), obj{
		"apiVersion": "v1", "kind": "Pod", "metadata": obj{"name": "after-restart"},
		"spec": restrictedPodSpec("default"),
	}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, wait.Medium, "pod running after restart", func() (bool, error) {
		p, err := admin.Get(kubetest.CorePath("default", "pods", "after-restart"))
		return err == nil && conditionStatus(p, "Ready") == "True", err
	})
}
