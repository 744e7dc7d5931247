package iam

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/problem"
)

// PolicySource loads the slice of persisted policy one decision needs. Implementations read fresh
// on every call (no cache), through indexed queries, so the cost of a call depends on the
// requesting identity's own policy, not on the size of the whole policy. Any storage failure must
// be returned as an error.
type PolicySource interface {
	// DecisionPolicy returns: every identity row whose id == principalID (0, 1 or, in a corrupted
	// store, more); the group memberships of that identity and the groups they name; every access
	// binding whose subject is that identity or one of those groups; the roles those bindings
	// reference (a missing one is simply absent); every restriction with action == action and
	// resourceKind == resource.Kind (any namespace or resource id: the algorithm filters); and
	// PolicyNonEmpty (at least one identity, one role and one binding exist in the whole store). A
	// loader may also leave out bindings and restrictions that cannot match the requested resource
	// (another namespace, another exact resource) and the roles only those bindings reference: they
	// can never match, so the decision is the same.
	DecisionPolicy(ctx context.Context, principalID string, action string, resource Resource) (PolicySlice, error)
	// DecisionPolicies returns, for every resource, what DecisionPolicy returns for it (slices[i]
	// for resources[i]), reading the store once per (kind, Namespace) among the resources rather
	// than once per resource: a list page of one kind in one Namespace costs one read.
	DecisionPolicies(ctx context.Context, principalID string, action string, resources []Resource) ([]PolicySlice, error)
	// IdentityGrants returns the identity row(s) with that id, its memberships and their groups,
	// its bindings (direct and via those groups) and their roles, and PolicyNonEmpty as
	// DecisionPolicy does: what coverage needs. Restrictions may be left out (coverage ignores
	// them).
	IdentityGrants(ctx context.Context, identityID string) (PolicySlice, error)
	// LookupIdentity finds identities by (issuer, subject) or by service principal id (never both),
	// ignoring q.NamespaceID (the caller filters by scope).
	LookupIdentity(ctx context.Context, q IdentityLookup) ([]Identity, error)
}

// Driver is the IAM driver contract that the API and the worker depend on.
type Driver interface {
	ID() string
	// LookupIdentity returns nil, nil for an unknown identity.
	LookupIdentity(ctx context.Context, q IdentityLookup) (*Identity, error)
	// Authorize returns an error (never an allow) when the policy cannot be read.
	Authorize(ctx context.Context, req Request) (Decision, error)
}

// IdentityCoverage is the optional identity-coverage capability (see Covers); a driver without it
// cannot issue or revoke service keys.
type IdentityCoverage interface {
	CoversIdentityAccess(ctx context.Context, holderID, targetID string) (bool, error)
}

var (
	_ Driver           = (*Native)(nil)
	_ IdentityCoverage = (*Native)(nil)
)

var (
	// ErrAmbiguousIdentity: more than one identity matches a lookup. The caller must deny.
	ErrAmbiguousIdentity = errors.New("iam: ambiguous identity")
	// ErrInvalidLookup: a lookup names both forms, neither, or an empty Namespace.
	ErrInvalidLookup = errors.New("iam: invalid identity lookup")
	// errNoSource guards a Native built without a PolicySource.
	errNoSource = errors.New("iam: native driver has no policy source")
)

// Native is the native IAM driver: the algorithms of this package over a PolicySource.
type Native struct {
	id  string
	src PolicySource
	// With a cache (WithCache), the policy epoch the request's identity lookup read.
	cache      *DecisionCache
	epoch      int64
	epochKnown bool
}

// NewNative returns the native driver named id (the operator's driver id from the startup YAML,
// stamped on every Decision) reading policy from src.
func NewNative(id string, src PolicySource) *Native {
	return &Native{id: id, src: src}
}

// ID returns the driver id.
func (n *Native) ID() string { return n.id }

