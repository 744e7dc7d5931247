// Package builtin assembles the Compute implementations compiled into occ. It exists apart from
// package driver because driver cannot import its own implementations (they import driver), and we
// register nothing through init() side effects.
package builtin

import (
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/docker"
	"github.com/openclaw/occ/internal/driver/kubernetes"
	"github.com/openclaw/occ/internal/driver/simulated"
)

// ComputeRegistry returns a registry of every compiled-in Compute implementation: docker and
// simulated (development only) and kubernetes (production).
func ComputeRegistry() *driver.ComputeRegistry {
	r, err := driver.NewComputeRegistry(docker.Implementation(), kubernetes.ComputeImplementation(), simulated.Implementation())
	if err != nil {
		panic(err) // a programming error in the static list above; covered by tests
	}
	return r
}

// ComputeImplementations lists the compiled-in Compute implementations sorted by name.
func ComputeImplementations() []driver.ComputeImplementation {
	return ComputeRegistry().Implementations()
}

// NewCompute builds the Compute Driver selected as id with implementation impl; see
// driver.ComputeRegistry.NewCompute for the checks and the typed errors.
func NewCompute(impl, id string, configuration map[string]any, env driver.Environment) (driver.Compute, error) {
	return ComputeRegistry().NewCompute(impl, id, configuration, env)
}

// DevelopmentCompute is the selection development uses when no startup YAML is configured:
// implementation docker under id compute-docker-development, with an empty configuration.
func DevelopmentCompute(env driver.Environment) (driver.Compute, error) {
	return NewCompute(docker.Name, docker.DefaultID, map[string]any{}, env)
}
