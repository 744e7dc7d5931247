-- An AccessBinding is one grant: the same subject, Role and target (and scope) cannot be stored
-- twice, and a person holds at most one runtime role per Agent. Before these indexes a read-then-
-- insert let concurrent (or repeated) creates store copies, and deleting "the" binding shown in a
-- list could leave an identical one granting the same access.

-- Copies that already exist grant nothing the earliest one does not: keep the earliest of each
-- group (by creation, then id) and delete the rest. A runtime role held twice for one person and
-- Agent keeps the earliest; the later bindings keep their grant and lose the runtime role.
DELETE FROM occ.iam_access_bindings b
 USING (SELECT id, row_number() OVER (
          PARTITION BY namespace_id, identity_subject_id, group_subject_id, role_id, resource_kind, resource_id
          ORDER BY created_at, id) AS n
          FROM occ.iam_access_bindings) d
 WHERE b.id = d.id AND d.n > 1;

UPDATE occ.iam_access_bindings b SET runtime_role = NULL
  FROM (SELECT id, row_number() OVER (
          PARTITION BY namespace_id, identity_subject_id, resource_id ORDER BY created_at, id) AS n
          FROM occ.iam_access_bindings
         WHERE runtime_role IS NOT NULL AND resource_kind = 'agent') d
 WHERE b.id = d.id AND d.n > 1;

CREATE UNIQUE INDEX iam_access_bindings_identical ON occ.iam_access_bindings
  (namespace_id, identity_subject_id, group_subject_id, role_id, resource_kind, resource_id) NULLS NOT DISTINCT;

CREATE UNIQUE INDEX iam_access_bindings_one_runtime_role ON occ.iam_access_bindings
  (namespace_id, identity_subject_id, resource_id) NULLS NOT DISTINCT
  WHERE runtime_role IS NOT NULL AND resource_kind = 'agent';
