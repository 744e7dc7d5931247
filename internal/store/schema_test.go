package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func id(prefix string) string { return prefix + "_" + uuid.NewString() }

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// refusedBy reports whether err is PostgreSQL refusing a write by the CHECK constraint c.
func refusedBy(err error, c store.Constraint) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.ConstraintName == string(c)
}

// agentFixture is one Namespace with one Agent and one revision, written as the application role.
type agentFixture struct {
	ns, agent, rev, cfg, spn, actor string
	agentRow                        store.AgentRow
	revRow                          store.RevisionRow
}

func newFixture(t *testing.T, app *pgxpool.Pool) agentFixture {
	t.Helper()
	fx := fixture.New(t, app)
	ns := fx.Namespace()
	a := fx.Agent(store.AgentRow{NamespaceID: ns.ID, Name: "triage"})
	r := fx.Revision(a, nil)
	return agentFixture{ns: ns.ID, agent: a.ID, rev: r.ID, cfg: a.ConfigurationID, spn: a.ServicePrincipalID, actor: id("prn"),
		agentRow: a, revRow: r}
}

func TestApplicationRoleCannotDeleteWorkAuditOrRewriteRevisions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	f := newFixture(t, app)
	fixture.New(t, app).Enqueue(fixture.NamespaceWork(f.ns, platform.NamespaceTargetReady, f.actor))
	if _, err := app.Exec(ctx, `INSERT INTO occ.audit_events (id, kind, actor_id, action, resource_kind, resource_id, outcome)
	  VALUES ($1, 'mutation', $2, 'openclaw.namespaces.create', 'namespace', $3, 'success')`, id("aud"), f.actor, f.ns); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, sql string }{
		{"delete controller_work", `DELETE FROM occ.controller_work`},
		{"delete audit_events", `DELETE FROM occ.audit_events`},
		{"update audit_events", `UPDATE occ.audit_events SET outcome = 'failure'`},
		{"update agent_revisions", `UPDATE occ.agent_revisions SET revision_number = 2`},
		{"delete agent_revisions", `DELETE FROM occ.agent_revisions`},
		{"delete agents", `DELETE FROM occ.agents`},
		{"delete namespaces", `DELETE FROM occ.namespaces`},
		{"delete installation", `DELETE FROM occ.installation`},
		{"change work actor", `UPDATE occ.controller_work SET actor_id = 'prn_other'`},
		{"change work target", `UPDATE occ.controller_work SET namespace_target = 'deleted'`},
	} {
		_, err := app.Exec(ctx, tc.sql)
		if sqlState(err) != "42501" { // insufficient_privilege
			t.Errorf("%s: want insufficient_privilege, got %v", tc.name, err)
		}
	}
	// Even the owner cannot rewrite a revision or an audit event: triggers guard them.
	owner := db.Owner(t)
	if _, err := owner.Exec(ctx, `UPDATE occ.agent_revisions SET revision_number = 2`); sqlState(err) != "55000" {
		t.Errorf("owner update revision: %v", err)
	}
	if _, err := owner.Exec(ctx, `DELETE FROM occ.audit_events`); sqlState(err) != "55000" {
		t.Errorf("owner delete audit: %v", err)
	}
	// Nor a work item's owner, targets or actor (migration 0014 fires the guard only for updates
	// that name those columns; the queue's own updates do not).
	for _, sql := range []string{
		`UPDATE occ.controller_work SET actor_id = 'prn_other'`,
		`UPDATE occ.controller_work SET namespace_target = 'deleted'`,
		`UPDATE occ.controller_work SET created_at = created_at - interval '1 day'`,
	} {
		if _, err := owner.Exec(ctx, sql); sqlState(err) != "55000" {
			t.Errorf("owner %s: %v", sql, err)
		}
	}
	// The result data rule holds for the owner too (migration 0015 tests result_data IS NULL first).
	if _, err := owner.Exec(ctx, `UPDATE occ.controller_work SET state = 'succeeded', completed_at = clock_timestamp(),
	    reason_code = 'REVISION_ACTIVATED', result_data = '{"warnings":[{"code":"BAD","pluginId":"p"}]}'`); !refusedBy(err, store.ConstraintWorkResultValid) {
		t.Errorf("invalid result data: %v", err)
	}
	for _, sql := range []string{
		`UPDATE occ.controller_work SET available_at = clock_timestamp()`,
		`UPDATE occ.controller_work SET work_kind = work_kind`, // named, but unchanged
	} {
		if _, err := owner.Exec(ctx, sql); err != nil {
			t.Errorf("owner %s: %v", sql, err)
		}
	}
}

func TestNamespaceLifecycleTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	ns := id("ns")
	if _, err := app.Exec(ctx, `INSERT INTO occ.namespaces (id, name) VALUES ($1, 'lifecycle')`, ns); err != nil {
		t.Fatal(err)
	}
	set := func(status string) error {
		_, err := app.Exec(ctx, `UPDATE occ.namespaces SET status = $2 WHERE id = $1`, ns, status)
		return err
	}
	if err := set("ready"); err != nil {
		t.Fatal(err)
	}
	if err := set("provisioning"); sqlState(err) != "23514" {
		t.Fatalf("ready -> provisioning: want 23514, got %v", err)
	}
	if err := set("failed"); sqlState(err) != "23514" {
		t.Fatalf("ready -> failed: want 23514, got %v", err)
	}
	if err := set("deleting"); err != nil {
		t.Fatal(err)
	}
	if err := set("ready"); sqlState(err) != "23514" {
		t.Fatalf("deleting -> ready: want 23514, got %v", err)
	}
	if _, err := app.Exec(ctx, `UPDATE occ.namespaces SET deleted_at = clock_timestamp() WHERE id = $1`, ns); err != nil {
		t.Fatal(err)
	}
	// A tombstone is frozen and keeps the name reserved.
	if _, err := app.Exec(ctx, `UPDATE occ.namespaces SET deleted_at = NULL WHERE id = $1`, ns); sqlState(err) != "55000" {
		t.Fatalf("un-tombstone: want 55000, got %v", err)
	}
	if _, err := app.Exec(ctx, `INSERT INTO occ.namespaces (id, name) VALUES ($1, 'lifecycle')`, id("ns")); sqlState(err) != "23505" {
		t.Fatalf("reuse tombstoned name: want 23505, got %v", err)
	}
}

func TestNamespaceCannotBeTombstonedWithAgents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	f := newFixture(t, app)
	if _, err := app.Exec(ctx, `UPDATE occ.namespaces SET status = 'deleting' WHERE id = $1`, f.ns); err != nil {
		t.Fatal(err)
	}
	_, err := app.Exec(ctx, `UPDATE occ.namespaces SET deleted_at = clock_timestamp() WHERE id = $1`, f.ns)
	if sqlState(err) != "23514" {
		t.Fatalf("tombstone with agents: want 23514, got %v", err)
	}
}

func TestSingleInstallation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	if _, err := app.Exec(ctx, `INSERT INTO occ.installation (id, name) VALUES ($1, 'First')`, id("ins")); err != nil {
		t.Fatal(err)
	}
	_, err := app.Exec(ctx, `INSERT INTO occ.installation (id, name) VALUES ($1, 'Second')`, id("ins"))
	if sqlState(err) != "23505" {
		t.Fatalf("second installation: want 23505, got %v", err)
	}
}

func TestIdentifiersAndNamesAreCheckedByTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	for _, tc := range []struct {
		id, name string
		ok       bool
	}{
		{id("ns"), "support", true},
		{"ns_" + "00000000-0000-1000-8000-000000000000", "v1-uuid", false},
		{"ns_" + uuid.NewString()[:35] + "X", "upper", false},
		{id("agt"), "wrong-prefix", false},
		{id("ns"), " leading", false},
		{id("ns"), "trailing ", false},
		{id("ns"), "", false},
		{id("ns"), "bell\x07", false},
		{id("ns"), "c1\u0085", false},
		{id("ns"), "sep\u2028", false},
		{id("ns"), strings.Repeat("n", 201), false},
		{id("ns"), strings.Repeat("é", 200), true},
		{id("ns"), "ünïcødé ok", true},
	} {
		_, err := app.Exec(ctx, `INSERT INTO occ.namespaces (id, name) VALUES ($1, $2)`, tc.id, tc.name)
		if tc.ok && err != nil {
			t.Errorf("%q %q: %v", tc.id, tc.name, err)
		}
		if !tc.ok && sqlState(err) != "23514" {
			t.Errorf("%q %q: want check violation, got %v", tc.id, tc.name, err)
		}
	}
}

