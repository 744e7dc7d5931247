package iam

import (
	"context"
	"slices"

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
		Action: action, ResourceKind: resource.Kind, ResourceIDs: []string{resource.ID}, NamespaceID: resource.NamespaceID,
	})
	if err != nil {
		return PolicySlice{}, err
	}
	return sliceFromRows(rows), nil
}

// DecisionPolicies reads, for each (kind, Namespace) among resources (a list page: one), the union
// of the slices DecisionPolicy would read for each of its resources, in one round trip, and splits
// it per resource (narrowTo, through a splitter), the same filter the single-resource statements apply. So slices[i]
// holds exactly the rows DecisionPolicy(principalID, action, resources[i]) returns.
func (s StoreSource) DecisionPolicies(ctx context.Context, principalID, action string, resources []Resource) ([]PolicySlice, error) {
	out := make([]PolicySlice, len(resources))
	for _, group := range groupByScope(resources) {
		first := resources[group[0]]
		ids := make([]string, 0, len(group))
		seen := make(map[string]struct{}, len(group))
		for _, i := range group {
			if _, dup := seen[resources[i].ID]; !dup {
				seen[resources[i].ID] = struct{}{}
				ids = append(ids, resources[i].ID)
			}
		}
		rows, err := store.LoadIAMPolicy(ctx, s.DB, principalID, &store.IAMTarget{
			Action: action, ResourceKind: first.Kind, ResourceIDs: ids, NamespaceID: first.NamespaceID,
		})
		if err != nil {
			return nil, err
		}
		split := newSplitter(sliceFromRows(rows), action, first.Kind, first.NamespaceID)
		for _, i := range group {
			out[i] = split.slice(resources[i].ID)
		}
	}
	return out, nil
}

