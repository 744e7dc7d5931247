package iam

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
)

const (
	driverID = "native-iam"
	insID    = "ins_1"
	nsA      = "ns_a"
	nsB      = "ns_b"
	issuer   = "occ:installation:ins_1:better-auth"
)

// basePolicy is the whole store the decision table reads from.
//
//	prn_admin   bootstrap administrator Role, Installation-wide
//	spn_svc     bootstrap service principal, same Role, Installation-wide
//	prn_alice   via grp_a (Namespace A Group) reader_a Namespace-wide in A, via grp_all global_agent_reader
//	prn_bob     mixed_a on exactly agent agt_1 in A
//	prn_carol   reader_a (a Namespace A Role) through a binding without Namespace
//	prn_dave    global_agent_reader Namespace-wide in B
//	spn_a       Namespace A service principal, reader_a Namespace-wide in A
//	spn_agent   agent agt_1's service principal, config_reader_a in A
//	restrictions: delete agent agt_9 (everywhere), read secret in B, deploy agent agt_1 in A
func basePolicy() PolicySlice {
	return PolicySlice{
		Identities: []Identity{
			{ID: "prn_admin", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_admin"},
			{ID: "spn_svc", Kind: IdentityKindServicePrincipal},
			{ID: "prn_alice", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_alice"},
			{ID: "prn_bob", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_bob"},
			{ID: "prn_carol", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_carol"},
			{ID: "prn_dave", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_dave"},
			{ID: "spn_a", Kind: IdentityKindServicePrincipal, NamespaceID: ptr(nsA)},
			{ID: "spn_agent", Kind: IdentityKindServicePrincipal, NamespaceID: ptr(nsA), AgentID: ptr("agt_1")},
		},
		Groups: []Group{
			{ID: "grp_a", NamespaceID: ptr(nsA), Name: "A readers"},
			{ID: "grp_all", Name: "everyone"},
		},
		Memberships: []GroupMembership{
			{GroupID: "grp_a", PrincipalID: "prn_alice", NamespaceID: ptr(nsA)},
			{GroupID: "grp_all", PrincipalID: "prn_alice"},
		},
		Roles: []Role{
			{ID: "role_admin", Name: "Installation administrator", Permissions: BootstrapAdministratorPermissions()},
			{ID: "reader_a", NamespaceID: ptr(nsA), Permissions: []Permission{
				perm(ActionRead, KindNamespace), perm(ActionRead, KindConfiguration), perm(ActionRead, KindAgent),
			}},
			{ID: "mixed_a", NamespaceID: ptr(nsA), Permissions: []Permission{
				perm(ActionRead, KindAgent), perm(ActionOperate, KindAgent), perm(ActionRead, KindSecret),
			}},
			{ID: "config_reader_a", NamespaceID: ptr(nsA), Permissions: []Permission{perm(ActionRead, KindConfiguration)}},
			{ID: "global_agent_reader", Permissions: []Permission{perm(ActionRead, KindAgent)}},
		},
		Bindings: []AccessBinding{
			{ID: "binding_admin", SubjectKind: SubjectKindIdentity, SubjectID: "prn_admin", RoleID: "role_admin"},
			{ID: "binding_svc", SubjectKind: SubjectKindIdentity, SubjectID: "spn_svc", RoleID: "role_admin"},
			{ID: "binding_grp_a", NamespaceID: ptr(nsA), SubjectKind: SubjectKindGroup, SubjectID: "grp_a", RoleID: "reader_a"},
			{ID: "binding_grp_all", SubjectKind: SubjectKindGroup, SubjectID: "grp_all", RoleID: "global_agent_reader"},
			{ID: "binding_bob", NamespaceID: ptr(nsA), SubjectKind: SubjectKindIdentity, SubjectID: "prn_bob", RoleID: "mixed_a",
				ResourceKind: ptr(KindAgent), ResourceID: ptr("agt_1")},
			{ID: "binding_carol", SubjectKind: SubjectKindIdentity, SubjectID: "prn_carol", RoleID: "reader_a"},
			{ID: "binding_dave", NamespaceID: ptr(nsB), SubjectKind: SubjectKindIdentity, SubjectID: "prn_dave", RoleID: "global_agent_reader"},
			{ID: "binding_spn_a", NamespaceID: ptr(nsA), SubjectKind: SubjectKindIdentity, SubjectID: "spn_a", RoleID: "reader_a"},
			{ID: "binding_agent", NamespaceID: ptr(nsA), SubjectKind: SubjectKindIdentity, SubjectID: "spn_agent", RoleID: "config_reader_a"},
		},
		Restrictions: []Restriction{
			{ID: "restr_agt9", Action: ActionDelete, ResourceKind: KindAgent, ResourceID: ptr("agt_9"), Effect: EffectDeny},
			{ID: "restr_secret_b", NamespaceID: ptr(nsB), Action: ActionRead, ResourceKind: KindSecret, Effect: EffectDeny},
			{ID: "restr_deploy_agt1", NamespaceID: ptr(nsA), Action: ActionDeploy, ResourceKind: KindAgent, ResourceID: ptr("agt_1"), Effect: EffectDeny},
		},
	}
}

func req(principal, action, kind, id string, ns *string) Request {
	return Request{PrincipalID: principal, Action: action, Resource: Resource{Kind: kind, ID: id, NamespaceID: ns}}
}

// adminReadsAgent is the request the structural-validation cases use: allowed on the base policy, so
// only the injected inconsistency can explain a denial.
var adminReadsAgent = req("prn_admin", ActionRead, KindAgent, "agt_1", ptr(nsA))

type decideCase struct {
	name    string
	req     Request
	mutate  func(*PolicySlice) // applied to the loaded slice: injects a corruption
	allowed bool
	reason  string
	ev      *Evidence // checked when set
}

func TestDecide(t *testing.T) {
	t.Parallel()
	cases := []decideCase{
		// identity
		{name: "unknown identity", req: req("prn_nobody", ActionRead, KindAgent, "agt_1", ptr(nsA)), reason: ReasonNotProvisioned},
		{name: "ambiguous identity: two rows with one id are a structural inconsistency",
			req: adminReadsAgent, reason: ReasonPolicyInvalid,
			mutate: func(s *PolicySlice) {
				s.Identities = append(s.Identities, Identity{ID: "prn_admin", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_other"})
			}},
		{name: "namespace-scoped identity outside its namespace", req: req("spn_a", ActionRead, KindAgent, "agt_2", ptr(nsB)), reason: ReasonOtherNamespace},
		{name: "namespace-scoped identity on the installation", req: req("spn_a", ActionRead, KindInstallation, insID, nil), reason: ReasonOtherNamespace},
		{name: "namespace-scoped identity on an agent without namespace", req: req("spn_a", ActionRead, KindAgent, "agt_1", nil), reason: ReasonOtherNamespace},
		{name: "namespace-scoped identity inside its namespace", req: req("spn_a", ActionRead, KindConfiguration, "cfg_1", ptr(nsA)), allowed: true,
			ev: &Evidence{IdentityID: "spn_a", GroupIDs: []string{}, BindingIDs: []string{"binding_spn_a"}, RoleIDs: []string{"reader_a"}, RestrictionIDs: []string{}}},
		{name: "namespace-scoped identity without the permission", req: req("spn_a", ActionUpdate, KindConfiguration, "cfg_1", ptr(nsA)), reason: ReasonNoBinding},
		{name: "agent-owned service principal in its namespace", req: req("spn_agent", ActionRead, KindConfiguration, "cfg_1", ptr(nsA)), allowed: true},

		// groups
		{name: "group grant to a principal", req: req("prn_alice", ActionRead, KindConfiguration, "cfg_1", ptr(nsA)), allowed: true,
			ev: &Evidence{IdentityID: "prn_alice", GroupIDs: []string{"grp_a"}, BindingIDs: []string{"binding_grp_a"}, RoleIDs: []string{"reader_a"}, RestrictionIDs: []string{}}},
		{name: "namespace group membership ignored in another namespace", req: req("prn_alice", ActionRead, KindConfiguration, "cfg_2", ptr(nsB)), reason: ReasonNoBinding,
			ev: &Evidence{IdentityID: "prn_alice", GroupIDs: []string{}, BindingIDs: []string{}, RoleIDs: []string{}, RestrictionIDs: []string{}}},
		{name: "installation group applies in any namespace", req: req("prn_alice", ActionRead, KindAgent, "agt_2", ptr(nsB)), allowed: true,
			ev: &Evidence{IdentityID: "prn_alice", GroupIDs: []string{"grp_all"}, BindingIDs: []string{"binding_grp_all"}, RoleIDs: []string{"global_agent_reader"}, RestrictionIDs: []string{}}},
		{name: "group membership of a service principal is a structural inconsistency",
			req: req("spn_svc", ActionRead, KindAgent, "agt_1", ptr(nsA)), reason: ReasonPolicyInvalid,
			mutate: func(s *PolicySlice) {
				s.Groups = append(s.Groups, Group{ID: "grp_x"})
				s.Memberships = append(s.Memberships, GroupMembership{GroupID: "grp_x", PrincipalID: "spn_svc"})
			}},

		// restrictions
		{name: "restriction with resource id denies over an installation-wide grant", req: req("prn_admin", ActionDelete, KindAgent, "agt_9", ptr(nsA)), reason: ReasonRestricted,
			ev: &Evidence{IdentityID: "prn_admin", GroupIDs: []string{}, BindingIDs: []string{"binding_admin"}, RoleIDs: []string{"role_admin"}, RestrictionIDs: []string{"restr_agt9"}}},
		{name: "restriction with resource id leaves other resources", req: req("prn_admin", ActionDelete, KindAgent, "agt_8", ptr(nsA)), allowed: true},
		{name: "namespace restriction without resource id denies in its namespace", req: req("prn_admin", ActionRead, KindSecret, "sec_1", ptr(nsB)), reason: ReasonRestricted,
			ev: &Evidence{IdentityID: "prn_admin", GroupIDs: []string{}, BindingIDs: []string{"binding_admin"}, RoleIDs: []string{"role_admin"}, RestrictionIDs: []string{"restr_secret_b"}}},
		{name: "namespace restriction leaves other namespaces", req: req("prn_admin", ActionRead, KindSecret, "sec_1", ptr(nsA)), allowed: true},
		{name: "restriction denies service principals too", req: req("spn_svc", ActionDeploy, KindAgent, "agt_1", ptr(nsA)), reason: ReasonRestricted},
		{name: "restriction only for its action", req: req("prn_admin", ActionOperate, KindAgent, "agt_1", ptr(nsA)), allowed: true},
		{name: "no binding reported before restriction, evidence still names it", req: req("prn_bob", ActionDeploy, KindAgent, "agt_1", ptr(nsA)), reason: ReasonNoBinding,
			ev: &Evidence{IdentityID: "prn_bob", GroupIDs: []string{}, BindingIDs: []string{}, RoleIDs: []string{}, RestrictionIDs: []string{"restr_deploy_agt1"}}},

		// exact-resource binding
		{name: "exact binding allows its resource", req: req("prn_bob", ActionRead, KindAgent, "agt_1", ptr(nsA)), allowed: true},
		{name: "exact binding allows another permission of its kind", req: req("prn_bob", ActionOperate, KindAgent, "agt_1", ptr(nsA)), allowed: true},
		{name: "exact binding denies another resource", req: req("prn_bob", ActionRead, KindAgent, "agt_2", ptr(nsA)), reason: ReasonNoBinding},
		{name: "exact binding ignores role permissions of other kinds", req: req("prn_bob", ActionRead, KindSecret, "sec_1", ptr(nsA)), reason: ReasonNoBinding},
		{name: "exact binding ignores same id under another kind", req: req("prn_bob", ActionRead, KindSecret, "agt_1", ptr(nsA)), reason: ReasonNoBinding},
		{name: "exact binding denies its resource id in another namespace", req: req("prn_bob", ActionRead, KindAgent, "agt_1", ptr(nsB)), reason: ReasonNoBinding},

		// scopes
		{name: "installation-wide binding on the installation", req: req("prn_admin", ActionAdminister, KindInstallation, insID, nil), allowed: true},
		{name: "installation-wide binding in any namespace", req: req("prn_admin", ActionCreate, KindConfiguration, nsB, ptr(nsB)), allowed: true},
		{name: "installation-wide binding on namespace create without namespace", req: req("spn_svc", ActionCreate, KindNamespace, insID, nil), allowed: true},
		{name: "installation-wide binding on an agent without namespace", req: req("prn_admin", ActionRead, KindAgent, "agt_1", nil), allowed: true},
		{name: "bootstrap role lacks read_logs", req: req("prn_admin", ActionReadLogs, KindAgent, "agt_1", ptr(nsA)), reason: ReasonNoBinding},
		{name: "bootstrap role lacks use", req: req("prn_admin", ActionUse, KindAgent, "agt_1", ptr(nsA)), reason: ReasonNoBinding},
		{name: "namespace-wide binding in its namespace", req: req("prn_dave", ActionRead, KindAgent, "agt_2", ptr(nsB)), allowed: true},
		{name: "namespace-wide binding in another namespace", req: req("prn_dave", ActionRead, KindAgent, "agt_1", ptr(nsA)), reason: ReasonNoBinding},
		{name: "namespace-wide binding never reaches the installation", req: req("prn_dave", ActionRead, KindInstallation, insID, nil), reason: ReasonNoBinding},
		{name: "namespace role through unscoped binding in its namespace", req: req("prn_carol", ActionRead, KindConfiguration, "cfg_1", ptr(nsA)), allowed: true},
		{name: "namespace role through unscoped binding in another namespace", req: req("prn_carol", ActionRead, KindConfiguration, "cfg_2", ptr(nsB)), reason: ReasonNoBinding},
		{name: "binding to a role absent from the slice never matches", req: req("prn_dave", ActionRead, KindAgent, "agt_2", ptr(nsB)), reason: ReasonNoBinding,
			mutate: func(s *PolicySlice) { s.Roles = nil }},

		// request validation
		{name: "unknown action", req: req("prn_admin", "destroy", KindAgent, "agt_1", ptr(nsA)), reason: ReasonRequestInvalid},
		{name: "unknown kind", req: req("prn_admin", ActionRead, "cluster", "c_1", ptr(nsA)), reason: ReasonRequestInvalid},
		{name: "configuration without namespace", req: req("prn_admin", ActionRead, KindConfiguration, "cfg_1", nil), reason: ReasonRequestInvalid},
		{name: "preset without namespace", req: req("prn_admin", ActionRead, KindPreset, "pre_1", nil), reason: ReasonRequestInvalid},
		{name: "service account without namespace", req: req("prn_admin", ActionRead, KindServiceAccount, "sa_1", nil), reason: ReasonRequestInvalid},
		{name: "secret without namespace", req: req("prn_admin", ActionRead, KindSecret, "sec_1", nil), reason: ReasonRequestInvalid},
		{name: "credential source without namespace", req: req("prn_admin", ActionRead, KindCredentialSource, "cs_1", nil), reason: ReasonRequestInvalid},
		{name: "installation with namespace", req: req("prn_admin", ActionRead, KindInstallation, insID, ptr(nsA)), reason: ReasonRequestInvalid},
		{name: "empty principal id", req: req("", ActionRead, KindAgent, "agt_1", ptr(nsA)), reason: ReasonRequestInvalid},
		{name: "empty resource id", req: req("prn_admin", ActionRead, KindAgent, "", ptr(nsA)), reason: ReasonRequestInvalid},
		{name: "empty namespace id", req: req("prn_admin", ActionRead, KindAgent, "agt_1", ptr("")), reason: ReasonRequestInvalid},

		// evidence
		{name: "evidence sorted and unique", req: req("prn_alice", ActionRead, KindAgent, "agt_1", ptr(nsA)), allowed: true,
			mutate: func(s *PolicySlice) {
				// A direct binding sorting first, on a Role a group binding also uses.
				s.Bindings = append(s.Bindings, AccessBinding{ID: "binding_0_alice", SubjectKind: SubjectKindIdentity, SubjectID: "prn_alice", RoleID: "global_agent_reader"})
			},
			ev: &Evidence{IdentityID: "prn_alice", GroupIDs: []string{"grp_a", "grp_all"},
				BindingIDs: []string{"binding_0_alice", "binding_grp_a", "binding_grp_all"},
				RoleIDs:    []string{"global_agent_reader", "reader_a"}, RestrictionIDs: []string{}}},
	}
	cases = append(cases, structuralCases()...)

	src := &memSource{all: basePolicy()}
	native := NewNative(driverID, src)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			slice, err := src.DecisionPolicy(context.Background(), tc.req.PrincipalID, tc.req.Action, tc.req.Resource)
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidateSlice(slice); err != nil {
				t.Fatalf("the unmodified slice must be valid, so only the mutation explains a denial: %v", err)
			}
			slice = clone(slice)
			if tc.mutate != nil {
				tc.mutate(&slice)
			}
			d := Decide(slice, tc.req, driverID)
			wantReason := tc.reason
			if tc.allowed {
				wantReason = ReasonAllowed
			}
			if d.Allowed != tc.allowed || d.Reason != wantReason {
				t.Fatalf("Decide = allowed %v reason %q, want allowed %v reason %q (evidence %+v)", d.Allowed, d.Reason, tc.allowed, wantReason, d.Evidence)
			}
			if !CheckDecision(d, driverID) {
				t.Fatalf("Decide produced a decision CheckDecision rejects: %+v", d)
			}
			if Allows(d, driverID) != tc.allowed {
				t.Fatalf("Allows = %v, want %v", !tc.allowed, tc.allowed)
			}
			if tc.ev != nil && !reflect.DeepEqual(d.Evidence, *tc.ev) {
				t.Fatalf("evidence = %+v, want %+v", d.Evidence, *tc.ev)
			}
			if tc.mutate == nil {
				// Through the driver, the same decision.
				got, err := native.Authorize(context.Background(), tc.req)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, d) {
					t.Fatalf("Authorize = %+v, Decide = %+v", got, d)
				}
			}
		})
	}
}

// structuralCases violate each structural rule once, in the slice the request loads.
func structuralCases() []decideCase {
	invalid := func(name string, r Request, mutate func(*PolicySlice)) decideCase {
		return decideCase{name: "policy invalid: " + name, req: r, mutate: mutate, reason: ReasonPolicyInvalid}
	}
	admin := adminReadsAgent
	alice := req("prn_alice", ActionRead, KindAgent, "agt_1", ptr(nsA))
	spnA := req("spn_a", ActionRead, KindAgent, "agt_1", ptr(nsA))
	role := func(s *PolicySlice, id string) *Role {
		for i := range s.Roles {
			if s.Roles[i].ID == id {
				return &s.Roles[i]
			}
		}
		panic("no role " + id)
	}
	addBinding := func(s *PolicySlice, b AccessBinding) {
		if b.ID == "" {
			b.ID = "binding_extra"
		}
		if b.SubjectKind == "" {
			b.SubjectKind, b.SubjectID = SubjectKindIdentity, "prn_admin"
		}
		if b.RoleID == "" {
			b.RoleID = "role_admin"
		}
		s.Bindings = append(s.Bindings, b)
	}
	return []decideCase{
		invalid("policy empty", admin, func(s *PolicySlice) { s.PolicyNonEmpty = false }),
		invalid("empty identity id", admin, func(s *PolicySlice) {
			s.Identities = append(s.Identities, Identity{Kind: IdentityKindServicePrincipal})
		}),
		invalid("unknown identity kind", admin, func(s *PolicySlice) { s.Identities[0].Kind = "robot" }),
		invalid("principal without subject", admin, func(s *PolicySlice) { s.Identities[0].Subject = "" }),
		invalid("principal without issuer", admin, func(s *PolicySlice) { s.Identities[0].Issuer = "" }),
		invalid("principal with namespace", admin, func(s *PolicySlice) { s.Identities[0].NamespaceID = ptr(nsA) }),
		invalid("principal owned by an agent", admin, func(s *PolicySlice) { s.Identities[0].AgentID = ptr("agt_1") }),
		invalid("duplicate issuer and subject", admin, func(s *PolicySlice) {
			s.Identities = append(s.Identities, Identity{ID: "prn_twin", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_admin"})
		}),
		invalid("agent-owned service principal without namespace", admin, func(s *PolicySlice) {
			s.Identities = append(s.Identities, Identity{ID: "spn_x", Kind: IdentityKindServicePrincipal, AgentID: ptr("agt_7")})
		}),
		invalid("two service principals for one agent", admin, func(s *PolicySlice) {
			s.Identities = append(s.Identities,
				Identity{ID: "spn_x", Kind: IdentityKindServicePrincipal, NamespaceID: ptr(nsA), AgentID: ptr("agt_7")},
				Identity{ID: "spn_y", Kind: IdentityKindServicePrincipal, NamespaceID: ptr(nsA), AgentID: ptr("agt_7")})
		}),
		invalid("empty namespace id on an identity", req("spn_a", ActionRead, KindAgent, "agt_1", ptr(nsA)), func(s *PolicySlice) {
			s.Identities[0].NamespaceID = ptr("")
		}),
		invalid("duplicate group id", alice, func(s *PolicySlice) { s.Groups = append(s.Groups, s.Groups[0]) }),
		invalid("duplicate role id", admin, func(s *PolicySlice) { s.Roles = append(s.Roles, s.Roles[0]) }),
		invalid("duplicate binding id", admin, func(s *PolicySlice) { s.Bindings = append(s.Bindings, s.Bindings[0]) }),
		invalid("duplicate restriction id", admin, func(s *PolicySlice) {
			s.Restrictions = append(s.Restrictions,
				Restriction{ID: "restr_x", Action: ActionRead, ResourceKind: KindAgent, Effect: EffectDeny, ResourceID: ptr("agt_5")},
				Restriction{ID: "restr_x", Action: ActionRead, ResourceKind: KindAgent, Effect: EffectDeny, ResourceID: ptr("agt_6")})
		}),
		invalid("role without permissions", admin, func(s *PolicySlice) { role(s, "role_admin").Permissions = nil }),
		invalid("role with 65 permissions", admin, func(s *PolicySlice) {
			r := role(s, "role_admin")
			for len(r.Permissions) <= MaxRolePermissions {
				r.Permissions = append(r.Permissions, perm(ActionRead, KindAgent))
			}
		}),
		invalid("role with a duplicate permission", admin, func(s *PolicySlice) {
			r := role(s, "role_admin")
			r.Permissions = append(r.Permissions, perm(ActionRead, KindAgent))
		}),
		invalid("role with an unknown action", admin, func(s *PolicySlice) {
			r := role(s, "role_admin")
			r.Permissions = append(r.Permissions, perm("destroy", KindAgent))
		}),
		invalid("role with an unknown kind", admin, func(s *PolicySlice) {
			r := role(s, "role_admin")
			r.Permissions = append(r.Permissions, perm(ActionRead, "cluster"))
		}),
		invalid("role with a pair outside the supported matrix", admin, func(s *PolicySlice) {
			r := role(s, "role_admin")
			r.Permissions = append(r.Permissions, perm(ActionUpdate, KindNamespace))
		}),
		invalid("binding with unknown subject kind", admin, func(s *PolicySlice) { s.Bindings[0].SubjectKind = "user" }),
		invalid("binding with resource kind but no id", admin, func(s *PolicySlice) {
			addBinding(s, AccessBinding{NamespaceID: ptr(nsA), ResourceKind: ptr(KindAgent)})
		}),
		invalid("binding with resource id but no kind", admin, func(s *PolicySlice) {
			addBinding(s, AccessBinding{NamespaceID: ptr(nsA), ResourceID: ptr("agt_1")})
		}),
		invalid("binding with unknown resource kind", admin, func(s *PolicySlice) {
			addBinding(s, AccessBinding{NamespaceID: ptr(nsA), ResourceKind: ptr("cluster"), ResourceID: ptr("c_1")})
		}),
		invalid("binding on a configuration without namespace", admin, func(s *PolicySlice) {
			addBinding(s, AccessBinding{ResourceKind: ptr(KindConfiguration), ResourceID: ptr("cfg_1")})
		}),
		invalid("binding on a preset without namespace", admin, func(s *PolicySlice) {
			addBinding(s, AccessBinding{ResourceKind: ptr(KindPreset), ResourceID: ptr("pre_1")})
		}),
		invalid("binding on a service account without namespace", admin, func(s *PolicySlice) {
			addBinding(s, AccessBinding{ResourceKind: ptr(KindServiceAccount), ResourceID: ptr("sa_1")})
		}),
		invalid("binding namespace differs from role namespace", spnA, func(s *PolicySlice) {
			// spn_a's reader_a Role is in A; bind it in B as well (subject scope mismatch is a separate rule,
			// so use an unscoped subject).
			s.Identities = append(s.Identities, Identity{ID: "spn_svc", Kind: IdentityKindServicePrincipal})
			addBinding(s, AccessBinding{NamespaceID: ptr(nsB), SubjectKind: SubjectKindIdentity, SubjectID: "spn_svc", RoleID: "reader_a"})
		}),
		invalid("binding subject identity absent", admin, func(s *PolicySlice) {
			addBinding(s, AccessBinding{SubjectKind: SubjectKindIdentity, SubjectID: "prn_ghost"})
		}),
		invalid("binding subject group absent", admin, func(s *PolicySlice) {
			addBinding(s, AccessBinding{SubjectKind: SubjectKindGroup, SubjectID: "grp_ghost"})
		}),
		invalid("namespace-scoped identity bound without namespace", spnA, func(s *PolicySlice) { s.Bindings[0].NamespaceID = nil }),
		invalid("namespace-scoped identity bound in another namespace", spnA, func(s *PolicySlice) {
			s.Bindings[0].NamespaceID = ptr(nsB)
			s.Bindings[0].RoleID = "role_global"
			s.Roles = append(s.Roles, Role{ID: "role_global", Permissions: []Permission{perm(ActionRead, KindAgent)}})
		}),
		invalid("group binding scope differs from group scope", alice, func(s *PolicySlice) {
			for i := range s.Bindings {
				if s.Bindings[i].ID == "binding_grp_a" {
					s.Bindings[i].NamespaceID = nil
				}
			}
		}),
		invalid("membership scope differs from group scope", alice, func(s *PolicySlice) {
			for i := range s.Memberships {
				if s.Memberships[i].GroupID == "grp_a" {
					s.Memberships[i].NamespaceID = nil
				}
			}
		}),
		invalid("membership of an absent group", alice, func(s *PolicySlice) {
			s.Memberships = append(s.Memberships, GroupMembership{GroupID: "grp_ghost", PrincipalID: "prn_alice"})
		}),
		invalid("membership of an absent principal", alice, func(s *PolicySlice) {
			s.Memberships = append(s.Memberships, GroupMembership{GroupID: "grp_all", PrincipalID: "prn_ghost"})
		}),
		invalid("restriction that allows", admin, func(s *PolicySlice) {
			s.Restrictions = append(s.Restrictions, Restriction{ID: "restr_x", Action: ActionRead, ResourceKind: KindAgent, ResourceID: ptr("agt_5"), Effect: "allow"})
		}),
		invalid("restriction with unknown action", admin, func(s *PolicySlice) {
			s.Restrictions = append(s.Restrictions, Restriction{ID: "restr_x", Action: "destroy", ResourceKind: KindAgent, Effect: EffectDeny})
		}),
		invalid("restriction with unknown kind", admin, func(s *PolicySlice) {
			s.Restrictions = append(s.Restrictions, Restriction{ID: "restr_x", Action: ActionRead, ResourceKind: "cluster", Effect: EffectDeny})
		}),
		invalid("namespace restriction on the installation", admin, func(s *PolicySlice) {
			s.Restrictions = append(s.Restrictions, Restriction{ID: "restr_x", NamespaceID: ptr(nsB), Action: ActionRead, ResourceKind: KindInstallation, Effect: EffectDeny})
		}),
		invalid("namespace restriction naming another namespace", admin, func(s *PolicySlice) {
			s.Restrictions = append(s.Restrictions, Restriction{ID: "restr_x", NamespaceID: ptr(nsB), Action: ActionRead, ResourceKind: KindNamespace, ResourceID: ptr(nsA), Effect: EffectDeny})
		}),
	}
}

// The branches ValidateSlice makes unreachable through Decide are still exercised on the algorithm
// after validation, as the reference writes them.
func TestDecideValidDefensiveBranches(t *testing.T) {
	t.Parallel()
	src := &memSource{all: basePolicy()}

	t.Run("ambiguous identity", func(t *testing.T) {
		t.Parallel()
		slice, _ := src.DecisionPolicy(context.Background(), "prn_admin", ActionRead, Resource{Kind: KindAgent})
		slice = clone(slice)
		slice.Identities = append(slice.Identities, Identity{ID: "prn_admin", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_other"})
		d := decideValid(slice, adminReadsAgent, driverID)
		if d.Allowed || d.Reason != ReasonAmbiguous || !CheckDecision(d, driverID) {
			t.Fatalf("got %+v, want a well-formed %q denial", d, ReasonAmbiguous)
		}
	})

	t.Run("group grant ignored for a service principal", func(t *testing.T) {
		t.Parallel()
		r := req("spn_svc", ActionRead, KindAgentRevision, "rev_1", ptr(nsA))
		slice, _ := src.DecisionPolicy(context.Background(), r.PrincipalID, r.Action, r.Resource)
		slice = clone(slice)
		slice.Roles = []Role{{ID: "rev_reader", Permissions: []Permission{perm(ActionRead, KindAgentRevision)}}}
		slice.Bindings = []AccessBinding{{ID: "binding_grp", SubjectKind: SubjectKindGroup, SubjectID: "grp_x", RoleID: "rev_reader"}}
		slice.Groups = []Group{{ID: "grp_x"}}
		slice.Memberships = []GroupMembership{{GroupID: "grp_x", PrincipalID: "spn_svc"}}
		d := decideValid(slice, r, driverID)
		if d.Allowed || d.Reason != ReasonNoBinding {
			t.Fatalf("got %+v, want %q", d, ReasonNoBinding)
		}
		// The same policy with the identity turned into a Principal does grant: only the kind differs.
		slice.Identities = []Identity{{ID: "spn_svc", Kind: IdentityKindPrincipal, Issuer: issuer, Subject: "u_svc"}}
		if d := Decide(slice, r, driverID); !d.Allowed || !reflect.DeepEqual(d.Evidence.GroupIDs, []string{"grp_x"}) {
			t.Fatalf("as a principal: got %+v, want allowed through grp_x", d)
		}
	})
}

func TestValidateSliceReportsEveryProblem(t *testing.T) {
	t.Parallel()
	if err := ValidateSlice(basePolicyWithFlag()); err != nil {
		t.Fatalf("base policy: %v", err)
	}
	s := basePolicyWithFlag()
	s.Identities[0].Kind = "robot"
	s.Roles[0].Permissions = nil
	err := ValidateSlice(s)
	var verr *ValidationError
	if !errors.As(err, &verr) || !errors.Is(err, ErrPolicyInvalid) {
		t.Fatalf("err = %v, want a *ValidationError wrapping ErrPolicyInvalid", err)
	}
	if len(verr.Problems) != 2 {
		t.Fatalf("problems = %q, want 2", verr.Problems)
	}
	// A binding whose Role is absent is not structural (see ValidateSlice).
	s = basePolicyWithFlag()
	s.Roles = s.Roles[1:]
	if err := ValidateSlice(s); err != nil {
		t.Fatalf("absent role: %v", err)
	}
}

func basePolicyWithFlag() PolicySlice {
	s := basePolicy()
	s.PolicyNonEmpty = true
	return s
}

func TestCheckDecision(t *testing.T) {
	t.Parallel()
	allow := Decision{Allowed: true, Reason: ReasonAllowed, DriverID: driverID, Evidence: Evidence{
		IdentityID: "prn_1", GroupIDs: []string{}, BindingIDs: []string{"b_1"}, RoleIDs: []string{"r_1"}, RestrictionIDs: []string{},
	}}
	denial := Decision{Reason: ReasonNoBinding, DriverID: driverID}
	edit := func(d Decision, f func(*Decision)) Decision {
		d.Evidence.GroupIDs = slices.Clone(d.Evidence.GroupIDs)
		d.Evidence.BindingIDs = slices.Clone(d.Evidence.BindingIDs)
		d.Evidence.RoleIDs = slices.Clone(d.Evidence.RoleIDs)
		d.Evidence.RestrictionIDs = slices.Clone(d.Evidence.RestrictionIDs)
		f(&d)
		return d
	}
	cases := []struct {
		name     string
		d        Decision
		driverID string
		ok       bool
	}{
		{"well-formed allow", allow, driverID, true},
		{"well-formed denial", denial, driverID, true},
		{"wrong driver", allow, "other-iam", false},
		{"empty expected driver", edit(allow, func(d *Decision) { d.DriverID = "" }), "", false},
		{"empty reason", edit(denial, func(d *Decision) { d.Reason = "" }), driverID, false},
		{"allow without identity", edit(allow, func(d *Decision) { d.Evidence.IdentityID = "" }), driverID, false},
		{"allow without binding", edit(allow, func(d *Decision) { d.Evidence.BindingIDs = nil }), driverID, false},
		{"allow without role", edit(allow, func(d *Decision) { d.Evidence.RoleIDs = nil }), driverID, false},
		{"allow with empty evidence", edit(allow, func(d *Decision) { d.Evidence = Evidence{} }), driverID, false},
		{"allow with a restriction", edit(allow, func(d *Decision) { d.Evidence.RestrictionIDs = []string{"x"} }), driverID, false},
		{"empty evidence id", edit(denial, func(d *Decision) { d.Evidence.GroupIDs = []string{""} }), driverID, false},
		{"repeated evidence id", edit(allow, func(d *Decision) { d.Evidence.BindingIDs = []string{"b_1", "b_1"} }), driverID, false},
	}
	for _, tc := range cases {
		if got := CheckDecision(tc.d, tc.driverID); got != tc.ok {
			t.Errorf("%s: CheckDecision = %v, want %v", tc.name, got, tc.ok)
		}
		if got := Allows(tc.d, tc.driverID); got != (tc.ok && tc.d.Allowed) {
			t.Errorf("%s: Allows = %v", tc.name, got)
		}
	}
}

func TestMatrixAndBootstrapRole(t *testing.T) {
	t.Parallel()
	boot := BootstrapAdministratorPermissions()
	if len(boot) != 35 {
		t.Fatalf("bootstrap permissions: %d, want 35", len(boot))
	}
	if err := ValidateSlice(PolicySlice{PolicyNonEmpty: true, Roles: []Role{{ID: "r", Permissions: boot}}}); err != nil {
		t.Fatalf("bootstrap role invalid: %v", err)
	}
	for _, p := range []Permission{perm(ActionReadLogs, KindAgent), perm(ActionUse, KindAgent)} {
		if slices.Contains(boot, p) {
			t.Errorf("bootstrap role must not grant %v", p)
		}
	}
	for _, p := range []Permission{perm(ActionUpdate, KindCredentialSource), perm(ActionOperate, KindSecret), perm(ActionRead, KindAgentRevision), perm(ActionAdminister, KindInstallation)} {
		if !slices.Contains(boot, p) {
			t.Errorf("bootstrap role must grant %v", p)
		}
	}
	if boot[0] != perm(ActionAdminister, KindInstallation) || boot[len(boot)-1] != perm(ActionRead, KindAgentRevision) {
		t.Errorf("bootstrap order changed: first %v last %v", boot[0], boot[len(boot)-1])
	}
	boot[0].Action = "mutated"
	if BootstrapAdministratorPermissions()[0].Action != ActionAdminister {
		t.Error("BootstrapAdministratorPermissions returns shared storage")
	}

	if n := len(SupportedPermissions()); n != 37 {
		t.Errorf("supported pairs: %d, want 37", n)
	}
	for _, tc := range []struct {
		action, kind string
		want         bool
	}{
		{ActionRead, KindInstallation, true}, {ActionAdminister, KindInstallation, true}, {ActionCreate, KindInstallation, false},
		{ActionDelete, KindNamespace, true}, {ActionUpdate, KindNamespace, false},
		{ActionOperate, KindSecret, true}, {ActionOperate, KindConfiguration, false},
		{ActionUse, KindAgent, true}, {ActionReadLogs, KindAgent, true},
		{ActionRead, KindAgentRevision, true}, {ActionDelete, KindAgentRevision, false},
		{ActionOperate, KindCredentialSource, true}, {"destroy", KindAgent, false}, {ActionRead, "cluster", false},
	} {
		if got := Supported(tc.action, tc.kind); got != tc.want {
			t.Errorf("Supported(%s, %s) = %v, want %v", tc.action, tc.kind, got, tc.want)
		}
	}
	if len(Actions()) != 9 || len(ResourceKinds()) != 9 {
		t.Errorf("enums: %d actions, %d kinds", len(Actions()), len(ResourceKinds()))
	}
}
