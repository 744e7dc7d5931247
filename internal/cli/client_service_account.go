package cli

import (
	"encoding/json"
	"net/http"

	"github.com/spf13/cobra"
)

// Client commands of ServiceAccounts (holders of an upstream credential, read from a Kubernetes
// Secret of the Namespace's backing namespace).

var serviceAccountSpec = tableSpec{columns: []column{col("ID", "id"), col("NAME", "name"), {"CREDENTIAL", func(item map[string]any) string {
	m, _ := item["credential"].(map[string]any)
	return text(m["kind"])
}}, col("CREATED", "createdAt")},
	wide: []column{{"SECRET REF", func(item map[string]any) string {
		m, _ := item["credential"].(map[string]any)
		ref, _ := m["secretRef"].(map[string]any)
		if ref == nil {
			return ""
		}
		return text(ref["name"]) + "/" + text(ref["key"])
	}}}}

// Kinds of a ServiceAccount credential.
var serviceAccountCredentialKinds = []string{"api_key", "oauth_access_token"}

func newServiceAccountCommand(env Env) *cobra.Command {
	group, _ := clientGroup("service-account", "Create, list, show and delete ServiceAccounts and set their credential")
	group.Aliases = []string{"sa"}
	collection := func(s *clientSession) string { return nsPath(s, "/service-accounts") }
	item := func(s *clientSession, id string) string { return nsPath(s, "/service-accounts/"+id) }
	group.AddCommand(
		simple(env, "create NAME", "Create a ServiceAccount (without a credential)", cobra.ExactArgs(1), func(s *clientSession, args []string) error {
			if err := checkName(env, args[0]); err != nil {
				return err
			}
			body, _ := json.Marshal(map[string]string{"name": args[0]})
			data, err := s.do(http.MethodPost, collection(s), body)
			if err != nil {
				return err
			}
			return s.printItemOf(data, serviceAccountSpec)
		}),
		listCommand(env, "List the ServiceAccounts you may read", serviceAccountSpec, true, collection),
		getCommand(env, serviceAccountKind, serviceAccountSpec, true, item),
		serviceAccountCredentialCommand(env, item),
		deleteCommand(env, serviceAccountKind, "service account", item),
	)
	return group
}

func serviceAccountCredentialCommand(env Env, item func(*clientSession, string) string) *cobra.Command {
	var kind, secretName, secretKey, file string
	cmd := &cobra.Command{
		Use:   "credential NAME|ID (--kind KIND --secret-name NAME --secret-key KEY | -f FILE)",
		Short: "Set a ServiceAccount's credential: a key of a Kubernetes Secret in the Namespace's backing namespace",
		Args:  cobra.ExactArgs(1), ValidArgsFunction: completeArgs(serviceAccountKind),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			flags := s.cmd.Flags().Changed("kind") || s.cmd.Flags().Changed("secret-name") || s.cmd.Flags().Changed("secret-key")
			body, err := documentOrFlags(env, file, flags, func() ([]byte, error) {
				if kind == "" || secretName == "" || secretKey == "" {
					return nil, usageError(env, "--kind (api_key or oauth_access_token), --secret-name and --secret-key are required (or -f FILE).")
				}
				return json.Marshal(map[string]any{"kind": kind, "secretRef": map[string]string{"name": secretName, "key": secretKey}})
			})
			if err != nil {
				return err
			}
			id, err := s.resolve(serviceAccountKind, args[0])
			if err != nil {
				return err
			}
			data, err := s.do(http.MethodPatch, item(s, id)+"/credential", body)
			if err != nil {
				return err
			}
			return s.printItemOf(data, serviceAccountSpec)
		}),
	}
	cmd.Flags().StringVar(&kind, "kind", "", "credential kind: api_key or oauth_access_token")
	cmd.Flags().StringVar(&secretName, "secret-name", "", "the Kubernetes Secret's name")
	cmd.Flags().StringVar(&secretKey, "secret-key", "", "the key inside that Secret")
	fileFlag(cmd, &file, "the credential as {kind, secretRef: {name, key}}")
	_ = cmd.RegisterFlagCompletionFunc("kind", fixedCompletion(serviceAccountCredentialKinds...))
	return cmd
}
