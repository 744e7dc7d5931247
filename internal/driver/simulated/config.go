package simulated

import (
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/schema"
)

// Name is the implementation name of this driver.
const Name = "simulated"

// Values of Config.StoppedPredecessors (configuration key stoppedPredecessors).
const (
	StoppedPredecessorsNever     = "never"
	StoppedPredecessorsDedicated = "dedicated"
	StoppedPredecessorsAlways    = "always"
)

// maxDelayMs bounds every millisecond setting (one day).
const maxDelayMs = 86_400_000

// Config is the typed configuration of the simulated driver.
type Config struct {
	// NamespaceReadyAfter is how long after the first EnsureNamespace a Namespace becomes ready.
	NamespaceReadyAfter time.Duration
	// NamespaceDeletedAfter is how long after the first DeleteNamespace a Namespace is gone.
	NamespaceDeletedAfter time.Duration
	// RevisionReadyAfter is how long after the first PrepareRevision a revision becomes ready.
	RevisionReadyAfter time.Duration
	// StoppedPredecessors selects RequiresStoppedPredecessors: StoppedPredecessorsNever (default),
	// StoppedPredecessorsDedicated (like Kubernetes) or StoppedPredecessorsAlways.
	StoppedPredecessors string
	// ActivationOrder is driver.ActivationAfterCommit (default) or driver.ActivationBeforeCommit.
	ActivationOrder string
	// MaintenanceInterval is reported by MaintenanceInterval; zero means no maintenance.
	MaintenanceInterval time.Duration
	// CallDelay is the real time every Namespace, revision and Agent call takes (cancellation
	// honoured): slow infrastructure for demos, load tests and process-level fault tests.
	CallDelay time.Duration
}

// Schema is the closed configuration schema of the simulated driver.
func Schema() driver.ObjectSchema {
	ms := func(name, description string) schema.Property {
		return schema.Optional(name, schema.Defaulted(schema.SafeInteger(0, maxDelayMs), 0, description))
	}
	enum := func(def, description string, values ...string) *schema.Schema {
		return schema.Defaulted(schema.Enum(values...), def, description)
	}
	return driver.NewObjectSchema(&schema.Schema{
		Type:        schema.TypeObject,
		Description: "In-memory Compute Driver for tests, demos and load tests; refused in production.",
		Properties: []schema.Property{
			ms("namespaceReadyAfterMs", "Milliseconds after the first ensure until a Namespace is ready."),
			ms("namespaceDeletedAfterMs", "Milliseconds after the first delete until a Namespace is deleted."),
			ms("revisionReadyAfterMs", "Milliseconds after the first prepare until a revision is ready."),
			ms("maintenanceIntervalMs", "Maintenance interval reported to the worker; 0 disables maintenance."),
			ms("callDelayMs", "Real milliseconds every Namespace, revision and Agent call takes; cancellation is honoured."),
			schema.Optional("stoppedPredecessors", enum(StoppedPredecessorsNever,
				"Which revisions require stopped predecessors (exclusive replacement).",
				StoppedPredecessorsNever, StoppedPredecessorsDedicated, StoppedPredecessorsAlways)),
			schema.Optional("activationOrder", enum(driver.ActivationAfterCommit,
				"When the worker activates a ready revision relative to publishing it.",
				driver.ActivationAfterCommit, driver.ActivationBeforeCommit)),
		},
	})
}

// ParseConfig validates configuration against Schema and returns the typed Config.
func ParseConfig(configuration map[string]any) (Config, error) {
	if err := Schema().Validate(configuration); err != nil {
		return Config{}, err
	}
	ms := func(key string) time.Duration {
		n, _ := schema.IntegerValue(configuration[key])
		return time.Duration(n) * time.Millisecond
	}
	str := func(key, def string) string {
		if s, ok := configuration[key].(string); ok {
			return s
		}
		return def
	}
	return Config{
		NamespaceReadyAfter:   ms("namespaceReadyAfterMs"),
		NamespaceDeletedAfter: ms("namespaceDeletedAfterMs"),
		RevisionReadyAfter:    ms("revisionReadyAfterMs"),
		MaintenanceInterval:   ms("maintenanceIntervalMs"),
		CallDelay:             ms("callDelayMs"),
		StoppedPredecessors:   str("stoppedPredecessors", StoppedPredecessorsNever),
		ActivationOrder:       str("activationOrder", driver.ActivationAfterCommit),
	}, nil
}

// Factory is the driver.ComputeFactory of the simulated driver. It refuses production.
func Factory(id string, configuration map[string]any, env driver.Environment) (driver.Compute, error) {
	if env.Production {
		return nil, &driver.ImplementationUnavailableError{Implementation: Name, Code: driver.CodeDriverUnavailableInProduction}
	}
	cfg, err := ParseConfig(configuration)
	if err != nil {
		return nil, err
	}
	return New(id, cfg, Options{}), nil
}

// Implementation describes the simulated driver for a driver.ComputeRegistry.
func Implementation() driver.ComputeImplementation {
	return driver.ComputeImplementation{Name: Name, Schema: Schema(), Production: false, New: Factory}
}
