package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// IAM policy rows, as stored. Package iam turns them into its policy model.

type IAMIdentity struct {
	ID          string
	Kind        string
	NamespaceID *string
	AgentID     *string
	Issuer      *string
	Subject     *string
}

type IAMGroupMembership struct {
	GroupID          string
	PrincipalID      string
	NamespaceID      *string
	GroupNamespaceID *string
	GroupName        string
}

type IAMBinding struct {
	ID                string
	NamespaceID       *string
	IdentitySubjectID *string
	GroupSubjectID    *string
	RoleID            string
	ResourceKind      *string
	ResourceID        *string
	RuntimeRole       *string
}

// IAMRolePermission is one permission of one Role, with the Role's own columns repeated. A Role
// without permissions (invalid policy) appears once with Action and ResourceKind nil, so that
// validation can refuse it instead of never seeing it.
type IAMRolePermission struct {
	RoleID          string
	RoleNamespaceID *string
	RoleName        *string
	Action          *string
	ResourceKind    *string
}

type IAMRestriction struct {
	ID           string
	NamespaceID  *string
	Action       string
	ResourceKind string
	ResourceID   *string
	Effect       string
}

// IAMPolicyRows is the slice of policy one decision or one coverage check reads.
type IAMPolicyRows struct {
	Identities      []IAMIdentity
	Memberships     []IAMGroupMembership
	Bindings        []IAMBinding
	RolePermissions []IAMRolePermission
	Restrictions    []IAMRestriction
	NonEmpty        bool // at least one identity, one Role and one binding exist at all
}

// IAMTarget narrows a policy load to the bindings and Restrictions that can match the resources
// ResourceIDs, all of kind ResourceKind in the Namespace NamespaceID (nil: outside any Namespace).
// With one id the load is exactly the slice one decision reads; with several it is the union of
// those slices (one round trip for a whole list page), which the caller splits per resource. A nil
// target loads every binding of the subject (coverage needs them all).
type IAMTarget struct {
	Action       string
	ResourceKind string
	ResourceIDs  []string
	NamespaceID  *string
}

const (
	identityColumns = `i.id, i.kind, i.namespace_id, i.agent_id, i.issuer, i.subject`
	bindingColumns  = `b.id, b.namespace_id, b.identity_subject_id, b.group_subject_id, b.role_id, b.resource_kind, b.resource_id, b.runtime_role`
)

