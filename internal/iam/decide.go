package iam

import (
	"slices"
)

// Decision reasons. They are stable: audit events and tests compare them.
const (
	ReasonAllowed        = "allowed"
	ReasonPolicyInvalid  = "policy invalid"
	ReasonRequestInvalid = "request invalid"
	ReasonNotProvisioned = "not provisioned"
	ReasonAmbiguous      = "ambiguous"
	ReasonOtherNamespace = "other namespace"
	ReasonNoBinding      = "no explicit scoped binding"
	ReasonRestricted     = "restriction"
	// ReasonUnavailable accompanies the error Native.Authorize returns when the policy cannot be
	// read; the caller must act on the error (503), the Decision is a denial only for safety.
	ReasonUnavailable = "policy unavailable"
)

// Decide is the decision algorithm over an already loaded slice, step by step:
// validate the slice, validate the request, find exactly one identity, keep a Namespace-scoped
// identity inside its Namespace, collect the Principal's Groups, match bindings, match
// Restrictions, then deny without a matched binding, deny with a matched Restriction, or allow.
// Every Decision carries driverID.
func Decide(slice PolicySlice, req Request, driverID string) Decision {
	if !slice.validated && ValidateSlice(slice) != nil {
		return deny(driverID, ReasonPolicyInvalid, Evidence{})
	}
	return decideValid(slice, req, driverID)
}

// decideValid is Decide after the structural validation. Some of its branches (an ambiguous
// identity, a Group membership naming a ServicePrincipal) cannot be reached through Decide because
// ValidateSlice already rejects such a slice; they stay as written in the reference, so the
// algorithm keeps failing closed if validation ever changes.
func decideValid(slice PolicySlice, req Request, driverID string) Decision {
	if !validRequest(req) {
		return deny(driverID, ReasonRequestInvalid, Evidence{})
	}
	var ident *Identity
	matches := 0
	for i := range slice.Identities {
		if slice.Identities[i].ID == req.PrincipalID {
			matches++
			ident = &slice.Identities[i]
		}
	}
	switch {
	case matches == 0:
		return deny(driverID, ReasonNotProvisioned, Evidence{})
	case matches > 1:
		return deny(driverID, ReasonAmbiguous, Evidence{})
	}
	res := req.Resource
	if ident.NamespaceID != nil && !ptrEq(ident.NamespaceID, res.NamespaceID) {
		return deny(driverID, ReasonOtherNamespace, Evidence{})
	}

	var groups map[string]struct{}
	if ident.Kind == IdentityKindPrincipal {
		for _, m := range slice.Memberships {
			if m.PrincipalID == ident.ID && (m.NamespaceID == nil || ptrEq(m.NamespaceID, res.NamespaceID)) {
				if groups == nil {
					groups = make(map[string]struct{})
				}
				groups[m.GroupID] = struct{}{}
			}
		}
	}

	roles := make(map[string]*Role, len(slice.Roles))
	for i := range slice.Roles {
		roles[slice.Roles[i].ID] = &slice.Roles[i]
	}
	want := Permission{Action: req.Action, ResourceKind: res.Kind}

	ev := Evidence{IdentityID: ident.ID}
	for i := range slice.Bindings {
		b := &slice.Bindings[i]
		subjectOK := false
		switch b.SubjectKind {
		case SubjectKindIdentity:
			subjectOK = b.SubjectID == ident.ID
		case SubjectKindGroup:
			_, subjectOK = groups[b.SubjectID]
		}
		if !subjectOK {
			continue
		}
		scopeOK := (b.NamespaceID == nil || ptrEq(b.NamespaceID, res.NamespaceID)) &&
			(b.ResourceKind == nil || (*b.ResourceKind == res.Kind && b.ResourceID != nil && *b.ResourceID == res.ID))
		if !scopeOK {
			continue
		}
		role := roles[b.RoleID]
		roleOK := role != nil && (role.NamespaceID == nil || ptrEq(role.NamespaceID, res.NamespaceID)) &&
			slices.Contains(role.Permissions, want)
		if !roleOK {
			continue
		}
		ev.BindingIDs = append(ev.BindingIDs, b.ID)
		ev.RoleIDs = append(ev.RoleIDs, role.ID)
		if b.SubjectKind == SubjectKindGroup {
			ev.GroupIDs = append(ev.GroupIDs, b.SubjectID)
		}
	}
	matched := len(ev.BindingIDs)

	for _, r := range slice.Restrictions {
		if (r.NamespaceID == nil || ptrEq(r.NamespaceID, res.NamespaceID)) && r.Action == req.Action &&
			r.ResourceKind == res.Kind && (r.ResourceID == nil || *r.ResourceID == res.ID) {
			ev.RestrictionIDs = append(ev.RestrictionIDs, r.ID)
		}
	}

	switch {
	case matched == 0:
		return deny(driverID, ReasonNoBinding, ev)
	case len(ev.RestrictionIDs) > 0:
		return deny(driverID, ReasonRestricted, ev)
	}
	return Decision{Allowed: true, Reason: ReasonAllowed, DriverID: driverID, Evidence: normalize(ev)}
}

func deny(driverID, reason string, ev Evidence) Decision {
	return Decision{Allowed: false, Reason: reason, DriverID: driverID, Evidence: normalize(ev)}
}

// normalize sorts and deduplicates every evidence list and turns nil lists into empty ones.
func normalize(ev Evidence) Evidence {
	ev.GroupIDs = sortedUnique(ev.GroupIDs)
	ev.BindingIDs = sortedUnique(ev.BindingIDs)
	ev.RoleIDs = sortedUnique(ev.RoleIDs)
	ev.RestrictionIDs = sortedUnique(ev.RestrictionIDs)
	return ev
}

func sortedUnique(ids []string) []string {
	if len(ids) == 0 {
		return []string{}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// CheckDecision is the caller-side rule of every decision: it reports whether d is a well-formed
// decision of the driver driverID. A caller must treat a malformed decision as a denial (the API:
// 403/503) or as an error (the worker: retry), never as an allow. Well-formed means: driverID is
// non-empty and equals d.DriverID; the reason is non-empty; every evidence id is non-empty and no
// list repeats an id; and an allow names its identity, at least one binding and one Role, and no
// Restriction (a matched Restriction always denies).
func CheckDecision(d Decision, driverID string) bool {
	if driverID == "" || d.DriverID != driverID || d.Reason == "" {
		return false
	}
	ev := d.Evidence
	for _, list := range [][]string{ev.GroupIDs, ev.BindingIDs, ev.RoleIDs, ev.RestrictionIDs} {
		if !nonEmptyUnique(list) {
			return false
		}
	}
	if d.Allowed {
		return ev.IdentityID != "" && len(ev.BindingIDs) > 0 && len(ev.RoleIDs) > 0 && len(ev.RestrictionIDs) == 0
	}
	return true
}

// Allows is the whole caller-side verdict: d is well-formed for driverID and allows.
func Allows(d Decision, driverID string) bool {
	return CheckDecision(d, driverID) && d.Allowed
}

func nonEmptyUnique(ids []string) bool {
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if id == "" {
			return false
		}
		if _, dup := seen[id]; dup {
			return false
		}
		seen[id] = struct{}{}
	}
	return true
}
