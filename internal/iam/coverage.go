package iam

import "fmt"

// grant is one effective grant of an identity: one permission of one binding's Role, with
// the combined Namespace scope and the binding's exact resource, if any.
type grant struct {
	perm         Permission
	namespaceID  *string // nil: every Namespace (and none)
	resourceKind string  // with resourceID; empty when the binding has no resource filter
	resourceID   *string // nil: every resource in scope
}

// effectiveGrants lists the effective grants of identityID in slice, which must already be valid.
// found is false when the slice holds no identity with that id.
//
// Each binding naming the identity directly, or (Principals only) naming a Group the identity is a
// member of, contributes its Role's permissions, restricted to the binding's resource kind when the
// binding targets one resource. The grant's scope is the one non-nil Namespace among the
// identity's, the membership's, the binding's and the Role's; when two of them differ the grant can
// never apply and is dropped. A binding whose Role is absent contributes nothing.
func effectiveGrants(slice PolicySlice, identityID string) (grants []grant, found bool) {
	var ident *Identity
	for i := range slice.Identities {
		if slice.Identities[i].ID == identityID {
			ident = &slice.Identities[i]
			break
		}
	}
	if ident == nil {
		return nil, false
	}
	roles := make(map[string]*Role, len(slice.Roles))
	for i := range slice.Roles {
		roles[slice.Roles[i].ID] = &slice.Roles[i]
	}
	// membershipScopes maps a Group to the scopes of the identity's memberships in it (several only
	// in a store with duplicate membership rows; each is evaluated).
	membershipScopes := map[string][]*string{}
	if ident.Kind == IdentityKindPrincipal {
		for i := range slice.Memberships {
			m := &slice.Memberships[i]
			if m.PrincipalID == ident.ID {
				membershipScopes[m.GroupID] = append(membershipScopes[m.GroupID], m.NamespaceID)
			}
		}
	}

	add := func(b *AccessBinding, role *Role, scopes ...*string) {
		ns, ok := combineScopes(scopes...)
		if !ok {
			return
		}
		for _, p := range role.Permissions {
			g := grant{perm: p, namespaceID: ns}
			if b.ResourceKind != nil {
				if p.ResourceKind != *b.ResourceKind {
					continue
				}
				g.resourceKind, g.resourceID = *b.ResourceKind, b.ResourceID
			}
			grants = append(grants, g)
		}
	}
	for i := range slice.Bindings {
		b := &slice.Bindings[i]
		role := roles[b.RoleID]
		if role == nil {
			continue
		}
		switch b.SubjectKind {
		case SubjectKindIdentity:
			if b.SubjectID == ident.ID {
				add(b, role, ident.NamespaceID, b.NamespaceID, role.NamespaceID)
			}
		case SubjectKindGroup:
			for _, ms := range membershipScopes[b.SubjectID] {
				add(b, role, ident.NamespaceID, ms, b.NamespaceID, role.NamespaceID)
			}
		}
	}
	return grants, true
}

// combineScopes returns the unique non-nil Namespace among scopes (nil when all are nil); ok is
// false when two non-nil scopes differ.
func combineScopes(scopes ...*string) (ns *string, ok bool) {
	for _, s := range scopes {
		if s == nil {
			continue
		}
		if ns != nil && *ns != *s {
			return nil, false
		}
		ns = s
	}
	return ns, true
}

// coversGrant reports whether holder grant h covers target grant t: same or broader Namespace (nil
// is broader than any), same or broader resource (no filter is broader than any; otherwise the
// exact same resource), and the same permission, except that agent:administer covers
// agent:read_logs.
func coversGrant(h, t grant) bool {
	if h.namespaceID != nil && !ptrEq(h.namespaceID, t.namespaceID) {
		return false
	}
	if h.resourceID != nil && (t.resourceID == nil || h.resourceKind != t.resourceKind || *h.resourceID != *t.resourceID) {
		return false
	}
	if h.perm == t.perm {
		return true
	}
	return h.perm == Permission{Action: ActionAdminister, ResourceKind: KindAgent} &&
		t.perm == Permission{Action: ActionReadLogs, ResourceKind: KindAgent}
}

// Covers is the identity-coverage rule ("may holder delegate to target?") over two loaded slices:
// true iff every effective grant of targetID in targetSlice is covered by some effective grant of
// holderID in holderSlice. Restrictions are ignored: they apply to everyone alike.
//
// It fails closed: a structurally invalid slice returns false with an error wrapping
// ErrPolicyInvalid, and an unknown holder or target returns false (an unknown target is not
// vacuously covered).
func Covers(holderSlice PolicySlice, holderID string, targetSlice PolicySlice, targetID string) (bool, error) {
	if err := ValidateSlice(holderSlice); err != nil {
		return false, fmt.Errorf("iam: coverage: holder %q: %w", holderID, err)
	}
	if err := ValidateSlice(targetSlice); err != nil {
		return false, fmt.Errorf("iam: coverage: target %q: %w", targetID, err)
	}
	holder, ok := effectiveGrants(holderSlice, holderID)
	if !ok {
		return false, nil
	}
	target, ok := effectiveGrants(targetSlice, targetID)
	if !ok {
		return false, nil
	}
	byPerm := make(map[Permission][]grant, len(holder))
	for _, h := range holder {
		byPerm[h.perm] = append(byPerm[h.perm], h)
	}
	readLogs := Permission{Action: ActionReadLogs, ResourceKind: KindAgent}
	administer := Permission{Action: ActionAdminister, ResourceKind: KindAgent}
	for _, t := range target {
		candidates := byPerm[t.perm]
		if t.perm == readLogs {
			candidates = append(candidates[:len(candidates):len(candidates)], byPerm[administer]...)
		}
		covered := false
		for _, h := range candidates {
			if coversGrant(h, t) {
				covered = true
				break
			}
		}
		if !covered {
			return false, nil
		}
	}
	return true, nil
}
