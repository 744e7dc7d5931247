package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// The Namespace IAM policy API's queries: Roles, AccessBindings and ServicePrincipals of one
// Namespace, and the existence checks its validation rules need.

// IAMRole is one stored Role with its permissions ([action, kind] pairs).
type IAMRole struct {
	ID          string
	NamespaceID *string
	Name        *string
	Permissions [][2]string
	CreatedAt   time.Time
}

const roleSelect = `
SELECT r.id, r.namespace_id, r.name, r.created_at,
       coalesce(array_agg(p.action ORDER BY p.resource_kind, p.action) FILTER (WHERE p.action IS NOT NULL), '{}'),
       coalesce(array_agg(p.resource_kind ORDER BY p.resource_kind, p.action) FILTER (WHERE p.action IS NOT NULL), '{}')
  FROM occ.iam_roles r LEFT JOIN occ.iam_role_permissions p ON p.role_id = r.id`

func scanRole(r pgx.CollectableRow) (IAMRole, error) {
	var role IAMRole
	var actions, kinds []string
	if err := r.Scan(&role.ID, &role.NamespaceID, &role.Name, &role.CreatedAt, &actions, &kinds); err != nil {
		return IAMRole{}, err
	}
	role.Permissions = make([][2]string, len(actions))
	for i := range actions {
		role.Permissions[i] = [2]string{actions[i], kinds[i]}
	}
	return role, nil
}

// Cursor is a keyset position: the creation time and id of the last item returned.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// ListNamespaceRoles returns up to limit Roles of the Namespace (Installation Roles are never
// included), ordered by creation, after the cursor when it is set.
func ListNamespaceRoles(ctx context.Context, db DBTX, namespaceID string, after *Cursor, limit int) ([]IAMRole, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, roleSelect+`
 WHERE r.namespace_id = $1 AND ($2::timestamptz IS NULL OR (r.created_at, r.id) > ($2, $3))
 GROUP BY r.id ORDER BY r.created_at, r.id LIMIT $4`, namespaceID, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanRole)
}

// GetRole reads a Role by id, whatever its scope; ErrNotFound when absent.
func GetRole(ctx context.Context, db DBTX, id string) (IAMRole, error) {
	rows, err := db.Query(ctx, roleSelect+` WHERE r.id = $1 GROUP BY r.id`, id)
	return oneRow(rows, err, scanRole)
}

// InsertNamespaceRole writes a Role and returns its creation time.
func InsertNamespaceRole(ctx context.Context, db DBTX, role IAMRole) (time.Time, error) {
	if err := InsertIAMRole(ctx, db, role.ID, role.NamespaceID, role.Name, role.Permissions); err != nil {
		return time.Time{}, err
	}
	var created time.Time
	err := db.QueryRow(ctx, `SELECT created_at FROM occ.iam_roles WHERE id = $1`, role.ID).Scan(&created)
	return created, err
}

// DeleteRole removes a Role (its permissions cascade); false when it did not exist.
// A binding that references the Role refuses the deletion: RefusedBy ConstraintBindingRole.
func DeleteRole(ctx context.Context, db DBTX, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.iam_roles WHERE id = $1`, id)
	return tag.RowsAffected() == 1, classify(err)
}

// IAMBindingRow is a stored binding with its creation time.
type IAMBindingRow struct {
	IAMBinding
	CreatedAt time.Time
}

const bindingRowColumns = bindingColumns + `, b.created_at`

func scanBindingRow(r pgx.CollectableRow) (IAMBindingRow, error) {
	var b IAMBindingRow
	err := r.Scan(&b.ID, &b.NamespaceID, &b.IdentitySubjectID, &b.GroupSubjectID, &b.RoleID,
		&b.ResourceKind, &b.ResourceID, &b.RuntimeRole, &b.CreatedAt)
	return b, err
}

// ListNamespaceBindings returns up to limit bindings scoped to the Namespace (exact, broad and
// Group bindings alike), ordered by creation, after the cursor when it is set.
func ListNamespaceBindings(ctx context.Context, db DBTX, namespaceID string, after *Cursor, limit int) ([]IAMBindingRow, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, `SELECT `+bindingRowColumns+` FROM occ.iam_access_bindings b
 WHERE b.namespace_id = $1 AND ($2::timestamptz IS NULL OR (b.created_at, b.id) > ($2, $3))
 ORDER BY b.created_at, b.id LIMIT $4`, namespaceID, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanBindingRow)
}

// GetNamespaceBinding reads a binding scoped to the Namespace; ErrNotFound otherwise.
func GetNamespaceBinding(ctx context.Context, db DBTX, namespaceID, id string) (IAMBindingRow, error) {
	rows, err := db.Query(ctx, `SELECT `+bindingRowColumns+` FROM occ.iam_access_bindings b
 WHERE b.namespace_id = $1 AND b.id = $2`, namespaceID, id)
	return oneRow(rows, err, scanBindingRow)
}

// InsertNamespaceBinding writes a binding and returns its creation time.
func InsertNamespaceBinding(ctx context.Context, db DBTX, b IAMBinding) (time.Time, error) {
	if err := InsertIAMBinding(ctx, db, b); err != nil {
		return time.Time{}, err
	}
	var created time.Time
	err := db.QueryRow(ctx, `SELECT created_at FROM occ.iam_access_bindings WHERE id = $1`, b.ID).Scan(&created)
	return created, err
}

// DeleteBinding removes a binding; false when it did not exist.
func DeleteBinding(ctx context.Context, db DBTX, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.iam_access_bindings WHERE id = $1`, id)
	return tag.RowsAffected() == 1, err
}

