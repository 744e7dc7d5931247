package cli

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/metrics"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/worker"
)

const (
	workerService      = "occ-worker"
	workerStartupError = "worker.startup-error"
	codeWorkerStartup  = "WORKER_STARTUP_FAILED"
)

func newWorkerCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run the controller worker (claims durable work and reconciles it through the Compute Driver)",
		Long: `Runs the controller worker. It needs NODE_ENV and the application-role OCC_DATABASE_URL, a bootstrapped
Installation, and in production OCC_CONFIG_PATH (the trusted startup YAML). Without OCC_CONFIG_PATH,
development selects the Docker Compute Driver. SIGTERM or SIGINT interrupts the passes in flight
(their claims are recovered by lease expiry) and exits 0. See docs/worker.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(cmd.Context(), env)
		},
	}
}

func runWorker(ctx context.Context, env Env) error {
	fail := func(code, message string, attrs ...any) error {
		obs.WriteStartupFailure(env.Stderr, workerService, workerStartupError, &problem.Error{Code: code, Message: message})
		return exitError{Code: 1}
	}
	cfg, err := settings.LoadWorker(env.Lookup)
	if err != nil {
		return reportStartupFailure(env, workerService, workerStartupError, err, "", "")
	}
	if err := worker.PrepareMarkers(cfg.ReadinessPath, cfg.LivenessPath); err != nil {
		return fail(codeWorkerStartup, "The worker cannot write its marker files.")
	}
	icfg, compute, err := startupConfig(env.Lookup, cfg.Mode, cfg.ConfigPath, cfg.DevelopmentConfigurationRoot, cfg.DevelopmentSecretRoot)
	if err != nil {
		return startupConfigFailure(env, workerService, workerStartupError, err)
	}
	configurations, _, err := storageDrivers(icfg, cfg.Mode, env.Lookup)
	if err != nil {
		return startupConfigFailure(env, workerService, workerStartupError, err)
	}
	logOut, stopExport, err := logOutput(env, cfg.LogExport, workerService)
	if err != nil {
		return fail(codeWorkerStartup, "The log export could not be started.")
	}
	defer stopExport()
	log := obs.NewLogger(logOut, workerService, icfg.LogLevel)

	pool, err := openWorkerPool(ctx, cfg)
	if err != nil {
		return fail(store.CodePersistenceUnavailable, "PostgreSQL is unavailable at OCC_DATABASE_URL.")
	}
	defer pool.Close()
	installationID, failure := checkWorkerDatabase(ctx, pool, cfg.DatabaseTimeout)
	if failure != nil {
		return fail(failure.code, failure.message)
	}

	if err := computePreflight(ctx, env, workerService, workerStartupError, codeWorkerStartup, compute, log); err != nil {
		return err
	}

	var recorder worker.Recorder
	if cfg.Metrics.Enabled {
		m, err := metrics.StartWorker(ctx, cfg.Metrics.ListenAddress(), cfg.DatabaseURL, log)
		if err != nil {
			return fail(codeWorkerStartup, "The metrics listener cannot start.")
		}
		defer m.Close()
		recorder = m
	}

	q := queue.New(pool, queue.Options{MaxAttempts: cfg.MaxAttempts, LeaseDuration: cfg.LeaseDuration})
	w, err := worker.New(worker.Config{
		Pool: pool, Queue: q, Compute: compute, Configurations: configurations, IAMDriverID: icfg.IAM.ID, SecretDriverID: icfg.Secret.ID,
		InstallationID: installationID,
		Concurrency:    cfg.Concurrency, PollInterval: cfg.PollInterval, ConvergenceTimeout: cfg.ConvergenceTimeout,
		DatabaseTimeout: cfg.DatabaseTimeout, Logger: log, Metrics: recorder,
		ReadinessPath: cfg.ReadinessPath, LivenessPath: cfg.LivenessPath,
		EventLogPath:  cfg.EventLogPath, // OCC_WORKER_EVENT_LOG: verification aid
		Notifications: worker.Listen(ctx, pool, log),
	})
	if err != nil {
		return fail(codeWorkerStartup, "The worker configuration is invalid.")
	}
	return w.Run(ctx)
}

// openWorkerPool sizes the pool for the passes, the renewer, the loop and the LISTEN connection,
// and bounds connecting by OCC_WORKER_DATABASE_TIMEOUT_MS.
func openWorkerPool(ctx context.Context, cfg settings.Worker) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = int32(cfg.Concurrency + 4)
	pc.ConnConfig.ConnectTimeout = cfg.DatabaseTimeout
	pc.ConnConfig.RuntimeParams["application_name"] = "occ-worker"
	store.RefreshPlans(pc, store.PlanRefreshInterval)
	pctx, cancel := context.WithTimeout(ctx, cfg.DatabaseTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(pctx, pc)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

type startupFailure struct{ code, message string }

// checkWorkerDatabase enforces the startup contract: never a superuser, a bootstrapped
// Installation, and a non-empty persisted IAM policy.
func checkWorkerDatabase(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) (string, *startupFailure) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unavailable := &startupFailure{store.CodePersistenceUnavailable, "PostgreSQL is unavailable at OCC_DATABASE_URL."}
	super, err := store.IsSuperuser(ctx, pool)
	if err != nil {
		return "", unavailable
	}
	if super {
		return "", &startupFailure{codeWorkerStartup, "The worker refuses a superuser database connection. Use the application role."}
	}
	inst, err := store.GetInstallation(ctx, pool)
	if errors.Is(err, store.ErrNotFound) {
		return "", &startupFailure{codeWorkerStartup, "The Installation must be bootstrapped before the worker starts."}
	}
	if err != nil {
		return "", unavailable
	}
	ok, err := store.IAMPolicyNonEmpty(ctx, pool)
	if err != nil {
		return "", unavailable
	}
	if !ok {
		return "", &startupFailure{codeWorkerStartup, "The persisted IAM policy is empty or invalid."}
	}
	return inst.ID, nil
}
