package cli

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/devstack"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/docker"
	"github.com/openclaw/occ/internal/installcfg"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
)

// --reset deletes the local data; before that, what the old Installation's Compute made for its
// Namespaces outside the state directory (Docker networks, Kubernetes namespaces) is torn down
// through the same driver, so nothing is left behind that no Installation owns. What cannot be
// removed is listed with the command that removes it.

// resetCompute tears down the old Installation's Namespaces on its Compute Driver. It never fails
// the reset: a problem is reported and the reset goes on.
func (d *devRun) resetCompute(ctx context.Context, state *devstack.State, bin string, cred *syscall.Credential) {
	pg := &devstack.Postgres{Dir: state.PostgresDir(), Bin: bin, Cred: cred}
	if !pg.Initialized() {
		return
	}
	configPath, ok := oldComputeConfig(state)
	if !ok {
		return
	}
	namespaces, err := d.oldNamespaces(ctx, state, pg)
	if err != nil {
		d.info("reset: cannot read the old Installation's Namespaces (%v); what its Compute made for them stays", err)
		return
	}
	if len(namespaces) == 0 {
		return
	}
	cfg, compute, err := startupConfig(d.env.Lookup, settings.Development, configPath, state.ConfigurationRoot(), state.SecretRoot())
	if err != nil {
		d.info("reset: cannot load the old Compute Driver (%v)", err)
		d.listLeftovers(namespaces, cfg)
		return
	}
	var left []store.Namespace
	for _, ns := range namespaces {
		opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		obs, err := compute.DeleteNamespace(opCtx, driver.Namespace{ID: ns.ID, Name: ns.Name, ExistingNamespace: ns.ExistingNamespace})
		cancel()
		if err != nil || obs.Failure != "" {
			left = append(left, ns)
		}
	}
	if removed := len(namespaces) - len(left); removed > 0 {
		d.info("reset: removed what the %s Compute Driver made for %d Namespaces", compute.Implementation(), removed)
	}
	d.listLeftovers(left, cfg)
}

// oldComputeConfig is the startup YAML of the last run's Compute ("" for the Docker development
// defaults); false when there is nothing outside the state directory to remove (simulated) or it
// is not occ dev's to remove (OCC_CONFIG_PATH).
func oldComputeConfig(state *devstack.State) (string, bool) {
	raw, _ := os.ReadFile(state.ComputeFile())
	_, yamlErr := os.Stat(state.StartupConfigFile())
	switch strings.TrimSpace(string(raw)) {
	case devComputeDocker:
		return "", true
	case devComputeKubernetes:
		return state.StartupConfigFile(), yamlErr == nil
	case "":
		// Written by an occ dev that kept no record: Docker was its default without a startup YAML.
		if yamlErr == nil {
			return state.StartupConfigFile(), true
		}
		return "", true
	}
	return "", false
}

// oldNamespaces starts the old cluster for a moment and reads its live Namespaces.
func (d *devRun) oldNamespaces(ctx context.Context, state *devstack.State, pg *devstack.Postgres) ([]store.Namespace, error) {
	creds, err := devstack.LoadOrCreateCredentials(state.CredentialsFile(), false)
	if err != nil {
		return nil, err
	}
	if err := pg.Prepare(ctx, creds.Superuser); err != nil {
		return nil, err
	}
	if err := pg.Start(ctx, creds.Superuser); err != nil {
		return nil, err
	}
	defer pg.Stop()
	conn, err := pgx.Connect(ctx, pg.URL(devstack.MigratorRole, creds.Migrator, devstack.DatabaseName))
	if err != nil {
		return nil, errors.New("the old database does not answer")
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return store.ListNamespaces(ctx, conn, "", 100000)
}

// listLeftovers prints, for every Namespace whose Compute resources remain, the command that
// removes them: kubectl for a Kubernetes Compute (with its kubeconfig and context), else docker.
func (d *devRun) listLeftovers(left []store.Namespace, cfg *installcfg.Config) {
	if len(left) == 0 {
		return
	}
	d.info("reset: these were not removed; remove them with:")
	kube := ""
	if cfg != nil && cfg.Compute.Implementation == installcfg.ImplementationKubernetes {
		kube = " "
		if auth, ok := cfg.Compute.Configuration["authentication"].(map[string]any); ok {
			if path, ok := auth["kubeconfigPath"].(string); ok {
				kube += "--kubeconfig " + path + " "
			}
			if name, ok := auth["context"].(string); ok {
				kube += "--context " + name + " "
			}
		}
	}
	for _, ns := range left {
		if kube != "" {
			d.info("  kubectl%sdelete namespace -l openclaw.dev/namespace=%s", kube, ns.ID)
		} else {
			d.info("  docker network rm %s", docker.NetworkName(ns.ID))
		}
	}
}
