package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// Client commands of service keys: issue into a new file, revoke, and a list read from the audit
// log (the API keeps no list of keys: they are never shown again after issuance).

func newServiceKeyCommand(env Env) *cobra.Command {
	group, _ := clientGroup("service-key", "Issue, list and revoke service keys")
	group.AddCommand(serviceKeyCreateCommand(env), serviceKeyListCommand(env), serviceKeyRevokeCommand(env))
	return group
}

func serviceKeyCreateCommand(env Env) *cobra.Command {
	var sp, name, out string
	var days int
	create := &cobra.Command{
		Use:   "create --service-principal ID --name NAME --out FILE",
		Short: "Issue a service key into a new file (mode 0600); the key is never printed",
		Long: `Issues a service key for a ServicePrincipal and writes the issuance document (the format
--service-key-file reads) to a new file with mode 0600. The file must not exist. The key itself is
never printed. With a Namespace (--namespace, OCC_NAMESPACE or the context's) the key is scoped to
that Namespace, which must be the ServicePrincipal's.`,
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
			ns, err := s.optionalNamespace()
			if err != nil {
				return err
			}
			if ns != "" {
				body["namespaceId"] = ns
			}
			// The file exists before the key does: a key is never issued that cannot be kept.
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
			if err != nil {
				if errors.Is(err, os.ErrExist) {
					return usageError(env, "%s already exists; service-key create never overwrites a file.", out)
				}
				return usageError(env, "cannot create %s: %v", out, osReason(err))
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
			data, err := s.do(http.MethodPost, "/api/auth/service-keys", raw)
			if err != nil {
				return err
			}
			item, err := decodeItem(data)
			if err != nil {
				return s.fail(err)
			}
			id := text(item["id"])
			doc, _ := json.MarshalIndent(map[string]json.RawMessage{"data": data}, "", "  ")
			if _, err := f.Write(append(doc, '\n')); err != nil {
				return s.fail(fmt.Errorf("writing %s failed after the key %s was issued; revoke it with: occ service-key revoke %s", out, id, id))
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
			meta, _ := json.Marshal(item)
			return s.report(meta, id, fmt.Sprintf("Wrote service key %s for %s (expires %s) to %s.",
				sanitize(id), sanitize(text(item["servicePrincipalId"])), sanitize(text(item["expiresAt"])), abs))
		}),
	}
	create.Flags().StringVar(&sp, "service-principal", "", "ServicePrincipal id (spn_…)")
	create.Flags().StringVar(&name, "name", "", "key name (1 to 32 characters)")
	create.Flags().StringVar(&out, "out", "", "new file to write the key to (mode 0600)")
	create.Flags().IntVar(&days, "expires-in-days", 30, "lifetime in days (1 to 365)")
	return create
}

func serviceKeyRevokeCommand(env Env) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use: "revoke ID", Short: "Revoke a service key at once (asks first when it is the key in use)", Args: cobra.ExactArgs(1),
		RunE: clientRun(env, false, func(s *clientSession, args []string) error {
			if !strings.HasPrefix(args[0], "key_") {
				return usageError(env, "%s is not a service key id (key_…); the id is in the key file's data.id (occ service-key list shows them).", quoteIfNeeded(args[0]))
			}
			if err := checkOpaqueID(env, args[0], "service key", "occ service-key list"); err != nil {
				return err
			}
			if in := s.creds.describe(); in.ID == args[0] {
				if err := confirm(env, yes, fmt.Sprintf("Revoke the service key %s? It is the key this command uses (%s): every command using it is refused from now on.",
					sanitize(args[0]), in.File)); err != nil {
					return err
				}
			}
			data, err := s.do(http.MethodDelete, "/api/auth/service-keys/"+pathEscape(args[0]), nil)
			if err != nil {
				return err
			}
			return s.report(data, args[0], fmt.Sprintf("Revoked service key %s.", sanitize(args[0])))
		}),
	}
	yesFlag(cmd, &yes)
	return cmd
}

