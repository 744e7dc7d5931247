package iam

import "slices"

// Actions of the IAM model. One action never implies another.
const (
	ActionCreate     = "create"
	ActionRead       = "read"
	ActionUpdate     = "update"
	ActionDelete     = "delete"
	ActionDeploy     = "deploy"
	ActionOperate    = "operate"
	ActionAdminister = "administer"
	ActionReadLogs   = "read_logs"
	ActionUse        = "use"
)

// Resource kinds of the IAM model.
const (
	KindInstallation     = "installation"
	KindNamespace        = "namespace"
	KindConfiguration    = "configuration"
	KindPreset           = "preset"
	KindServiceAccount   = "service_account"
	KindSecret           = "secret"
	KindAgent            = "agent"
	KindAgentRevision    = "agent_revision"
	KindCredentialSource = "credential_source"
)

// Identity kinds, binding subject kinds and the only Restriction effect.
const (
	IdentityKindPrincipal        = "principal"
	IdentityKindServicePrincipal = "service_principal"

	SubjectKindIdentity = "identity"
	SubjectKindGroup    = "group"

	EffectDeny = "deny"
)

// MaxRolePermissions is the upper bound of a Role's permission list (the lower bound is 1).
const MaxRolePermissions = 64

var actionOrder = []string{
	ActionCreate, ActionRead, ActionUpdate, ActionDelete, ActionDeploy, ActionOperate,
	ActionAdminister, ActionReadLogs, ActionUse,
}

var kindOrder = []string{
	KindInstallation, KindNamespace, KindConfiguration, KindPreset, KindServiceAccount, KindSecret,
	KindAgent, KindAgentRevision, KindCredentialSource,
}

// supportedMatrix is the supported-permission table: for each resource kind, the only actions any
// operation checks. Its order is the order of the reference and of SupportedPermissions.
var supportedMatrix = []struct {
	kind    string
	actions []string
}{
	{KindInstallation, []string{ActionRead, ActionAdminister}},
	{KindNamespace, []string{ActionCreate, ActionRead, ActionDelete}},
	{KindConfiguration, []string{ActionCreate, ActionRead, ActionUpdate, ActionDelete}},
	{KindPreset, []string{ActionCreate, ActionRead, ActionUpdate, ActionDelete}},
	{KindServiceAccount, []string{ActionCreate, ActionRead, ActionUpdate, ActionDelete}},
	{KindSecret, []string{ActionCreate, ActionRead, ActionUpdate, ActionDelete, ActionOperate}},
	{KindCredentialSource, []string{ActionCreate, ActionRead, ActionUpdate, ActionDelete, ActionOperate}},
	{KindAgent, []string{
		ActionCreate, ActionRead, ActionUpdate, ActionDelete, ActionDeploy, ActionOperate,
		ActionAdminister, ActionReadLogs, ActionUse,
	}},
	{KindAgentRevision, []string{ActionRead}},
}

var (
	actionSet       = toSet(actionOrder)
	kindSet         = toSet(kindOrder)
	supportedByKind = func() map[string][]string {
		m := make(map[string][]string, len(supportedMatrix))
		for _, row := range supportedMatrix {
			m[row.kind] = row.actions
		}
		return m
	}()
)

func toSet(values []string) map[string]struct{} {
	m := make(map[string]struct{}, len(values))
	for _, v := range values {
		m[v] = struct{}{}
	}
	return m
}

// Actions returns every action, in the order of the upstream model.
func Actions() []string { return append([]string(nil), actionOrder...) }

// ResourceKinds returns every resource kind, in the order of the upstream model.
func ResourceKinds() []string { return append([]string(nil), kindOrder...) }

// ValidAction reports whether action is one of the actions.
func ValidAction(action string) bool { _, ok := actionSet[action]; return ok }

// ValidResourceKind reports whether kind is one of the resource kinds.
func ValidResourceKind(kind string) bool { _, ok := kindSet[kind]; return ok }

// Supported reports whether (action, kind) is in the supported matrix.
func Supported(action, kind string) bool {
	return slices.Contains(supportedByKind[kind], action)
}

// SupportedPermissions returns every pair of the supported matrix, grouped by kind in the
// reference's order.
func SupportedPermissions() []Permission {
	var out []Permission
	for _, row := range supportedMatrix {
		for _, a := range row.actions {
			out = append(out, Permission{Action: a, ResourceKind: row.kind})
		}
	}
	return out
}

// BootstrapAdministratorPermissions returns the permission set of the seeded "Installation
// administrator" Role, in the order the reference lists it. It deliberately lacks
// agent:read_logs and agent:use. The Role is seeded once and never upgraded, so this list must not
// change for an existing Installation.
func BootstrapAdministratorPermissions() []Permission {
	p := func(action, kind string) Permission { return Permission{Action: action, ResourceKind: kind} }
	out := []Permission{
		p(ActionAdminister, KindInstallation),
		p(ActionRead, KindInstallation),
		p(ActionCreate, KindNamespace),
		p(ActionRead, KindNamespace),
		p(ActionDelete, KindNamespace),
	}
	for _, kind := range []string{KindConfiguration, KindServiceAccount, KindSecret, KindPreset} {
		for _, a := range []string{ActionCreate, ActionRead, ActionUpdate, ActionDelete} {
			out = append(out, p(a, kind))
		}
	}
	out = append(out, p(ActionOperate, KindSecret))
	for _, a := range []string{ActionCreate, ActionRead, ActionUpdate, ActionDelete, ActionOperate} {
		out = append(out, p(a, KindCredentialSource))
	}
	for _, a := range []string{
		ActionCreate, ActionRead, ActionUpdate, ActionDelete, ActionDeploy, ActionOperate, ActionAdminister,
	} {
		out = append(out, p(a, KindAgent))
	}
	return append(out, p(ActionRead, KindAgentRevision))
}