// Authorize loads the policy slice the request needs, fresh, and decides. When the policy
// cannot be read it returns a denial together with the error; the caller must act on the error
// (503 DEPENDENCY_UNAVAILABLE, or a retry in the worker).
func (n *Native) Authorize(ctx context.Context, req Request) (Decision, error) {
	if n.src == nil {
		return deny(n.id, ReasonUnavailable, Evidence{}), errNoSource
	}
	cached := n.cache != nil && n.epochKnown
	if cached {
		if d, ok := n.cache.get(n.epoch, req); ok {
			return d, nil
		}
	}
	slice, err := n.src.DecisionPolicy(ctx, req.PrincipalID, req.Action, req.Resource)
	if err != nil {
		return deny(n.id, ReasonUnavailable, Evidence{}), fmt.Errorf("iam: loading decision policy: %w", err)
	}
	d := Decide(slice, req, n.id)
	if cached {
		n.cache.put(n.epoch, req, d)
	}
	return d, nil
}

// AuthorizeEach decides, like Authorize for each resource, whether principalID may perform action
// on each of resources, reading the policy once per (kind, Namespace) among them (a list page:
// once). decisions[i] is the decision Authorize returns for resources[i]: each resource is decided
// by Decide over the slice DecisionPolicy would have loaded for it alone. When the policy cannot be
// read it returns a denial for every resource together with the error.
func (n *Native) AuthorizeEach(ctx context.Context, principalID, action string, resources []Resource) ([]Decision, error) {
	out := make([]Decision, len(resources))
	unavailable := func() {
		for i := range out {
			out[i] = deny(n.id, ReasonUnavailable, Evidence{})
		}
	}
	if len(resources) == 0 {
		return out, nil
	}
	if n.src == nil {
		unavailable()
		return out, errNoSource
	}
	// With a cache, only the resources without a decision of this epoch are read and decided.
	cached := n.cache != nil && n.epochKnown
	missing := make([]int, 0, len(resources))
	for i, res := range resources {
		if cached {
			if d, ok := n.cache.get(n.epoch, Request{PrincipalID: principalID, Action: action, Resource: res}); ok {
				out[i] = d
				continue
			}
		}
		missing = append(missing, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	toLoad := make([]Resource, len(missing))
	for j, i := range missing {
		toLoad[j] = resources[i]
	}
	loaded, err := n.src.DecisionPolicies(ctx, principalID, action, toLoad)
	if err == nil && len(loaded) != len(toLoad) {
		err = fmt.Errorf("%d policy slices for %d resources", len(loaded), len(toLoad))
	}
	if err != nil {
		unavailable()
		return out, fmt.Errorf("iam: loading decision policy: %w", err)
	}
	for j, i := range missing {
		req := Request{PrincipalID: principalID, Action: action, Resource: resources[i]}
		out[i] = Decide(loaded[j], req, n.id)
		if cached {
			n.cache.put(n.epoch, req, out[i])
		}
	}
	return out, nil
}

// LookupIdentity resolves one provisioned identity and never creates anything. The (issuer,
// subject) form only finds Principals, the servicePrincipalId form only ServicePrincipals; an
// identity with a Namespace only matches when q.NamespaceID equals it. It returns nil, nil when
// nothing matches, ErrAmbiguousIdentity when several do, ErrInvalidLookup for a malformed query,
// and an error wrapping ErrPolicyInvalid when a matching row is structurally invalid.
func (n *Native) LookupIdentity(ctx context.Context, q IdentityLookup) (*Identity, error) {
	byIssuer := q.Issuer != "" || q.Subject != ""
	bySP := q.ServicePrincipalID != ""
	switch {
	case byIssuer && bySP:
		return nil, fmt.Errorf("%w: issuer/subject and servicePrincipalId are exclusive", ErrInvalidLookup)
	case byIssuer && (q.Issuer == "" || q.Subject == ""):
		return nil, fmt.Errorf("%w: issuer and subject go together", ErrInvalidLookup)
	case !byIssuer && !bySP:
		return nil, fmt.Errorf("%w: no issuer/subject and no servicePrincipalId", ErrInvalidLookup)
	case q.NamespaceID != nil && *q.NamespaceID == "":
		return nil, fmt.Errorf("%w: empty namespaceId", ErrInvalidLookup)
	}
	if n.src == nil {
		return nil, errNoSource
	}
	var rows []Identity
	var err error
	if es, ok := n.src.(epochSource); ok && n.cache != nil {
		var epoch int64
		rows, epoch, err = es.LookupIdentityAtEpoch(ctx, q)
		n.epoch, n.epochKnown = epoch, err == nil
	} else {
		rows, err = n.src.LookupIdentity(ctx, q)
	}
	if err != nil {
		return nil, fmt.Errorf("iam: looking up identity: %w", err)
	}
	var found []Identity
	for _, row := range rows {
		// Re-check what the source matched: a loader mistake must not widen who is found.
		if byIssuer && (row.Kind != IdentityKindPrincipal || row.Issuer != q.Issuer || row.Subject != q.Subject) {
			continue
		}
		if bySP && (row.Kind != IdentityKindServicePrincipal || row.ID != q.ServicePrincipalID) {
			continue
		}
		if row.NamespaceID != nil && !ptrEq(row.NamespaceID, q.NamespaceID) {
			continue
		}
		if err := validateIdentityRow(row); err != nil {
			return nil, err
		}
		found = append(found, row)
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	}
	return nil, fmt.Errorf("%w: %d identities match", ErrAmbiguousIdentity, len(found))
}

// validateIdentityRow applies the per-row identity rules of ValidateSlice to one row.
func validateIdentityRow(row Identity) error {
	v := validator{}
	v.identities([]Identity{row})
	if len(v.problems) > 0 {
		return &ValidationError{Problems: v.problems}
	}
	return nil
}

// CoversIdentityAccess implements the identity-coverage rule (see Covers) for the identities
// holderID and targetID, each read fresh. See Covers for the rule and its fail-closed outcomes;
// storage errors are returned.
func (n *Native) CoversIdentityAccess(ctx context.Context, holderID, targetID string) (bool, error) {
	if n.src == nil {
		return false, errNoSource
	}
	if holderID == "" || targetID == "" {
		return false, nil
	}
	holder, err := n.src.IdentityGrants(ctx, holderID)
	if err != nil {
		return false, fmt.Errorf("iam: loading grants of %q: %w", holderID, err)
	}
	target, err := n.src.IdentityGrants(ctx, targetID)
	if err != nil {
		return false, fmt.Errorf("iam: loading grants of %q: %w", targetID, err)
	}
	return Covers(holder, holderID, target, targetID)
}

// ConfigurationError reports a native IAM driver configuration that is not the empty object: one
// detail per unexpected field (UNKNOWN_FIELD), or one INVALID_TYPE at "" when the configuration is
// not an object. Paths are JSON Pointers relative to the configuration object; submitted values
// are never included.
type ConfigurationError struct {
	problem.Problem
}

// nativeNotEmpty is the fixed sentence of every detail of a ConfigurationError.
const nativeNotEmpty = "Native IAM accepts only an empty configuration."

// Paths returns the path of each detail.
func (e *ConfigurationError) Paths() []string {
	paths := make([]string, len(e.Details))
	for i, d := range e.Details {
		paths[i] = d.Path
	}
	return paths
}

func (e *ConfigurationError) Error() string {
	paths := e.Paths()
	if len(paths) == 1 && paths[0] == "" {
		return "iam: native driver configuration must be an object"
	}
	return "iam: native driver configuration must be empty; unexpected fields: " + strings.Join(paths, ", ")
}

func nativeConfigurationError(details []problem.Detail) *ConfigurationError {
	return &ConfigurationError{Problem: problem.Problem{Code: problem.CodeDriverConfigurationInvalid, Message: nativeNotEmpty, Details: details}}
}

// ValidateNativeConfiguration accepts only an empty configuration object ({}). A nil map (a missing
// or null configuration) is not an object and is refused.
func ValidateNativeConfiguration(raw map[string]any) error {
	if raw == nil {
		return nativeConfigurationError([]problem.Detail{{Path: "", Code: problem.DetailInvalidType, Message: nativeNotEmpty}})
	}
	if len(raw) == 0 {
		return nil
	}
	paths := make([]string, 0, len(raw))
	for key := range raw {
		paths = append(paths, problem.JSONPointer(key))
	}
	slices.Sort(paths)
	details := make([]problem.Detail, len(paths))
	for i, p := range paths {
		details[i] = problem.Detail{Path: p, Code: problem.DetailUnknownField, Message: nativeNotEmpty}
	}
	return nativeConfigurationError(details)
}
