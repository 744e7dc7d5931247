package helmtest

import (
	"os"
	"strings"
	"testing"
)

// collectorValues turn the bundled log-export Collector on.
const collectorValues = productionValues + `
logging:
  collector:
    enabled: true
    image: "registry.example/otelcol-contrib@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    exporterSecretName: occ-log-backend
`

// TestChartCollectorOption: logging.collector.enabled adds the Collector (ConfigMap with the shipped
// policy, Deployment, Service, NetworkPolicy admitting only the API and the worker) and points both
// processes' OTEL_EXPORTER_OTLP_LOGS_ENDPOINT at it; off, none of it renders.
func TestChartCollectorOption(t *testing.T) {
	off := render(t, productionValues)
	for _, o := range off {
		if strings.HasSuffix(o.name(), "-collector") {
			t.Errorf("collector disabled, yet %s %s renders", o.kind(), o.name())
		}
	}
	if _, set := apiEnv(t, productionValues)["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"]; set {
		t.Error("collector disabled, yet the API exports")
	}

	objects := render(t, collectorValues)
	cm := find(t, objects, "ConfigMap", "-collector")
	for key, file := range map[string]string{"collector.yaml": "../logging/collector.yaml", "exporter.yaml": "../logging/exporter.yaml"} {
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := field(map[string]any(cm), "data", key).(string); strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
			t.Errorf("the ConfigMap's %s is not %s", key, file)
		}
	}
	dep := find(t, objects, "Deployment", "-collector")
	container := field(map[string]any(dep), "spec", "template", "spec", "containers").([]any)[0]
	if field(container, "envFrom", "secretRef", "name") != "occ-log-backend" {
		t.Errorf("collector envFrom %v", field(container, "envFrom"))
	}
	if field(container, "securityContext", "readOnlyRootFilesystem") != true {
		t.Error("collector root filesystem is writable")
	}
	find(t, objects, "Service", "-collector")
	np := find(t, objects, "NetworkPolicy", "-collector")
	from := field(map[string]any(np), "spec", "ingress").([]any)[0].(map[string]any)["from"].([]any)
	var components []string
	for _, f := range from {
		components = append(components, field(f, "podSelector", "matchLabels", "app.kubernetes.io/component").(string))
	}
	if strings.Join(components, ",") != "api,worker" {
		t.Errorf("collector admits %v", components)
	}

	endpoint := "http://occ-occ-collector:4318/v1/logs"
	if got := apiEnv(t, collectorValues)["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"]["value"]; got != endpoint {
		t.Errorf("api endpoint %v", got)
	}
	worker := find(t, objects, "Deployment", "-worker")
	var workerEndpoint any
	for _, e := range field(field(map[string]any(worker), "spec", "template", "spec", "containers"), "env").([]any) {
		if m := e.(map[string]any); m["name"] == "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT" {
			workerEndpoint = m["value"]
		}
	}
	if workerEndpoint != endpoint {
		t.Errorf("worker endpoint %v", workerEndpoint)
	}

	for _, missing := range []string{"image", "exporterSecretName"} {
		values := strings.Replace(collectorValues, "    "+missing+":", "    unused"+missing+":", 1)
		if err := tryRender(values); err == nil || !strings.Contains(err.Error(), "logging.collector."+missing) {
			t.Errorf("without %s: %v", missing, err)
		}
	}
}
