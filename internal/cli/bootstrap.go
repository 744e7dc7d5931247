package cli

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/bootstrap"
	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
)

const bootstrapService = "occ-bootstrap"

func newBootstrapCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "bootstrap",
		Short: "Create the Installation, the first administrator and the default Namespace (once)",
		Long: `Creates, in one transaction, the singleton Installation, the first administrator, the bootstrap
service principal with its service key, the seeded administrator Role and its two bindings, and the
default Namespace with its provisioning work. The key (and in production the generated password)
is written to new files with mode 0600; existing files are never overwritten. Run it after
occ migrate and before the API and worker. A re-run verifies the Installation and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBootstrap(cmd.Context(), env)
		},
	}
}

func runBootstrap(ctx context.Context, env Env) error {
	const failedEvent = "installation.bootstrap-failed"
	cfg, err := settings.LoadBootstrap(env.Lookup)
	if err != nil {
		return reportStartupFailure(env, bootstrapService, failedEvent, err, "", "")
	}
	log := obs.NewLogger(env.Stdout, bootstrapService, slog.LevelInfo)

	connectCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	conn, err := pgx.Connect(connectCtx, cfg.DatabaseURL)
	cancel()
	if err != nil {
		obs.WriteStartupFailure(env.Stderr, bootstrapService, failedEvent, &problem.Error{Code: bootstrap.CodePersistenceUnavailable,
			Message: "PostgreSQL is unavailable at OCC_DATABASE_URL."})
		return exitError{Code: 1}
	}
	defer conn.Close(context.WithoutCancel(ctx))

	result, err := bootstrap.Run(ctx, conn, cfg)
	if err != nil {
		code, message, attempt := bootstrap.CodeBootstrapFailed, "Bootstrap failed.", bootstrap.Attempt{}
		var be *bootstrap.Error
		if errors.As(err, &be) {
			code, message, attempt = be.Code, be.Message, be.Attempt
		}
		// The failure line carries the attempt's identifiers so an operator can repair by hand.
		errLog := obs.NewLogger(env.Stderr, bootstrapService, slog.LevelInfo)
		errLog.Error(failedEvent, "code", code, "message", message, "attempt", attemptFields(attempt))
		return exitError{Code: 1}
	}
	if result.AlreadyBootstrapped {
		log.Info("installation.already-bootstrapped", "attempt", attemptFields(result.Attempt))
		return nil
	}
	log.Info("installation.bootstrapped", "attempt", attemptFields(result.Attempt),
		"namespaceId", result.Attempt.DefaultNamespaceID)
	return nil
}

func attemptFields(a bootstrap.Attempt) obs.BootstrapAttempt {
	out := obs.BootstrapAttempt{
		AuthAccountID:      a.AccountID,
		InstallationID:     a.InstallationID,
		PasswordFile:       a.PasswordFile,
		PrincipalID:        a.PrincipalID,
		ServiceKeyFile:     a.ServiceKeyFile,
		ServiceKeyID:       a.ServiceKeyID,
		ServicePrincipalID: a.ServicePrincipalID,
	}
	if !a.ServiceKeyExpiresAt.IsZero() {
		out.ServiceKeyExpiresAt = a.ServiceKeyExpiresAt.Format(platform.TimeLayout)
	}
	return out
}
