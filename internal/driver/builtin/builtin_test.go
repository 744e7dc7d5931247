package builtin_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/builtin"
	"github.com/openclaw/occ/internal/driver/docker"
	"github.com/openclaw/occ/internal/driver/filesystem"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/testkit/schematest"
)

func TestComputeImplementations(t *testing.T) {
	t.Parallel()
	var names []string
	for _, impl := range builtin.ComputeImplementations() {
		names = append(names, impl.Name)
		if impl.Production != (impl.Name == "kubernetes") {
			t.Errorf("%s: Production = %v", impl.Name, impl.Production)
		}
		if impl.Schema.JSONSchema()["additionalProperties"] != false {
			t.Errorf("%s has an open schema", impl.Name)
		}
	}
	if !reflect.DeepEqual(names, []string{"docker", "kubernetes", "simulated"}) {
		t.Fatalf("implementations = %v", names)
	}
}

func TestNewCompute(t *testing.T) {
	t.Parallel()
	for _, impl := range []string{"docker", "simulated"} {
		c, err := builtin.NewCompute(impl, "compute-"+impl, map[string]any{}, driver.Environment{})
		if err != nil || c.ID() != "compute-"+impl || c.Implementation() != impl {
			t.Fatalf("NewCompute(%s) = %v, %v", impl, c, err)
		}
		if _, err := builtin.NewCompute(impl, "x", map[string]any{}, driver.Environment{Production: true}); driver.Code(err) != driver.CodeDriverUnavailableInProduction {
			t.Fatalf("NewCompute(%s) in production = %v", impl, err)
		}
		var ce *driver.ConfigurationError
		if _, err := builtin.NewCompute(impl, "x", map[string]any{"unknown": true}, driver.Environment{}); !errors.As(err, &ce) ||
			ce.Details[0].Path != "/unknown" || ce.Details[0].Code != problem.DetailUnknownField {
			t.Fatalf("NewCompute(%s) with an unknown option = %v", impl, err)
		}
	}
	if _, err := builtin.NewCompute("kubernetes-v2", "x", map[string]any{}, driver.Environment{}); driver.Code(err) != driver.CodeDriverImplementationUnknown {
		t.Fatalf("NewCompute(kubernetes-v2) = %v", err)
	}
	// kubernetes is selectable in production; its schema refuses an empty configuration.
	var ce *driver.ConfigurationError
	if _, err := builtin.NewCompute("kubernetes", "compute-kubernetes", map[string]any{}, driver.Environment{Production: true}); !errors.As(err, &ce) ||
		ce.Details[0].Path != "/authentication" || ce.Details[0].Code != problem.DetailRequired {
		t.Fatalf("NewCompute(kubernetes) with {} = %v", err)
	}
	c, err := builtin.DevelopmentCompute(driver.Environment{})
	if err != nil || c.ID() != "compute-docker-development" || c.Implementation() != "docker" {
		t.Fatalf("DevelopmentCompute = %v, %v", c, err)
	}
}

// TestSchemasAgreeWithTheReferenceValidator checks the compiled-in Compute and storage schemas
// against an independent JSON Schema validator (the Kubernetes schemas are checked in their own
// package, beside their valid example).
func TestSchemasAgreeWithTheReferenceValidator(t *testing.T) {
	t.Parallel()
	schematest.Agree(t, "docker", docker.Schema(), map[string]any{},
		map[string]any{"socket": "/var/run/docker.sock", "requestTimeoutMs": 5000})
	schematest.Agree(t, "simulated", simulated.Schema(), map[string]any{},
		map[string]any{"namespaceReadyAfterMs": 10, "namespaceDeletedAfterMs": 10, "revisionReadyAfterMs": 10,
			"maintenanceIntervalMs": 100, "callDelayMs": 0, "stoppedPredecessors": simulated.StoppedPredecessorsDedicated,
			"activationOrder": driver.ActivationBeforeCommit})
	schematest.Agree(t, "filesystem-configuration", filesystem.ConfigurationSchema(), map[string]any{"root": "/var/lib/occ/configurations"})
	schematest.Agree(t, "filesystem-secret", filesystem.SecretSchema(), map[string]any{"root": "/var/lib/occ/secrets"})
}
