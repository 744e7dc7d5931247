package iam_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const driverID = "native-iam"

func ptr(s string) *string { return &s }

func mustExec(tb testing.TB, db *pgxpool.Pool, sql string, args ...any) {
	tb.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// policyDB seeds two Namespaces, a human Principal, a Namespace-scoped service principal, Roles
// and bindings through the application role (Groups and their memberships through the owner, as
// operators manage them).
type policyDB struct {
	app          *pgxpool.Pool
	owner        *pgxpool.Pool
	ins, ns, ns2 string
	human, sp    string
	agent, other string
}

func newPolicyDB(t *testing.T) policyDB {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	p := policyDB{app: db.App(t), owner: db.Owner(t), ins: "ins_" + uuid.NewString(), ns: "ns_" + uuid.NewString(),
		ns2: "ns_" + uuid.NewString(), human: "prn_" + uuid.NewString(), sp: "spn_" + uuid.NewString(),
		agent: "agt_" + uuid.NewString(), other: "agt_" + uuid.NewString()}
	if err := store.InsertInstallation(ctx, p.app, p.ins, "Test"); err != nil {
		t.Fatal(err)
	}
	fx := fixture.New(t, p.app)
	fx.NamespaceNamed(p.ns, "one")
	fx.NamespaceNamed(p.ns2, "two")
	if err := store.InsertIAMIdentity(ctx, p.app, store.IAMIdentity{ID: p.human, Kind: "principal", Issuer: ptr("test"), Subject: ptr("alice")}); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertIAMIdentity(ctx, p.app, store.IAMIdentity{ID: p.sp, Kind: "service_principal", NamespaceID: &p.ns}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id    string
		ns    *string
		perms [][2]string
	}{
		{"role-agent-reader", &p.ns, [][2]string{{"read", "agent"}}},
		{"role-agent-deployer", nil, [][2]string{{"deploy", "agent"}, {"read", "agent"}}},
		{"role-ns2-reader", &p.ns2, [][2]string{{"read", "agent"}}},
	} {
		if err := store.InsertIAMRole(ctx, p.app, r.id, r.ns, nil, r.perms); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p policyDB) bind(t *testing.T, b store.IAMBinding) {
	t.Helper()
	if err := store.InsertIAMBinding(context.Background(), p.app, b); err != nil {
		t.Fatal(err)
	}
}

func (p policyDB) authorize(t *testing.T, principal, action string, res iam.Resource) iam.Decision {
	t.Helper()
	d, err := iam.NewNative(driverID, iam.StoreSource{DB: p.app}).Authorize(context.Background(), iam.Request{
		PrincipalID: principal, Action: action, Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	if !iam.CheckDecision(d, driverID) {
		t.Fatalf("malformed decision %+v", d)
	}
	return d
}

func TestStoreSourceDecisions(t *testing.T) {
	t.Parallel()
	p := newPolicyDB(t)
	agent := iam.Resource{Kind: "agent", ID: p.agent, NamespaceID: &p.ns}
	otherAgent := iam.Resource{Kind: "agent", ID: p.other, NamespaceID: &p.ns}
	agentInNs2 := iam.Resource{Kind: "agent", ID: p.agent, NamespaceID: &p.ns2}

	// The policy has no binding yet: the store is "empty" and every decision is a denial.
	if d := p.authorize(t, p.human, "read", agent); d.Allowed || d.Reason != iam.ReasonPolicyInvalid {
		t.Fatalf("empty policy: %+v", d)
	}

	p.bind(t, store.IAMBinding{ID: "b-exact", NamespaceID: &p.ns, IdentitySubjectID: &p.human, RoleID: "role-agent-reader",
		ResourceKind: ptr("agent"), ResourceID: &p.agent})
	if d := p.authorize(t, p.human, "read", agent); !d.Allowed || d.Evidence.BindingIDs[0] != "b-exact" {
		t.Fatalf("exact binding: %+v", d)
	}
	if d := p.authorize(t, p.human, "read", otherAgent); d.Allowed || d.Reason != iam.ReasonNoBinding {
		t.Fatalf("exact binding on another agent: %+v", d)
	}
	if d := p.authorize(t, p.human, "deploy", agent); d.Allowed {
		t.Fatalf("action outside the role: %+v", d)
	}
	if d := p.authorize(t, "prn_"+uuid.NewString(), "read", agent); d.Allowed || d.Reason != iam.ReasonNotProvisioned {
		t.Fatalf("unknown principal: %+v", d)
	}

	// Namespace-wide binding of an Installation Role for the service principal.
	p.bind(t, store.IAMBinding{ID: "b-sp-ns", NamespaceID: &p.ns, IdentitySubjectID: &p.sp, RoleID: "role-agent-deployer"})
	if d := p.authorize(t, p.sp, "deploy", otherAgent); !d.Allowed {
		t.Fatalf("namespace-wide binding: %+v", d)
	}
	if d := p.authorize(t, p.sp, "deploy", agentInNs2); d.Allowed || d.Reason != iam.ReasonOtherNamespace {
		t.Fatalf("namespace-scoped identity outside its namespace: %+v", d)
	}

	// A Role of another Namespace never applies here.
	p.bind(t, store.IAMBinding{ID: "b-ns2-role", NamespaceID: &p.ns2, IdentitySubjectID: &p.human, RoleID: "role-ns2-reader"})
	if d := p.authorize(t, p.human, "read", agentInNs2); !d.Allowed {
		t.Fatalf("role in its own namespace: %+v", d)
	}
	if d := p.authorize(t, p.human, "read", otherAgent); d.Allowed {
		t.Fatalf("role of another namespace applied: %+v", d)
	}

	// A Group grant reaches its human members.
	mustExec(t, p.owner, `INSERT INTO occ.iam_groups (id, name) VALUES ('g-ops', 'ops')`)
	mustExec(t, p.owner, `INSERT INTO occ.iam_group_memberships (group_id, principal_id) VALUES ('g-ops', $1)`, p.human)
	p.bind(t, store.IAMBinding{ID: "b-group", GroupSubjectID: ptr("g-ops"), RoleID: "role-agent-deployer"})
	if d := p.authorize(t, p.human, "deploy", otherAgent); !d.Allowed || d.Evidence.GroupIDs[0] != "g-ops" {
		t.Fatalf("group grant: %+v", d)
	}

	// A Restriction denies over every grant, and a policy change is seen on the next call.
	mustExec(t, p.app, `INSERT INTO occ.iam_restrictions (id, namespace_id, action, resource_kind, resource_id)
	  VALUES ('x-deploy', $1, 'deploy', 'agent', $2)`, p.ns, p.other)
	if d := p.authorize(t, p.human, "deploy", otherAgent); d.Allowed || d.Reason != iam.ReasonRestricted {
		t.Fatalf("restriction: %+v", d)
	}
	if d := p.authorize(t, p.sp, "deploy", otherAgent); d.Allowed || d.Reason != iam.ReasonRestricted {
		t.Fatalf("restriction for a service principal: %+v", d)
	}

	// A Role without permissions makes the policy invalid for whoever it reaches: deny.
	if err := store.InsertIAMRole(context.Background(), p.app, "role-empty", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	p.bind(t, store.IAMBinding{ID: "b-empty", IdentitySubjectID: &p.human, RoleID: "role-empty"})
	if d := p.authorize(t, p.human, "read", agent); d.Allowed || d.Reason != iam.ReasonPolicyInvalid {
		t.Fatalf("empty role: %+v", d)
	}
}

func TestStoreSourceCoverageAndLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPolicyDB(t)
	p.bind(t, store.IAMBinding{ID: "b-human", IdentitySubjectID: &p.human, RoleID: "role-agent-deployer"})
	p.bind(t, store.IAMBinding{ID: "b-sp", NamespaceID: &p.ns, IdentitySubjectID: &p.sp, RoleID: "role-agent-reader"})
	native := iam.NewNative(driverID, iam.StoreSource{DB: p.app})
	if ok, err := native.CoversIdentityAccess(ctx, p.human, p.sp); !ok || err != nil {
		t.Fatalf("installation-wide deployer covers a namespace reader: %v %v", ok, err)
	}
	if ok, err := native.CoversIdentityAccess(ctx, p.sp, p.human); ok || err != nil {
		t.Fatalf("namespace reader covers an installation deployer: %v %v", ok, err)
	}
	id, err := native.LookupIdentity(ctx, iam.IdentityLookup{Issuer: "test", Subject: "alice"})
	if err != nil || id == nil || id.ID != p.human {
		t.Fatalf("lookup human: %+v %v", id, err)
	}
	id, err = native.LookupIdentity(ctx, iam.IdentityLookup{ServicePrincipalID: p.sp, NamespaceID: &p.ns2})
	if err != nil || id != nil {
		t.Fatalf("lookup namespace-scoped SP from another namespace: %+v %v", id, err)
	}
}

// BenchmarkAuthorize measures one decision against PostgreSQL (loopback, private cluster) when the
// whole policy holds n bindings, half of them exact-resource grants of the deciding principal on
// other Agents. With indexed loads the cost must stay flat as n grows.
func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("bindings=%d", n), func(b *testing.B) {
			ctx := context.Background()
			db := pgtest.New(b)
			owner := db.Owner(b)
			app := db.App(b)
			ns := "ns_" + uuid.NewString()
			principal := "prn_" + uuid.NewString()
			mustExec(b, owner, `INSERT INTO occ.namespaces (id, name) VALUES ($1, 'bench')`, ns)
			mustExec(b, owner, `INSERT INTO occ.iam_roles (id, namespace_id) VALUES ('role-read', $1)`, ns)
			mustExec(b, owner, `INSERT INTO occ.iam_role_permissions (role_id, action, resource_kind) VALUES ('role-read', 'read', 'agent')`)
			// 1000 identities; the deciding principal is one of them.
			mustExec(b, owner, `INSERT INTO occ.iam_identities (id, kind, issuer, subject)
			  SELECT CASE WHEN g = 0 THEN $1 ELSE 'prn_' || gen_random_uuid() END, 'principal', 'bench', 'user-' || g
			  FROM generate_series(0, 999) g`, principal)
			// Half the bindings belong to the principal (exact grants on other Agents), half to others.
			mustExec(b, owner, `INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
			  SELECT 'b-' || g, $1,
			         CASE WHEN g % 2 = 0 THEN $2 ELSE (SELECT id FROM occ.iam_identities ORDER BY id OFFSET (g % 1000) LIMIT 1) END,
			         'role-read', 'agent', 'agt_' || gen_random_uuid()
			  FROM generate_series(1, $3::int) g`, ns, principal, n)
			target := "agt_" + uuid.NewString()
			mustExec(b, owner, `INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
			  VALUES ('b-target', $1, $2, 'role-read', 'agent', $3)`, ns, principal, target)
			mustExec(b, owner, `ANALYZE occ.iam_access_bindings`)
			native := iam.NewNative(driverID, iam.StoreSource{DB: app})
			req := iam.Request{PrincipalID: principal, Action: "read", Resource: iam.Resource{Kind: "agent", ID: target, NamespaceID: &ns}}
			if d, err := native.Authorize(ctx, req); err != nil || !d.Allowed {
				b.Fatalf("benchmark decision must allow: %+v %v", d, err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := native.Authorize(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAuthorizeEachMatchesAuthorize seeds, round after round, random policy (bindings on the
// Installation, on Namespaces, on single resources of several kinds, Group bindings, Restrictions
// on some items and on whole kinds, rows in another Namespace, and a few structurally invalid rows
// on single items: a Role without permissions, a Role of another Namespace, a Group binding outside
// its Group's scope) and checks that one AuthorizeEach over a page of resources returns, for every
// resource, exactly the Decision (allowed, reason and evidence) of Authorize on that resource alone.
func TestAuthorizeEachMatchesAuthorize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPolicyDB(t)
	native := iam.NewNative(driverID, iam.StoreSource{DB: p.app})
	rng := rand.New(rand.NewPCG(7, 11))

	human2 := "prn_" + uuid.NewString()
	spInst := "spn_" + uuid.NewString()
	if err := store.InsertIAMIdentity(ctx, p.app, store.IAMIdentity{ID: human2, Kind: "principal", Issuer: ptr("test"), Subject: ptr("bob")}); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertIAMIdentity(ctx, p.app, store.IAMIdentity{ID: spInst, Kind: "service_principal"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id    string
		ns    *string
		perms [][2]string
	}{
		{"role-read-all", nil, [][2]string{{"read", "agent"}, {"read", "secret"}, {"read", "service_account"}, {"read", "agent_revision"}}},
		{"role-ns-read-all", &p.ns, [][2]string{{"read", "agent"}, {"read", "secret"}, {"read", "service_account"}, {"read", "agent_revision"}}},
		{"role-secret-reader", nil, [][2]string{{"read", "secret"}}},
		{"role-ns2-secret-reader", &p.ns2, [][2]string{{"read", "secret"}, {"read", "service_account"}}},
	} {
		if err := store.InsertIAMRole(ctx, p.app, r.id, r.ns, nil, r.perms); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.InsertIAMRole(ctx, p.app, "role-empty", nil, nil, nil); err != nil { // invalid: no permission
		t.Fatal(err)
	}
	mustExec(t, p.owner, `INSERT INTO occ.iam_groups (id, namespace_id, name) VALUES ('g-inst', NULL, 'inst'), ('g-ns', $1, 'ns'), ('g-ns2', $2, 'ns2')`, p.ns, p.ns2)
	for _, m := range []struct {
		group, principal string
		ns               *string
	}{{"g-inst", p.human, nil}, {"g-ns", p.human, &p.ns}, {"g-ns2", p.human, &p.ns2}, {"g-ns", human2, &p.ns}} {
		mustExec(t, p.owner, `INSERT INTO occ.iam_group_memberships (group_id, principal_id, namespace_id) VALUES ($1, $2, $3)`, m.group, m.principal, m.ns)
	}

	kinds := []string{"agent", "secret", "service_account", "agent_revision"}
	items := make([]string, 12)
	for i := range items {
		items[i] = fmt.Sprintf("item-%02d", i)
	}
	nss := []*string{nil, &p.ns, &p.ns2}
	pick := func(n int) int { return rng.IntN(n) }
	validRoles := []string{"role-agent-reader", "role-agent-deployer", "role-read-all", "role-ns-read-all", "role-secret-reader", "role-ns2-secret-reader"}
	seq := 0
	addBinding := func(exact, corrupt bool) {
		seq++
		b := store.IAMBinding{ID: fmt.Sprintf("b-%03d", seq), RoleID: validRoles[pick(len(validRoles))]}
		switch s := pick(6); {
		case s < 2:
			b.IdentitySubjectID = &p.human
		case s == 2:
			b.IdentitySubjectID = &human2
		case s == 3:
			b.IdentitySubjectID = &spInst
		case s == 4:
			b.IdentitySubjectID = &p.sp
		default:
			b.GroupSubjectID = ptr([]string{"g-inst", "g-ns", "g-ns2"}[pick(3)])
		}
		if exact {
			kind := kinds[pick(len(kinds))]
			b.ResourceKind, b.ResourceID = &kind, &items[pick(len(items))]
			b.NamespaceID = nss[pick(3)]
			if kind == "service_account" && b.NamespaceID == nil {
				b.NamespaceID = &p.ns
			}
		} else {
			b.NamespaceID = nss[pick(3)]
		}
		if b.GroupSubjectID != nil && !corrupt {
			// A valid Group binding has its Group's scope.
			switch *b.GroupSubjectID {
			case "g-inst":
				b.NamespaceID = nil
			case "g-ns":
				b.NamespaceID = &p.ns
			case "g-ns2":
				b.NamespaceID = &p.ns2
			}
		}
		if b.IdentitySubjectID != nil && *b.IdentitySubjectID == p.sp && !corrupt {
			b.NamespaceID = &p.ns // a Namespace service principal is bound in its Namespace
		}
		if corrupt && pick(2) == 0 {
			b.RoleID = "role-empty"
		} else if corrupt {
			b.RoleID = "role-ns2-reader" // a Role of ns2, wrong for a binding in ns
			b.NamespaceID = &p.ns
		}
		if b.ResourceKind != nil && (*b.ResourceKind == "service_account") && b.NamespaceID == nil {
			b.NamespaceID = &p.ns
		}
		// The generator may draw a binding identical to an earlier one; the store refuses copies
		// (they grant nothing more), so the draw is skipped.
		if err := store.InsertIAMBinding(context.Background(), p.app, b); err != nil && !store.RefusedBy(err, store.ConstraintIdenticalBinding) {
			t.Fatal(err)
		}
	}
	addRestriction := func() {
		seq++
		ns := nss[pick(3)]
		var rid *string
		if pick(4) != 0 {
			rid = &items[pick(len(items))]
		}
		action := "read"
		if pick(5) == 0 {
			action = "deploy"
		}
		mustExec(t, p.app, `INSERT INTO occ.iam_restrictions (id, namespace_id, action, resource_kind, resource_id) VALUES ($1, $2, $3, $4, $5)`,
			fmt.Sprintf("x-%03d", seq), ns, action, kinds[pick(len(kinds))], rid)
	}

	principals := []string{p.human, human2, p.sp, spInst, "prn_" + uuid.NewString()}
	reasons := map[string]int{}
	mixedBatches := 0 // batches with both an allow and a "policy invalid"
	compare := func(round int, principal string, resources []iam.Resource) {
		t.Helper()
		got, err := native.AuthorizeEach(ctx, principal, "read", resources)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(resources) {
			t.Fatalf("%d decisions for %d resources", len(got), len(resources))
		}
		allowed, invalid := false, false
		for i, res := range resources {
			want, err := native.Authorize(ctx, iam.Request{PrincipalID: principal, Action: "read", Resource: res})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[i], want) {
				t.Fatalf("round %d, %s reads %+v (ns %v):\n AuthorizeEach %+v\n Authorize     %+v", round, principal, res, *res.NamespaceID, got[i], want)
			}
			reasons[want.Reason]++
			allowed = allowed || want.Allowed
			invalid = invalid || want.Reason == iam.ReasonPolicyInvalid
		}
		if allowed && invalid {
			mixedBatches++
		}
	}
	for round := range 8 {
		for range 10 {
			addBinding(pick(3) != 0, false)
		}
		if round%2 == 1 {
			addBinding(true, true) // one invalid row on a single resource
		}
		for range 3 {
			addRestriction()
		}
		for _, principal := range principals {
			for _, kind := range kinds {
				for _, ns := range []*string{&p.ns, &p.ns2} {
					var page []iam.Resource
					for _, id := range items {
						page = append(page, iam.Resource{Kind: kind, ID: id, NamespaceID: ns})
					}
					// A repeated id and one nobody holds a grant on.
					page = append(page, page[0], iam.Resource{Kind: kind, ID: "item-none", NamespaceID: ns})
					compare(round, principal, page)
				}
			}
			// Several kinds and Namespaces in one call: one read per (kind, Namespace), same decisions.
			var mixed []iam.Resource
			for i := range 10 {
				mixed = append(mixed, iam.Resource{Kind: kinds[i%len(kinds)], ID: items[pick(len(items))], NamespaceID: nss[1+i%2]})
			}
			compare(round, principal, mixed)
		}
	}
	t.Logf("decisions by reason: %v; batches mixing allows and invalid-policy denials: %d", reasons, mixedBatches)
	for _, r := range []string{iam.ReasonAllowed, iam.ReasonNoBinding, iam.ReasonRestricted, iam.ReasonPolicyInvalid, iam.ReasonNotProvisioned, iam.ReasonOtherNamespace} {
		if reasons[r] == 0 {
			t.Errorf("the random policies never produced a %q decision", r)
		}
	}
	if mixedBatches == 0 {
		t.Error("no batch mixed allowed items with items whose own slice is invalid")
	}
}

func TestAuthorizeEachStorageError(t *testing.T) {
	t.Parallel()
	p := newPolicyDB(t)
	native := iam.NewNative(driverID, iam.StoreSource{DB: p.app})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := []iam.Resource{{Kind: "agent", ID: p.agent, NamespaceID: &p.ns}, {Kind: "agent", ID: p.other, NamespaceID: &p.ns}}
	got, err := native.AuthorizeEach(ctx, p.human, "read", res)
	if err == nil || len(got) != 2 || got[0].Allowed || got[1].Allowed || got[0].Reason != iam.ReasonUnavailable {
		t.Fatalf("cancelled read: %+v %v", got, err)
	}
	if got, err := native.AuthorizeEach(context.Background(), p.human, "read", nil); err != nil || len(got) != 0 {
		t.Fatalf("no resources: %+v %v", got, err)
	}
}

// BenchmarkAuthorizeEach compares deciding a page of 1 000 Agents with one AuthorizeEach (one
// policy read) against 1 000 Authorize calls (one read each), on the policy of BenchmarkAuthorize
// (the principal holds exact grants on half the page).
func BenchmarkAuthorizeEach(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	owner := db.Owner(b)
	app := db.App(b)
	ns := "ns_" + uuid.NewString()
	principal := "prn_" + uuid.NewString()
	mustExec(b, owner, `INSERT INTO occ.namespaces (id, name) VALUES ($1, 'bench')`, ns)
	mustExec(b, owner, `INSERT INTO occ.iam_roles (id, namespace_id) VALUES ('role-read', $1)`, ns)
	mustExec(b, owner, `INSERT INTO occ.iam_role_permissions (role_id, action, resource_kind) VALUES ('role-read', 'read', 'agent')`)
	mustExec(b, owner, `INSERT INTO occ.iam_identities (id, kind, issuer, subject) VALUES ($1, 'principal', 'bench', 'user')`, principal)
	resources := make([]iam.Resource, 1000)
	ids := make([]string, len(resources))
	for i := range resources {
		ids[i] = "agt_" + uuid.NewString()
		resources[i] = iam.Resource{Kind: "agent", ID: ids[i], NamespaceID: &ns}
	}
	mustExec(b, owner, `INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
	  SELECT 'b-' || g, $1, $2, 'role-read', 'agent', ($3::text[])[g] FROM generate_series(1, 1000, 2) g`, ns, principal, ids)
	// An administrator of the Namespace: one Namespace-wide binding of a Role with every
	// permission a Namespace Role may hold, as apiload's list-agents reads with.
	admin := "prn_" + uuid.NewString()
	mustExec(b, owner, `INSERT INTO occ.iam_identities (id, kind, issuer, subject) VALUES ($1, 'principal', 'bench', 'admin')`, admin)
	mustExec(b, owner, `INSERT INTO occ.iam_roles (id, namespace_id) VALUES ('role-admin', $1)`, ns)
	for _, p := range iam.SupportedPermissions() {
		if p.ResourceKind == iam.KindInstallation {
			continue
		}
		mustExec(b, owner, `INSERT INTO occ.iam_role_permissions (role_id, action, resource_kind) VALUES ('role-admin', $1, $2)`, p.Action, p.ResourceKind)
	}
	mustExec(b, owner, `INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id) VALUES ('b-admin', $1, $2, 'role-admin')`, ns, admin)
	mustExec(b, owner, `ANALYZE occ.iam_access_bindings`)
	native := iam.NewNative(driverID, iam.StoreSource{DB: app})
	b.Run("AuthorizeEach/1000/namespace-administrator", func(b *testing.B) {
		for b.Loop() {
			d, err := native.AuthorizeEach(ctx, admin, "read", resources)
			if err != nil || !d[0].Allowed || !d[1].Allowed {
				b.Fatal(d[0], d[1], err)
			}
		}
	})
	b.Run("AuthorizeEach/1000", func(b *testing.B) {
		for b.Loop() {
			d, err := native.AuthorizeEach(ctx, principal, "read", resources)
			if err != nil || !d[0].Allowed || d[1].Allowed {
				b.Fatal(d[0], d[1], err)
			}
		}
	})
	b.Run("Authorize/1000", func(b *testing.B) {
		for b.Loop() {
			for _, res := range resources {
				if _, err := native.Authorize(ctx, iam.Request{PrincipalID: principal, Action: "read", Resource: res}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
