// Package cli builds the `occ` command tree: server-side commands (migrate, bootstrap, and later
// api, worker, dev) and the client commands. Commands read the environment only through Env, so
// tests run them in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/settings"
)

// Env is everything a command may read from or write to the process.
type Env struct {
	Lookup  settings.Lookup
	Stdout  io.Writer
	Stderr  io.Writer
	Version string
}

// exitError ends the process with Code after the command has already reported why.
type exitError struct{ Code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// NewRoot returns the `occ` command.
func NewRoot(env Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "occ",
		Short:         "OCC, the OpenClaw control plane: API, controller worker, operations and client commands",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       env.Version,
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.AddCommand(newVersionCommand(env), newMigrateCommand(env), newBootstrapCommand(env), newWorkerCommand(env))
	root.AddCommand(newAPICommand(env))
	root.AddCommand(newDevCommand(env))
	root.AddCommand(newInstallationCommand(env))
	root.AddCommand(newNamespaceCommand(env))
	root.AddCommand(newIAMCommand(env))
	root.AddCommand(newServiceKeyCommand(env))
	root.AddCommand(newConfigurationCommand(env))
	root.AddCommand(newSecretCommand(env))
	root.AddCommand(newServiceAccountCommand(env))
	root.AddCommand(newAgentCommand(env))
	root.AddCommand(newProbeCommand(env))
	root.AddCommand(newLoginCommand(env), newLogoutCommand(env), newAuthCommand(env))
	return root
}

// Execute runs the command line and returns the process exit code.
func Execute(ctx context.Context, env Env, args []string) int {
	root := NewRoot(env)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	default:
		// Usage errors (unknown command or flag): cobra's own message.
		fmt.Fprintln(env.Stderr, "Error:", err)
		return 2
	}
}

func newVersionCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(env.Stdout, env.Version)
			return nil
		},
	}
}

// reportStartupFailure writes the single failure line of a process that cannot start and returns
// the error that exits 1. Settings errors keep their code, message and details.
func reportStartupFailure(env Env, service, event string, err error, fallbackCode, fallbackMessage string) error {
	var se *settings.Error
	if errors.As(err, &se) {
		details := make([]obs.Detail, len(se.Details))
		for i, d := range se.Details {
			details[i] = obs.Detail{Path: d.Path, Code: d.Code}
		}
		obs.WriteStartupFailure(env.Stderr, service, event, se.Code, se.Message, details)
	} else {
		obs.WriteStartupFailure(env.Stderr, service, event, fallbackCode, fallbackMessage, nil)
	}
	return exitError{Code: 1}
}