// LoadIAMPolicy reads, in one round trip, the identity rows with id = identityID, its group
// memberships, its bindings (direct and through groups) and their Roles, and — with a target —
// the Restrictions on that action and kind. With a target, bindings whose namespace or resource
// cannot match are not read: every query is an index range over the subject, so a decision's cost
// does not depend on how much policy exists for other subjects or other resources. A target with
// several resource ids reads the exact-resource bindings and Restrictions of all of them (an
// index range per id: `= ANY`); a target with one id keeps the plain `=` statements.
func LoadIAMPolicy(ctx context.Context, db DBTX, identityID string, target *IAMTarget) (IAMPolicyRows, error) {
	var rows IAMPolicyRows
	// The resource id parameter: one text for one resource (the per-decision plans stay as they
	// were), a text[] for a batch.
	var resourceID any
	resourceEq := `= $4`
	restrictionEq := `= $3`
	if target != nil {
		if len(target.ResourceIDs) == 1 {
			resourceID = target.ResourceIDs[0]
		} else {
			ids := target.ResourceIDs
			if ids == nil {
				ids = []string{}
			}
			resourceID = ids
			resourceEq = `= ANY($4::text[])`
			restrictionEq = `= ANY($3::text[])`
		}
	}
	// Bindings of the identity and of its groups; with a target only those whose scope can match.
	// The target filter is written as three disjoint branches (no resource and no Namespace; no
	// resource and the target's Namespace; exactly the target resource) so that each one is an
	// index range: a subject's Namespace-wide bindings on other Namespaces are never read
	// (iam_access_bindings_*_unscoped, migration 0003). The rows are the same as with the single
	// filter `(namespace_id IS NULL OR namespace_id = $2) AND (resource_kind IS NULL OR
	// (resource_kind = $3 AND resource_id = $4))`.
	args := []any{identityID}
	scopes := []string{``}
	if target != nil {
		scopes = []string{`
   AND b.resource_kind IS NULL AND b.namespace_id IS NULL`, `
   AND b.resource_kind IS NULL AND b.namespace_id = $2`, `
   AND b.resource_kind = $3 AND b.resource_id ` + resourceEq + ` AND (b.namespace_id IS NULL OR b.namespace_id = $2)`}
		args = append(args, target.NamespaceID, target.ResourceKind, resourceID)
	}
	var branches []string
	for _, scope := range scopes {
		branches = append(branches, `
SELECT `+bindingColumns+` FROM occ.iam_access_bindings b
 WHERE b.identity_subject_id = $1`+scope)
	}
	for _, scope := range scopes {
		branches = append(branches, `
SELECT `+bindingColumns+` FROM occ.iam_access_bindings b
  JOIN occ.iam_group_memberships m ON m.group_id = b.group_subject_id
 WHERE m.principal_id = $1`+scope)
	}
	bindingsSQL := strings.Join(branches, `
UNION ALL`)

	batch := &pgx.Batch{}
	batch.Queue(`SELECT `+identityColumns+` FROM occ.iam_identities i WHERE i.id = $1`, identityID).
		Query(func(r pgx.Rows) error {
			var err error
			rows.Identities, err = pgx.CollectRows(r, scanIdentity)
			return err
		})
	batch.Queue(`
SELECT m.group_id, m.principal_id, m.namespace_id, g.namespace_id, g.name
  FROM occ.iam_group_memberships m JOIN occ.iam_groups g ON g.id = m.group_id
 WHERE m.principal_id = $1`, identityID).Query(func(r pgx.Rows) error {
		var err error
		rows.Memberships, err = pgx.CollectRows(r, func(r pgx.CollectableRow) (IAMGroupMembership, error) {
			var m IAMGroupMembership
			err := r.Scan(&m.GroupID, &m.PrincipalID, &m.NamespaceID, &m.GroupNamespaceID, &m.GroupName)
			return m, err
		})
		return err
	})
	batch.Queue(bindingsSQL, args...).Query(func(r pgx.Rows) error {
		var err error
		rows.Bindings, err = pgx.CollectRows(r, scanBinding)
		return err
	})
	batch.Queue(`
WITH b AS (`+bindingsSQL+`)
SELECT r.id, r.namespace_id, r.name, p.action, p.resource_kind
  FROM occ.iam_roles r LEFT JOIN occ.iam_role_permissions p ON p.role_id = r.id
 WHERE r.id IN (SELECT role_id FROM b)
 ORDER BY r.id, p.resource_kind, p.action`, args...).Query(func(r pgx.Rows) error {
		var err error
		rows.RolePermissions, err = pgx.CollectRows(r, func(r pgx.CollectableRow) (IAMRolePermission, error) {
			var p IAMRolePermission
			err := r.Scan(&p.RoleID, &p.RoleNamespaceID, &p.RoleName, &p.Action, &p.ResourceKind)
			return p, err
		})
		return err
	})
	if target != nil {
		batch.Queue(`
SELECT x.id, x.namespace_id, x.action, x.resource_kind, x.resource_id, x.effect
  FROM occ.iam_restrictions x
 WHERE x.action = $1 AND x.resource_kind = $2 AND (x.resource_id IS NULL OR x.resource_id `+restrictionEq+`)
   AND (x.namespace_id IS NULL OR x.namespace_id = $4)`,
			target.Action, target.ResourceKind, resourceID, target.NamespaceID).Query(func(r pgx.Rows) error {
			var err error
			rows.Restrictions, err = pgx.CollectRows(r, func(r pgx.CollectableRow) (IAMRestriction, error) {
				var x IAMRestriction
				err := r.Scan(&x.ID, &x.NamespaceID, &x.Action, &x.ResourceKind, &x.ResourceID, &x.Effect)
				return x, err
			})
			return err
		})
	}
	// Each test reads the first key of a primary key index instead of starting a sequential scan
	// that stops at the first live row: the same answer, without walking dead rows at the start of a
	// table whose first rows were deleted. (Written as a scalar subquery: PostgreSQL drops ORDER BY
	// and LIMIT inside EXISTS.)
	batch.Queue(`SELECT (SELECT id FROM occ.iam_identities ORDER BY id LIMIT 1) IS NOT NULL
   AND (SELECT id FROM occ.iam_roles ORDER BY id LIMIT 1) IS NOT NULL
   AND (SELECT id FROM occ.iam_access_bindings ORDER BY id LIMIT 1) IS NOT NULL`).
		QueryRow(func(r pgx.Row) error { return r.Scan(&rows.NonEmpty) })

	if err := db.SendBatch(ctx, batch).Close(); err != nil {
		return IAMPolicyRows{}, err
	}
	return rows, nil
}

// LookupIAMIdentitiesParams select identities by Issuer and Subject or, when Issuer is empty, by ID.
type LookupIAMIdentitiesParams struct {
	Issuer  string
	Subject string
	ID      string
}

