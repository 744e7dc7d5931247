package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func count(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// claimDeletion marks the Agent deleting and claims its deletion work, as API and worker would.
func claimDeletion(t *testing.T, app *pgxpool.Pool, f fixture) (key string, token uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	key = "agent:" + f.agent + ":reconcile:deleted"
	token = uuid.New()
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE occ.agents SET status = 'deleting', desired_runtime_state = 'stopped' WHERE id = $1`, []any{f.agent}},
		{`INSERT INTO occ.controller_work (idempotency_key, namespace_id, agent_id, actor_id, agent_target) VALUES ($1, $2, $3, $4, 'deleted')`,
			[]any{key, f.ns, f.agent, f.actor}},
		{`INSERT INTO occ.controller_work (idempotency_key, namespace_id, agent_id, revision_id, actor_id) VALUES ($1, $2, $3, $4, $5)`,
			[]any{"agent_revision:" + f.rev + ":reconcile", f.ns, f.agent, f.rev, f.actor}},
		{`UPDATE occ.controller_work SET state = 'claimed', attempt_count = 1, claim_token = $2,
		   lease_expires_at = clock_timestamp() + interval '1 minute' WHERE idempotency_key = $1`, []any{key, token}},
	} {
		if _, err := app.Exec(ctx, s.sql, s.args...); err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
	}
	return key, token
}

func TestFinalizeAgentDeletionRemovesAgentAndItsPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	f := newFixture(t, app)
	role := "role_" + uuid.NewString()
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE occ.agents SET active_revision_id = $2 WHERE id = $1`, []any{f.agent, f.rev}},
		{`INSERT INTO occ.iam_roles (id, namespace_id) VALUES ($1, $2)`, []any{role, f.ns}},
		{`INSERT INTO occ.iam_role_permissions (role_id, action, resource_kind) VALUES ($1, 'read', 'agent')`, []any{role}},
		{`INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id) VALUES ('b-sp', $1, $2, $3)`, []any{f.ns, f.spn, role}},
		{`INSERT INTO occ.iam_restrictions (id, action, resource_kind, resource_id) VALUES ('r-agent', 'deploy', 'agent', $1)`, []any{f.agent}},
	} {
		if _, err := app.Exec(ctx, s.sql, s.args...); err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
	}
	key, token := claimDeletion(t, app, f)

	// A wrong token is a lost claim: false, nothing changes.
	var done *bool
	if err := app.QueryRow(ctx, `SELECT occ.finalize_agent_deletion($1, $2, $3, $4)`, f.ns, f.agent, key, uuid.New()).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if done == nil || *done {
		t.Fatalf("wrong token: got %v, want false", done)
	}

	if err := app.QueryRow(ctx, `SELECT occ.finalize_agent_deletion($1, $2, $3, $4)`, f.ns, f.agent, key, token).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if done == nil || !*done {
		t.Fatalf("finalize: got %v, want true", done)
	}
	for what, sql := range map[string]string{
		"agents":       `SELECT count(*) FROM occ.agents WHERE id = $1`,
		"revisions":    `SELECT count(*) FROM occ.agent_revisions WHERE agent_id = $1`,
		"work":         `SELECT count(*) FROM occ.controller_work WHERE agent_id = $1`,
		"restrictions": `SELECT count(*) FROM occ.iam_restrictions WHERE resource_id = $1`,
		"principal":    `SELECT count(*) FROM occ.iam_identities WHERE agent_id = $1`,
	} {
		if n := count(t, app, sql, f.agent); n != 0 {
			t.Errorf("%s left: %d", what, n)
		}
	}
	if n := count(t, app, `SELECT count(*) FROM occ.iam_access_bindings`); n != 0 {
		t.Errorf("bindings left: %d", n)
	}
	if n := count(t, app, `SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.lifecycle.delete'
	   AND details->>'reasonCode' = 'AGENT_DELETED' AND resource_id = $1`, f.agent); n != 1 {
		t.Errorf("deletion audit events: %d", n)
	}
	// The Namespace's Configuration survives and the name is free again.
	if n := count(t, app, `SELECT count(*) FROM occ.configurations WHERE id = $1`, f.cfg); n != 1 {
		t.Errorf("configuration removed")
	}
}

