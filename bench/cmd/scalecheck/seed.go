package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/store"
)

// seedSQL fills one migrated database, as the owner, with set-based statements only. Helper
// tables live in the session's temp schema; every id satisfies the schema's CHECKs.
//
//   - 1 Installation; 10 000 Namespaces (ready), one Configuration each;
//   - 100 000 Agents (10 per Namespace), each with its service principal and 1-2 revisions;
//     half of them running on their newest revision;
//   - 1 000 human principals, three Roles;
//   - 200 000 access bindings: every Agent's principal on its own Agent (100 000), and 100 000
//     human bindings: Installation-wide (10), Namespace-wide and exact-resource on Agents. Human 1
//     ("heavy") holds one Namespace-wide binding on every Namespace and 20 000 exact Agent
//     bindings; human 2 ("light") holds two;
//   - 1 000 000 terminal controller_work rows (deployments, Agent stops, Namespace work;
//     succeeded or failed_permanent), each with its reconcile evidence row in audit_events;
//   - 10 000 queued Namespace work rows, one per Namespace (one lane each).
//
// It ends with VACUUM (ANALYZE): a steady state, where the old terminal rows are all-visible
// (autovacuum would have got there) and index-only scans need no heap visits.
func seedSteps(c config) []struct{ name, sql string } {
	ns, apn := c.namespaces, c.agentsPerNS
	agents := ns * apn
	return []struct{ name, sql string }{
		{"installation", `INSERT INTO occ.installation (id, name) VALUES ('ins_' || gen_random_uuid(), 'scale')`},
		{"namespaces", fmt.Sprintf(`
CREATE TEMP TABLE s_ns AS SELECT i, 'ns_' || gen_random_uuid() AS id, 'cfg_' || gen_random_uuid() AS cfg
  FROM generate_series(1, %d) i;
INSERT INTO occ.namespaces (id, name, status, created_at)
SELECT id, 'ns-' || lpad(i::text, 6, '0'), 'ready', now() - interval '100 days' + i * interval '1 second' FROM s_ns;
INSERT INTO occ.configurations (id, namespace_id, driver_id) SELECT cfg, id, 'native' FROM s_ns;
CREATE UNIQUE INDEX ON s_ns (i);`, ns)},
		{"agents", fmt.Sprintf(`
CREATE TEMP TABLE s_agt AS SELECT j, (j - 1) / %d + 1 AS ns_i, 'agt_' || gen_random_uuid() AS id,
  'spn_' || gen_random_uuid() AS spn FROM generate_series(1, %d) j;
CREATE UNIQUE INDEX ON s_agt (j);
INSERT INTO occ.iam_identities (id, kind, namespace_id, agent_id)
SELECT a.spn, 'service_principal', n.id, a.id FROM s_agt a JOIN s_ns n ON n.i = a.ns_i;
INSERT INTO occ.agents (id, namespace_id, name, execution_mode, service_principal_id, configuration_id, created_at)
SELECT a.id, n.id, 'agent-' || a.j, 'embedded', a.spn, n.cfg, now() - interval '90 days' + a.j * interval '1 second'
  FROM s_agt a JOIN s_ns n ON n.i = a.ns_i;`, apn, agents)},
		{"revisions", `
CREATE TEMP TABLE s_rev AS
SELECT a.j, r AS num, 'rev_' || gen_random_uuid() AS id, (r = 1 + a.j % 2) AS newest
  FROM s_agt a CROSS JOIN LATERAL generate_series(1, 1 + a.j % 2) r;
INSERT INTO occ.agent_revisions (id, namespace_id, agent_id, revision_number, admitted_spec)
SELECT r.id, n.id, a.id, r.num, '{}' FROM s_rev r JOIN s_agt a USING (j) JOIN s_ns n ON n.i = a.ns_i;
UPDATE occ.agents g SET active_revision_id = r.id, desired_runtime_state = 'running'
  FROM s_agt a JOIN s_rev r ON r.j = a.j AND r.newest
 WHERE g.id = a.id AND a.j % 4 < 2;`},
		{"humans and roles", `
CREATE TEMP TABLE s_prn AS SELECT h, 'prn_' || gen_random_uuid() AS id FROM generate_series(1, 1000) h;
CREATE UNIQUE INDEX ON s_prn (h);
INSERT INTO occ.iam_identities (id, kind, issuer, subject)
SELECT id, 'principal', 'https://idp.scale.example', 'user-' || h FROM s_prn;
INSERT INTO occ.iam_roles (id, name) VALUES ('scale-admin', 'admin'), ('scale-viewer', 'viewer'), ('scale-runtime', 'runtime');
INSERT INTO occ.iam_role_permissions (role_id, action, resource_kind)
SELECT 'scale-admin', a, k FROM unnest(ARRAY['create','read','update','delete','deploy','operate']) a,
       unnest(ARRAY['namespace','agent','agent_revision','configuration']) k
UNION ALL SELECT 'scale-viewer', 'read', k FROM unnest(ARRAY['namespace','agent','agent_revision']) k
UNION ALL SELECT 'scale-runtime', 'read', 'agent';`},
		{"bindings", fmt.Sprintf(`
-- every Agent's principal on its own Agent
INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
SELECT 'bnd_' || gen_random_uuid(), n.id, a.spn, 'scale-runtime', 'agent', a.id
  FROM s_agt a JOIN s_ns n ON n.i = a.ns_i;
-- heavy human (1): every Namespace, and 20 000 Agents
INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id)
SELECT 'bnd_' || gen_random_uuid(), n.id, p.id, 'scale-viewer' FROM s_ns n, s_prn p WHERE p.h = 1;
INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
SELECT 'bnd_' || gen_random_uuid(), n.id, p.id, 'scale-admin', 'agent', a.id
  FROM s_agt a JOIN s_ns n ON n.i = a.ns_i, s_prn p WHERE p.h = 1 AND a.j %% 5 = 0;
-- light human (2): one Namespace, one Agent
INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
SELECT 'bnd_' || gen_random_uuid(), n.id, p.id, 'scale-viewer', NULL, NULL FROM s_ns n, s_prn p WHERE p.h = 2 AND n.i = 7
UNION ALL
SELECT 'bnd_' || gen_random_uuid(), n.id, p.id, 'scale-admin', 'agent', a.id
  FROM s_agt a JOIN s_ns n ON n.i = a.ns_i, s_prn p WHERE p.h = 2 AND a.j = 61;
-- Installation-wide administrators (humans 3..12)
INSERT INTO occ.iam_access_bindings (id, identity_subject_id, role_id)
SELECT 'bnd_' || gen_random_uuid(), id, 'scale-admin' FROM s_prn WHERE h BETWEEN 3 AND 12;
-- the rest: humans 13..1000, half Namespace-wide, half exact on Agents
INSERT INTO occ.iam_access_bindings (id, namespace_id, identity_subject_id, role_id, resource_kind, resource_id)
SELECT 'bnd_' || gen_random_uuid(), n.id, p.id,
       CASE WHEN g %% 2 = 0 THEN 'scale-viewer' ELSE 'scale-admin' END,
       CASE WHEN g %% 2 = 1 THEN 'agent' END, CASE WHEN g %% 2 = 1 THEN a.id END
  FROM generate_series(1, %d) g
  JOIN s_prn p ON p.h = 13 + g %% 988
  JOIN s_agt a ON a.j = 1 + (g * 7919) %% %d
  JOIN s_ns n ON n.i = a.ns_i
  ON CONFLICT DO NOTHING;`, c.bindings-agents-ns-agents/5-2-10, agents)},
		{"terminal work", fmt.Sprintf(`
-- deployments of every newest revision, 3 stops per Agent, the rest Namespace work
CREATE TEMP TABLE s_work AS
SELECT 'agent_revision:' || r.id || ':reconcile' AS key, 'lifecycle' AS kind, n.id AS ns, a.id AS agent, r.id AS rev,
       NULL::text AS ns_target, NULL::text AS agent_target, a.j AS g
  FROM s_rev r JOIN s_agt a USING (j) JOIN s_ns n ON n.i = a.ns_i WHERE r.newest
UNION ALL
SELECT 'agent:' || a.id || ':reconcile:stopped:' || s, 'lifecycle', n.id, a.id, NULL, NULL, 'stopped', a.j * 3 + s
  FROM s_agt a JOIN s_ns n ON n.i = a.ns_i CROSS JOIN generate_series(1, 3) s;
INSERT INTO s_work
SELECT 'namespace:' || n.id || ':reconcile:ready:' || g, 'lifecycle', n.id, NULL, NULL, 'ready', NULL, g
  FROM generate_series(1, %d - (SELECT count(*) FROM s_work)) g JOIN s_ns n ON n.i = 1 + g %% %d;
INSERT INTO occ.controller_work (idempotency_key, work_kind, namespace_id, agent_id, revision_id, actor_id,
  namespace_target, agent_target, state, available_at, attempt_count, completed_at, reason_code, created_at, updated_at)
SELECT key, kind, ns, agent, rev, 'prn_scale-actor', ns_target, agent_target,
       CASE WHEN g %% 5 = 0 THEN 'failed_permanent' ELSE 'succeeded' END,
       t, 1 + g %% 3, t + interval '2 seconds',
       CASE WHEN g %% 5 = 0 THEN (ARRAY['MAX_ATTEMPTS_EXHAUSTED','LEASE_EXPIRED','RECONCILE_FAILED'])[1 + g %% 3]
            WHEN rev IS NOT NULL THEN 'REVISION_ACTIVATED' ELSE 'RECONCILE_SUCCEEDED' END,
       t, t + interval '2 seconds'
  FROM (SELECT *, now() - interval '90 days' + (g %% 7776000) * interval '1 second' AS t FROM s_work) w;`, c.terminal, ns)},
		{"evidence", `
INSERT INTO occ.audit_events (id, occurred_at, kind, actor_id, action, namespace_id, resource_kind, resource_id, outcome, details)
SELECT 'aud_' || gen_random_uuid(), w.completed_at, 'mutation', w.actor_id, 'reconcile', w.namespace_id,
       CASE WHEN w.revision_id IS NOT NULL THEN 'agent_revision' WHEN w.agent_id IS NOT NULL THEN 'agent' ELSE 'namespace' END,
       COALESCE(w.revision_id, w.agent_id, w.namespace_id),
       CASE WHEN w.state = 'succeeded' THEN 'success' ELSE 'failure' END,
       jsonb_build_object('reasonCode', w.reason_code, 'attemptCount', w.attempt_count, 'workId', w.idempotency_key)
  FROM occ.controller_work w;`},
		{"queued work", `
INSERT INTO occ.controller_work (idempotency_key, namespace_id, actor_id, namespace_target, available_at, created_at)
SELECT 'namespace:' || id || ':reconcile:ready', id, 'prn_scale-actor', 'ready',
       now() - interval '1 hour' + i * interval '1 millisecond', now() - interval '1 hour' + i * interval '1 millisecond'
  FROM s_ns;`},
		{"vacuum analyze", `VACUUM (ANALYZE)`},
	}
}

func seed(ctx context.Context, owner *pgx.Conn, c config) error {
	if _, err := owner.Exec(ctx, `SET maintenance_work_mem = '256MB'; SET work_mem = '64MB'; SET synchronous_commit = off`); err != nil {
		return err
	}
	for _, s := range seedSteps(c) {
		start := time.Now()
		if _, err := owner.Exec(ctx, s.sql); err != nil {
			return fmt.Errorf("seed %s: %w", s.name, err)
		}
		logf("seeded %-17s %6.1fs", s.name, time.Since(start).Seconds())
	}
	// The seed's writes marked every Agent; the first fold counts them all, as migration 0012
	// does for the Agents of an existing installation.
	start := time.Now()
	f, err := store.FoldAgentLifecycle(ctx, owner)
	if err != nil {
		return fmt.Errorf("seed: fold the Agent lifecycle changes: %w", err)
	}
	logf("folded %d lifecycle changes of %d Agents in %.1fs", f.Changes, f.Moves, time.Since(start).Seconds())
	return nil
}