// auditEventView is the part of an audit event the client reads.
type auditEventView struct {
	ID          string  `json:"id"`
	NamespaceID *string `json:"namespaceId"`
	OccurredAt  string  `json:"occurredAt"`
	Kind        string  `json:"kind"`
	ActorID     string  `json:"actorId"`
	Action      string  `json:"action"`
	Resource    struct {
		Kind string `json:"kind"`
		ID   string `json:"id"`
	} `json:"resource"`
	Outcome string         `json:"outcome"`
	Details map[string]any `json:"details"`
}

// Audit actions the key list reads.
const (
	actionServiceKeysCreate = "openclaw.auth.service-keys.create"
	actionServiceKeysRevoke = "openclaw.auth.service-keys.revoke"
)

// serviceKeyEntry is one row of service-key list.
type serviceKeyEntry struct {
	ID                 string  `json:"id"`
	Name               string  `json:"name"`
	ServicePrincipalID string  `json:"servicePrincipalId"`
	NamespaceID        *string `json:"namespaceId,omitempty"`
	IssuedAt           string  `json:"issuedAt"`
	RevokedAt          *string `json:"revokedAt,omitempty"`
	InUse              bool    `json:"inUse"`
}

var serviceKeySpec = tableSpec{columns: []column{
	{"IN USE", func(item map[string]any) string {
		if item["inUse"] == true {
			return "*"
		}
		return " "
	}},
	col("ID", "id"), col("NAME", "name"), col("SERVICE PRINCIPAL", "servicePrincipalId"), col("NAMESPACE", "namespaceId"),
	col("ISSUED", "issuedAt"), col("REVOKED", "revokedAt"),
}}

func serviceKeyListCommand(env Env) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list [--all]",
		Short: "List the service keys issued and not revoked, from the audit log (needs installation:administer)",
		Long: `The API never lists service keys. This command reads the audit log (GET /audit-events) for the
keys issued by occ bootstrap, occ dev and the API, minus those revoked. A key past its expiry still
appears: its expiry is in its key file (occ whoami shows the one in use). --all includes the
revoked keys.`,
		Args: cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error {
			var events []auditEventView
			for _, kind := range []string{"service_key", "installation"} {
				data, err := s.listAll("/audit-events?resourceKind=" + kind)
				if err != nil {
					return s.fail(err)
				}
				var page []auditEventView
				if err := json.Unmarshal(data, &page); err != nil {
					return s.fail(errors.New("the API answered with an unexpected list"))
				}
				events = append(events, page...)
			}
			inUse := s.creds.describe().ID
			keys := serviceKeysFromAudit(events, inUse)
			items := make([]serviceKeyEntry, 0, len(keys))
			for _, k := range keys {
				if all || k.RevokedAt == nil {
					items = append(items, k)
				}
			}
			data, _ := json.Marshal(items)
			return s.printListOf(data, serviceKeySpec)
		}),
	}
	cmd.Flags().BoolVar(&all, "all", false, "include revoked keys")
	return cmd
}

// serviceKeysFromAudit folds issuance and revocation events into keys, oldest first.
func serviceKeysFromAudit(events []auditEventView, inUse string) []serviceKeyEntry {
	byID := map[string]*serviceKeyEntry{}
	detail := func(ev auditEventView, name string) string { s, _ := ev.Details[name].(string); return s }
	for _, ev := range events {
		if ev.Outcome != "success" {
			continue
		}
		id := detail(ev, "serviceKeyId")
		if id == "" {
			continue
		}
		k := byID[id]
		if k == nil {
			k = &serviceKeyEntry{ID: id, InUse: id == inUse}
			byID[id] = k
		}
		switch {
		case ev.Action == actionServiceKeysRevoke:
			at := ev.OccurredAt
			k.RevokedAt = &at
		case ev.Action == actionServiceKeysCreate || ev.Kind == "bootstrap":
			k.IssuedAt, k.ServicePrincipalID, k.NamespaceID = ev.OccurredAt, detail(ev, "servicePrincipalId"), ev.NamespaceID
			k.Name = detail(ev, "serviceKeyName")
			if k.Name == "" && ev.Kind == "bootstrap" {
				k.Name = "bootstrap-admin"
			}
		}
	}
	out := make([]serviceKeyEntry, 0, len(byID))
	for _, k := range byID {
		if k.IssuedAt != "" {
			out = append(out, *k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IssuedAt < out[j].IssuedAt })
	return out
}
