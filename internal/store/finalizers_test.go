package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
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
func claimDeletion(t *testing.T, app *pgxpool.Pool, f agentFixture) (key string, token uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	if _, err := store.MarkAgentDeleting(ctx, app, f.ns, f.agent); err != nil {
		t.Fatal(err)
	}
	fx := fixture.New(t, app)
	key = fx.Enqueue(fixture.AgentDeleteWork(f.agentRow, f.actor)).Key
	fx.Enqueue(fixture.RevisionWork(f.revRow, f.actor))
	// The claim takes a known token, so the test can finalize with it.
	token = uuid.New()
	if _, err := app.Exec(ctx, `UPDATE occ.controller_work SET state = 'claimed', attempt_count = 1, claim_token = $2,
	   lease_expires_at = clock_timestamp() + interval '1 minute' WHERE idempotency_key = $1`, key, token); err != nil {
		t.Fatal(err)
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
	if ok, err := store.SetActiveRevisionIfUnchanged(ctx, app, store.AgentKey{NamespaceID: f.ns, AgentID: f.agent}, nil, f.rev); err != nil || !ok {
		t.Fatalf("activate: %v %v", ok, err)
	}
	if err := store.InsertIAMRole(ctx, app, role, &f.ns, nil, [][2]string{{"read", "agent"}}); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertIAMBinding(ctx, app, store.IAMBinding{ID: "b-sp", NamespaceID: &f.ns, IdentitySubjectID: &f.spn, RoleID: role}); err != nil {
		t.Fatal(err)
	}
	// store writes no Restrictions: nothing in OCC creates them yet.
	if _, err := app.Exec(ctx, `INSERT INTO occ.iam_restrictions (id, action, resource_kind, resource_id) VALUES ('r-agent', 'deploy', 'agent', $1)`, f.agent); err != nil {
		t.Fatal(err)
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
		ok, err := store.RetryFailedAgentDeletion(ctx, app, store.RetryFailedAgentDeletionParams{
			NamespaceID: f.ns, AgentID: f.agent, InitiatorID: initiator, ActorID: actor})
		if err != nil {
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
	ns, actor := fixture.New(t, app).NamespaceIn(platform.NamespaceDeleting).ID, id("prn")
	key := platform.NamespaceWorkKey(ns, platform.NamespaceTargetDeleted)
	// A failed teardown, as the worker leaves it.
	if _, err := app.Exec(ctx, `INSERT INTO occ.controller_work (idempotency_key, namespace_id, actor_id, namespace_target, state, completed_at, reason_code)
	  VALUES ($1, $2, $3, 'deleted', 'failed_permanent', clock_timestamp(), 'DEPENDENCY_UNAVAILABLE')`, key, ns, actor); err != nil {
		t.Fatal(err)
	}
	ok, err := store.RetryFailedNamespaceDeletion(ctx, app, store.RetryFailedNamespaceDeletionParams{
		NamespaceID: ns, InitiatorID: actor, ActorID: actor})
	if err != nil || !ok {
		t.Fatalf("retry: %v %v", ok, err)
	}
	if n := count(t, app, `SELECT count(*) FROM occ.controller_work WHERE idempotency_key = $1 AND state = 'queued' AND attempt_count = 0`, key); n != 1 {
		t.Fatal("work not requeued")
	}
}
