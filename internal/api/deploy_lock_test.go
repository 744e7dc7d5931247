package api_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/testkit/wait"
)

// deployableAgents creates a ready Namespace with n Agents that can be deployed (a Configuration
// and the runtime Harness authentication) and returns the Namespace's path and the Agents' ids.
func (e *env) deployableAgents(name string, n int) (string, []string) {
	e.t.Helper()
	base := "/namespaces/" + e.readyNamespace(name)
	cfg := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	agents := make([]string, n)
	for i := range agents {
		agents[i] = e.expect(e.admin("POST", base+"/agents", map[string]any{"name": "a" + string(rune('a'+i)), "configurationId": cfg,
			"harnessAuth": map[string]any{"method": "runtime"}}), 201).data()["id"].(string)
	}
	return base, agents
}

// holdLocks begins a transaction of the owner role and runs one locking statement in it; the
// caller commits or rolls it back.
func (e *env) holdLocks(statement string, args ...any) pgx.Tx {
	e.t.Helper()
	ctx := context.Background()
	tx, err := e.owner.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, statement, args...); err != nil {
		_ = tx.Rollback(ctx)
		e.t.Fatal(err)
	}
	return tx
}

// TestDeploysShareTheNamespaceLock: a deploy takes the Namespace's row FOR SHARE and the Agent's
// FOR UPDATE, so deploys of different Agents of one Namespace run side by side, deploys of one
// Agent still wait for each other, and a writer of the Namespace row (its deletion, the worker's
// status change) still excludes them. Each lock is held by a transaction of the test itself,
// and "waits" is read from pg_stat_activity, so no step depends on timing.
func TestDeploysShareTheNamespaceLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, agents := e.deployableAgents("sharelock", 2)
	ns := base[len("/namespaces/"):]
	ctx := context.Background()
	lockWaits := e.lockWaits()
	deploy := func(agent string) chan resp {
		answer := make(chan resp, 1)
		go func() {
			answer <- doHTTP(t, e.http.URL, req{method: "POST", path: base + "/agents/" + agent + "/deploy", key: e.adminKey})
		}()
		return answer
	}
	// answersOrWaits reports whether the deploy answered before it was seen waiting on a lock.
	answersOrWaits := func(answer chan resp) (resp, bool) {
		var r resp
		answered := false
		wait.Eventually(t, wait.Medium, "the deploy answers or waits on a lock", func() bool {
			select {
			case r = <-answer:
				answered = true
				return true
			default:
				return lockWaits() > 0
			}
		})
		return r, answered
	}

	// A deploy of the first Agent is in flight: both its locks are held.
	tx := e.holdLocks(`SELECT 1 FROM occ.namespaces n JOIN occ.agents a ON a.namespace_id = n.id
 WHERE n.id = $1 AND a.id = $2 FOR SHARE OF n FOR UPDATE OF a`, ns, agents[0])
	r, answered := answersOrWaits(deploy(agents[1]))
	if !answered {
		_ = tx.Rollback(ctx)
		t.Fatal("a deploy of another Agent waited on the Namespace lock of a deploy in flight")
	}
	e.expect(r, 202)
	same := deploy(agents[0])
	if _, answered := answersOrWaits(same); answered {
		t.Fatal("a second deploy of one Agent did not wait for the first")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.expect(<-same, 202)

	// A writer of the Namespace row holds it FOR UPDATE: a deploy waits for it.
	tx = e.holdLocks(`SELECT 1 FROM occ.namespaces WHERE id = $1 FOR UPDATE`, ns)
	blocked := deploy(agents[1])
	if _, answered := answersOrWaits(blocked); answered {
		t.Fatal("a deploy did not wait for the Namespace row's writer")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	e.expect(<-blocked, 202)
}

// TestDeploysRaceAgentAndNamespaceDeletion: deploys of eight Agents race each Agent's deletion and
// repeated deletions of their Namespace. Every answer is one of the serial outcomes (202, 409
// AGENT_DELETING; the Namespace 409 NAMESPACE_NOT_EMPTY), none is a 5xx (a deadlock between the
// share lock and a deletion would be one), no revision is admitted after its Agent's deletion,
// and every admitted deploy has its revision number, its work and its audit event exactly once.
func TestDeploysRaceAgentAndNamespaceDeletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, agents := e.deployableAgents("deploydelete", 8)
	const deploysPerAgent = 4
	var requests []req
	for _, agent := range agents {
		for range deploysPerAgent {
			requests = append(requests, req{method: "POST", path: base + "/agents/" + agent + "/deploy", key: e.adminKey})
		}
		requests = append(requests, req{method: "DELETE", path: base + "/agents/" + agent, key: e.adminKey})
		requests = append(requests, req{method: "DELETE", path: base, key: e.adminKey})
	}
	answers := e.fireEach(requests)

	accepted := 0
	for i, a := range answers {
		r := requests[i]
		switch {
		case r.method == "DELETE" && r.path == base:
			if a.status != 409 || a.errCode() != "NAMESPACE_NOT_EMPTY" {
				t.Errorf("DELETE %s: %d %s", r.path, a.status, a.raw)
			}
		case r.method == "DELETE":
			if a.status != 202 {
				t.Errorf("DELETE %s: %d %s", r.path, a.status, a.raw)
			}
		case a.status == 202:
			accepted++
		case a.status != 409 || a.errCode() != "AGENT_DELETING":
			t.Errorf("POST %s: %d %s", r.path, a.status, a.raw)
		}
	}
	if late := e.count(`SELECT count(*) FROM occ.agent_revisions r JOIN occ.audit_events d
   ON d.resource_id = r.agent_id AND d.action = 'openclaw.agents.delete'
 WHERE r.agent_id = ANY($1) AND r.admitted_at > d.occurred_at`, agents); late != 0 {
		t.Errorf("%d revisions admitted after their Agent's deletion", late)
	}
	checks := map[string]string{
		"revisions":                  `SELECT count(*) FROM occ.agent_revisions WHERE agent_id = ANY($1)`,
		"distinct revision numbers":  `SELECT count(DISTINCT (agent_id, revision_number)) FROM occ.agent_revisions WHERE agent_id = ANY($1)`,
		"revision work rows":         `SELECT count(*) FROM occ.controller_work WHERE agent_id = ANY($1) AND revision_id IS NOT NULL`,
		"deploy audit events":        `SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.deploy' AND resource_id = ANY($1)`,
		"distinct audited revisions": `SELECT count(DISTINCT details->>'revisionId') FROM occ.audit_events WHERE action = 'openclaw.agents.deploy' AND resource_id = ANY($1)`,
	}
	for what, query := range checks {
		if got := e.count(query, agents); got != accepted {
			t.Errorf("%d %s for %d accepted deploys", got, what, accepted)
		}
	}
	if got := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = 'openclaw.agents.delete' AND resource_id = ANY($1)`, agents); got != len(agents) {
		t.Errorf("%d Agent deletion audit events, want %d", got, len(agents))
	}
}
