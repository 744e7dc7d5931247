package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// Table columns of the resources.
var (
	installationColumns = []column{col("ID", "id"), col("NAME", "name"), col("CREATED", "createdAt")}
	namespaceColumns    = []column{col("ID", "id"), col("NAME", "name"), col("STATUS", "status"),
		col("EXISTING NAMESPACE", "existingNamespace"), col("CREATED", "createdAt")}
	roleColumns = []column{col("ID", "id"), col("NAME", "name"), {"PERMISSIONS", func(item map[string]any) string {
		perms, _ := item["permissions"].([]any)
		out := make([]string, 0, len(perms))
		for _, p := range perms {
			m, _ := p.(map[string]any)
			out = append(out, text(m["resourceKind"])+":"+text(m["action"]))
		}
		return strings.Join(out, ",")
	}}}
	bindingColumns = []column{col("ID", "id"), col("SUBJECT KIND", "subjectKind"), col("SUBJECT", "subjectId"), col("ROLE", "roleId"),
		{"RESOURCE", func(item map[string]any) string {
			if item["resourceKind"] == nil {
				return ""
			}
			return text(item["resourceKind"]) + "/" + text(item["resourceId"])
		}}, col("RUNTIME ROLE", "runtimeRole")}
	servicePrincipalColumns = []column{col("ID", "id"), col("NAMESPACE", "namespaceId")}
)

// clientRun wraps a client command's body: it resolves the session first.
func clientRun(env Env, needNamespace bool, body func(s *clientSession, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		s, err := newClientSession(env, cmd, needNamespace)
		if err != nil {
			return err
		}
		return body(s, args)
	}
}

func pathEscape(id string) string { return url.PathEscape(id) }

// --- installation -------------------------------------------------------------------------------

func newInstallationCommand(env Env) *cobra.Command {
	group, _ := clientGroup("installation", "Show the Installation")
	group.AddCommand(&cobra.Command{
		Use: "get", Short: "Show the Installation", Args: cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error {
			data, err := s.do("GET", "/installation", nil)
			if err != nil {
				return err
			}
			return s.printItem(data, installationColumns)
		}),
	})
	return group
}

// --- namespace ----------------------------------------------------------------------------------

var dnsLabel = regexp.MustCompile(platform.DNSLabelPattern)

func newNamespaceCommand(env Env) *cobra.Command {
	group, _ := clientGroup("namespace", "List, show, create and delete Namespaces")
	const list = "occ namespace list"
	group.AddCommand(&cobra.Command{
		Use: "list", Short: "List the Namespaces you may read", Args: cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error {
			data, err := s.do("GET", "/namespaces", nil)
			if err != nil {
				return err
			}
			return s.printList(data, namespaceColumns)
		}),
	})
	group.AddCommand(&cobra.Command{
		Use: "get ID", Short: "Show one Namespace", Args: cobra.ExactArgs(1),
		RunE: clientRun(env, false, func(s *clientSession, args []string) error {
			if err := checkID(env, args[0], platform.PrefixNamespace, "Namespace", list); err != nil {
				return err
			}
			data, err := s.do("GET", "/namespaces/"+args[0], nil)
			if err != nil {
				return err
			}
			return s.printItem(data, namespaceColumns)
		}),
	})
	var existing string
	create := &cobra.Command{
		Use: "create NAME", Short: "Create a Namespace (the worker makes it ready)", Args: cobra.ExactArgs(1),
		RunE: clientRun(env, false, func(s *clientSession, args []string) error {
			if !platform.ValidName(args[0]) {
				return usageError(env, "%s is not a valid name: 1 to 200 characters, no outer whitespace, no control characters.", quoteIfNeeded(args[0]))
			}
			body := map[string]string{"name": args[0]}
			if s.cmd.Flags().Changed("existing-namespace") {
				if !dnsLabel.MatchString(existing) {
					return usageError(env, "--existing-namespace must be a Kubernetes namespace name (DNS-1123 label, at most 63 characters).")
				}
				body["existingNamespace"] = existing
			}
			raw, _ := json.Marshal(body)
			data, err := s.do("POST", "/namespaces", raw)
			if err != nil {
				return err
			}
			return s.printItem(data, namespaceColumns)
		}),
	}
	create.Flags().StringVar(&existing, "existing-namespace", "", "adopt this existing Kubernetes namespace (needs installation:administer)")
	group.AddCommand(create)
	group.AddCommand(&cobra.Command{
		Use: "delete ID", Short: "Delete an empty Namespace (the worker tears it down)", Args: cobra.ExactArgs(1),
		RunE: clientRun(env, false, func(s *clientSession, args []string) error {
			if err := checkID(env, args[0], platform.PrefixNamespace, "Namespace", list); err != nil {
				return err
			}
			data, err := s.do("DELETE", "/namespaces/"+args[0], nil)
			if err != nil {
				return err
			}
			if s.output == outputTable {
				fmt.Fprintf(env.Stdout, "Namespace %s is being deleted.\n", args[0])
				return nil
			}
			return s.printStructured(data)
		}),
	})
	return group
}

