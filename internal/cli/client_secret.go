package cli

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
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
			body, err := documentOrFlags(env, file, len(args) > 0 || value.given(s.cmd), func() ([]byte, error) {
				if len(args) == 0 {
					return nil, usageError(env, "give the Secret's NAME and its value (--from-literal, --from-file or --from-stdin), or -f FILE.")
				}
				if err := checkName(env, args[0]); err != nil {
					return nil, err
				}
				v, err := value.value(env, s.cmd)
				if err != nil {
					return nil, err
				}
				return json.Marshal(map[string]string{"name": args[0], "value": v})
			})
			if err != nil {
				return err
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
			body, err := documentOrFlags(env, file, value.given(s.cmd), func() ([]byte, error) {
				v, err := value.value(env, s.cmd)
				if err != nil {
					return nil, err
				}
				return json.Marshal(map[string]string{"value": v})
			})
			if err != nil {
				return err
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
