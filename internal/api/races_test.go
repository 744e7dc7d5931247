package api_test

import (
	"context"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// fire sends n copies of one request at once and returns their statuses.
func (e *env) fire(n int, r req) []int {
	e.t.Helper()
	answers := e.fireAll(n, r)
	statuses := make([]int, n)
	for i, a := range answers {
		statuses[i] = a.status
	}
	return statuses
}

// lockWaits returns a counter of the env database's backends that wait on a lock, read as the
// superuser (other roles see no wait events of the application role's sessions); a failed read
// counts none, since callers poll it.
func (e *env) lockWaits() func() int {
	admin := pgtestAdmin(e.t, e)
	return func() int {
		var n int
		if err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
 WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n); err != nil {
			return 0
		}
		return n
	}
}

// tally counts the statuses; any status outside want fails the test.
func tally(t *testing.T, statuses []int, want ...int) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, s := range statuses {
		out[s]++
	}
	for s := range out {
		allowed := false
		for _, w := range want {
			allowed = allowed || s == w
		}
		if !allowed {
			t.Fatalf("statuses %v: %d is not one of %v", out, s, want)
		}
	}
	return out
}

// TestConcurrentDeletesHaveOneWinner: 20 simultaneous deletes of one AccessBinding, one Role and
// one session (sign-out) succeed once, write one audit event, and answer the rest as for an object
// that is gone (404, or 401 for the ended session).
func TestConcurrentDeletesHaveOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("races")
	base := "/namespaces/" + ns + "/iam/"
	sp := e.expect(e.admin("POST", base+"service-principals", nil), 201).data()["id"].(string)
	role := e.expect(e.admin("POST", base+"roles", map[string]any{"permissions": permissions("namespace:read")}), 201).data()["id"].(string)
	binding := e.expect(e.admin("POST", base+"access-bindings", map[string]any{"subjectKind": "identity", "subjectId": sp,
		"roleId": role, "resourceKind": "namespace", "resourceId": ns}), 201).data()["id"].(string)
	const n = 20
	auditCount := func(action, resourceID string) int {
		return e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1 AND (resource_id = $2 OR details->>'bindingId' = $2 OR details->>'roleId' = $2)`, action, resourceID)
	}

	got := tally(t, e.fire(n, req{method: "DELETE", path: base + "access-bindings/" + binding, key: e.adminKey}), 204, 404)
	if got[204] != 1 {
		t.Fatalf("binding deletes: %v, want one 204", got)
	}
	if a := auditCount(api.ActionBindingsDelete, binding); a != 1 {
		t.Fatalf("%d audit events for the binding's deletion, want 1", a)
	}

	got = tally(t, e.fire(n, req{method: "DELETE", path: base + "roles/" + role, key: e.adminKey}), 204, 404)
	if got[204] != 1 {
		t.Fatalf("role deletes: %v, want one 204", got)
	}
	if a := auditCount(api.ActionRolesDelete, role); a != 1 {
		t.Fatalf("%d audit events for the Role's deletion, want 1", a)
	}

	person := e.newHuman("racer@example.com")
	got = tally(t, e.fire(n, person.apply(req{method: "POST", path: "/api/auth/sign-out"})), 200, 401)
	if got[200] != 1 {
		t.Fatalf("sign-outs: %v, want one 200", got)
	}
	if a := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $2 AND details->>'accountId' = $1`, person.account, api.ActionSignOut); a != 1 {
		t.Fatalf("%d session end events, want 1", a)
	}
}

