package cli

import (
	"encoding/json"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
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
			if !platform.ValidName(args[0]) {
				return usageError(env, "%s is not a valid name: 1 to 200 characters, no outer whitespace, no control characters.", quoteIfNeeded(args[0]))
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
			var body []byte
			flags := s.cmd.Flags().Changed("kind") || s.cmd.Flags().Changed("secret-name") || s.cmd.Flags().Changed("secret-key")
			switch {
			case file != "" && flags:
				return usageError(env, "give the credential with -f FILE or with --kind, --secret-name and --secret-key, not both.")
			case file != "":
				doc, err := readJSONFile(env, file)
				if err != nil {
					return err
				}
				body = doc
			case kind == "" || secretName == "" || secretKey == "":
				return usageError(env, "--kind (api_key or oauth_access_token), --secret-name and --secret-key are required (or -f FILE).")
			default:
				body, _ = json.Marshal(map[string]any{"kind": kind, "secretRef": map[string]string{"name": secretName, "key": secretKey}})
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
