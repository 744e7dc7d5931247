// Package cli builds the `occ` command tree: server-side commands (migrate, bootstrap, and later
// api, worker, dev) and the client commands. Commands read the environment only through Env, so
// tests run them in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
)

// Env is everything a command may read from or write to the process.
type Env struct {
	Lookup settings.Lookup
	// Stdin is standard input (-f -, --from-stdin, confirmations); nil reads as empty.
	Stdin   io.Reader
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
	root.AddCommand(newPresetCommand(env))
	root.AddCommand(newServiceAccountCommand(env))
	root.AddCommand(newAgentCommand(env))
	root.AddCommand(newAuditCommand(env), newAccountCommand(env), newWhoamiCommand(env), newConfigCommand(env))
	root.AddCommand(newProbeCommand(env))
	root.AddCommand(newLoginCommand(env), newLogoutCommand(env), newAuthCommand(env))
	root.InitDefaultCompletionCmd()
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command group refuse an unknown subcommand the way the top
// level does (exit status 2, with suggestions) instead of printing its help and exiting 0: a typo
// in a script must not pass silently. A group without arguments still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
		if !c.HasSubCommands() || c.Runnable() {
			continue
		}
		c.Args = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2
			}
			if suggestions := c.SuggestionsFor(args[0]); len(suggestions) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(suggestions, "\n\t")
			}
			return errors.New(msg + "\n\nRun '" + c.CommandPath() + " --help' for usage.")
		}
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
}

// Execute runs the command line and returns the process exit code.
func Execute(ctx context.Context, env Env, args []string) int {
	root := NewRoot(env)
	root.SetArgs(args)
	err := root.ExecuteContext(withEnv(ctx, env))
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	default:
		// Usage errors (unknown command or flag): cobra's own message, or ours for groups.
		fmt.Fprintln(env.Stderr, "Error:", err)
		return 2
	}
}

// reportStartupFailure writes the single failure line of a process that cannot start and returns
// the error that exits 1. A settings refusal (a *problem.Error) keeps its code, message and
// details; anything else is reported with the fallback code and message.
func reportStartupFailure(env Env, service, event string, err error, fallbackCode, fallbackMessage string) error {
	var pe *problem.Error
	if !errors.As(err, &pe) {
		pe = &problem.Error{Code: fallbackCode, Message: fallbackMessage}
	}
	obs.WriteStartupFailure(env.Stderr, service, event, pe)
	return exitError{Code: 1}
}