// TestAccessBindingsAreStoredOnce: an identical AccessBinding is refused 409 RESOURCE_CONFLICT,
// sequentially and under 20 concurrent creates, and a person gets one runtime role per Agent.
func TestAccessBindingsAreStoredOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("once")
	base := "/namespaces/" + ns
	sp := e.expect(e.admin("POST", base+"/iam/service-principals", nil), 201).data()["id"].(string)
	reader := e.expect(e.admin("POST", base+"/iam/roles", map[string]any{"permissions": permissions("namespace:read")}), 201).data()["id"].(string)
	identical := map[string]any{"subjectKind": "identity", "subjectId": sp, "roleId": reader, "resourceKind": "namespace", "resourceId": ns}
	e.expect(e.admin("POST", base+"/iam/access-bindings", identical), 201)
	if r := e.expect(e.admin("POST", base+"/iam/access-bindings", identical), 409); r.errCode() != "RESOURCE_CONFLICT" {
		t.Fatalf("identical binding: %s", r.raw)
	}
	got := tally(t, e.fire(20, req{method: "POST", path: base + "/iam/access-bindings", key: e.adminKey, body: identical}), 409)
	if got[409] != 20 {
		t.Fatalf("concurrent identical creates: %v", got)
	}
	if c := e.count(`SELECT count(*) FROM occ.iam_access_bindings WHERE identity_subject_id = $1`, sp); c != 1 {
		t.Fatalf("%d bindings stored, want 1", c)
	}

	// One runtime role per person and Agent, whichever of 20 concurrent creates wins.
	cfg := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	agent := e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "once", "configurationId": cfg,
		"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()["id"].(string)
	user := e.expect(e.admin("POST", base+"/iam/roles", map[string]any{"permissions": permissions("agent:use", "agent:read")}), 201).data()["id"].(string)
	person := e.newHuman("runtime@example.com")
	runtime := map[string]any{"subjectKind": "identity", "subjectId": person.id, "roleId": user, "resourceKind": "agent",
		"resourceId": agent, "runtimeRole": "operator"}
	got = tally(t, e.fire(20, req{method: "POST", path: base + "/iam/access-bindings", key: e.adminKey, body: runtime}), 201, 409)
	if got[201] != 1 {
		t.Fatalf("concurrent runtime-role creates: %v, want one 201", got)
	}
	if c := e.count(`SELECT count(*) FROM occ.iam_access_bindings WHERE identity_subject_id = $1 AND runtime_role IS NOT NULL`, person.id); c != 1 {
		t.Fatalf("%d runtime roles stored, want 1", c)
	}
	if a := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $2 AND details->>'subjectId' = $1`, person.id, api.ActionBindingsCreate); a != 1 {
		t.Fatalf("%d audit events for the runtime binding, want 1", a)
	}
}

// TestRoleDeletionRacesBindingCreation: a Role deleted while a binding to it is being created
// ends one of two ways, both answered as the client's mistake: the binding is refused at
// /roleId (400), or the deletion is refused as referenced (409). The race is made deterministic
// by holding one side's transaction open until the API's statement waits on its row lock.
func TestRoleDeletionRacesBindingCreation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("fk")
	base := "/namespaces/" + ns + "/iam/"
	sp := e.expect(e.admin("POST", base+"service-principals", nil), 201).data()["id"].(string)
	newRole := func() string {
		return e.expect(e.admin("POST", base+"roles", map[string]any{"permissions": permissions("namespace:read")}), 201).data()["id"].(string)
	}
	binding := func(role string) map[string]any {
		return map[string]any{"subjectKind": "identity", "subjectId": sp, "roleId": role, "resourceKind": "namespace", "resourceId": ns}
	}
	ctx := context.Background()
	// waitForLockWait holds until some backend waits on a lock.
	lockWaits := e.lockWaits()
	waitForLockWait := func() {
		wait.Eventually(t, wait.Medium, "the API's statement waits on the held transaction's lock", func() bool {
			return lockWaits() > 0
		})
	}

	// The deletion commits first: the binding's foreign key finds no Role.
	role := newRole()
	tx, err := e.owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM occ.iam_roles WHERE id = $1`, role); err != nil {
		t.Fatal(err)
	}
	answer := make(chan resp, 1)
	go func() {
		answer <- doHTTP(t, e.http.URL, req{method: "POST", path: base + "access-bindings", key: e.adminKey, body: binding(role)})
	}()
	waitForLockWait()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-answer; r.status != 400 || !r.hasDetail("/roleId", "INVALID_VALUE") {
		t.Fatalf("binding to a Role deleted meanwhile: %d %s", r.status, r.raw)
	}

	// The binding commits first: the Role's deletion is refused as referenced.
	role = newRole()
	tx, err = e.owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
