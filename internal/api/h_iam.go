package api

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// The Namespace IAM policy API. Every route has already checked
// installation:administer and exact namespace:read and holds the path Namespace (FOR SHARE on
// writes, so a concurrent deletion serializes with them).

type roleView struct {
	ID          string           `json:"id"`
	NamespaceID string           `json:"namespaceId"`
	Name        *string          `json:"name,omitempty"`
	Permissions []iam.Permission `json:"permissions"`
}

func rolePermissions(r store.IAMRole) []iam.Permission {
	perms := make([]iam.Permission, len(r.Permissions))
	for i, p := range r.Permissions {
		perms[i] = iam.Permission{Action: p[0], ResourceKind: p[1]}
	}
	return platform.SortPermissions(perms)
}

func roleToView(r store.IAMRole) roleView {
	ns := ""
	if r.NamespaceID != nil {
		ns = *r.NamespaceID
	}
	return roleView{ID: r.ID, NamespaceID: ns, Name: r.Name, Permissions: rolePermissions(r)}
}

// refuseDeleting keeps new policy out of a Namespace being torn down.
func refuseDeleting(c *call) error {
	if c.namespace.Status == platform.NamespaceDeleting {
		return platform.Conflict("The Namespace is being deleted.")
	}
	return nil
}

func (s *Server) listRoles(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.IAMRole, error) {
			return store.ListNamespaceRoles(ctx, c.db, c.namespace.ID, keyCursor(after), n)
		},
		keepAll[store.IAMRole],
		func(r store.IAMRole) cursorDoc { return keyDoc(r.CreatedAt, r.ID) },
		after)
	if err != nil {
		return platform.Unavailable(err)
	}
	views := make([]roleView, len(items))
	for i, r := range items {
		views[i] = roleToView(r)
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

type createRoleBody struct {
	Name        *string          `json:"name"`
	Permissions []iam.Permission `json:"permissions"`
}

func (s *Server) createRole(ctx context.Context, c *call) error {
	var b createRoleBody
	if err := c.decode(&b); err != nil {
		return err
	}
	if details := platform.ValidateNamespaceRolePermissions(b.Permissions); len(details) > 0 {
		return platform.NewError(platform.CodeInvalidRequest, platform.NamespaceRoleProblem(b.Permissions), details...)
	}
	if err := refuseDeleting(c); err != nil {
		return err
	}
	ns := c.namespace.ID
	role := store.IAMRole{ID: "role_" + uuid.NewString(), NamespaceID: &ns, Name: b.Name}
	for _, p := range b.Permissions {
		role.Permissions = append(role.Permissions, [2]string{p.Action, p.ResourceKind})
	}
	if _, err := store.InsertNamespaceRole(ctx, c.db, role); err != nil {
		return platform.Unavailable(err)
	}
	view := roleToView(role)
	if err := c.audit(ctx, auditEvent(namespaceResource(ns), map[string]any{
		"roleId": role.ID, "permissions": permissionDetails(view.Permissions),
	})); err != nil {
		return err
	}
	c.respond(http.StatusCreated, view)
	return nil
}

func permissionDetails(perms []iam.Permission) []any {
	out := make([]any, len(perms))
	for i, p := range perms {
		out[i] = map[string]any{"action": p.Action, "resourceKind": p.ResourceKind}
	}
	return out
}

// namespaceRole reads a Role of the path Namespace; Installation Roles and other Namespaces' Roles
// are not found.
func namespaceRole(ctx context.Context, c *call, id string) (store.IAMRole, error) {
	role, err := store.GetRole(ctx, c.db, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (role.NamespaceID == nil || *role.NamespaceID != c.namespace.ID)) {
		return store.IAMRole{}, platform.NotFound("The Role does not exist in this Namespace.")
	} else if err != nil {
		return store.IAMRole{}, platform.Unavailable(err)
	}
	return role, nil
}

func (s *Server) getRole(ctx context.Context, c *call) error {
	role, err := namespaceRole(ctx, c, c.params["roleId"])
	if err != nil {
		return err
	}
	c.respond(0, roleToView(role))
	return nil
}

func (s *Server) deleteRole(ctx context.Context, c *call) error {
	role, err := namespaceRole(ctx, c, c.params["roleId"])
	if err != nil {
		return err
	}
	// A binding that references the Role, committed or created meanwhile, makes the DELETE refuse
	// (the foreign key). Of concurrent deletes, only the one whose DELETE removed the row succeeds.
	deleted, err := store.DeleteRole(ctx, c.db, role.ID)
	if store.RefusedBy(err, store.ConstraintBindingRole) {
		return platform.Conflict("The Role is referenced by an AccessBinding; delete the bindings first.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if !deleted {
		return platform.NotFound("The Role does not exist in this Namespace.")
	}
	if err := c.audit(ctx, auditEvent(namespaceResource(c.namespace.ID), map[string]any{
		"roleId": role.ID, "permissions": permissionDetails(rolePermissions(role)),
	})); err != nil {
		return err
	}
	c.respond(http.StatusNoContent, nil)
	return nil
}

type bindingView struct {
	ID           string  `json:"id"`
	NamespaceID  *string `json:"namespaceId,omitempty"`
	SubjectKind  string  `json:"subjectKind"`
	SubjectID    string  `json:"subjectId"`
	RoleID       string  `json:"roleId"`
	ResourceKind *string `json:"resourceKind,omitempty"`
	ResourceID   *string `json:"resourceId,omitempty"`
	RuntimeRole  *string `json:"runtimeRole,omitempty"`
}

func bindingToView(b store.IAMBinding) bindingView {
	v := bindingView{ID: b.ID, NamespaceID: b.NamespaceID, RoleID: b.RoleID, ResourceKind: b.ResourceKind,
		ResourceID: b.ResourceID, RuntimeRole: b.RuntimeRole}
	if b.IdentitySubjectID != nil {
		v.SubjectKind, v.SubjectID = iam.SubjectKindIdentity, *b.IdentitySubjectID
	} else if b.GroupSubjectID != nil {
		v.SubjectKind, v.SubjectID = iam.SubjectKindGroup, *b.GroupSubjectID
	}
	return v
}

// bindingResource is what a binding's events are about: its exact target, else the Namespace.
func bindingResource(b store.IAMBinding, namespaceID string) iam.Resource {
	if b.ResourceKind != nil && b.ResourceID != nil {
		ns := namespaceID
		return iam.Resource{Kind: *b.ResourceKind, ID: *b.ResourceID, NamespaceID: &ns}
	}
	return namespaceResource(namespaceID)
}

func (s *Server) listBindings(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.IAMBindingRow, error) {
			return store.ListNamespaceBindings(ctx, c.db, c.namespace.ID, keyCursor(after), n)
		},
		keepAll[store.IAMBindingRow],
		func(b store.IAMBindingRow) cursorDoc { return keyDoc(b.CreatedAt, b.ID) },
		after)
	if err != nil {
		return platform.Unavailable(err)
	}
	views := make([]bindingView, len(items))
	for i, b := range items {
		views[i] = bindingToView(b.IAMBinding)
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

type createBindingBody struct {
	SubjectKind  string  `json:"subjectKind"`
	SubjectID    string  `json:"subjectId"`
	RoleID       string  `json:"roleId"`
	ResourceKind string  `json:"resourceKind"`
	ResourceID   string  `json:"resourceId"`
	RuntimeRole  *string `json:"runtimeRole"`
}

// createBinding applies the creation rules of an AccessBinding in order: the subject, the Role, the
// target, the Role/target fit, the caller's read on the exact target, the runtime role; then the
// binding and its audit event commit together.
func (s *Server) createBinding(ctx context.Context, c *call) error {
	var b createBindingBody
	if err := c.decode(&b); err != nil {
		return err
	}
	ns := c.namespace.ID
	if err := refuseDeleting(c); err != nil {
		return err
	}
	// 1. The subject: a human Principal, a non-Agent ServicePrincipal of this Namespace, or the
	// ServicePrincipal of a live Agent of this Namespace.
	if b.SubjectKind != iam.SubjectKindIdentity {
		return platform.Invalid("Only identities can be bound through the API.", "/subjectKind", problem.DetailInvalidValue)
	}
	subject, err := store.GetIdentity(ctx, c.db, b.SubjectID)
	if errors.Is(err, store.ErrNotFound) {
		return platform.Invalid("The subject is not an identity of this Namespace.", "/subjectId", problem.DetailInvalidValue)
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if ok, err := s.bindableSubject(ctx, c, subject); err != nil {
		return err
	} else if !ok {
		return platform.Invalid("The subject is not an identity of this Namespace.", "/subjectId", problem.DetailInvalidValue)
	}
	// 2. The Role belongs to this Namespace.
	role, err := store.GetRole(ctx, c.db, b.RoleID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (role.NamespaceID == nil || *role.NamespaceID != ns)) {
		return platform.Invalid("The Role is not a Role of this Namespace.", "/roleId", problem.DetailInvalidValue)
	} else if err != nil {
		return platform.Unavailable(err)
	}
	// 3. The target exists in this Namespace and is not being deleted.
	if !slices.Contains(platform.BindingTargetKinds, b.ResourceKind) {
		return platform.Invalid("This resource kind cannot be bound in a Namespace.", "/resourceKind", problem.DetailInvalidValue)
	}
	if ok, err := s.bindableTarget(ctx, c, b.ResourceKind, b.ResourceID); err != nil {
		return err
	} else if !ok {
		return platform.Invalid("The target does not exist in this Namespace.", "/resourceId", problem.DetailInvalidValue)
	}
	// 4. The Role grants something on the target's kind and no create (create is checked on the
	// collection, so an exact binding could never convey it).
	perms := rolePermissions(role)
	fits := false
	for _, p := range perms {
		if p.Action == iam.ActionCreate {
			return platform.Invalid("A Role with a create permission cannot be bound to one resource.", "/roleId", problem.DetailInvalidValue)
		}
		if p.ResourceKind == b.ResourceKind {
			fits = true
		}
	}
	if !fits {
		return platform.Invalid("The Role grants nothing on the target's kind.", "/roleId", problem.DetailInvalidValue)
	}
	// 5. The caller reads the exact target.
	target := iam.Resource{Kind: b.ResourceKind, ID: b.ResourceID, NamespaceID: &ns}
	if err := c.authorize(ctx, iam.ActionRead, target); err != nil {
		return err
	}
	// 6. A runtime role: a person on an Agent whose Role holds agent:use, once per person and Agent.
	if b.RuntimeRole != nil {
		if subject.Kind != iam.IdentityKindPrincipal || b.ResourceKind != iam.KindAgent ||
			!slices.Contains(perms, iam.Permission{Action: iam.ActionUse, ResourceKind: iam.KindAgent}) {
			return platform.Invalid("A runtime role needs a person, an Agent target and a Role with agent:use.", "/runtimeRole", problem.DetailInvalidValue)
		}
	}
	// 7. One transaction: the binding and its audit event. The store's unique indexes decide the
	// races a read could not: an identical binding, a second runtime role, and a Role or subject
	// deleted since it was read above.
	binding := store.IAMBinding{ID: "binding_" + uuid.NewString(), NamespaceID: &ns, IdentitySubjectID: &subject.ID,
		RoleID: role.ID, ResourceKind: &b.ResourceKind, ResourceID: &b.ResourceID, RuntimeRole: b.RuntimeRole}
	if _, err := store.InsertNamespaceBinding(ctx, c.db, binding); err != nil {
		return bindingRefusal(err)
	}
	details := map[string]any{"bindingId": binding.ID, "subjectKind": iam.SubjectKindIdentity, "subjectId": subject.ID, "roleId": role.ID}
	if b.RuntimeRole != nil {
		details["runtimeRole"] = *b.RuntimeRole
	}
	if err := c.audit(ctx, auditEvent(target, details)); err != nil {
		return err
	}
	c.respond(http.StatusCreated, bindingToView(binding))
	return nil
}

// bindingRefusal answers a binding the store refused in the caller's terms.
func bindingRefusal(err error) error {
	switch {
	case store.RefusedBy(err, store.ConstraintIdenticalBinding):
		return platform.Conflict("An identical AccessBinding exists.")
	case store.RefusedBy(err, store.ConstraintOneRuntimeRole):
		return platform.Conflict("This person already has a runtime role on this Agent.")
	case store.RefusedBy(err, store.ConstraintBindingRole):
		return platform.Invalid("The Role is not a Role of this Namespace.", "/roleId", problem.DetailInvalidValue)
	case store.RefusedBy(err, store.ConstraintBindingIdentity):
		return platform.Invalid("The subject is not an identity of this Namespace.", "/subjectId", problem.DetailInvalidValue)
	}
	return platform.Unavailable(err)
}

func (s *Server) bindableSubject(ctx context.Context, c *call, subject store.IAMIdentity) (bool, error) {
	ns := c.namespace.ID
	switch subject.Kind {
	case iam.IdentityKindPrincipal:
		return subject.NamespaceID == nil, nil
	case iam.IdentityKindServicePrincipal:
		if subject.NamespaceID == nil || *subject.NamespaceID != ns {
			return false, nil
		}
		if subject.AgentID == nil {
			return true, nil
		}
		agent, err := store.GetAgentState(ctx, c.db, ns, *subject.AgentID)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, platform.Unavailable(err)
		}
		return agent.Status != "deleting", nil
	}
	return false, nil
}

func (s *Server) bindableTarget(ctx context.Context, c *call, kind, id string) (bool, error) {
	ns := c.namespace.ID
	var agent store.AgentState
	var err error
	switch kind {
	case iam.KindNamespace:
		return id == ns, nil
	case iam.KindAgent:
		agent, err = store.GetAgentState(ctx, c.db, ns, id)
	case iam.KindAgentRevision:
		agent, err = store.GetRevisionAgentState(ctx, c.db, ns, id)
	default:
		ok, err := store.NamespaceResourceExists(ctx, c.db, store.NamespaceResource{NamespaceID: ns, Kind: kind, ID: id})
		if err != nil {
			return false, platform.Unavailable(err)
		}
		return ok, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, platform.Unavailable(err)
	}
	return agent.Status != "deleting", nil
}

func namespaceBinding(ctx context.Context, c *call) (store.IAMBindingRow, error) {
	b, err := store.GetNamespaceBinding(ctx, c.db, c.namespace.ID, c.params["bindingId"])
	if errors.Is(err, store.ErrNotFound) {
		return b, platform.NotFound("The AccessBinding does not exist in this Namespace.")
	} else if err != nil {
		return b, platform.Unavailable(err)
	}
	return b, nil
}

func (s *Server) getBinding(ctx context.Context, c *call) error {
	b, err := namespaceBinding(ctx, c)
	if err != nil {
		return err
	}
	c.respond(0, bindingToView(b.IAMBinding))
	return nil
}

func (s *Server) deleteBinding(ctx context.Context, c *call) error {
	b, err := namespaceBinding(ctx, c)
	if err != nil {
		return err
	}
	// Concurrent deletes all read the binding; only the one whose DELETE removed it succeeds.
	if deleted, err := store.DeleteBinding(ctx, c.db, b.ID); err != nil {
		return platform.Unavailable(err)
	} else if !deleted {
		return platform.NotFound("The AccessBinding does not exist in this Namespace.")
	}
	v := bindingToView(b.IAMBinding)
	details := map[string]any{"bindingId": b.ID, "subjectKind": v.SubjectKind, "subjectId": v.SubjectID, "roleId": b.RoleID}
	if err := c.audit(ctx, auditEvent(bindingResource(b.IAMBinding, c.namespace.ID), details)); err != nil {
		return err
	}
	c.respond(http.StatusNoContent, nil)
	return nil
}

type servicePrincipalView struct {
	ID          string `json:"id"`
	NamespaceID string `json:"namespaceId"`
}

func (s *Server) listServicePrincipals(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.IAMIdentityRow, error) {
			return store.ListNamespaceServicePrincipals(ctx, c.db, c.namespace.ID, keyCursor(after), n)
		},
		keepAll[store.IAMIdentityRow],
		func(i store.IAMIdentityRow) cursorDoc { return keyDoc(i.CreatedAt, i.ID) },
		after)
	if err != nil {
		return platform.Unavailable(err)
	}
	views := make([]servicePrincipalView, len(items))
	for i, sp := range items {
		views[i] = servicePrincipalView{ID: sp.ID, NamespaceID: c.namespace.ID}
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

func (s *Server) createServicePrincipal(ctx context.Context, c *call) error {
	if err := refuseDeleting(c); err != nil {
		return err
	}
	ns := c.namespace.ID
	id := platform.NewID(platform.PrefixServicePrincipal)
	if err := store.InsertIAMIdentity(ctx, c.db, store.IAMIdentity{ID: id, Kind: iam.IdentityKindServicePrincipal, NamespaceID: &ns}); err != nil {
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, auditEvent(namespaceResource(ns), map[string]any{"servicePrincipalId": id})); err != nil {
		return err
	}
	c.respond(http.StatusCreated, servicePrincipalView{ID: id, NamespaceID: ns})
	return nil
}

func (s *Server) getServicePrincipal(ctx context.Context, c *call) error {
	sp, err := store.GetIdentity(ctx, c.db, c.params["servicePrincipalId"])
	if errors.Is(err, store.ErrNotFound) || (err == nil && (sp.Kind != iam.IdentityKindServicePrincipal ||
		sp.AgentID != nil || sp.NamespaceID == nil || *sp.NamespaceID != c.namespace.ID)) {
		return platform.NotFound("The ServicePrincipal does not exist in this Namespace.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	c.respond(0, servicePrincipalView{ID: sp.ID, NamespaceID: c.namespace.ID})
	return nil
}