// --- iam ----------------------------------------------------------------------------------------

func newIAMCommand(env Env) *cobra.Command {
	group, _ := clientGroup("iam", "Manage the IAM policy of a Namespace (--namespace): roles, access bindings, service principals")
	group.AddCommand(
		iamResourceCommand(env, "role", "roles", "Role", "Manage Roles (immutable sets of permissions)", roleColumns),
		iamResourceCommand(env, "access-binding", "access-bindings", "AccessBinding", "Manage AccessBindings (a Role granted to an identity on one resource)", bindingColumns),
		servicePrincipalCommand(env),
	)
	return group
}

// iamResourceCommand is list, get, create --file and delete of a Namespace IAM collection.
func iamResourceCommand(env Env, use, collection, what, short string, cols []column) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
	list := "occ iam " + use + " list"
	base := func(s *clientSession) string { return "/namespaces/" + s.namespace + "/iam/" + collection }
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List the " + what + "s of the Namespace", Args: cobra.NoArgs,
		RunE: clientRun(env, true, func(s *clientSession, _ []string) error {
			data, err := s.do("GET", base(s), nil)
			if err != nil {
				return err
			}
			return s.printList(data, cols)
		}),
	})
	cmd.AddCommand(&cobra.Command{
		Use: "get ID", Short: "Show one " + what, Args: cobra.ExactArgs(1),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			if err := checkOpaqueID(env, args[0], what, list); err != nil {
				return err
			}
			data, err := s.do("GET", base(s)+"/"+pathEscape(args[0]), nil)
			if err != nil {
				return err
			}
			return s.printItem(data, cols)
		}),
	})
	var file string
	create := &cobra.Command{
		Use: "create --file FILE", Short: "Create a " + what + " from a JSON file", Args: cobra.NoArgs,
		RunE: clientRun(env, true, func(s *clientSession, _ []string) error {
			body, err := readJSONFile(env, file)
			if err != nil {
				return err
			}
			data, err := s.do("POST", base(s), body)
			if err != nil {
				return err
			}
			return s.printItem(data, cols)
		}),
	}
	create.Flags().StringVar(&file, "file", "", "JSON file with the "+what)
	cmd.AddCommand(create)
	cmd.AddCommand(&cobra.Command{
		Use: "delete ID", Short: "Delete a " + what, Args: cobra.ExactArgs(1),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			if err := checkOpaqueID(env, args[0], what, list); err != nil {
				return err
			}
			if _, err := s.do("DELETE", base(s)+"/"+pathEscape(args[0]), nil); err != nil {
				return err
			}
			return s.printDeleted(strings.ReplaceAll(use, "-", " "), args[0])
		}),
	})
	return cmd
}

func servicePrincipalCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "service-principal", Short: "Manage the ServicePrincipals (automation identities) of the Namespace", Args: cobra.NoArgs}
	const list = "occ iam service-principal list"
	base := func(s *clientSession) string { return "/namespaces/" + s.namespace + "/iam/service-principals" }
	cmd.AddCommand(&cobra.Command{
		Use: "create", Short: "Create a ServicePrincipal without grants", Args: cobra.NoArgs,
		RunE: clientRun(env, true, func(s *clientSession, _ []string) error {
			data, err := s.do("POST", base(s), nil)
			if err != nil {
				return err
			}
			return s.printItem(data, servicePrincipalColumns)
		}),
	})
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List the ServicePrincipals of the Namespace", Args: cobra.NoArgs,
		RunE: clientRun(env, true, func(s *clientSession, _ []string) error {
			data, err := s.do("GET", base(s), nil)
			if err != nil {
				return err
			}
			return s.printList(data, servicePrincipalColumns)
		}),
	})
	cmd.AddCommand(&cobra.Command{
		Use: "get ID", Short: "Show one ServicePrincipal", Args: cobra.ExactArgs(1),
		RunE: clientRun(env, true, func(s *clientSession, args []string) error {
			if err := checkID(env, args[0], platform.PrefixServicePrincipal, "ServicePrincipal", list); err != nil {
				return err
			}
			data, err := s.do("GET", base(s)+"/"+args[0], nil)
			if err != nil {
				return err
			}
			return s.printItem(data, servicePrincipalColumns)
		}),
	})
	return cmd
}

// --- service-key --------------------------------------------------------------------------------

