package iam

import (
	"fmt"
	"testing"
)

// benchSlice builds the slice a busy human would load: memberships in `groups` Groups (half of them
// Namespace Groups), `bindings` bindings spread over exact Agents, Namespace-wide and Group grants,
// one Role per binding and `restrictions` Restrictions on the requested (action, kind).
func benchSlice(groups, bindings, restrictions int) (PolicySlice, Request) {
	s := PolicySlice{
		PolicyNonEmpty: true,
		Identities:     []Identity{{ID: "prn_bench", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_bench"}},
	}
	nsOf := func(i int) *string { return ptr(fmt.Sprintf("ns_%d", i%8)) }
	for g := range groups {
		var ns *string
		if g%2 == 0 {
			ns = nsOf(g)
		}
		id := fmt.Sprintf("grp_%d", g)
		s.Groups = append(s.Groups, Group{ID: id, NamespaceID: ns})
		s.Memberships = append(s.Memberships, GroupMembership{GroupID: id, PrincipalID: "prn_bench", NamespaceID: ns})
	}
	for b := range bindings {
		roleID := fmt.Sprintf("role_%d", b)
		ns := nsOf(b)
		s.Roles = append(s.Roles, Role{ID: roleID, NamespaceID: ns, Permissions: []Permission{
			perm(ActionRead, KindAgent), perm(ActionOperate, KindAgent), perm(ActionRead, KindSecret), perm(ActionRead, KindConfiguration),
		}})
		binding := AccessBinding{ID: fmt.Sprintf("binding_%d", b), NamespaceID: ns, SubjectKind: SubjectKindIdentity, SubjectID: "prn_bench", RoleID: roleID}
		switch b % 3 {
		case 0:
			binding.ResourceKind, binding.ResourceID = ptr(KindAgent), ptr(fmt.Sprintf("agt_%d", b))
		case 1:
			if groups > 0 {
				g := s.Groups[b%groups]
				binding.SubjectKind, binding.SubjectID, binding.NamespaceID = SubjectKindGroup, g.ID, g.NamespaceID
				s.Roles[len(s.Roles)-1].NamespaceID = g.NamespaceID
			}
		}
		s.Bindings = append(s.Bindings, binding)
	}
	for r := range restrictions {
		s.Restrictions = append(s.Restrictions, Restriction{
			ID: fmt.Sprintf("restr_%d", r), NamespaceID: nsOf(r + 1), Action: ActionOperate, ResourceKind: KindAgent,
			ResourceID: ptr(fmt.Sprintf("agt_x%d", r)), Effect: EffectDeny,
		})
	}
	return s, req("prn_bench", ActionOperate, KindAgent, "agt_0", nsOf(0))
}

func BenchmarkDecide(b *testing.B) {
	for _, size := range []struct{ groups, bindings, restrictions int }{{0, 1, 0}, {4, 16, 4}, {16, 64, 16}} {
		s, r := benchSlice(size.groups, size.bindings, size.restrictions)
		if err := ValidateSlice(s); err != nil {
			b.Fatal(err)
		}
		if d := Decide(s, r, driverID); !d.Allowed {
			b.Fatalf("benchmark request must be allowed: %+v", d)
		}
		b.Run(fmt.Sprintf("groups=%d/bindings=%d/restrictions=%d", size.groups, size.bindings, size.restrictions), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Decide(s, r, driverID)
			}
		})
	}
}

func BenchmarkCovers(b *testing.B) {
	s, _ := benchSlice(16, 64, 0)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := Covers(s, "prn_bench", s, "prn_bench"); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
