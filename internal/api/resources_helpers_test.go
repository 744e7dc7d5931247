package api_test

import (
	"path/filepath"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/builtin"
	"github.com/openclaw/occ/internal/driver/filesystem"
	"github.com/openclaw/occ/internal/driver/simulated"
)

// testDrivers selects the simulated Compute Driver (it supports every Harness authentication
// method) and the filesystem Configuration and Secret Drivers under root.
func testDrivers(t *testing.T, root string) (driver.Compute, driver.Configuration, driver.Secret) {
	t.Helper()
	compute, err := builtin.NewCompute(simulated.Name, "compute-simulated", map[string]any{}, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := filesystem.NewConfigurations("configuration-filesystem", map[string]any{"root": filepath.Join(root, "configurations")})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := filesystem.NewSecrets("secret-filesystem", map[string]any{"root": filepath.Join(root, "secrets")}, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	return compute, cfgs, secrets
}
