package helmtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/drivertest"
	"github.com/openclaw/occ/internal/driver/kubernetes"
	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// rbacNamespace is the release namespace of the RBAC test (the dry-run test stores nothing).
const rbacNamespace = "occ-rbac"

// TestChartRBACIsEnoughForTheDrivers installs the chart's ServiceAccounts and RBAC for real, then
// runs the Kubernetes drivers as those ServiceAccounts: the Compute Driver as the worker (a
// Namespace, an Agent deployed, stopped and deleted, the Namespace deleted), the Configuration
// and Secret Drivers and the runtime views as the API. A verb the drivers need and the chart does not grant fails here.
func TestChartRBACIsEnoughForTheDrivers(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := newRESTClient(t, cluster.URL, cluster.CAFile, cluster.Token("admin"))
	admin.ensureNamespace(t, rbacNamespace)
	for _, obj := range renderIn(t, requiredValues, rbacNamespace) {
		switch obj.kind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := admin.apply(obj, false); err != nil {
				t.Fatalf("install %s %s: %v", obj.kind(), obj.name(), err)
			}
		}
	}
	ctx := context.Background()
	worker := serviceAccountAuth(t, admin, cluster, releaseName+"-occ-worker")
	api := serviceAccountAuth(t, admin, cluster, releaseName+"-occ-api")

	compute, err := kubernetes.Factory("compute-kubernetes", computeConfiguration(worker), driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := compute.(driver.Preflighter); ok {
		if _, err := p.Preflight(ctx); err != nil {
			t.Fatalf("preflight as the chart's worker: %v", err)
		}
	}
	ns := drivertest.NewNamespace()
	wait.Until(t, wait.Long, "namespace ready", func() (bool, error) {
		obs, err := compute.EnsureNamespace(ctx, ns)
		if err != nil || obs.Failure != "" {
			return false, errorOf(err, obs)
		}
		return obs.Ready != nil && *obs.Ready, nil
	})

	configurations, err := kubernetes.NewConfigurations("config-kubernetes", map[string]any{"authentication": api}, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	doc := driver.ConfigurationDocument{ID: "cfg_" + uuid.NewString(), NamespaceID: ns.ID, Kind: driver.ConfigurationKindAgent,
		Generation: 1, Values: json.RawMessage(`{"agents":{}}`), CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if _, err := configurations.Create(ctx, doc); err != nil {
		t.Fatalf("configuration create as the chart's API: %v", err)
	}
	doc.Generation = 2
	if _, err := configurations.Update(ctx, doc); err != nil {
		t.Fatalf("configuration update: %v", err)
	}
	if _, err := configurations.Read(ctx, doc.Ref()); err != nil {
		t.Fatalf("configuration read: %v", err)
	}
	if err := configurations.Delete(ctx, doc.Ref()); err != nil {
		t.Fatalf("configuration delete: %v", err)
	}

	secrets, err := kubernetes.NewSecrets("secret-kubernetes", map[string]any{"authentication": api}, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	identity := driver.SecretIdentity{ID: "sec_" + uuid.NewString(), NamespaceID: ns.ID, Name: "model-key"}
	ref, err := secrets.Create(ctx, identity, []byte("rbac-test-value"))
	if err != nil {
		t.Fatalf("secret create as the chart's API: %v", err)
	}
	stored := driver.StoredSecret{SecretIdentity: identity, Ref: ref}
	if err := secrets.Update(ctx, stored, []byte("rbac-test-value-2")); err != nil {
		t.Fatalf("secret update: %v", err)
	}
	if _, err := secrets.Resolve(ctx, stored); err != nil {
		t.Fatalf("secret resolve: %v", err)
	}

	// Embedded OpenClaw on Kubernetes takes its model credential from the Secret just created.
	rev := drivertest.NewRevision(compute, ns.ID)
	rev.HarnessAuthMethod = driver.HarnessAuthAPIKey
	rc := driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey, SecretID: identity.ID, Ref: &ref}}
	wait.Until(t, wait.Long, "revision ready", func() (bool, error) {
		r, err := compute.PrepareRevision(ctx, rev, rc)
		return r.Ready, err
	})
	if a, ok := compute.(driver.Activator); ok {
		if err := a.ActivateRevision(ctx, rev, rc); err != nil {
			t.Fatalf("activate: %v", err)
		}
	}
	checkRuntimeViewsAsAPI(t, cluster, api, rev)
	if err := compute.StopRevision(ctx, rev, driver.StopOptions{}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := compute.RetireRevision(ctx, rev); err != nil {
		t.Fatalf("retire: %v", err)
	}
	if d, ok := compute.(driver.RuntimeCredentialDeleter); ok {
		agent := driver.AgentRef{NamespaceID: ns.ID, AgentID: rev.AgentID, ServicePrincipalID: rev.ServicePrincipalID}
		if err := d.DeleteAgentRuntimeCredentials(ctx, agent); err != nil {
			t.Fatalf("delete the Agent's objects: %v", err)
		}
	}
	if err := secrets.Delete(ctx, stored); err != nil {
		t.Fatalf("secret delete: %v", err)
	}
	wait.Until(t, wait.Long, "namespace deleted", func() (bool, error) {
		obs, err := compute.DeleteNamespace(ctx, ns)
		if err != nil || obs.Failure != "" {
			return false, errorOf(err, obs)
		}
		return obs.Deleted != nil && *obs.Deleted, nil
	})
}

// checkRuntimeViewsAsAPI reads the running revision's runtime views with a Compute Driver
// authenticated as the chart's API ServiceAccount, which serves them: status (Pods, Events), a log
// page, diagnostics and images.
func checkRuntimeViewsAsAPI(t *testing.T, cluster *kubetest.Cluster, api map[string]any, rev driver.Revision) {
	t.Helper()
	ctx := context.Background()
	reader, err := kubernetes.Factory("compute-kubernetes", computeConfiguration(api), driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cluster.Admin().List(kubetest.CorePath("", "pods", ""), url.Values{"labelSelector": {"openclaw.dev/revision=" + rev.ID}})
	if err != nil || len(pods) != 1 {
		t.Fatalf("the revision's Pods: %d, %v", len(pods), err)
	}
	podNS, podName := kubetest.Str(pods[0], "metadata", "namespace"), kubetest.Str(pods[0], "metadata", "name")
	if err := cluster.Kubelet().EmitEvent(podNS, podName, "gateway", "Warning", "BackOff", "rbac test event", 1); err != nil {
		t.Fatal(err)
	}
	cluster.Kubelet().WriteLog(podNS, podName, "gateway", "rbac test line")

	view, err := reader.(driver.RuntimeDescriber).DescribeRuntime(ctx, rev)
	if err != nil {
		t.Fatalf("runtime status as the chart's API: %v", err)
	}
	if len(view.Pods) != 1 || len(view.Pods[0].Events) != 1 {
		t.Fatalf("runtime status as the chart's API: %+v", view)
	}
	page, err := reader.(driver.RuntimeLogReader).ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 10})
	if err != nil {
		t.Fatalf("runtime logs as the chart's API: %v", err)
	}
	if len(page.Page.Records) != 1 || page.Page.Records[0].Message != "rbac test line" {
		t.Fatalf("runtime logs as the chart's API: %+v", page.Page.Records)
	}
	checks, err := reader.(driver.RuntimeDiagnoser).DiagnoseRuntime(ctx, rev)
	if err != nil {
		t.Fatalf("diagnostics as the chart's API: %v", err)
	}
	for _, ch := range checks {
		if ch.State != driver.CheckSucceeded {
			t.Fatalf("diagnostics as the chart's API: %+v", ch)
		}
	}
	if _, err := reader.(driver.RuntimeImageReader).RuntimeImages(ctx, rev); err != nil {
		t.Fatalf("runtime images as the chart's API: %v", err)
	}
}

// serviceAccountAuth asks the API server for a token of the chart's ServiceAccount (TokenRequest)
// and returns a tokenFile authentication for it.
func serviceAccountAuth(t *testing.T, admin *restClient, cluster *kubetest.Cluster, name string) map[string]any {
	t.Helper()
	status, body, err := admin.do(http.MethodPost, "/api/v1/namespaces/"+rbacNamespace+"/serviceaccounts/"+name+"/token", url.Values{},
		"application/json", map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
			"spec": map[string]any{"expirationSeconds": 3600}})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("token for %s: %d %v %s", name, status, err, body)
	}
	var tr struct {
		Status struct{ Token string } `json:"status"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.Status.Token == "" {
		t.Fatalf("token for %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"mode": "tokenFile", "server": cluster.URL, "tokenPath": path, "caPath": cluster.CAFile}
}

func computeConfiguration(auth map[string]any) map[string]any {
	var cfg map[string]any
	doc := `
images: {gateway: "registry.example/openclaw-gateway:rbac", agent: "registry.example/codex:rbac", requireImmutableDigest: false}
resources:
  gateway: {requests: {cpu: "100m", memory: "128Mi"}, limits: {cpu: "1", memory: "1Gi"}}
  agent: {requests: {cpu: "100m", memory: "128Mi"}, limits: {cpu: "1", memory: "1Gi"}}
  namespace:
    quota: {pods: "20"}
    containerDefaults: {requests: {cpu: "50m", memory: "64Mi"}, limits: {cpu: "500m", memory: "512Mi"}}
network:
  dns: {namespace: kube-system, podLabels: {k8s-app: kube-dns}}
  gatewayPort: 8080
  gatewayTrustedProxyCidrs: ["10.0.0.0/8"]
  gatewayClients: [{namespace: occ-rbac, podLabels: {app.kubernetes.io/name: occ}}]
servicePrincipalCredentials: {mode: projectedServiceAccountToken, audience: openclaw-enterprise}
runtime: {gatewayStorageClassName: standard}
`
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		panic(err)
	}
	cfg["authentication"] = auth
	return cfg
}

func errorOf(err error, obs driver.NamespaceObservation) error {
	if err != nil {
		return err
	}
	return &observationError{obs}
}

type observationError struct{ obs driver.NamespaceObservation }

func (e *observationError) Error() string { return e.obs.Failure + ": " + e.obs.Reason }
