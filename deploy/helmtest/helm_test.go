package helmtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/testkit/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

const (
	chartDir         = "../helm/occ"
	releaseName      = "occ"
	releaseNamespace = "occ-system"
)

// requiredValues are the values the chart refuses to render without.
const requiredValues = `
images: {controller: "registry.example/occ@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
auth: {baseUrl: "https://occ.example.com"}
bootstrap: {adminEmail: "admin@example.com", installationName: "Example", claimName: "occ-bootstrap"}
`

// productionValues resemble a production installation: several replicas, restricted egress,
// metrics, per-namespace tenant bindings as well as the cluster-wide ones.
const productionValues = requiredValues + `
api:
  replicas: 3
  clients:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress}}
      podSelector: {matchLabels: {app.kubernetes.io/name: ingress-nginx}}
worker: {replicas: 2, concurrency: 8}
database: {cidrs: ["10.20.0.0/16"], port: 5432}
metrics: {enabled: true, port: 9464}
networkPolicy: {enabled: true}
rbac: {create: true, clusterWideTenantAccess: false, tenantNamespaces: [team-a, team-b]}
imagePullSecrets: [{name: regcred}]
`

// TestChartRendersAndTheAPIServerAcceptsEveryObject renders the chart with the Helm SDK for the
// default and a production-like set of values and applies every object to a real kube-apiserver
// with a server-side dry run: schema, defaulting, validation and admission all run, nothing is
// stored.
func TestChartRendersAndTheAPIServerAcceptsEveryObject(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := newRESTClient(t, cluster.URL, cluster.CAFile, cluster.Token("admin"))
	for _, ns := range []string{releaseNamespace, "team-a", "team-b"} {
		admin.ensureNamespace(t, ns)
	}
	for _, tc := range []struct{ name, values string }{
		{"default", requiredValues},
		{"production", productionValues},
		{"sign-in", signInValues},
		{"collector", collectorValues},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := render(t, tc.values)
			kinds := map[string]int{}
			for _, obj := range objects {
				kinds[obj.kind()]++
				if err := admin.dryRunApply(obj); err != nil {
					t.Errorf("%s %s/%s: %v", obj.kind(), obj.namespace(), obj.name(), err)
				}
			}
			for _, want := range []string{"Deployment", "Job", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy", "Service"} {
				if kinds[want] == 0 {
					t.Errorf("the chart rendered no %s (rendered %v)", want, kinds)
				}
			}
			if tc.name == "production" && kinds["RoleBinding"] != 6 {
				t.Errorf("want 3 RoleBindings in each of the 2 tenant namespaces, got %d", kinds["RoleBinding"])
			}
		})
	}
}

type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }
func (o object) meta() map[string]any {
	m, _ := o["metadata"].(map[string]any)
	return m
}
func (o object) name() string      { s, _ := o.meta()["name"].(string); return s }
func (o object) namespace() string { s, _ := o.meta()["namespace"].(string); return s }

// render renders the chart with values (YAML) merged over values.yaml into releaseNamespace and
// returns every object.
func render(t *testing.T, values string) []object {
	t.Helper()
	return renderIn(t, values, releaseNamespace)
}

// renderIn renders the chart into namespace.
func renderIn(t *testing.T, values, namespace string) []object {
	t.Helper()
	files, err := renderFiles(values, namespace)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []object
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, helpers
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(doc), "---")) == "" {
				continue
			}
			var obj object
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			if len(obj) == 0 {
				continue
			}
			if obj.namespace() == "" && namespaced(obj.kind()) {
				obj.meta()["namespace"] = namespace // helm install -n fills it in
			}
			out = append(out, obj)
		}
	}
	if len(out) == 0 {
		t.Fatal("the chart rendered no objects")
	}
	return out
}

// renderFiles renders the chart with values (YAML) merged over values.yaml into namespace, as
// `helm install -n namespace` would: template file name to rendered text.
func renderFiles(values, namespace string) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	var overrides map[string]any
	if err := yaml.Unmarshal([]byte(values), &overrides); err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(ch, overrides, chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}

// resources maps the kinds the chart renders to their API paths.
var resources = map[string]struct {
	groupVersion, plural string
	namespaced           bool
}{
	"Deployment":          {"apps/v1", "deployments", true},
	"Job":                 {"batch/v1", "jobs", true},
	"Service":             {"v1", "services", true},
	"ServiceAccount":      {"v1", "serviceaccounts", true},
	"ConfigMap":           {"v1", "configmaps", true},
	"Secret":              {"v1", "secrets", true},
	"NetworkPolicy":       {"networking.k8s.io/v1", "networkpolicies", true},
	"Role":                {"rbac.authorization.k8s.io/v1", "roles", true},
	"RoleBinding":         {"rbac.authorization.k8s.io/v1", "rolebindings", true},
	"ClusterRole":         {"rbac.authorization.k8s.io/v1", "clusterroles", false},
	"ClusterRoleBinding":  {"rbac.authorization.k8s.io/v1", "clusterrolebindings", false},
	"PodDisruptionBudget": {"policy/v1", "poddisruptionbudgets", true},
}

func namespaced(kind string) bool { return resources[kind].namespaced }

type restClient struct {
	base  string
	token string
	http  *http.Client
}

func newRESTClient(t *testing.T, base, caFile, token string) *restClient {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &restClient{base: base, token: token, http: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

func (c *restClient) do(method, path string, query url.Values, contentType string, body any) (int, []byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path+"?"+query.Encode(), bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

func (c *restClient) ensureNamespace(t *testing.T, name string) {
	t.Helper()
	status, body, err := c.do(http.MethodPost, "/api/v1/namespaces", nil, "application/json",
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}})
	if err != nil || (status != http.StatusCreated && status != http.StatusConflict) {
		t.Fatalf("create namespace %s: %d %v %s", name, status, err, body)
	}
}

// dryRunApply sends obj as a server-side apply with dryRun=All.
func (c *restClient) dryRunApply(obj object) error { return c.apply(obj, true) }

// apply sends obj as a server-side apply (with dryRun=All when dryRun).
func (c *restClient) apply(obj object, dryRun bool) error {
	r, ok := resources[obj.kind()]
	if !ok {
		return fmt.Errorf("the test does not know kind %s: add it to resources", obj.kind())
	}
	prefix := "/apis/"
	if !strings.Contains(r.groupVersion, "/") {
		prefix = "/api/"
	}
	path := prefix + r.groupVersion
	if r.namespaced {
		path += "/namespaces/" + obj.namespace()
	}
	path += "/" + r.plural + "/" + obj.name()
	q := url.Values{"fieldManager": {"helmtest"}, "force": {"true"}}
	if dryRun {
		q.Set("dryRun", "All")
	}
	status, body, err := c.do(http.MethodPatch, path, q, "application/apply-patch+yaml", obj)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("HTTP %d: %s", status, body)
	}
	return nil
}