func TestFinalizeAgentDeletionWaitsForOpenCleanup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	f := newFixture(t, app)
	key, token := claimDeletion(t, app, f)
	cleanupKey := "agent_revision:" + f.rev + ":repository_cleanup:abc"
	if _, err := app.Exec(ctx, `INSERT INTO occ.controller_work (idempotency_key, namespace_id, agent_id, revision_id, actor_id)
	   VALUES ($1, $2, $3, $4, $5)`, cleanupKey, f.ns, f.agent, f.rev, f.actor); err != nil {
		t.Fatal(err)
	}
	var done *bool
	if err := app.QueryRow(ctx, `SELECT occ.finalize_agent_deletion($1, $2, $3, $4)`, f.ns, f.agent, key, token).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if done != nil {
		t.Fatalf("open cleanup: got %v, want NULL", *done)
	}
	if n := count(t, app, `SELECT count(*) FROM occ.agents WHERE id = $1`, f.agent); n != 1 {
		t.Fatal("agent removed while cleanup is open")
	}
}

func TestRetryFailedAgentDeletionAndTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	f := newFixture(t, app)
	key, _ := claimDeletion(t, app, f)
	if _, err := app.Exec(ctx, `UPDATE occ.controller_work SET state = 'failed_permanent', claim_token = NULL, lease_expires_at = NULL,
	   completed_at = clock_timestamp(), reason_code = 'DEPENDENCY_UNAVAILABLE' WHERE idempotency_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	retry := func(initiator, actor string) bool {
		t.Helper()
		var ok bool
		if err := app.QueryRow(ctx, `SELECT occ.retry_failed_agent_deletion($1, $2, $3, $4)`, f.ns, f.agent, initiator, actor).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if retry("prn_not-the-initiator", "prn_x") {
		t.Fatal("retry with a stale initiator succeeded")
	}
	other := id("prn")
	if !retry(f.actor, other) {
		t.Fatal("takeover refused")
	}
	var state, actor string
	var attempts int
	if err := app.QueryRow(ctx, `SELECT state, actor_id, attempt_count FROM occ.controller_work WHERE idempotency_key = $1`, key).Scan(&state, &actor, &attempts); err != nil {
		t.Fatal(err)
	}
	if state != "queued" || actor != other || attempts != 0 {
		t.Fatalf("after takeover: %s %s %d", state, actor, attempts)
	}
	if retry(other, other) {
		t.Fatal("retry of queued work succeeded")
	}
}

func TestRetryFailedNamespaceDeletion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	ns, actor := id("ns"), id("prn")
	key := "namespace:" + ns + ":reconcile:deleted"
	for _, s := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO occ.namespaces (id, name, status) VALUES ($1, 'gone', 'provisioning')`, []any{ns}},
		{`UPDATE occ.namespaces SET status = 'deleting' WHERE id = $1`, []any{ns}},
		{`INSERT INTO occ.controller_work (idempotency_key, namespace_id, actor_id, namespace_target, state, completed_at, reason_code)
		  VALUES ($1, $2, $3, 'deleted', 'failed_permanent', clock_timestamp(), 'DEPENDENCY_UNAVAILABLE')`, []any{key, ns, actor}},
	} {
		if _, err := app.Exec(ctx, s.sql, s.args...); err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
	}
	var ok bool
	if err := app.QueryRow(ctx, `SELECT occ.retry_failed_namespace_deletion($1, $2, $2)`, ns, actor).Scan(&ok); err != nil || !ok {
		t.Fatalf("retry: %v %v", ok, err)
	}
	if n := count(t, app, `SELECT count(*) FROM occ.controller_work WHERE idempotency_key = $1 AND state = 'queued' AND attempt_count = 0`, key); n != 1 {
		t.Fatal("work not requeued")
	}
}