// IAMIdentityRow is a stored identity with its creation time.
type IAMIdentityRow struct {
	IAMIdentity
	CreatedAt time.Time
}

// ListNamespaceServicePrincipals returns up to limit non-Agent ServicePrincipals of the Namespace,
// ordered by creation, after the cursor when it is set.
func ListNamespaceServicePrincipals(ctx context.Context, db DBTX, namespaceID string, after *Cursor, limit int) ([]IAMIdentityRow, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, `SELECT `+identityColumns+`, i.created_at FROM occ.iam_identities i
 WHERE i.kind = 'service_principal' AND i.namespace_id = $1 AND i.agent_id IS NULL
   AND ($2::timestamptz IS NULL OR (i.created_at, i.id) > ($2, $3))
 ORDER BY i.created_at, i.id LIMIT $4`, namespaceID, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (IAMIdentityRow, error) {
		var i IAMIdentityRow
		err := r.Scan(&i.ID, &i.Kind, &i.NamespaceID, &i.AgentID, &i.Issuer, &i.Subject, &i.CreatedAt)
		return i, err
	})
}

// GetIdentity reads one identity by id; ErrNotFound when absent.
func GetIdentity(ctx context.Context, db DBTX, id string) (IAMIdentity, error) {
	rows, err := LookupIAMIdentities(ctx, db, LookupIAMIdentitiesParams{ID: id})
	if err != nil {
		return IAMIdentity{}, err
	}
	if len(rows) != 1 {
		return IAMIdentity{}, ErrNotFound
	}
	return rows[0], nil
}

// AgentState is what binding validation needs to know about an Agent.
type AgentState struct {
	ID                 string
	Status             string
	ServicePrincipalID string
}

// GetAgentState reads an Agent of the Namespace; ErrNotFound when absent.
func GetAgentState(ctx context.Context, db DBTX, namespaceID, agentID string) (AgentState, error) {
	a := AgentState{ID: agentID}
	err := db.QueryRow(ctx, `SELECT status, service_principal_id FROM occ.agents WHERE namespace_id = $1 AND id = $2`,
		namespaceID, agentID).Scan(&a.Status, &a.ServicePrincipalID)
	if errors.Is(err, pgx.ErrNoRows) {
		return AgentState{}, ErrNotFound
	}
	return a, err
}

// GetRevisionAgentState reads the Agent of a revision of the Namespace; ErrNotFound when the
// revision is absent.
func GetRevisionAgentState(ctx context.Context, db DBTX, namespaceID, revisionID string) (AgentState, error) {
	var a AgentState
	err := db.QueryRow(ctx, `SELECT a.id, a.status, a.service_principal_id
  FROM occ.agent_revisions r JOIN occ.agents a ON a.namespace_id = r.namespace_id AND a.id = r.agent_id
 WHERE r.namespace_id = $1 AND r.id = $2`, namespaceID, revisionID).Scan(&a.ID, &a.Status, &a.ServicePrincipalID)
	if errors.Is(err, pgx.ErrNoRows) {
		return AgentState{}, ErrNotFound
	}
	return a, err
}

// NamespaceResource names one resource of a Namespace by its IAM kind and id.
type NamespaceResource struct {
	NamespaceID string
	Kind        string
	ID          string
}

// NamespaceResourceExists reports whether a Configuration, Secret or ServiceAccount with that id
// exists in the Namespace. Other kinds have no table yet and never exist.
func NamespaceResourceExists(ctx context.Context, db DBTX, r NamespaceResource) (bool, error) {
	var table string
	switch r.Kind {
	case "configuration":
		table = "occ.configurations"
	case "secret":
		table = "occ.secrets"
	case "service_account":
		table = "occ.service_accounts"
	default:
		return false, nil
	}
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE namespace_id = $1 AND id = $2)`,
		r.NamespaceID, r.ID).Scan(&ok)
	return ok, err
}

func cursorArgs(c *Cursor) (any, string) {
	if c == nil {
		return nil, ""
	}
	return c.CreatedAt, c.ID
}
