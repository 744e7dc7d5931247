package cli

import (
	"context"
	"errors"
	"math"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/console"
	"github.com/openclaw/occ/internal/installcfg"
	"github.com/openclaw/occ/internal/metrics"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
)

const (
	apiService      = "occ-api"
	apiStartupError = "startup-error"
)

// API startup failure codes besides the settings and startup-YAML codes.
const (
	codePersistenceUnavailable = "PERSISTENCE_UNAVAILABLE"
	codeStartupFailed          = "STARTUP_FAILED"
)

func newAPICommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "api",
		Short: "Serve the HTTP API (OCC_HOST, OCC_PORT)",
		Long: `Serves the OCC HTTP API on OCC_HOST:OCC_PORT for the bootstrapped Installation in
OCC_DATABASE_URL, with the drivers of the startup YAML (OCC_CONFIG_PATH; development defaults
without it) and, when OCC_METRICS_ENABLED=true, a private metrics listener. Writes JSON lines to
stdout; a startup failure is one startup-error line on stderr and exit status 1. SIGTERM or SIGINT
stops accepting, drains in-flight requests and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAPI(cmd.Context(), env)
		},
	}
}

func runAPI(ctx context.Context, env Env) error {
	fail := func(code, message string) error {
		obs.WriteStartupFailure(env.Stderr, apiService, apiStartupError, &problem.Error{Code: code, Message: message})
		return exitError{Code: 1}
	}
	cfg, err := settings.LoadAPI(env.Lookup)
	if err != nil {
		return reportStartupFailure(env, apiService, apiStartupError, err, codeStartupFailed, "The API settings are invalid.")
	}
	// The same loader as the worker, so both processes accept and refuse the same documents. The
	// API uses the IAM selection, the log level, the Compute Driver (deploy admission asks it about
	// Harness authentication and pins its identity) and the Configuration and Secret Drivers.
	startup, compute, err := startupConfig(env.Lookup, cfg.Mode, cfg.ConfigPath, cfg.DevelopmentConfigurationRoot, cfg.DevelopmentSecretRoot)
	if err != nil {
		return startupConfigFailure(env, apiService, apiStartupError, err)
	}
	configurations, secrets, err := storageDrivers(startup, cfg.Mode, env.Lookup)
	if err != nil {
		return startupConfigFailure(env, apiService, apiStartupError, err)
	}
	logOut, stopExport, err := logOutput(env, cfg.LogExport, apiService)
	if err != nil {
		return fail(codeStartupFailed, "The log export could not be started.")
	}
	defer stopExport()
	log := obs.NewLogger(logOut, apiService, startup.LogLevel)
	// Kubernetes is checked by both processes, as upstream does (the API answers for the cluster's
	// Secrets and Configurations too); the development Docker Engine is the worker's concern only.
	if startup.Compute.Implementation == installcfg.ImplementationKubernetes {
		if err := computePreflight(ctx, env, apiService, apiStartupError, codeStartupFailed, compute, log); err != nil {
			return err
		}
	}

	poolCfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return fail(settings.CodeDatabaseConfigurationInvalid, settings.DatabaseURLMessage)
	}
	poolCfg.MaxConns = int32(min(cfg.DatabasePoolMax, math.MaxInt32))
	poolCfg.ConnConfig.ConnectTimeout = connectTimeout
	store.RefreshPlans(poolCfg, store.PlanRefreshInterval) // both pools: the read pool copies it
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fail(settings.CodeDatabaseConfigurationInvalid, settings.DatabaseURLMessage)
	}
	defer pool.Close()
	// Read-only routes run outside transactions on sessions that start read-only (decision 45).
	readPool, err := pgxpool.NewWithConfig(ctx, api.ReadPoolConfig(poolCfg))
	if err != nil {
		return fail(settings.CodeDatabaseConfigurationInvalid, settings.DatabaseURLMessage)
	}
	defer readPool.Close()
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	err = pool.Ping(pingCtx)
	cancel()
	if err != nil {
		return fail(codePersistenceUnavailable, "PostgreSQL is unavailable at OCC_DATABASE_URL.")
	}

	apiCfg := api.Config{
		Pool:                     pool,
		ReadPool:                 readPool,
		Mode:                     cfg.Mode,
		AuthSecret:               cfg.AuthSecret,
		AuthBaseURL:              cfg.AuthBaseURL,
		IAMDriverID:              startup.IAM.ID,
		AdoptsExistingNamespaces: startup.Compute.Implementation == installcfg.ImplementationKubernetes,
		TrustedBridge:            cfg.DevelopmentTrustedBridgeCIDR,
		Logger:                   log,
		Compute:                  compute,
		Configurations:           configurations,
		Secrets:                  secrets,
		Version:                  env.Version,
		SignIn:                   signInConfig(cfg),
		Presets:                  startup.Presets,
		ObservabilityURL:         startup.ObservabilityURL,
	}
	if cfg.Metrics.Enabled {
		m, err := metrics.StartAPI(ctx, cfg.Metrics.ListenAddress(), log)
		if err != nil {
			return fail(codeStartupFailed, "The metrics listener could not be started on OCC_METRICS_HOST:OCC_METRICS_PORT.")
		}
		defer m.Close()
		apiCfg.Metrics = m
	}
	if apiCfg.Console, err = console.New(console.Options{Version: env.Version}); err != nil {
		return fail(codeStartupFailed, "The web console could not be prepared.")
	}
	server, err := api.New(ctx, apiCfg)
	if err != nil {
		switch {
		case errors.Is(err, api.ErrNotBootstrapped):
			return fail(codeStartupFailed, "The Installation is not bootstrapped. Run occ bootstrap first.")
		case errors.Is(err, api.ErrPresetSeedingRefused):
			return fail(codeStartupFailed, "The default Presets cannot be seeded: an Installation administrator needs preset:create in every ready or provisioning Namespace.")
		case errors.Is(err, api.ErrRecoveryAccountInvalid):
			return fail(codeStartupFailed, "OCC_AUTH_GITHUB_RECOVERY_USER_ID must name a local-password Installation administrator.")
		case store.ServerRefused(err):
			return fail(codeStartupFailed, "PostgreSQL refused the startup checks. Is the schema migrated?")
		default:
			return fail(codePersistenceUnavailable, "PostgreSQL is unavailable at OCC_DATABASE_URL.")
		}
	}
	ln, err := net.Listen("tcp", cfg.ListenAddress())
	if err != nil {
		return fail(codeStartupFailed, "The API listener could not be bound on OCC_HOST:OCC_PORT.")
	}
	log.Info("listening", "host", cfg.Host, "port", cfg.Port)
	if err := server.Serve(ctx, ln); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return exitError{Code: 1}
	}
	return nil
}
