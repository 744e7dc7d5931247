package cli

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Shell completion (occ completion bash|zsh|fish): flag values from fixed lists, context names
// from the config file, and resource names and ids from the API with a short timeout. A
// completion never prints an error: when the API cannot answer, it offers nothing.

// completionTimeout bounds every request made while completing.
const completionTimeout = 2 * time.Second

// fixedCompletion offers a fixed list of values.
func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerClientFlagCompletion completes the global client flags of cmd.
func registerClientFlagCompletion(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(outputFormats...))
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return completeResource(c, namespaceKind, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("context", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return contextNames(completionEnv(c)), cobra.ShellCompDirectiveNoFileComp
	})
}

// envKey carries the Env in the command's context: completion functions registered on flags have
// only the command.
type envKey struct{}

func withEnv(ctx context.Context, env Env) context.Context {
	return context.WithValue(ctx, envKey{}, env)
}

// completionEnv is the Env the command runs with, stderr discarded: a completion stays silent.
func completionEnv(cmd *cobra.Command) Env {
	env := Env{Lookup: func(string) (string, bool) { return "", false }, Stdout: io.Discard}
	if ctx := cmd.Context(); ctx != nil {
		if e, ok := ctx.Value(envKey{}).(Env); ok {
			env = e
		}
	}
	env.Stderr = io.Discard
	return env
}

// completeArgs completes the positional arguments of a command: the first is a resource of kind.
func completeArgs(kind resourceKind) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeResource(c, kind, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeFlag completes a flag whose value is a resource of kind.
func completeFlag(cmd *cobra.Command, flag string, kind resourceKind) {
	_ = cmd.RegisterFlagCompletionFunc(flag, func(c *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return completeResource(c, kind, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// completeResource lists the kind's names (and ids when the word typed so far looks like one),
// each with a short description.
func completeResource(cmd *cobra.Command, kind resourceKind, toComplete string) []string {
	if kind.collection == nil {
		return nil
	}
	env := completionEnv(cmd)
	// Every request of a completion, the Namespace's lookup included, has the short timeout
	// (an explicit --timeout-seconds still wins).
	lookup := env.Lookup
	env.Lookup = func(name string) (string, bool) {
		if name == "OCC_TIMEOUT_SECONDS" {
			return strconv.Itoa(int(completionTimeout / time.Second)), true
		}
		return lookup(name)
	}
	needNamespace := kind.prefix != namespaceKind.prefix
	s, err := newClientSession(env, cmd, needNamespace)
	if err != nil {
		return nil
	}
	data, err := s.call("GET", kind.collection(s), nil)
	if err != nil {
		return nil
	}
	var items []struct {
		ID     string  `json:"id"`
		Name   *string `json:"name"`
		Status string  `json:"status"`
	}
	if json.Unmarshal(data, &items) != nil {
		return nil
	}
	wantIDs := !kind.named || (kind.prefix != "" && strings.HasPrefix(toComplete, kind.prefix+"_"))
	var out []string
	for _, it := range items {
		label := it.ID
		if it.Status != "" {
			label += " " + it.Status
		}
		switch {
		case wantIDs:
			desc := it.Status
			if it.Name != nil {
				desc = strings.TrimSpace(*it.Name + " " + it.Status)
			}
			out = append(out, completionItem(it.ID, desc))
		case it.Name != nil && strings.HasPrefix(*it.Name, toComplete):
			out = append(out, completionItem(*it.Name, label))
		}
	}
	return out
}

// completionItem is "value<TAB>description" with the description kept to one safe line.
func completionItem(value, desc string) string {
	value = strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return -1
		}
		return r
	}, value)
	desc = strings.Map(func(r rune) rune {
		if unsafeRune(r) || r == '\t' {
			return ' '
		}
		return r
	}, desc)
	if desc == "" {
		return value
	}
	return value + "\t" + desc
}