VALUES ('binding_race', $1, $2, $3, 'namespace', $1)`, ns, sp, role); err != nil {
		t.Fatal(err)
	}
	go func() {
		answer <- doHTTP(t, e.http.URL, req{method: "DELETE", path: base + "roles/" + role, key: e.adminKey})
	}()
	waitForLockWait()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-answer; r.status != 409 || r.errCode() != "RESOURCE_CONFLICT" {
		t.Fatalf("deleting a Role bound meanwhile: %d %s", r.status, r.raw)
	}
}

// TestCLILogoutRacesRevoke: an occ logout admitted while a revoke of the same CLI session commits
// answers 401, as for an ended session, and audits nothing: the revoke ended it. (It answered 200
// without an event, so concurrent logouts had several winners.) The race is made deterministic by
// holding the revoke's transaction open until the logout's deletion waits on its row lock.
func TestCLILogoutRacesRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCLISessions)
	token, issued := e.cliLogin(e.adminCookie(), map[string]any{"clientLabel": "racer"})
	id := issued["session"].(map[string]any)["id"].(string)
	ctx := context.Background()
	admin := pgtestAdmin(t, e)
	tx, err := e.owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `DELETE FROM occ.cli_sessions WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	answer := make(chan resp, 1)
	go func() { answer <- doHTTP(t, e.http.URL, cliReq(token, "DELETE", "/api/auth/cli-sessions/current")) }()
	wait.Eventually(t, wait.Medium, "the logout's deletion waits on the held transaction's lock", func() bool {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n)
		return err == nil && n > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-answer; r.status != 401 || r.errCode() != "UNAUTHENTICATED" {
		t.Fatalf("a logout that lost to a revoke: %d %s", r.status, r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1 AND resource_id = $2`, api.ActionCLISessionsRevoke, id); n != 0 {
		t.Fatalf("%d revoke events for a logout that ended nothing", n)
	}
}

// TestRecoveryMoveRacesMove: a move of the recovery designation that waits for a concurrent move
// answers 409 (the designation changed since it was read), not 404 "no recovery account": the
// designation is locked alone before it is joined with its account. The race is made
// deterministic by holding the other move's transaction open until the API's lock waits on it.
func TestRecoveryMoveRacesMove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOfflineSignIn)
	holder, next, other := e.newHuman("holder@example.com"), e.newHuman("next@example.com"), e.newHuman("other@example.com")
	for _, id := range []identity{holder, next, other} {
		e.grant(id.id, "", iam.KindInstallation, e.installationID, perm(iam.ActionAdminister, iam.KindInstallation))
	}
	e.exec(`UPDATE occ.recovery_accounts SET account_id = $1`, holder.account)
	move := e.adminRequest("POST", "/api/auth/recovery", map[string]any{"userId": next.account,
		"expectedCurrentUserId": holder.account, "expectedVersion": 1})
	ctx := context.Background()
	admin := pgtestAdmin(t, e)
	tx, err := e.owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE occ.recovery_accounts SET account_id = $1`, other.account); err != nil {
		t.Fatal(err)
	}
	answer := make(chan resp, 1)
	go func() { answer <- doHTTP(t, e.http.URL, move) }()
	wait.Eventually(t, wait.Medium, "the API's read of the designation waits on the held transaction's lock", func() bool {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n)
		return err == nil && n > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-answer; r.status != 409 || r.errCode() != "RESOURCE_CONFLICT" {
		t.Fatalf("a recovery move that waited for another: %d %s", r.status, r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.recovery_accounts WHERE account_id = $1`, other.account); n != 1 {
		t.Fatal("the designation is not the committed move's")
	}
}
