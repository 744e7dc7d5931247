// Package deploy holds the Compose file and the Helm chart. Its test parses every YAML file and
// renders the chart's templates with a small subset of Helm's template functions (Helm itself is
// not a dependency): operators should still run `helm lint deploy/helm/occ` and
// `helm template` against their values.
package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

func TestEveryYAMLFileParses(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		if strings.Contains(filepath.ToSlash(path), "/templates/") {
			return nil // rendered below
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Errorf("%s: %v", path, err)
		} else if len(doc) == 0 {
			t.Errorf("%s: empty document", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestComposeServices(t *testing.T) {
	t.Parallel()
	var doc struct {
		Services map[string]struct {
			Ports   []string `json:"ports"`
			Volumes []string `json:"volumes"`
		} `json:"services"`
	}
	data, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"postgres", "migrate", "bootstrap", "api", "worker"} {
		if _, ok := doc.Services[name]; !ok {
			t.Errorf("service %s missing", name)
		}
	}
	for name, svc := range doc.Services {
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %q beyond loopback", name, p)
			}
		}
		for _, v := range svc.Volumes {
			if strings.Contains(v, "docker.sock") && name != "worker" {
				t.Errorf("%s mounts the Docker socket", name)
			}
		}
	}
}

// --- chart rendering ---------------------------------------------------------------------------

const chartDir = "helm/occ"

func loadYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// merge overlays b onto a (maps recursively, everything else replaced).
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = merge(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// render renders every template of the chart with the overrides merged over values.yaml, using the
// Helm functions the chart uses. It returns the documents by template file.
func render(t *testing.T, overrides ...string) (map[string][]map[string]any, error) {
	t.Helper()
	values := loadYAML(t, filepath.Join(chartDir, "values.yaml"))
	for _, o := range overrides {
		var extra map[string]any
		if err := yaml.Unmarshal([]byte(o), &extra); err != nil {
			t.Fatal(err)
		}
		values = merge(values, extra)
	}
	chart := loadYAML(t, filepath.Join(chartDir, "Chart.yaml"))
	root := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": "oce", "Namespace": "openclaw-system", "Service": "Helm"},
		"Chart":   map[string]any{"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
	}
	tpl := template.New("chart").Option("missingkey=zero")
	indent := func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	}
	tpl.Funcs(template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var b bytes.Buffer
			err := tpl.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
		"toYaml": func(v any) string {
			out, err := yaml.Marshal(v)
			if err != nil {
				return ""
			}
			return strings.TrimSuffix(string(out), "\n")
		},
		"nindent":    func(n int, s string) string { return "\n" + indent(n, s) },
		"indent":     indent,
		"quote":      func(v any) string { return fmt.Sprintf("%q", fmt.Sprint(v)) },
		"trunc":      func(n int, s string) string { return s[:min(n, len(s))] },
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"list":       func(v ...any) []any { return v },
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
		"required": func(msg string, v any) (any, error) {
			if v == nil || v == "" {
				return nil, fmt.Errorf("%s", msg)
			}
			return v, nil
		},
	})
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tpl.New(filepath.Base(f)).Parse(string(data)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	out := map[string][]map[string]any{}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasPrefix(name, "_") || !strings.HasSuffix(name, ".yaml") {
			continue
		}
		var b bytes.Buffer
		if err := tpl.ExecuteTemplate(&b, name, root); err != nil {
			return nil, err
		}
		text := strings.ReplaceAll(b.String(), "<no value>", "")
		if os.Getenv("OCC_CHART_DUMP") != "" {
			t.Logf("--- %s\n%s", name, text)
		}
		for _, part := range strings.Split(text, "\n---") {
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
				t.Fatalf("%s renders invalid YAML: %v\n%s", name, err, part)
			}
			if len(doc) == 0 {
				continue
			}
			meta, _ := doc["metadata"].(map[string]any)
			if doc["apiVersion"] == nil || doc["kind"] == nil || meta == nil || meta["name"] == nil {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name:\n%s", name, part)
			}
			out[name] = append(out[name], doc)
		}
	}
	return out, nil
}

