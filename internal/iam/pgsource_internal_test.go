package iam

import "testing"

// TestSplitterValidatesTheUnionOnce: slices of a valid union skip Decide's validation and decide
// as before; when the union is invalid, each slice is validated on its own, so a resource the
// invalid entry does not touch is still decided and the one it touches is refused.
func TestSplitterValidatesTheUnionOnce(t *testing.T) {
	ns := "ns_1"
	agent := KindAgent
	union := func(restrictionEffect string) PolicySlice {
		return PolicySlice{
			PolicyNonEmpty: true,
			Identities:     []Identity{{ID: "prn_1", Kind: IdentityKindPrincipal, Issuer: "test", Subject: "alice"}},
			Roles:          []Role{{ID: "role_read", NamespaceID: &ns, Permissions: []Permission{{Action: ActionRead, ResourceKind: KindAgent}}}},
			Bindings: []AccessBinding{{ID: "b_1", NamespaceID: &ns, SubjectKind: SubjectKindIdentity, SubjectID: "prn_1",
				RoleID: "role_read"}},
			Restrictions: []Restriction{{ID: "x_1", NamespaceID: &ns, Action: ActionRead, ResourceKind: agent,
				ResourceID: ptr("agt_b"), Effect: restrictionEffect}},
		}
	}
	decide := func(u PolicySlice, id string) (Decision, bool) {
		slice := newSplitter(u, ActionRead, KindAgent, &ns).slice(id)
		return Decide(slice, Request{PrincipalID: "prn_1", Action: ActionRead,
			Resource: Resource{Kind: KindAgent, ID: id, NamespaceID: &ns}}, "test"), slice.validated
	}

	valid := union(EffectDeny)
	if d, validated := decide(valid, "agt_a"); !validated || !d.Allowed {
		t.Errorf("valid union, agt_a: validated %v, %+v; want validated and allowed", validated, d)
	}
	if d, validated := decide(valid, "agt_b"); !validated || d.Allowed {
		t.Errorf("valid union, agt_b: validated %v, %+v; want validated and refused by the restriction", validated, d)
	}

	invalid := union("allow") // only deny restrictions are valid
	if ValidateSlice(invalid) == nil {
		t.Fatal("the invalid union passed validation")
	}
	if d, validated := decide(invalid, "agt_a"); validated || !d.Allowed {
		t.Errorf("invalid union, agt_a: validated %v, %+v; want its own validation and allowed", validated, d)
	}
	if d, validated := decide(invalid, "agt_b"); validated || d.Allowed || d.Reason != ReasonPolicyInvalid {
		t.Errorf("invalid union, agt_b: validated %v, %+v; want refused as %q", validated, d, ReasonPolicyInvalid)
	}
}
