package iam

import (
	"context"

	"github.com/openclaw/occ/internal/store"
)

// StoreSource is the PolicySource over PostgreSQL. Every call reads fresh through index ranges on
// the requesting identity (see store.LoadIAMPolicy). DecisionPolicy leaves out bindings whose
// namespace or resource cannot match the requested resource and Restrictions on other resources:
// the decision they would feed is the same, and reading them would make a decision's cost grow
// with the subject's grants elsewhere. Structural rules over rows that are not read are enforced by
// the database's constraints instead.
type StoreSource struct {
	DB store.DBTX
}

var _ PolicySource = StoreSource{}

func (s StoreSource) DecisionPolicy(ctx context.Context, principalID, action string, resource Resource) (PolicySlice, error) {
	rows, err := store.LoadIAMPolicy(ctx, s.DB, principalID, &store.IAMTarget{
		Action: action, ResourceKind: resource.Kind, ResourceID: resource.ID, NamespaceID: resource.NamespaceID,
	})
	if err != nil {
		return PolicySlice{}, err
	}
	return sliceFromRows(rows), nil
}

func (s StoreSource) IdentityGrants(ctx context.Context, identityID string) (PolicySlice, error) {
	rows, err := store.LoadIAMPolicy(ctx, s.DB, identityID, nil)
	if err != nil {
		return PolicySlice{}, err
	}
	return sliceFromRows(rows), nil
}

func (s StoreSource) LookupIdentity(ctx context.Context, q IdentityLookup) ([]Identity, error) {
	rows, err := store.LookupIAMIdentities(ctx, s.DB, q.Issuer, q.Subject, q.ServicePrincipalID)
	if err != nil {
		return nil, err
	}
	out := make([]Identity, len(rows))
	for i, r := range rows {
		out[i] = identityFromRow(r)
	}
	return out, nil
}

func identityFromRow(r store.IAMIdentity) Identity {
	id := Identity{ID: r.ID, Kind: r.Kind, NamespaceID: r.NamespaceID, AgentID: r.AgentID}
	if r.Issuer != nil {
		id.Issuer = *r.Issuer
	}
	if r.Subject != nil {
		id.Subject = *r.Subject
	}
	return id
}

func sliceFromRows(rows store.IAMPolicyRows) PolicySlice {
	s := PolicySlice{PolicyNonEmpty: rows.NonEmpty}
	for _, r := range rows.Identities {
		s.Identities = append(s.Identities, identityFromRow(r))
	}
	seenGroup := map[string]bool{}
	for _, m := range rows.Memberships {
		s.Memberships = append(s.Memberships, GroupMembership{GroupID: m.GroupID, PrincipalID: m.PrincipalID, NamespaceID: m.NamespaceID})
		if !seenGroup[m.GroupID] {
			seenGroup[m.GroupID] = true
			s.Groups = append(s.Groups, Group{ID: m.GroupID, NamespaceID: m.GroupNamespaceID, Name: m.GroupName})
		}
	}
	seenBinding := map[string]bool{}
	for _, b := range rows.Bindings {
		// Defensive: a binding has one subject, so the UNION cannot return it twice today.
		if seenBinding[b.ID] {
			continue
		}
		seenBinding[b.ID] = true
		ab := AccessBinding{ID: b.ID, NamespaceID: b.NamespaceID, RoleID: b.RoleID, ResourceKind: b.ResourceKind, ResourceID: b.ResourceID}
		if b.IdentitySubjectID != nil {
			ab.SubjectKind, ab.SubjectID = SubjectKindIdentity, *b.IdentitySubjectID
		} else if b.GroupSubjectID != nil {
			ab.SubjectKind, ab.SubjectID = SubjectKindGroup, *b.GroupSubjectID
		}
		s.Bindings = append(s.Bindings, ab)
	}
	roleIndex := map[string]int{}
	for _, p := range rows.RolePermissions {
		i, ok := roleIndex[p.RoleID]
		if !ok {
			role := Role{ID: p.RoleID, NamespaceID: p.RoleNamespaceID}
			if p.RoleName != nil {
				role.Name = *p.RoleName
			}
			s.Roles = append(s.Roles, role)
			i = len(s.Roles) - 1
			roleIndex[p.RoleID] = i
		}
		if p.Action != nil && p.ResourceKind != nil {
			s.Roles[i].Permissions = append(s.Roles[i].Permissions, Permission{Action: *p.Action, ResourceKind: *p.ResourceKind})
		}
	}
	for _, x := range rows.Restrictions {
		s.Restrictions = append(s.Restrictions, Restriction{ID: x.ID, NamespaceID: x.NamespaceID, Action: x.Action,
			ResourceKind: x.ResourceKind, ResourceID: x.ResourceID, Effect: x.Effect})
	}
	return s
}
