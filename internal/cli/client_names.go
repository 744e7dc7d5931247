package cli

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/openclaw/occ/internal/platform"
)

// Names wherever ids are taken: a command argument or flag that names a resource accepts its id or
// its name. A name is looked up in the resource's list route (one request); no match and more
// than one match are errors, the latter listing the candidates. A new kind (Presets, for example)
// plugs in by declaring a resourceKind.

// resourceKind describes a kind of resource the client addresses by id or name.
type resourceKind struct {
	// what is the kind in sentences ("Namespace").
	what string
	// prefix is the id prefix ("ns"); "" for opaque ids (IAM Roles and AccessBindings).
	prefix string
	// list is the command that lists them, for hints.
	list string
	// collection is the list route; nil when the API has no list (then only ids are accepted).
	collection func(s *clientSession) string
	// named says the items carry a name to look up.
	named bool
}

var (
	namespaceKind = resourceKind{what: "Namespace", prefix: platform.PrefixNamespace, list: "occ namespace list",
		collection: func(*clientSession) string { return "/namespaces" }, named: true}
	agentKind = resourceKind{what: "Agent", prefix: platform.PrefixAgent, list: "occ agent list",
		collection: func(s *clientSession) string { return nsPath(s, "/agents") }, named: true}
	secretKind = resourceKind{what: "Secret", prefix: platform.PrefixSecret, list: "occ secret list",
		collection: func(s *clientSession) string { return nsPath(s, "/secrets") }, named: true}
	presetKind = resourceKind{what: "Preset", prefix: platform.PrefixPreset, list: "occ preset list",
		collection: func(s *clientSession) string { return nsPath(s, "/presets") }, named: true}
	serviceAccountKind = resourceKind{what: "ServiceAccount", prefix: platform.PrefixServiceAccount, list: "occ service-account list",
		collection: func(s *clientSession) string { return nsPath(s, "/service-accounts") }, named: true}
	servicePrincipalKind = resourceKind{what: "ServicePrincipal", prefix: platform.PrefixServicePrincipal, list: "occ iam service-principal list",
		collection: func(s *clientSession) string { return nsPath(s, "/iam/service-principals") }}
	roleKind = resourceKind{what: "Role", list: "occ iam role list",
		collection: func(s *clientSession) string { return nsPath(s, "/iam/roles") }, named: true}
	accessBindingKind = resourceKind{what: "AccessBinding", list: "occ iam access-binding list",
		collection: func(s *clientSession) string { return nsPath(s, "/iam/access-bindings") }}
	// Configurations have neither a name nor a list route: they are found through their Agents.
	configurationKind = resourceKind{what: "Configuration", prefix: platform.PrefixConfiguration,
		list: "occ agent get AGENT (its CONFIGURATION)"}
)

// idShape is any OCC id: a prefix, an underscore and a UUID.
var idShape = regexp.MustCompile(`^[a-z]+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// resolve returns the id of the resource ref names (an id or a name).
func (s *clientSession) resolve(k resourceKind, ref string) (string, error) {
	if k.prefix != "" {
		if platform.ValidID(k.prefix, ref) {
			return ref, nil
		}
		if idShape.MatchString(ref) || k.collection == nil || !k.named {
			return "", checkID(s.env, ref, k.prefix, k.what, k.list)
		}
	} else if err := checkOpaqueID(s.env, ref, k.what, k.list); err != nil {
		return "", err
	}
	if k.prefix != "" && !platform.ValidName(ref) {
		return "", usageError(s.env, "%s is neither %s %s id (%s_…) nor a valid name. List them with: %s",
			quoteIfNeeded(ref), article(k.what), k.what, k.prefix, k.list)
	}
	matches, err := s.lookup(k, ref)
	if err != nil {
		return "", s.fail(err)
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		where := ""
		if s.namespace != "" && k.prefix != platform.PrefixNamespace {
			where = " in the Namespace " + s.namespaceLabel()
		}
		return "", requestError(s.env, "no %s named %s%s. List them with: %s", k.what, quoteIfNeeded(ref), where, k.list)
	default:
		return "", requestError(s.env, "the name %s is ambiguous: %d %ss have it (%s). Pass the id instead.",
			quoteIfNeeded(ref), len(matches), k.what, strings.Join(matches, ", "))
	}
}

// lookup lists the kind and returns the ids matching ref: an exact id first (opaque ids), else
// every item named ref.
func (s *clientSession) lookup(k resourceKind, ref string) ([]string, error) {
	data, err := s.listAll(k.collection(s))
	if err != nil {
		return nil, err
	}
	var items []struct {
		ID   string  `json:"id"`
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, err
	}
	var named []string
	for _, it := range items {
		if it.ID == ref {
			return []string{it.ID}, nil
		}
		if k.named && it.Name != nil && *it.Name == ref {
			named = append(named, it.ID)
		}
	}
	return named, nil
}

// namespaceLabel is the Namespace as the user named it, with its id when that was a name.
func (s *clientSession) namespaceLabel() string {
	if s.namespaceRef != "" && s.namespaceRef != s.namespace {
		return sanitize(s.namespaceRef) + " (" + s.namespace + ")"
	}
	return s.namespace
}

// checkID refuses an id without the expected prefix, naming the list command.
func checkID(env Env, id, prefix, what, listCommand string) error {
	if platform.ValidID(prefix, id) {
		return nil
	}
	return usageError(env, "%s is not %s %s id (%s_…). List them with: %s", quoteIfNeeded(id), article(what), what, prefix, listCommand)
}

// checkOpaqueID refuses an empty, over-long or control-character id.
func checkOpaqueID(env Env, id, what, listCommand string) error {
	if id != "" && len(id) <= 200 && strings.IndexFunc(id, func(r rune) bool { return r <= 0x20 || (r >= 0x7f && r <= 0x9f) }) < 0 {
		return nil
	}
	return usageError(env, "%s is not %s %s id. List them with: %s", quoteIfNeeded(id), article(what), what, listCommand)
}

// nsPath is a route under the session's Namespace.
func nsPath(s *clientSession, rest string) string { return "/namespaces/" + s.namespace + rest }
