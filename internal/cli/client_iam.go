package cli

import (
	"net/http"
	"strings"

	"github.com/spf13/cobra"
)

// Client commands of a Namespace's IAM policy: Roles, AccessBindings and ServicePrincipals.

var (
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

func newIAMCommand(env Env) *cobra.Command {
	group, _ := clientGroup("iam", "Manage the IAM policy of a Namespace (--namespace): roles, access bindings, service principals")
	group.AddCommand(
		iamResourceCommand(env, "role", "roles", roleKind, "Manage Roles (immutable sets of permissions)", roleColumns),
		iamResourceCommand(env, "access-binding", "access-bindings", accessBindingKind, "Manage AccessBindings (a Role granted to an identity on one resource)", bindingColumns),
		servicePrincipalCommand(env),
	)
	return group
}

// iamResourceCommand is list, get, create --file and delete of a Namespace IAM collection.
func iamResourceCommand(env Env, use, collection string, kind resourceKind, short string, cols []column) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short}
	spec := tableSpec{columns: cols}
	base := func(s *clientSession) string { return nsPath(s, "/iam/"+collection) }
	item := func(s *clientSession, id string) string { return base(s) + "/" + pathEscape(id) }
	cmd.AddCommand(
		listCommand(env, "List the "+kind.what+"s of the Namespace", spec, true, base),
		getCommand(env, kind, spec, true, item),
		fileCommand(env, "create -f FILE", "Create "+article(kind.what)+" "+kind.what+" from a JSON or YAML document", 0, nil,
			func(s *clientSession, _ []string, body []byte) error {
				data, err := s.do(http.MethodPost, base(s), body)
				if err != nil {
					return err
				}
				return s.printItemOf(data, spec)
			}),
		deleteCommand(env, kind, strings.ReplaceAll(use, "-", " "), item),
	)
	return cmd
}

func servicePrincipalCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{Use: "service-principal", Short: "Manage the ServicePrincipals (automation identities) of the Namespace"}
	spec := tableSpec{columns: servicePrincipalColumns}
	base := func(s *clientSession) string { return nsPath(s, "/iam/service-principals") }
	cmd.AddCommand(
		simple(env, "create", "Create a ServicePrincipal without grants", cobra.NoArgs, func(s *clientSession, _ []string) error {
			data, err := s.do(http.MethodPost, base(s), nil)
			if err != nil {
				return err
			}
			return s.printItemOf(data, spec)
		}),
		listCommand(env, "List the ServicePrincipals of the Namespace", spec, true, base),
		getCommand(env, servicePrincipalKind, spec, true, func(s *clientSession, id string) string { return base(s) + "/" + id }),
	)
	return cmd
}
