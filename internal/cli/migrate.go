package cli

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
)

const (
	migrateService = "occ-migrate"
	connectTimeout = 30 * time.Second
)

func newMigrateCommand(env Env) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the embedded database migrations (OCC_MIGRATION_DATABASE_URL)",
		Long: `Applies the embedded, versioned SQL migrations to schema occ under an advisory lock, then
grants the application role (OCC_DATABASE_APP_ROLE, default occ_app) its privileges. The role must
exist. Re-running is a no-op. With --check nothing is changed: the command reports whether the
database is up to date and exits 1 when migrations are pending or the history is unknown.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMigrate(cmd.Context(), env, check)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "report pending or unknown migrations without changing anything")
	return cmd
}

func runMigrate(ctx context.Context, env Env, check bool) error {
	fail := func(code, message string) error {
		obs.WriteStartupFailure(env.Stderr, migrateService, "migration.failed", &problem.Error{Code: code, Message: message})
		return exitError{Code: 1}
	}
	cfg, err := settings.LoadMigration(env.Lookup)
	if err != nil {
		return reportStartupFailure(env, migrateService, "migration.failed", err, "", "")
	}
	log := obs.NewLogger(env.Stdout, migrateService, slog.LevelInfo)
	started := time.Now()

	connectCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	conn, err := pgx.Connect(connectCtx, cfg.DatabaseURL)
	cancel()
	if err != nil {
		return fail(store.CodePersistenceUnavailable, "PostgreSQL is unavailable at OCC_MIGRATION_DATABASE_URL.")
	}
	defer conn.Close(context.WithoutCancel(ctx))

	if check {
		status, err := store.CheckMigrations(ctx, conn)
		if err != nil {
			return failMigration(fail, err)
		}
		state := "up_to_date"
		switch {
		case !status.Supported():
			state = "unsupported"
		case len(status.Pending) > 0:
			state = "pending"
		}
		log.Info("migration.checked", "status", state, "pending", len(status.Pending))
		if !status.UpToDate() {
			return exitError{Code: 1}
		}
		return nil
	}

	result, err := store.Migrate(ctx, conn, cfg.AppRole, func(m store.Migration) {
		log.Info("migration.applied", "step", m.Name)
	})
	if err != nil {
		return failMigration(fail, err)
	}
	outcome := "unchanged"
	if len(result.Applied) > 0 {
		outcome = "applied"
	}
	log.Info("migration.completed", "result", outcome, "pending", len(result.Status.Pending),
		"durationMs", float64(time.Since(started).Microseconds())/1000)
	return nil
}

func failMigration(fail func(code, message string) error, err error) error {
	var me *store.MigrationError
	if errors.As(err, &me) {
		return fail(me.Code, me.Message)
	}
	return fail(store.CodeMigrationFailed, "The migration failed.")
}
