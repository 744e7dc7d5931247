package helmtest

import (
	"fmt"
	"strings"
	"testing"
)

// The chart's structure, rendered by the Helm SDK (no cluster needed).

func kindCounts(objects []object) map[string]int {
	n := map[string]int{}
	for _, o := range objects {
		n[o.kind()]++
	}
	return n
}

func find(t *testing.T, objects []object, kind, nameSuffix string) object {
	t.Helper()
	for _, o := range objects {
		if o.kind() == kind && strings.HasSuffix(o.name(), nameSuffix) {
			return o
		}
	}
	t.Fatalf("no %s named *%s", kind, nameSuffix)
	return nil
}

// field walks maps and the first element of lists.
func field(v any, path ...string) any {
	for _, p := range path {
		if l, ok := v.([]any); ok && len(l) > 0 {
			v = l[0]
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestChartDefaultStructure(t *testing.T) {
	objects := render(t, requiredValues)
	want := map[string]int{"Deployment": 2, "Service": 3, "ServiceAccount": 2, "Job": 2, "ClusterRole": 6,
		"ClusterRoleBinding": 5, "NetworkPolicy": 2}
	got := kindCounts(objects)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	for _, o := range objects {
		if o.kind() != "Job" {
			continue
		}
		if hooks := field(map[string]any(o), "metadata", "annotations", "helm.sh/hook"); hooks != "pre-install,pre-upgrade" {
			t.Errorf("%s hooks %v", o.name(), hooks)
		}
		if strings.HasSuffix(o.name(), "-bootstrap") && field(map[string]any(o), "spec", "backoffLimit") != float64(0) {
			t.Errorf("bootstrap backoffLimit %v", field(map[string]any(o), "spec", "backoffLimit"))
		}
	}
	worker := find(t, objects, "Deployment", "-worker")
	container := field(map[string]any(worker), "spec", "template", "spec", "containers").([]any)[0]
	if probe := field(container, "livenessProbe", "exec", "command"); fmt.Sprint(probe) != "[/occ probe worker]" {
		t.Errorf("worker liveness probe %v", probe)
	}
	seen := map[string]bool{}
	for _, e := range field(container, "env").([]any) {
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

func TestChartProductionStructure(t *testing.T) {
	objects := render(t, productionValues+"\ncontrolPlane: {nodeSelector: {role: control}, installationChecksum: abc}\n")
	got := kindCounts(objects)
	if got["RoleBinding"] != 6 || got["ClusterRoleBinding"] != 2 {
		t.Errorf("per-namespace tenant bindings only: %v", got)
	}
	api := find(t, objects, "Deployment", "-api")
	if r := field(map[string]any(api), "spec", "replicas"); r != float64(3) {
		t.Errorf("api replicas %v", r)
	}
	policy := find(t, objects, "NetworkPolicy", "-api")
	if ingress, _ := field(map[string]any(policy), "spec", "ingress").([]any); len(ingress) != 1 {
		t.Errorf("api ingress %v", ingress)
	}
	withoutMetrics := kindCounts(render(t, requiredValues+"\nmetrics: {enabled: false}\n"))
	if withoutMetrics["Service"] != 1 {
		t.Errorf("metrics disabled: %d Services, want the API's only", withoutMetrics["Service"])
	}
}

// TestChartRefusesMissingRequiredValues: rendering without the required values fails with the
// chart's own message instead of producing broken objects.
func TestChartRefusesMissingRequiredValues(t *testing.T) {
	for _, tc := range []struct{ name, values, wantErr string }{
		{"nothing", "", "is required"},
		{"no bootstrap claim", requiredValues + "\nbootstrap: {adminEmail: a@example.com, installationName: E, claimName: \"\"}\n", "bootstrap.claimName"},
		{"bootstrap disabled needs no claim", requiredValues + "\nbootstrap: {enabled: false, claimName: \"\"}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tryRender(tc.values)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("render: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("render error %v, want one naming %q", err, tc.wantErr)
			}
		})
	}
}

func tryRender(values string) error {
	_, err := renderFiles(values, releaseNamespace)
	return err
}