const requiredValues = `
images: {controller: "registry.example.invalid/occ@sha256:0000000000000000000000000000000000000000000000000000000000000000"}
auth: {baseUrl: "https://occ.example.invalid"}
bootstrap: {adminEmail: admin@example.invalid, installationName: Example, claimName: occ-bootstrap}
`

func kinds(docs map[string][]map[string]any) map[string]int {
	n := map[string]int{}
	for _, list := range docs {
		for _, d := range list {
			n[d["kind"].(string)]++
		}
	}
	return n
}

func TestChartRendersWithDefaultValues(t *testing.T) {
	t.Parallel()
	docs, err := render(t, requiredValues)
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(docs)
	want := map[string]int{"Deployment": 2, "Service": 3, "ServiceAccount": 2, "Job": 2, "ClusterRole": 6,
		"ClusterRoleBinding": 2, "NetworkPolicy": 2}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	for _, job := range docs["jobs.yaml"] {
		meta := job["metadata"].(map[string]any)
		hooks := meta["annotations"].(map[string]any)["helm.sh/hook"]
		if hooks != "pre-install,pre-upgrade" {
			t.Errorf("%s hooks %v", meta["name"], hooks)
		}
		if strings.HasSuffix(meta["name"].(string), "-bootstrap") && job["spec"].(map[string]any)["backoffLimit"] != float64(0) {
			t.Errorf("bootstrap backoffLimit %v", job["spec"].(map[string]any)["backoffLimit"])
		}
	}
	worker := docs["worker.yaml"][0]
	container := worker["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	probe := container["livenessProbe"].(map[string]any)["exec"].(map[string]any)["command"].([]any)
	if fmt.Sprint(probe) != "[/occ probe worker]" {
		t.Errorf("worker liveness probe %v", probe)
	}
	seen := map[string]bool{}
	for _, e := range container["env"].([]any) {
		name := e.(map[string]any)["name"].(string)
		if seen[name] {
			t.Errorf("worker env %s twice", name)
		}
		seen[name] = true
	}
	for _, name := range []string{"NODE_ENV", "OCC_DATABASE_URL", "OCC_CONFIG_PATH", "OCC_WORKER_LIVENESS_PATH", "OCC_WORKER_READINESS_PATH"} {
		if !seen[name] {
			t.Errorf("worker env %s missing", name)
		}
	}
}

func TestChartRendersProductionLikeValues(t *testing.T) {
	t.Parallel()
	docs, err := render(t, requiredValues, `
api: {replicas: 3, clients: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress}}}]}
worker: {replicas: 2, concurrency: 8}
metrics: {enabled: false}
rbac: {tenantNamespaces: [team-a, team-b], runtimeLogs: true}
controlPlane: {nodeSelector: {role: control}, installationChecksum: abc}
imagePullSecrets: [{name: registry}]
`)
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(docs)
	if got["RoleBinding"] != 6 || got["Service"] != 1 {
		t.Errorf("kinds %v", got)
	}
	api := docs["api.yaml"][0]
	if api["spec"].(map[string]any)["replicas"] != float64(3) {
		t.Errorf("api replicas %v", api["spec"].(map[string]any)["replicas"])
	}
	policy := docs["networkpolicies.yaml"][0]["spec"].(map[string]any)
	if len(policy["ingress"].([]any)) != 1 {
		t.Errorf("api ingress %v", policy["ingress"])
	}
}

func TestChartRequiresItsValues(t *testing.T) {
	t.Parallel()
	if _, err := render(t); err == nil || !strings.Contains(err.Error(), "is required") {
		t.Fatalf("rendered without the required values: %v", err)
	}
	if _, err := render(t, requiredValues, `bootstrap: {claimName: ""}`); err == nil || !strings.Contains(err.Error(), "bootstrap.claimName") {
		t.Fatalf("bootstrap without a claim: %v", err)
	}
	if _, err := render(t, requiredValues, `bootstrap: {enabled: false, claimName: ""}`); err != nil {
		t.Fatalf("bootstrap disabled: %v", err)
	}
}
