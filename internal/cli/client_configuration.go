package cli

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// Client commands of Configurations (the Agents' OpenClaw documents). They have no name and no
// list route: they are found through their Agents.

var configurationSpec = tableSpec{columns: []column{col("ID", "id"), col("KIND", "kind"), col("GENERATION", "generation"),
	{"SECRET BINDINGS", func(item map[string]any) string {
		m, _ := item["secretBindings"].(map[string]any)
		return strings.Join(sortedKeys(m), ",")
	}}, col("CREATED", "createdAt")}}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func newConfigurationCommand(env Env) *cobra.Command {
	group, _ := clientGroup("configuration", "Create, show, update and delete Configurations (the Agents' OpenClaw documents)")
	group.Aliases = []string{"cfg"}
	item := func(s *clientSession, id string) string { return nsPath(s, "/configurations/"+id) }
	group.AddCommand(
		fileCommand(env, "create -f FILE", "Create a Configuration from {kind, values, secretBindings?}", 0, nil,
			func(s *clientSession, _ []string, body []byte) error {
				data, err := s.do(http.MethodPost, nsPath(s, "/configurations"), body)
				if err != nil {
					return err
				}
				return s.printItemOf(data, configurationSpec)
			}),
		getCommand(env, configurationKind, configurationSpec, true, item),
		fileCommand(env, "update ID -f FILE", "Replace a Configuration's values from {values, secretBindings?} (no kind)", 1,
			func(body map[string]json.RawMessage) error {
				if _, ok := body["kind"]; ok {
					return errors.New("an update carries no kind")
				}
				return nil
			},
			func(s *clientSession, args []string, body []byte) error {
				id, err := s.resolve(configurationKind, args[0])
				if err != nil {
					return err
				}
				data, err := s.do(http.MethodPatch, item(s, id), body)
				if err != nil {
					return err
				}
				return s.printItemOf(data, configurationSpec)
			}),
		deleteCommand(env, configurationKind, "configuration", item),
	)
	return group
}
