package iam

import (
	"context"
	"slices"
)

// memSource is an in-memory PolicySource over a whole policy. It slices exactly as the PolicySource
// contract says, so the tests also pin down what the PostgreSQL loader must return.
type memSource struct {
	all PolicySlice // the whole store; PolicyNonEmpty is computed, not read
	err error       // returned by every call when set

	batchCalls int // DecisionPolicies calls
}

func (m *memSource) nonEmpty() bool {
	return len(m.all.Identities) > 0 && len(m.all.Roles) > 0 && len(m.all.Bindings) > 0
}

// grantsOf returns the identity rows, memberships, groups, bindings and roles of identityID.
func (m *memSource) grantsOf(identityID string) PolicySlice {
	out := PolicySlice{PolicyNonEmpty: m.nonEmpty()}
	for _, ident := range m.all.Identities {
		if ident.ID == identityID {
			out.Identities = append(out.Identities, ident)
		}
	}
	groupIDs := map[string]bool{}
	for _, ms := range m.all.Memberships {
		if ms.PrincipalID == identityID {
			out.Memberships = append(out.Memberships, ms)
			groupIDs[ms.GroupID] = true
		}
	}
	for _, g := range m.all.Groups {
		if groupIDs[g.ID] {
			out.Groups = append(out.Groups, g)
		}
	}
	roleIDs := map[string]bool{}
	for _, b := range m.all.Bindings {
		if (b.SubjectKind == SubjectKindIdentity && b.SubjectID == identityID) ||
			(b.SubjectKind == SubjectKindGroup && groupIDs[b.SubjectID]) {
			out.Bindings = append(out.Bindings, b)
			roleIDs[b.RoleID] = true
		}
	}
	for _, r := range m.all.Roles {
		if roleIDs[r.ID] {
			out.Roles = append(out.Roles, r)
		}
	}
	return out
}

func (m *memSource) DecisionPolicy(_ context.Context, principalID, action string, resource Resource) (PolicySlice, error) {
	if m.err != nil {
		return PolicySlice{}, m.err
	}
	out := m.grantsOf(principalID)
	for _, r := range m.all.Restrictions {
		if r.Action == action && r.ResourceKind == resource.Kind {
			out.Restrictions = append(out.Restrictions, r)
		}
	}
	return out, nil
}

func (m *memSource) DecisionPolicies(ctx context.Context, principalID, action string, resources []Resource) ([]PolicySlice, error) {
	m.batchCalls++
	out := make([]PolicySlice, len(resources))
	for i, r := range resources {
		var err error
		if out[i], err = m.DecisionPolicy(ctx, principalID, action, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *memSource) IdentityGrants(_ context.Context, identityID string) (PolicySlice, error) {
	if m.err != nil {
		return PolicySlice{}, m.err
	}
	out := m.grantsOf(identityID)
	// Coverage ignores Restrictions; hand them over anyway to prove it.
	out.Restrictions = slices.Clone(m.all.Restrictions)
	return out, nil
}

func (m *memSource) LookupIdentity(_ context.Context, q IdentityLookup) ([]Identity, error) {
	if m.err != nil {
		return nil, m.err
	}
	var out []Identity
	for _, ident := range m.all.Identities {
		if q.ServicePrincipalID != "" && ident.ID == q.ServicePrincipalID {
			out = append(out, ident)
		}
		if q.Issuer != "" && ident.Issuer == q.Issuer && ident.Subject == q.Subject {
			out = append(out, ident)
		}
	}
	return out, nil
}

// clone copies a slice deeply enough for a test to mutate its rows and role permissions.
func clone(s PolicySlice) PolicySlice {
	s.Identities = slices.Clone(s.Identities)
	s.Groups = slices.Clone(s.Groups)
	s.Memberships = slices.Clone(s.Memberships)
	s.Bindings = slices.Clone(s.Bindings)
	s.Roles = slices.Clone(s.Roles)
	for i := range s.Roles {
		s.Roles[i].Permissions = slices.Clone(s.Roles[i].Permissions)
	}
	s.Restrictions = slices.Clone(s.Restrictions)
	return s
}

func ptr(s string) *string { return &s }

func perm(action, kind string) Permission { return Permission{Action: action, ResourceKind: kind} }