func TestWorkRowConstraints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	f := newFixture(t, app)
	insert := func(key, extraCols, extraVals string, args ...any) error {
		sql := fmt.Sprintf(`INSERT INTO occ.controller_work (idempotency_key, namespace_id, actor_id%s) VALUES ($1, $2, $3%s)`, extraCols, extraVals)
		_, err := app.Exec(ctx, sql, append([]any{key, f.ns, f.actor}, args...)...)
		return err
	}
	cases := []struct {
		name      string
		cols, val string
		args      []any
		ok        bool
	}{
		{"namespace work", ", namespace_target", ", 'ready'", nil, true},
		{"namespace work without target", "", "", nil, false},
		{"agent stop", ", agent_id, agent_target", ", $4, 'stopped'", []any{f.agent}, true},
		{"agent work with namespace target", ", agent_id, namespace_target", ", $4, 'ready'", []any{f.agent}, false},
		{"revision work", ", agent_id, revision_id", ", $4, $5", []any{f.agent, f.rev}, true},
		{"revision without agent", ", revision_id", ", $4", []any{f.rev}, false},
		{"claimed without token", ", namespace_target, state", ", 'ready', 'claimed'", nil, false},
		{"succeeded without reason", ", namespace_target, state, completed_at", ", 'ready', 'succeeded', now()", nil, false},
		{"queued with result", ", namespace_target, result_data", ", 'ready', '{}'", nil, false},
		{"deadline data", ", agent_id, revision_id, state, completed_at, reason_code, result_data",
			", $4, $5, 'failed_permanent', now(), 'CONVERGENCE_DEADLINE_EXCEEDED', '{\"timeoutMs\":900000}'", []any{f.agent, f.rev}, true},
		{"deadline data with cause", ", agent_id, revision_id, state, completed_at, reason_code, result_data",
			", $4, $5, 'failed_permanent', now(), 'CONVERGENCE_DEADLINE_EXCEEDED', '{\"timeoutMs\":900000,\"cause\":\"x\"}'", []any{f.agent, f.rev}, false},
		{"deadline runtime failure", ", agent_id, revision_id, state, completed_at, reason_code, result_data",
			", $4, $5, 'failed_permanent', now(), 'CONVERGENCE_DEADLINE_EXCEEDED', '{\"timeoutMs\":1,\"runtimeFailure\":{\"component\":\"gateway\",\"check\":\"ready\",\"checkedAt\":\"2026-02-28T10:00:00.000Z\",\"code\":\"X\"}}'", []any{f.agent, f.rev}, true},
		{"deadline runtime failure bad date", ", agent_id, revision_id, state, completed_at, reason_code, result_data",
			", $4, $5, 'failed_permanent', now(), 'CONVERGENCE_DEADLINE_EXCEEDED', '{\"timeoutMs\":1,\"runtimeFailure\":{\"component\":\"gateway\",\"check\":\"ready\",\"checkedAt\":\"2026-02-30T10:00:00.000Z\",\"code\":\"X\"}}'", []any{f.agent, f.rev}, false},
		{"activation warnings", ", agent_id, revision_id, state, completed_at, reason_code, result_data",
			", $4, $5, 'succeeded', now(), 'REVISION_ACTIVATED', '{\"warnings\":[{\"code\":\"PLUGIN_AUTH_REQUIRED\",\"pluginId\":\"occ-plugin\"}]}'", []any{f.agent, f.rev}, true},
		{"duplicate warnings", ", agent_id, revision_id, state, completed_at, reason_code, result_data",
			", $4, $5, 'succeeded', now(), 'REVISION_ACTIVATED', '{\"warnings\":[{\"code\":\"PLUGIN_AUTH_REQUIRED\",\"pluginId\":\"a\"},{\"code\":\"PLUGIN_INSTALL_FAILED\",\"pluginId\":\"a\"}]}'", []any{f.agent, f.rev}, false},
		{"result on other code", ", namespace_target, state, completed_at, reason_code, result_data",
			", 'ready', 'succeeded', now(), 'NAMESPACE_RECONCILED', '{}'", nil, false},
	}
	for i, tc := range cases {
		err := insert(fmt.Sprintf("test:%d", i), tc.cols, tc.val, tc.args...)
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok && sqlState(err) != "23514" {
			t.Errorf("%s: want check violation, got %v", tc.name, err)
		}
	}
	// One claim per lane.
	claim := func(key string) error {
		_, err := app.Exec(ctx, `UPDATE occ.controller_work SET state = 'claimed', claim_token = gen_random_uuid(),
		  lease_expires_at = clock_timestamp() + interval '5 seconds' WHERE idempotency_key = $1`, key)
		return err
	}
	if err := claim("test:2"); err != nil { // agent stop
		t.Fatal(err)
	}
	if err := claim("test:4"); sqlState(err) != "23505" { // revision work, same Agent lane
		t.Fatalf("second claim in lane: want 23505, got %v", err)
	}
	if err := claim("test:0"); err != nil { // the Namespace lane is separate
		t.Fatal(err)
	}
}
