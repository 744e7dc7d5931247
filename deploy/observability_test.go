package deploy

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/metrics"
	"github.com/openclaw/occ/internal/store"
)

// metricFamilies gathers the families the API's and the worker's registries serve, by name.
func metricFamilies(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	api := metrics.NewRegistry(metrics.ServiceAPI)
	// Vectors without a label set are not gathered: one request makes the HTTP families appear
	// (health routes are not counted).
	metrics.NewAPIMetrics(api).ObserveRequest("/installation", "GET", 200, time.Millisecond)
	worker := metrics.NewRegistry(metrics.ServiceWorker)
	// The gauges are read per scrape; one snapshot with every lifecycle state makes them all appear.
	agents := map[string]int64{}
	for _, s := range store.AgentLifecycleStates() {
		agents[s] = 0
	}
	metrics.NewWorkerMetrics(worker, func(context.Context) (store.Backlog, error) {
		return store.Backlog{Agents: agents}, nil
	})
	families := map[string]dto.MetricType{}
	for _, g := range []prometheus.Gatherer{api, worker} {
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			families[mf.GetName()] = mf.GetType()
		}
	}
	return families
}

var metricName = regexp.MustCompile(`\bocc_[a-z0-9_]+`)

// exists reports whether name is a family, or a histogram's or summary's _bucket, _sum or _count
// series.
func exists(families map[string]dto.MetricType, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, found := strings.CutSuffix(name, suffix)
		if typ, ok := families[base]; found && ok && (typ == dto.MetricType_HISTOGRAM || typ == dto.MetricType_SUMMARY ||
			(suffix != "_bucket" && typ == dto.MetricType_GAUGE_HISTOGRAM)) {
			return true
		}
	}
	return false
}

// The Grafana dashboard and the Prometheus rules name only metrics OCC serves, and every
// application family appears in both.
func TestDashboardAndAlertsNameRealMetrics(t *testing.T) {
	t.Parallel()
	families := metricFamilies(t)

	var dashboard struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err := os.ReadFile("grafana/occ-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("occ-dashboard.json: %v", err)
	}
	var dashboardExprs []string
	for _, p := range dashboard.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			dashboardExprs = append(dashboardExprs, target.Expr)
		}
	}

	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	data, err = os.ReadFile("prometheus/occ-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &rules); err != nil {
		t.Fatalf("occ-alerts.yaml: %v", err)
	}
	var ruleExprs []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v: needs alert, expr, a severity label and a summary", r)
			}
			ruleExprs = append(ruleExprs, r.Expr)
		}
	}

	for file, exprs := range map[string][]string{"dashboard": dashboardExprs, "alerts": ruleExprs} {
		named := map[string]bool{}
		for _, e := range exprs {
			for _, name := range metricName.FindAllString(e, -1) {
				if !exists(families, name) {
					t.Errorf("%s names %s, which OCC does not serve", file, name)
				}
				named[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] = true
			}
		}
		for _, app := range []string{"occ_http_requests_total", "occ_http_request_duration_seconds", "occ_reconciliation_attempts_total",
			"occ_agent_operation_duration_seconds", "occ_work_oldest_pending_age_seconds", "occ_agents"} {
			if !named[app] {
				t.Errorf("%s does not use %s", file, app)
			}
		}
		if file == "dashboard" {
			for name := range families {
				if !named[name] && !strings.HasPrefix(name, "occ_go_") && !strings.HasPrefix(name, "occ_process_") {
					t.Errorf("the dashboard shows no panel for %s", name)
				}
			}
		}
	}
	if !slices.ContainsFunc(ruleExprs, func(e string) bool { return strings.Contains(e, "absent(") }) {
		t.Error("no rule fires when the metrics disappear")
	}
}