// groupByScope returns the indexes of resources grouped by (kind, Namespace), groups in order of
// first appearance.
func groupByScope(resources []Resource) [][]int {
	type scope struct {
		kind  string
		ns    string
		hasNS bool
	}
	index := map[scope]int{}
	var groups [][]int
	for i, r := range resources {
		k := scope{kind: r.Kind}
		if r.NamespaceID != nil {
			k.ns, k.hasNS = *r.NamespaceID, true
		}
		g, ok := index[k]
		if !ok {
			g = len(groups)
			index[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// narrowTo keeps, of a slice loaded for several resources of res's kind and Namespace, what
// store.LoadIAMPolicy reads for res alone: every identity, membership and Group (they do not depend
// on the target); the bindings of the three target branches (no resource and no Namespace; no
// resource and res's Namespace; exactly res, with no Namespace or res's), in SQL semantics (a
// Namespace equality never holds for a null Namespace); the Roles those bindings reference; and the
// Restrictions on (action, kind) with no resource id or res's, and no Namespace or res's. Row order
// is kept. The slices it returns share the identity, Group and membership rows of union.
func narrowTo(union PolicySlice, action string, res Resource) PolicySlice {
	return newSplitter(union, action, res.Kind, res.NamespaceID).slice(res.ID)
}

// splitter is narrowTo for many resources of one kind in one Namespace: it indexes the union once
// (rows for every resource, rows by resource id), so that splitting a page costs the rows each
// resource keeps rather than the whole union per resource.
type splitter struct {
	union              PolicySlice
	sharedBindings     []int            // no resource, the Namespace matches
	exactBindings      map[string][]int // exactly that resource (kind and Namespace match)
	roleIndex          map[string]int
	sharedRestrictions []int            // no resource id
	exactRestrictions  map[string][]int // that resource id
	// unionValid: the union passed ValidateSlice, so each slice of it does too. A slice keeps the
	// union's identities, groups and memberships, a subset of its bindings and restrictions, and
	// the roles those bindings name; every check is about one entry, a duplicate id, or a lookup
	// of an identity, group or role that the slice keeps whenever the union has it. An invalid
	// union leaves each slice to be validated on its own, as before.
	unionValid bool
}

func newSplitter(union PolicySlice, action, kind string, namespaceID *string) *splitter {
	sameNS := func(ns *string) bool {
		return ns == nil || (namespaceID != nil && *ns == *namespaceID)
	}
	s := &splitter{union: union, exactBindings: map[string][]int{}, roleIndex: make(map[string]int, len(union.Roles)),
		exactRestrictions: map[string][]int{}, unionValid: ValidateSlice(union) == nil}
	for i, b := range union.Bindings {
		switch {
		case !sameNS(b.NamespaceID):
		case b.ResourceKind == nil:
			s.sharedBindings = append(s.sharedBindings, i)
		case *b.ResourceKind == kind && b.ResourceID != nil:
			s.exactBindings[*b.ResourceID] = append(s.exactBindings[*b.ResourceID], i)
		}
	}
	for i, r := range union.Roles {
		if _, dup := s.roleIndex[r.ID]; !dup {
			s.roleIndex[r.ID] = i
		}
	}
	for i, x := range union.Restrictions {
		switch {
		case x.Action != action || x.ResourceKind != kind || !sameNS(x.NamespaceID):
		case x.ResourceID == nil:
			s.sharedRestrictions = append(s.sharedRestrictions, i)
		default:
			s.exactRestrictions[*x.ResourceID] = append(s.exactRestrictions[*x.ResourceID], i)
		}
	}
	return s
}

// slice returns the rows of the union the resource id (of the splitter's kind and Namespace) keeps.
func (s *splitter) slice(id string) PolicySlice {
	u := s.union
	out := PolicySlice{Identities: u.Identities, Groups: u.Groups, Memberships: u.Memberships, PolicyNonEmpty: u.PolicyNonEmpty,
		validated: s.unionValid}
	var roles []int
	seenRole := map[int]struct{}{}
	for _, i := range mergeSorted(s.sharedBindings, s.exactBindings[id]) {
		b := u.Bindings[i]
		out.Bindings = append(out.Bindings, b)
		if r, ok := s.roleIndex[b.RoleID]; ok {
			if _, dup := seenRole[r]; !dup {
				seenRole[r] = struct{}{}
				roles = append(roles, r)
			}
		}
	}
	slices.Sort(roles)
	for _, r := range roles {
		out.Roles = append(out.Roles, u.Roles[r])
	}
	for _, i := range mergeSorted(s.sharedRestrictions, s.exactRestrictions[id]) {
		out.Restrictions = append(out.Restrictions, u.Restrictions[i])
	}
	return out
}

// mergeSorted merges two ascending index lists.
func mergeSorted(a, b []int) []int {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]int, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0] <= b[0] {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

func (s StoreSource) IdentityGrants(ctx context.Context, identityID string) (PolicySlice, error) {
	rows, err := store.LoadIAMPolicy(ctx, s.DB, identityID, nil)
	if err != nil {
		return PolicySlice{}, err
	}
	return sliceFromRows(rows), nil
}

func (s StoreSource) LookupIdentity(ctx context.Context, q IdentityLookup) ([]Identity, error) {
	rows, err := store.LookupIAMIdentities(ctx, s.DB, lookupParams(q))
	if err != nil {
		return nil, err
	}
	return identitiesFromRows(rows), nil
}

// LookupIdentityAtEpoch is LookupIdentity that also reads the policy epoch in the same statement
// (epochSource).
func (s StoreSource) LookupIdentityAtEpoch(ctx context.Context, q IdentityLookup) ([]Identity, int64, error) {
	rows, epoch, err := store.LookupIAMIdentitiesAtEpoch(ctx, s.DB, lookupParams(q))
	if err != nil {
		return nil, 0, err
	}
	return identitiesFromRows(rows), epoch, nil
}

func lookupParams(q IdentityLookup) store.LookupIAMIdentitiesParams {
	return store.LookupIAMIdentitiesParams{Issuer: q.Issuer, Subject: q.Subject, ID: q.ServicePrincipalID}
}

func identitiesFromRows(rows []store.IAMIdentity) []Identity {
	out := make([]Identity, len(rows))
	for i, r := range rows {
		out[i] = identityFromRow(r)
	}
	return out
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
