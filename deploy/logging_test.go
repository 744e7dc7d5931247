package deploy

import (
	"bytes"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// The chart ships copies of the Collector policy and exporter (Helm reads files inside the chart
// only); they must not drift from deploy/logging/.
func TestChartCollectorFilesMatchThePolicy(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"collector.yaml", "exporter.yaml"} {
		policy, err := os.ReadFile("logging/" + name)
		if err != nil {
			t.Fatal(err)
		}
		chart, err := os.ReadFile("helm/occ/files/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(policy, chart) {
			t.Errorf("helm/occ/files/%s differs from logging/%s: copy it", name, name)
		}
	}
}

// The Compose overlay runs the collector with the shipped files and points both processes at it.
func TestComposeOverlayExportsLogs(t *testing.T) {
	t.Parallel()
	var doc struct {
		Services map[string]struct {
			Volumes     []string          `json:"volumes"`
			Environment map[string]string `json:"environment"`
		} `json:"services"`
	}
	data, err := os.ReadFile("compose/compose.otel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Services["collector"]
	if len(c.Volumes) != 2 || c.Volumes[0] != "../logging/collector.yaml:/etc/otelcol/collector.yaml:ro" {
		t.Errorf("collector volumes %v", c.Volumes)
	}
	for _, s := range []string{"api", "worker"} {
		if got := doc.Services[s].Environment["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"]; got != "http://collector:4318/v1/logs" {
			t.Errorf("%s exports to %q", s, got)
		}
	}
}
