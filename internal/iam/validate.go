package iam

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrPolicyInvalid marks a structurally inconsistent persisted policy. Every decision over such a
// policy is a denial (ReasonPolicyInvalid).
var ErrPolicyInvalid = errors.New("iam: policy invalid")

// ValidationError lists every structural problem ValidateSlice found, in a deterministic order.
// Problems name policy row ids and rules, never anything secret.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "iam: policy invalid: " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrPolicyInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrPolicyInvalid }

// namespaceRequiredKinds are the kinds whose requests must name a Namespace.
// The reference lists exactly these; agent and agent_revision are not in the list.
var namespaceRequiredKinds = map[string]struct{}{
	KindConfiguration: {}, KindPreset: {}, KindServiceAccount: {}, KindSecret: {}, KindCredentialSource: {},
}

// bindingNamespaceRequiredKinds are the exact-resource binding kinds that need a Namespace on the
// binding.
var bindingNamespaceRequiredKinds = map[string]struct{}{
	KindConfiguration: {}, KindPreset: {}, KindServiceAccount: {},
}

// ValidateSlice checks the structural rules of persisted policy that can be checked on a slice of
// the policy: unique non-empty ids per collection; identity kinds; Principals with issuer and
// subject, no Namespace and no Agent; unique (issuer, subject); an Agent-owned ServicePrincipal has
// a Namespace and is the only one for its Agent; Roles with 1..64 duplicate-free permissions, each
// in the supported matrix; bindings with a known subject kind, resource kind and id both set or
// both unset, a Namespace when they target a configuration, preset or service_account, a Role
// Namespace equal to theirs when both are set, a subject present in the slice whose Namespace
// equals theirs (an unscoped identity may be bound anywhere; a Group's binding scope equals the
// Group's scope); memberships naming a Principal and a Group of the same scope; deny-only,
// correctly scoped Restrictions; and a non-empty persisted policy.
//
// A binding whose Role is absent from the slice is not a structural error: the loader fetches Roles
// by the ids the bindings name, and the foreign key from binding to Role makes a dangling reference
// impossible in the store, so an absent Role can only mean the Role row was not visible to this
// read; the decision algorithm then simply does not match that binding (roleOK is false), which is
// already the fail-closed outcome.
func ValidateSlice(s PolicySlice) error {
	v := validator{}
	v.check(s)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

type validator struct {
	problems []string
}

func (v *validator) addf(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

// optionalID reports a problem when a nullable id is set to the empty string.
func (v *validator) optionalID(what, id, field string, value *string) {
	if value != nil && *value == "" {
		v.addf("%s %q: %s must be null or non-empty", what, id, field)
	}
}

// unique indexes list by id, reporting empty and duplicate ids; it returns the index and the
// entries with a usable id, in order, for the kind-specific checks.
func unique[T any](v *validator, what string, list []T, id func(*T) string) (map[string]*T, []*T) {
	byID := make(map[string]*T, len(list))
	valid := make([]*T, 0, len(list))
	for i := range list {
		e := &list[i]
		switch key := id(e); {
		case key == "":
			v.addf("%s #%d: id must be non-empty", what, i)
		case byID[key] != nil:
			v.addf("%s %q: duplicate id", what, key)
		default:
			byID[key] = e
			valid = append(valid, e)
		}
	}
	return byID, valid
}

func (v *validator) check(s PolicySlice) {
	if !s.PolicyNonEmpty {
		v.addf("persisted policy must hold at least one identity, one role and one binding")
	}
	identities := v.identities(s.Identities)
	groups := v.groups(s.Groups)
	v.memberships(s.Memberships, identities, groups)
	roles := v.roles(s.Roles)
	v.bindings(s.Bindings, identities, groups, roles)
	v.restrictions(s.Restrictions)
}

func (v *validator) identities(list []Identity) map[string]*Identity {
	byID, valid := unique(v, "identity", list, func(i *Identity) string { return i.ID })
	type issuerSubject struct{ issuer, subject string }
	principals := make(map[issuerSubject]string)
	agents := make(map[string]string)
	for _, ident := range valid {
		v.optionalID("identity", ident.ID, "namespaceId", ident.NamespaceID)
		v.optionalID("identity", ident.ID, "agentId", ident.AgentID)
		switch ident.Kind {
		case IdentityKindPrincipal:
			if ident.Issuer == "" || ident.Subject == "" {
				v.addf("principal %q: issuer and subject are required", ident.ID)
			}
			if ident.NamespaceID != nil {
				v.addf("principal %q: a principal is never namespace-scoped", ident.ID)
			}
			if ident.AgentID != nil {
				v.addf("principal %q: only a service principal can be agent-owned", ident.ID)
			}
			key := issuerSubject{ident.Issuer, ident.Subject}
			if other, dup := principals[key]; dup {
				v.addf("principal %q: (issuer, subject) already used by %q", ident.ID, other)
			} else {
				principals[key] = ident.ID
			}
		case IdentityKindServicePrincipal:
			if ident.AgentID == nil {
				break
			}
			if ident.NamespaceID == nil {
				v.addf("service principal %q: an agent-owned service principal needs a namespace", ident.ID)
			}
			if other, dup := agents[*ident.AgentID]; dup {
				v.addf("service principal %q: agent %q already owns %q", ident.ID, *ident.AgentID, other)
			} else {
				agents[*ident.AgentID] = ident.ID
			}
		default:
			v.addf("identity %q: unknown kind %q", ident.ID, ident.Kind)
		}
	}
	return byID
}

func (v *validator) groups(list []Group) map[string]*Group {
	byID, valid := unique(v, "group", list, func(g *Group) string { return g.ID })
	for _, g := range valid {
		v.optionalID("group", g.ID, "namespaceId", g.NamespaceID)
	}
	return byID
}

func (v *validator) memberships(list []GroupMembership, identities map[string]*Identity, groups map[string]*Group) {
	for i, m := range list {
		fail := func(problem string) {
			v.addf("membership #%d (group %q, principal %q): %s", i, m.GroupID, m.PrincipalID, problem)
		}
		if m.NamespaceID != nil && *m.NamespaceID == "" {
			fail("namespaceId must be null or non-empty")
		}
		if ident, ok := identities[m.PrincipalID]; !ok || ident.Kind != IdentityKindPrincipal {
			fail("must reference a principal")
		}
		g, ok := groups[m.GroupID]
		if !ok {
			fail("group not found")
			continue
		}
		if !ptrEq(m.NamespaceID, g.NamespaceID) {
			fail("membership scope must equal the group's scope")
		}
	}
}

func (v *validator) roles(list []Role) map[string]*Role {
	byID, valid := unique(v, "role", list, func(r *Role) string { return r.ID })
	for _, r := range valid {
		v.optionalID("role", r.ID, "namespaceId", r.NamespaceID)
		if n := len(r.Permissions); n < 1 || n > MaxRolePermissions {
			v.addf("role %q: must hold 1..%d permissions, holds %d", r.ID, MaxRolePermissions, n)
		}
		// A Role holds at most a few dozen permissions: a quadratic scan is cheaper than a map, and
		// this runs on every decision.
		for j, p := range r.Permissions {
			if !Supported(p.Action, p.ResourceKind) {
				v.addf("role %q: permission %s:%s is not in the supported matrix", r.ID, p.ResourceKind, p.Action)
			}
			if slices.Contains(r.Permissions[:j], p) {
				v.addf("role %q: duplicate permission %s:%s", r.ID, p.ResourceKind, p.Action)
			}
		}
	}
	return byID
}

func (v *validator) bindings(list []AccessBinding, identities map[string]*Identity, groups map[string]*Group, roles map[string]*Role) {
	_, valid := unique(v, "binding", list, func(b *AccessBinding) string { return b.ID })
	for _, b := range valid {
		v.optionalID("binding", b.ID, "namespaceId", b.NamespaceID)
		v.optionalID("binding", b.ID, "resourceId", b.ResourceID)
		if b.RoleID == "" {
			v.addf("binding %q: roleId must be non-empty", b.ID)
		}
		if (b.ResourceKind == nil) != (b.ResourceID == nil) {
			v.addf("binding %q: resourceKind and resourceId must be both set or both unset", b.ID)
		}
		if b.ResourceKind != nil {
			if !ValidResourceKind(*b.ResourceKind) {
				v.addf("binding %q: unknown resourceKind %q", b.ID, *b.ResourceKind)
			}
			if _, need := bindingNamespaceRequiredKinds[*b.ResourceKind]; need && b.NamespaceID == nil {
				v.addf("binding %q: a binding on a %s needs a namespaceId", b.ID, *b.ResourceKind)
			}
		}
		if r, ok := roles[b.RoleID]; ok && r.NamespaceID != nil && b.NamespaceID != nil && *r.NamespaceID != *b.NamespaceID {
			v.addf("binding %q: role %q belongs to another namespace", b.ID, r.ID)
		}
		switch b.SubjectKind {
		case SubjectKindIdentity:
			ident, ok := identities[b.SubjectID]
			if !ok {
				v.addf("binding %q: subject identity %q not found", b.ID, b.SubjectID)
				break
			}
			if ident.NamespaceID != nil && !ptrEq(ident.NamespaceID, b.NamespaceID) {
				v.addf("binding %q: a namespace-scoped identity can only be bound in its own namespace", b.ID)
			}
		case SubjectKindGroup:
			g, ok := groups[b.SubjectID]
			if !ok {
				v.addf("binding %q: subject group %q not found", b.ID, b.SubjectID)
				break
			}
			if !ptrEq(g.NamespaceID, b.NamespaceID) {
				v.addf("binding %q: a group binding's scope must equal the group's scope", b.ID)
			}
		default:
			v.addf("binding %q: unknown subjectKind %q", b.ID, b.SubjectKind)
		}
	}
}

func (v *validator) restrictions(list []Restriction) {
	_, valid := unique(v, "restriction", list, func(r *Restriction) string { return r.ID })
	for _, r := range valid {
		v.optionalID("restriction", r.ID, "namespaceId", r.NamespaceID)
		v.optionalID("restriction", r.ID, "resourceId", r.ResourceID)
		if r.Effect != EffectDeny {
			v.addf("restriction %q: effect must be %q", r.ID, EffectDeny)
		}
		if !ValidAction(r.Action) {
			v.addf("restriction %q: unknown action %q", r.ID, r.Action)
		}
		if !ValidResourceKind(r.ResourceKind) {
			v.addf("restriction %q: unknown resourceKind %q", r.ID, r.ResourceKind)
		}
		if r.NamespaceID == nil {
			continue
		}
		if r.ResourceKind == KindInstallation {
			v.addf("restriction %q: a namespace-scoped restriction may not target the installation", r.ID)
		}
		if r.ResourceKind == KindNamespace && r.ResourceID != nil && *r.ResourceID != *r.NamespaceID {
			v.addf("restriction %q: a namespace-scoped restriction may only name its own namespace", r.ID)
		}
	}
}

// validRequest is the request rule of the decision algorithm: action and kind in the enums,
// non-empty ids, a Namespace for the kinds that always live in one, and none for the Installation
// (which is never inside a Namespace).
func validRequest(req Request) bool {
	if req.PrincipalID == "" || req.Resource.ID == "" {
		return false
	}
	if !ValidAction(req.Action) || !ValidResourceKind(req.Resource.Kind) {
		return false
	}
	ns := req.Resource.NamespaceID
	if ns != nil && *ns == "" {
		return false
	}
	if _, need := namespaceRequiredKinds[req.Resource.Kind]; need && ns == nil {
		return false
	}
	if req.Resource.Kind == KindInstallation && ns != nil {
		return false
	}
	return true
}