func newServiceKeyCommand(env Env) *cobra.Command {
	group, _ := clientGroup("service-key", "Issue and revoke service keys")
	var sp, name, out string
	var days int
	create := &cobra.Command{
		Use:   "create --service-principal ID --name NAME --out FILE",
		Short: "Issue a service key into a new file (mode 0600); the key is never printed",
		Long: `Issues a service key for a ServicePrincipal and writes the issuance document (the format
--service-key-file reads) to a new file with mode 0600. The file must not exist. The key itself is
never printed. With --namespace (or OCC_NAMESPACE) the key is scoped to that Namespace, which must
be the ServicePrincipal's.`,
		Args: cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error {
			if !platform.ValidID(platform.PrefixServicePrincipal, sp) {
				return usageError(env, "--service-principal: %s is not a ServicePrincipal id (spn_…). List them with: occ iam service-principal list", quoteIfNeeded(sp))
			}
			if n := len([]rune(name)); n < 1 || n > 32 || !platform.ValidName(name) {
				return usageError(env, "--name must be 1 to 32 characters without outer whitespace or control characters.")
			}
			if out == "" {
				return usageError(env, "--out is required: the new file to write the key to.")
			}
			body := map[string]any{"servicePrincipalId": sp, "name": name}
			if s.cmd.Flags().Changed("expires-in-days") {
				if days < 1 || days > 365 {
					return usageError(env, "--expires-in-days must be from 1 to 365.")
				}
				body["expiresIn"] = days * 86400
			}
			if s.namespace != "" {
				body["namespaceId"] = s.namespace
			}
			// The file exists before the key does: a key is never issued that cannot be kept.
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
			if err != nil {
				if errors.Is(err, os.ErrExist) {
					return usageError(env, "%s already exists; service-key create never overwrites a file.", out)
				}
				return usageError(env, "cannot create %s: %v", out, errors.Unwrap(err))
			}
			keep := false
			defer func() {
				if !keep {
					f.Close()
					_ = os.Remove(out)
				}
			}()
			if err := f.Chmod(0o600); err != nil {
				return usageError(env, "cannot set the mode of %s: %v", out, err)
			}
			raw, _ := json.Marshal(body)
			data, err := s.do("POST", "/api/auth/service-keys", raw)
			if err != nil {
				return err
			}
			item, err := decodeItem(data)
			if err != nil {
				return s.fail(err)
			}
			doc, _ := json.MarshalIndent(map[string]json.RawMessage{"data": data}, "", "  ")
			if _, err := f.Write(append(doc, '\n')); err != nil {
				return s.fail(fmt.Errorf("writing %s failed after the key %s was issued; revoke it with: occ service-key revoke %s", out, text(item["id"]), text(item["id"])))
			}
			if err := f.Sync(); err != nil {
				return s.fail(err)
			}
			keep = true
			if err := f.Close(); err != nil {
				return s.fail(err)
			}
			delete(item, "key")
			abs, _ := filepath.Abs(out)
			item["file"] = abs
			if s.output == outputTable {
				fmt.Fprintf(env.Stdout, "Wrote service key %s for %s (expires %s) to %s.\n",
					sanitize(text(item["id"])), sanitize(text(item["servicePrincipalId"])), sanitize(text(item["expiresAt"])), abs)
				return nil
			}
			meta, _ := json.Marshal(item)
			return s.printStructured(meta)
		}),
	}
	create.Flags().StringVar(&sp, "service-principal", "", "ServicePrincipal id (spn_…)")
	create.Flags().StringVar(&name, "name", "", "key name (1 to 32 characters)")
	create.Flags().StringVar(&out, "out", "", "new file to write the key to (mode 0600)")
	create.Flags().IntVar(&days, "expires-in-days", 30, "lifetime in days (1 to 365)")
	group.AddCommand(create)
	group.AddCommand(&cobra.Command{
		Use: "revoke ID", Short: "Revoke a service key at once", Args: cobra.ExactArgs(1),
		RunE: clientRun(env, false, func(s *clientSession, args []string) error {
			if !strings.HasPrefix(args[0], "key_") {
				return usageError(env, "%s is not a service key id (key_…); the id is in the key file's data.id.", quoteIfNeeded(args[0]))
			}
			if err := checkOpaqueID(env, args[0], "service key", "the key file's data.id"); err != nil {
				return err
			}
			data, err := s.do("DELETE", "/api/auth/service-keys/"+pathEscape(args[0]), nil)
			if err != nil {
				return err
			}
			if s.output == outputTable {
				fmt.Fprintf(env.Stdout, "Revoked service key %s.\n", sanitize(args[0]))
				return nil
			}
			return s.printStructured(data)
		}),
	})
	return group
}
