package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Confirmation before what cannot be undone: deleting a Namespace, revoking the key in use.

// yesFlag is --yes (-y): answer the question with yes.
func yesFlag(cmd *cobra.Command, yes *bool) {
	cmd.Flags().BoolVarP(yes, "yes", "y", false, "do not ask for confirmation")
}

// confirm asks question on stderr and reads one line from standard input. Only y or yes goes
// ahead; anything else, or no input at all (a script without --yes), exits 1 with nothing done.
func confirm(env Env, yes bool, question string) error {
	if yes {
		return nil
	}
	fmt.Fprintf(env.Stderr, "%s [y/N] ", question)
	answer := ""
	if env.Stdin != nil {
		line, _ := bufio.NewReader(env.Stdin).ReadString('\n')
		answer = strings.ToLower(strings.TrimSpace(line))
	}
	if answer == "y" || answer == "yes" {
		return nil
	}
	if answer == "" {
		fmt.Fprintln(env.Stderr)
	}
	fmt.Fprintln(env.Stderr, "Not confirmed; nothing was done. (--yes answers the question.)")
	return exitError{Code: exitRequestFailed}
}