// Identity is one row of iam_identities: a human Principal (issuer + subject, never
// Namespace-scoped) or a ServicePrincipal (optionally Namespace-scoped; Agent-owned when AgentID is
// set, which implies a Namespace).
type Identity struct {
	ID          string  `json:"id"`
	Kind        string  `json:"kind"`
	NamespaceID *string `json:"namespaceId,omitempty"`
	AgentID     *string `json:"agentId,omitempty"`
	Issuer      string  `json:"issuer,omitempty"`
	Subject     string  `json:"subject,omitempty"`
}

// Permission is exactly (action, resourceKind).
type Permission struct {
	Action       string `json:"action"`
	ResourceKind string `json:"resourceKind"`
}

// Role is an immutable set of permissions. A Role with a NamespaceID only applies to requests in
// that Namespace.
type Role struct {
	ID          string       `json:"id"`
	NamespaceID *string      `json:"namespaceId,omitempty"`
	Name        string       `json:"name,omitempty"`
	Permissions []Permission `json:"permissions"`
}

// AccessBinding grants a Role to a subject (an identity or a Group) over a scope: Installation-wide
// (no Namespace, no resource), Namespace-wide (Namespace, no resource) or one exact resource.
type AccessBinding struct {
	ID           string  `json:"id"`
	NamespaceID  *string `json:"namespaceId,omitempty"`
	SubjectKind  string  `json:"subjectKind"`
	SubjectID    string  `json:"subjectId"`
	RoleID       string  `json:"roleId"`
	ResourceKind *string `json:"resourceKind,omitempty"`
	ResourceID   *string `json:"resourceId,omitempty"`
}

// Group gathers human Principals. A Namespace Group's bindings apply only inside its Namespace.
type Group struct {
	ID          string  `json:"id"`
	NamespaceID *string `json:"namespaceId,omitempty"`
	Name        string  `json:"name,omitempty"`
}

// GroupMembership puts one human Principal directly in one Group; its scope equals the Group's.
type GroupMembership struct {
	GroupID     string  `json:"groupId"`
	PrincipalID string  `json:"principalId"`
	NamespaceID *string `json:"namespaceId,omitempty"`
}

// Restriction is a deny-only overlay: when it matches a request, the request is denied even if a
// grant matches.
type Restriction struct {
	ID           string  `json:"id"`
	NamespaceID  *string `json:"namespaceId,omitempty"`
	Action       string  `json:"action"`
	ResourceKind string  `json:"resourceKind"`
	ResourceID   *string `json:"resourceId,omitempty"`
	Effect       string  `json:"effect"`
}

// PolicySlice is the part of the persisted policy one decision (or one coverage check) needs.
// PolicyNonEmpty says whether the whole store holds at least one identity, one Role and one
// binding: the slice alone cannot tell.
type PolicySlice struct {
	Identities     []Identity
	Groups         []Group
	Memberships    []GroupMembership
	Bindings       []AccessBinding
	Roles          []Role
	Restrictions   []Restriction
	PolicyNonEmpty bool

	// validated is set by the store source's splitter on a slice cut from a union that passed
	// ValidateSlice: every check holds for a subset of a valid union, so Decide does not repeat it
	// for each of a page's resources. Only this package can set it.
	validated bool
}

// Resource is the server-owned reference a request targets. The Installation has no NamespaceID; a
// Namespace carries its own id as NamespaceID; a collection create targets the created kind with
// the parent's id and Namespace.
type Resource struct {
	Kind        string  `json:"kind"`
	ID          string  `json:"id"`
	NamespaceID *string `json:"namespaceId,omitempty"`
}

// Request asks whether PrincipalID may perform Action on Resource.
type Request struct {
	PrincipalID string   `json:"principalId"`
	Action      string   `json:"action"`
	Resource    Resource `json:"resource"`
}

// Evidence names the policy rows behind a decision; every list is sorted and duplicate-free, and
// never nil (so it encodes as an empty JSON array).
type Evidence struct {
	IdentityID     string   `json:"identityId,omitempty"`
	GroupIDs       []string `json:"groupIds"`
	BindingIDs     []string `json:"bindingIds"`
	RoleIDs        []string `json:"roleIds"`
	RestrictionIDs []string `json:"restrictionIds"`
}

// Decision is the outcome of one authorization.
type Decision struct {
	Allowed  bool     `json:"allowed"`
	Reason   string   `json:"reason"`
	DriverID string   `json:"driverId"`
	Evidence Evidence `json:"evidence"`
}

// IdentityLookup resolves an authenticated caller to an identity: either by (Issuer, Subject) for
// humans or by ServicePrincipalID for service keys, never both. NamespaceID is the request's
// Namespace scope (a Namespace-scoped key or a pinned CLI session), if any.
type IdentityLookup struct {
	Issuer             string  `json:"issuer,omitempty"`
	Subject            string  `json:"subject,omitempty"`
	ServicePrincipalID string  `json:"servicePrincipalId,omitempty"`
	NamespaceID        *string `json:"namespaceId,omitempty"`
}

// ptrEq reports whether two nullable strings are both null or both set to the same value.
func ptrEq(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
