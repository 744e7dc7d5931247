package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// batchRecorder is a DBTX that records the statements of a batch and then sends it.
type batchRecorder struct {
	*pgxpool.Pool
	queries []*pgx.QueuedQuery
}

func (r *batchRecorder) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	r.queries = append(r.queries, b.QueuedQueries...)
	return r.Pool.SendBatch(ctx, b)
}

// TestLoadIAMPolicyTargets seeds a policy large enough for the planner to prefer indexes, then
// checks that a load for several resource ids returns the union of the loads for each id, and that
// neither the one-id statements nor the several-id statements scan a large IAM table sequentially.
func TestLoadIAMPolicyTargets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Owner(t)
	ns, ns2 := "ns_00000000-0000-4000-8000-000000000001", "ns_00000000-0000-4000-8000-000000000002"
	principal := "prn_00000000-0000-4000-8000-000000000000"
	for _, stmt := range []string{
		`INSERT INTO occ.namespaces (id, name) VALUES ('` + ns + `', 'one'), ('` + ns2 + `', 'two')`,
		`INSERT INTO occ.iam_roles (id, namespace_id) VALUES ('role-read', NULL)`,
		`INSERT INTO occ.iam_role_permissions (role_id, action, resource_kind) VALUES ('role-read', 'read', 'agent')`,
		`INSERT INTO occ.iam_identities (id, kind, issuer, subject)
		   SELECT CASE WHEN g = 0 THEN '` + principal + `' ELSE 'prn_' || gen_random_uuid() END, 'principal', 'test', 'user-' || g
		   FROM generate_series(0, 1999) g`,
		`INSERT INTO occ.iam_groups (id, name) VALUES ('g-all', 'all')`,
		`INSERT INTO occ.iam_group_memberships (group_id, principal_id) VALUES ('g-all', '` + principal + `')`,
		// The principal: exact grants on agt-0..agt-999 (every other one in ns2), a Namespace-wide
		// grant, an Installation grant through its Group; 40 000 bindings of others.
		`INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
		   SELECT 'b-' || g, CASE WHEN g % 2 = 0 THEN '` + ns + `' ELSE '` + ns2 + `' END, '` + principal + `', 'role-read', 'agent', 'agt-' || g
		   FROM generate_series(0, 999) g`,
		`INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id) VALUES ('b-ns', '` + ns + `', '` + principal + `', 'role-read')`,
		`INSERT INTO occ.iam_access_bindings (id, group_subject_id, role_id) VALUES ('b-group', 'g-all', 'role-read')`,
		`WITH others AS (SELECT array_agg(id ORDER BY id) AS ids FROM occ.iam_identities WHERE id <> '` + principal + `')
		 INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
		   SELECT 'o-' || g, '` + ns + `', others.ids[1 + g % 1999], 'role-read', 'agent', 'agt-' || g
		   FROM generate_series(1, 40000) g, others`,
		// 20 000 Restrictions over every action and four kinds; 1 in 36 on (read, agent).
		`INSERT INTO occ.iam_restrictions (id, namespace_id, action, resource_kind, resource_id)
		   SELECT 'x-' || g, CASE WHEN g % 5 = 0 THEN NULL ELSE '` + ns + `' END,
		          (ARRAY['create', 'read', 'update', 'delete', 'deploy', 'operate', 'administer', 'read_logs', 'use'])[1 + g % 9],
		          (ARRAY['agent', 'secret', 'configuration', 'agent_revision'])[1 + (g / 9) % 4],
		          CASE WHEN g % 97 = 0 THEN NULL ELSE 'agt-' || (g / 36) END
		   FROM generate_series(1, 20000) g`,
		`ANALYZE occ.iam_identities`, `ANALYZE occ.iam_access_bindings`, `ANALYZE occ.iam_restrictions`,
		`ANALYZE occ.iam_group_memberships`, `ANALYZE occ.iam_roles`, `ANALYZE occ.iam_role_permissions`,
	} {
		if _, err := owner.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	app := db.App(t)

	ids := []string{"agt-2", "agt-3", "agt-150", "agt-998", "agt-30000", "agt-none"}
	target := func(ids ...string) *store.IAMTarget {
		return &store.IAMTarget{Action: "read", ResourceKind: "agent", ResourceIDs: ids, NamespaceID: &ns}
	}
	bindingIDs := func(rows store.IAMPolicyRows) []string {
		var out []string
		for _, b := range rows.Bindings {
			out = append(out, b.ID)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	restrictionIDs := func(rows store.IAMPolicyRows) []string {
		var out []string
		for _, x := range rows.Restrictions {
			out = append(out, x.ID)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}

	// The union of the one-id loads is the several-id load.
	var wantBindings, wantRestrictions []string
	for _, id := range ids {
		rows, err := store.LoadIAMPolicy(ctx, app, principal, target(id))
		if err != nil {
			t.Fatal(err)
		}
		wantBindings = append(wantBindings, bindingIDs(rows)...)
		wantRestrictions = append(wantRestrictions, restrictionIDs(rows)...)
	}
	slices.Sort(wantBindings)
	wantBindings = slices.Compact(wantBindings)
	slices.Sort(wantRestrictions)
	wantRestrictions = slices.Compact(wantRestrictions)
	rows, err := store.LoadIAMPolicy(ctx, app, principal, target(ids...))
	if err != nil {
		t.Fatal(err)
	}
	if got := bindingIDs(rows); !slices.Equal(got, wantBindings) {
		t.Fatalf("bindings of the batch load %v, union of single loads %v", got, wantBindings)
	}
	if got := restrictionIDs(rows); !slices.Equal(got, wantRestrictions) {
		t.Fatalf("restrictions of the batch load %v, union of single loads %v", got, wantRestrictions)
	}
	// b-3 is in ns2: never read for a target in ns.
	if want := []string{"b-150", "b-2", "b-998", "b-group", "b-ns"}; !slices.Equal(wantBindings, want) {
		t.Fatalf("bindings %v, want %v", wantBindings, want)
	}
	if len(wantRestrictions) < 2 {
		t.Fatalf("the seed must put Restrictions on the targets: %v", wantRestrictions)
	}
	if len(rows.Identities) != 1 || len(rows.Memberships) != 1 || !rows.NonEmpty {
		t.Fatalf("identity rows %+v", rows)
	}
	if len(rows.RolePermissions) != 1 {
		t.Fatalf("role rows %+v", rows.RolePermissions)
	}
	if rows, err := store.LoadIAMPolicy(ctx, app, principal, target()); err != nil || len(bindingIDs(rows)) != 2 {
		t.Fatalf("no resource id: %v %v", bindingIDs(rows), err)
	}

	// Plans: no IAM table is read sequentially, for one id or for a page of them.
	page := make([]string, 200)
	for i := range page {
		page[i] = fmt.Sprintf("agt-%d", i*7)
	}
	for name, tg := range map[string]*store.IAMTarget{
		"one id":   target("agt-2"),
		"200 ids":  target(page...),
		"other ns": {Action: "read", ResourceKind: "agent", ResourceIDs: page, NamespaceID: &ns2},
	} {
		rec := &batchRecorder{Pool: app}
		if _, err := store.LoadIAMPolicy(ctx, rec, principal, tg); err != nil {
			t.Fatal(err)
		}
		for _, q := range rec.queries {
			r, err := app.Query(ctx, "EXPLAIN "+q.SQL, q.Arguments...)
			if err != nil {
				t.Fatalf("%s: EXPLAIN: %v", name, err)
			}
			lines, err := pgx.CollectRows(r, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			plan := strings.Join(lines, "\n")
			t.Logf("%s:\n%s", name, plan)
			// The large tables (as bench/cmd/scalecheck lists them, plus the seeded Restrictions);
			// the one-row Role and membership tables may be read whole.
			for _, table := range []string{"iam_access_bindings", "iam_identities", "iam_restrictions"} {
				if strings.Contains(plan, "Seq Scan on "+table+" ") {
					t.Errorf("%s: sequential scan of %s:\n%s\n%s", name, table, q.SQL, plan)
				}
			}
		}
	}
}

// TestIAMPolicyEpochAdvancesWithEveryCommittedPolicyChange: every transaction that changes a
// policy table advances the epoch once when it commits, whatever it changed and however many
// rows; a rolled-back change and a change elsewhere leave it alone; and the lookup that reads it
// finds (or does not find) the identity in the same statement.
func TestIAMPolicyEpochAdvancesWithEveryCommittedPolicyChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner, app := db.Owner(t), db.App(t)
	principal := "prn_00000000-0000-4000-8000-0000000000e1"
	epoch := func() int64 {
		t.Helper()
		ids, e, err := store.LookupIAMIdentitiesAtEpoch(ctx, app, store.LookupIAMIdentitiesParams{ID: principal})
		if err != nil || len(ids) > 1 {
			t.Fatalf("lookup: %v %v", ids, err)
		}
		return e
	}
	last := epoch()
	expect := func(what string, advanced bool) {
		t.Helper()
		now := epoch()
		if (now != last) != advanced || now < last {
			t.Fatalf("%s: epoch %d -> %d (want advanced=%v)", what, last, now, advanced)
		}
		last = now
	}
	exec := func(stmts ...string) error {
		return pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					return fmt.Errorf("%s: %w", s, err)
				}
			}
			return nil
		})
	}
	must := func(stmts ...string) {
		t.Helper()
		if err := exec(stmts...); err != nil {
			t.Fatal(err)
		}
	}
	must(`INSERT INTO occ.iam_identities (id, kind, issuer, subject) VALUES ('` + principal + `', 'principal', 'test', 'e1')`)
	expect("identity inserted", true)
	if ids, _, err := store.LookupIAMIdentitiesAtEpoch(ctx, app, store.LookupIAMIdentitiesParams{Issuer: "test", Subject: "e1"}); err != nil || len(ids) != 1 || ids[0].ID != principal || ids[0].Kind != "principal" {
		t.Fatalf("lookup by issuer: %+v %v", ids, err)
	}
	// Many rows of several tables in one transaction: one step.
	must(`INSERT INTO occ.iam_roles (id) SELECT 'role-' || g FROM generate_series(1, 50) g`,
		`INSERT INTO occ.iam_role_permissions (role_id, action, resource_kind) SELECT 'role-' || g, 'read', 'agent' FROM generate_series(1, 50) g`,
		`INSERT INTO occ.iam_access_bindings (id, identity_subject_id, role_id) SELECT 'b-' || g, '`+principal+`', 'role-' || g FROM generate_series(1, 50) g`)
	before := last
	expect("roles, permissions and bindings", true)
	if last != before+1 {
		t.Fatalf("one transaction advanced the epoch by %d", last-before)
	}
	must(`INSERT INTO occ.iam_groups (id, name) VALUES ('g1', 'one')`)
	expect("group", true)
	must(`INSERT INTO occ.iam_group_memberships (group_id, principal_id) VALUES ('g1', '` + principal + `')`)
	expect("membership", true)
	must(`INSERT INTO occ.iam_restrictions (id, action, resource_kind) VALUES ('x1', 'read', 'agent')`)
	expect("restriction", true)
	must(`UPDATE occ.iam_access_bindings SET runtime_role = NULL WHERE id = 'b-1'`)
	expect("binding updated", true)
	must(`DELETE FROM occ.iam_access_bindings WHERE id = 'b-2'`)
	expect("binding deleted", true)
	must(`DELETE FROM occ.iam_restrictions`)
	expect("restrictions deleted", true)
	must(`TRUNCATE occ.iam_group_memberships`)
	expect("memberships truncated", true)

	if err := exec(`DELETE FROM occ.iam_access_bindings WHERE id = 'b-3'`, `SELECT 1/0`); err == nil {
		t.Fatal("the failing transaction committed")
	}
	expect("rolled back", false)
	must(`INSERT INTO occ.namespaces (id, name) VALUES ('ns_00000000-0000-4000-8000-0000000000e1', 'elsewhere')`)
	expect("a change outside the policy", false)
	must(`DELETE FROM occ.iam_access_bindings WHERE id = 'none'`)
	expect("a statement that changed no row", false)
}