// LookupIAMIdentities finds identities by (issuer, subject) or, when the issuer is empty, by id.
func LookupIAMIdentities(ctx context.Context, db DBTX, p LookupIAMIdentitiesParams) ([]IAMIdentity, error) {
	where, args := p.filter()
	r, err := db.Query(ctx, `SELECT `+identityColumns+` FROM occ.iam_identities i WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(r, scanIdentity)
}

func (p LookupIAMIdentitiesParams) filter() (string, []any) {
	if p.Issuer != "" {
		return `i.issuer = $1 AND i.subject = $2`, []any{p.Issuer, p.Subject}
	}
	return `i.id = $1`, []any{p.ID}
}

// LookupIAMIdentitiesAtEpoch is LookupIAMIdentities that also reads, in the same statement, the
// IAM policy epoch (migration 0013): a number that every committed change to the policy tables
// changes. Policy read after this statement is at least as new as the epoch.
func LookupIAMIdentitiesAtEpoch(ctx context.Context, db DBTX, p LookupIAMIdentitiesParams) ([]IAMIdentity, int64, error) {
	where, args := p.filter()
	r, err := db.Query(ctx, `
SELECT e.epoch, `+identityColumns+`
  FROM (SELECT sum(epoch)::bigint AS epoch FROM occ.iam_policy_epoch) e
  LEFT JOIN occ.iam_identities i ON `+where, args...)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	var epoch int64
	var out []IAMIdentity
	for r.Next() {
		var id, kind *string // NULL when nothing matched: the row carries the epoch alone
		var i IAMIdentity
		if err := r.Scan(&epoch, &id, &kind, &i.NamespaceID, &i.AgentID, &i.Issuer, &i.Subject); err != nil {
			return nil, 0, err
		}
		if id != nil && kind != nil {
			i.ID, i.Kind = *id, *kind
			out = append(out, i)
		}
	}
	return out, epoch, r.Err()
}

func scanIdentity(r pgx.CollectableRow) (IAMIdentity, error) {
	var i IAMIdentity
	err := r.Scan(&i.ID, &i.Kind, &i.NamespaceID, &i.AgentID, &i.Issuer, &i.Subject)
	return i, err
}

func scanBinding(r pgx.CollectableRow) (IAMBinding, error) {
	var b IAMBinding
	err := r.Scan(&b.ID, &b.NamespaceID, &b.IdentitySubjectID, &b.GroupSubjectID, &b.RoleID,
		&b.ResourceKind, &b.ResourceID, &b.RuntimeRole)
	return b, err
}

// InsertIAMIdentity writes one identity.
func InsertIAMIdentity(ctx context.Context, db DBTX, i IAMIdentity) error {
	_, err := db.Exec(ctx, `INSERT INTO occ.iam_identities (id, kind, namespace_id, agent_id, issuer, subject)
VALUES ($1, $2, $3, $4, $5, $6)`, i.ID, i.Kind, i.NamespaceID, i.AgentID, i.Issuer, i.Subject)
	return err
}

// InsertIAMRole writes a Role and its permissions (a Role is immutable once written).
func InsertIAMRole(ctx context.Context, db DBTX, id string, namespaceID, name *string, permissions [][2]string) error {
	if _, err := db.Exec(ctx, `INSERT INTO occ.iam_roles (id, namespace_id, name) VALUES ($1, $2, $3)`, id, namespaceID, name); err != nil {
		return err
	}
	actions := make([]string, len(permissions))
	kinds := make([]string, len(permissions))
	for i, p := range permissions {
		actions[i], kinds[i] = p[0], p[1]
	}
	_, err := db.Exec(ctx, `INSERT INTO occ.iam_role_permissions (role_id, action, resource_kind)
SELECT $1, a, k FROM unnest($2::text[], $3::text[]) AS t(a, k)`, id, actions, kinds)
	return err
}

// InsertIAMBinding writes one access binding. Refusals are classified: RefusedBy
// ConstraintIdenticalBinding or ConstraintOneRuntimeRole for a copy, ErrForeignKey (with the
// constraint of the missing Role or identity) for a reference deleted concurrently.
func InsertIAMBinding(ctx context.Context, db DBTX, b IAMBinding) error {
	_, err := db.Exec(ctx, `INSERT INTO occ.iam_access_bindings
  (id, namespace_id, identity_subject_id, group_subject_id, role_id, resource_kind, resource_id, runtime_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, b.ID, b.NamespaceID, b.IdentitySubjectID, b.GroupSubjectID, b.RoleID,
		b.ResourceKind, b.ResourceID, b.RuntimeRole)
	return classify(err)
}
