package cli

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// Client commands of Secrets. A value comes from --from-literal, --from-file or --from-stdin (or
// a --file document); it is never printed and never written anywhere by the client.

var secretSpec = tableSpec{columns: []column{col("ID", "id"), col("NAME", "name"), {"CONSUMERS", func(item map[string]any) string {
	list, _ := item["consumers"].([]any)
	out := make([]string, 0, len(list))
	for _, c := range list {
		m, _ := c.(map[string]any)
		out = append(out, text(m["kind"])+"/"+text(m["id"]))
	}
	return strings.Join(out, ",")
}}}}

func newSecretCommand(env Env) *cobra.Command {
	group, _ := clientGroup("secret", "Create, list, show, update and delete Secrets (values are never shown)")
	collection := func(s *clientSession) string { return nsPath(s, "/secrets") }
	item := func(s *clientSession, id string) string { return nsPath(s, "/secrets/"+id) }
	group.AddCommand(
		secretCreateCommand(env),
		listCommand(env, "List the Secrets you may read", secretSpec, true, collection),
		getCommand(env, secretKind, secretSpec, true, item),
		secretUpdateCommand(env),
		deleteCommand(env, secretKind, "secret", item),
	)
	return group
}

func secretCreateCommand(env Env) *cobra.Command {
	var value secretValueFlags
	var file string
	cmd := &cobra.Command{
		Use:   "create NAME (--from-literal VALUE | --from-file PATH | --from-stdin) | create -f FILE",
		Short: "Create a Secret from a value, or from a {name, value} document",
		Args:  cobra.RangeArgs(0, 1),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			var body []byte
			switch {
			case file != "":
				if len(args) > 0 || value.given(s.cmd) {
					return usageError(env, "-f FILE carries name and value: give no NAME and no --from-… flag with it.")
				}
				doc, err := readJSONFile(env, file)
				if err != nil {
					return err
				}
				body = doc
			case len(args) == 1:
				if !platform.ValidName(args[0]) {
					return usageError(env, "%s is not a valid name: 1 to 200 characters, no outer whitespace, no control characters.", quoteIfNeeded(args[0]))
				}
				v, err := value.value(env, s.cmd)
				if err != nil {
					return err
				}
				body, _ = json.Marshal(map[string]string{"name": args[0], "value": v})
			default:
				return usageError(env, "give the Secret's NAME and its value (--from-literal, --from-file or --from-stdin), or -f FILE.")
			}
			data, err := s.do(http.MethodPost, nsPath(s, "/secrets"), body)
			if err != nil {
				return err
			}
			return s.printItemOf(data, secretSpec)
		}),
	}
	value.register(cmd)
	fileFlag(cmd, &file, "the Secret as {name, value}")
	return cmd
}

func secretUpdateCommand(env Env) *cobra.Command {
	var value secretValueFlags
	var file string
	cmd := &cobra.Command{
		Use:   "update NAME|ID (--from-literal VALUE | --from-file PATH | --from-stdin | -f FILE)",
		Short: "Replace a Secret's value",
		Args:  cobra.ExactArgs(1), ValidArgsFunction: completeArgs(secretKind),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			var body []byte
			if file != "" {
				if value.given(s.cmd) {
					return usageError(env, "give the value with -f FILE or with a --from-… flag, not both.")
				}
				doc, err := readJSONFile(env, file)
				if err != nil {
					return err
				}
				body = doc
			} else {
				v, err := value.value(env, s.cmd)
				if err != nil {
					return err
				}
				body, _ = json.Marshal(map[string]string{"value": v})
			}
			id, err := s.resolve(secretKind, args[0])
			if err != nil {
				return err
			}
			data, err := s.do(http.MethodPatch, nsPath(s, "/secrets/"+id), body)
			if err != nil {
				return err
			}
			return s.printItemOf(data, secretSpec)
		}),
	}
	value.register(cmd)
	fileFlag(cmd, &file, "the new value as {value}")
	return cmd
}
