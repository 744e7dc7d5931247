package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/schema"
	"github.com/openclaw/occ/internal/store"
)

// Scope says how a route relates to IAM identities and credential scopes.
type Scope int

const (
	// ScopeNone: no IAM identity is resolved (public, sign-in, session, sign-out).
	ScopeNone Scope = iota
	// ScopeInstallation: an Installation route; a Namespace-scoped credential is refused (403).
	ScopeInstallation
	// ScopeNamespace: the route names {namespaceId}; a Namespace-scoped credential must name the
	// same Namespace (403), and the Namespace must exist and not be tombstoned (404).
	ScopeNamespace
	// ScopeCollection: a list across Namespaces; a Namespace-scoped credential sees only its own.
	ScopeCollection
)

// Target says which resource a permission is checked on.
type Target int

const (
	// TargetInstallation is {kind: installation, id: <installationId>}.
	TargetInstallation Target = iota
	// TargetInstallationCollection is a collection create on the Installation: {kind: <created
	// kind>, id: <installationId>} without a Namespace.
	TargetInstallationCollection
	// TargetPathNamespace is the path Namespace: {kind: namespace, id: ns, namespaceId: ns}.
	TargetPathNamespace
	// TargetEachItem is checked per item of a list; items without it are left out.
	TargetEachItem
	// TargetBodyResource is the exact resource named by the request body (checked by the handler).
	TargetBodyResource
	// TargetNamespaceCollection is a collection create in the path Namespace: {kind: <created
	// kind>, id: ns, namespaceId: ns}.
	TargetNamespaceCollection
	// TargetPathResource is the exact resource the path names (checked by the handler after the
	// resource was found, so an absent resource is 404).
	TargetPathResource
	// TargetReferencedResource is every resource the request or the Agent references (checked by
	// the handler, per reference).
	TargetReferencedResource
)

var targetDescriptions = map[Target]string{
	TargetInstallation:           "installation",
	TargetInstallationCollection: "installation-collection",
	TargetPathNamespace:          "path-namespace",
	TargetEachItem:               "each-item",
	TargetBodyResource:           "body-resource",
	TargetNamespaceCollection:    "namespace-collection",
	TargetPathResource:           "path-resource",
	TargetReferencedResource:     "referenced-resource",
}

// Permission is one IAM check of a route: exactly (Action, Kind) on Target. Checks with a Cond run
// only when it holds (documented by When).
type Permission struct {
	Action string
	Kind   string
	Target Target
	When   string
	Cond   func(c *call) bool
}

// generic reports whether the pipeline checks the permission before the handler runs.
func (p Permission) generic() bool {
	switch p.Target {
	case TargetInstallation, TargetInstallationCollection, TargetPathNamespace, TargetNamespaceCollection:
		return true
	}
	return false
}

// itemPermission is the permission a list checks on each candidate item (TargetEachItem).
func (r *Route) itemPermission() (Permission, bool) {
	for _, p := range r.Permissions {
		if p.Target == TargetEachItem {
			return p, true
		}
	}
	return Permission{}, false
}

// TxMode is the transaction a route's handler runs in.
type TxMode int

const (
	// TxNone: the handler manages storage itself (or needs none).
	TxNone TxMode = iota
	// TxRead: one read-only transaction.
	TxRead
	// TxWrite: one read-write transaction holding the mutation, its audit event and its work.
	TxWrite
)

// Route is one entry of the route table. Routing, credential admission, authorization, request
// validation and the OpenAPI document are all derived from the table.
type Route struct {
	Method string
	Path   string // template, e.g. /namespaces/{namespaceId}
	Action string // audit action and log vocabulary
	// OperationID is the OpenAPI operationId: upstream's on shared routes, camelCase in its style on ours.
	OperationID string
	Summary     string
	Description string
	Tag         string

	Auth         auth.Mode
	SignInOrigin bool // the sign-in/sign-out Origin gate instead of the cookie-unsafe one
	// ExactOrigin applies the cookie-unsafe Origin gate to every method and credential (account
	// reads, provider start).
	ExactOrigin bool
	// OpenQuery leaves the query unvalidated: it belongs to someone else (a provider callback).
	OpenQuery bool
	// RefusesCLISession answers a CLI session with 403: a copied CLI token must not mint longer-lived
	// credentials (service keys).
	RefusesCLISession bool
	Scope             Scope
	// NamespaceLock is the lock the path Namespace is read with (ScopeNamespace).
	NamespaceLock store.RowLock
	// AgentLock, when not NoLock, reads the path Agent ({agentId}) with this lock in the round trip
	// of the path Namespace (decision 47); the handler's pathAgent with the same lock takes it.
	AgentLock   store.RowLock
	Permissions []Permission
	// Coverage documents the identity-coverage rule the handler applies (service keys).
	Coverage string

	Body       *schema.Schema // nil: no body (nothing or {})
	BodyLimit  int64          // 0: DefaultBodyLimit
	PathParams map[string]*schema.Schema
	Query      []QueryParam

	Success  int
	Response *schema.Schema // the data member; nil for 204
	Paged    bool           // meta.nextCursor
	Conflict bool           // documents 409
	Limited  bool           // documents 429
	// Statuses documents further error statuses (501, 504 of the runtime views; those upstream declares).
	Statuses []int

	Tx TxMode
	// KeepsPolicy marks a TxWrite route that never changes the IAM policy: its transaction reuses
	// authorization decisions like a read, and PostgreSQL refuses it any policy change (decision 49).
	KeepsPolicy bool
	Handler     func(s *Server, ctx context.Context, c *call) error
	// Unmetered routes are left out of the request metrics (health endpoints).
	Unmetered bool
}

func (r *Route) bodyLimit() int64 {
	if r.BodyLimit > 0 {
		return r.BodyLimit
	}
	return DefaultBodyLimit
}

// errorStatuses lists the error statuses a route documents.
func (r *Route) errorStatuses() []int {
	statuses := []int{http.StatusBadRequest}
	if r.Auth == auth.ModeAny || r.Auth == auth.ModeSession || r.Auth == auth.ModeAnonymous || r.Auth == auth.ModeSessionOptional {
		statuses = append(statuses, http.StatusUnauthorized)
	}
	if r.Scope != ScopeNone || r.Auth == auth.ModeSession || r.SignInOrigin || r.Auth == auth.ModeAny || r.ExactOrigin {
		statuses = append(statuses, http.StatusForbidden)
	}
	if len(r.PathParams) > 0 || r.Scope == ScopeNamespace {
		statuses = append(statuses, http.StatusNotFound)
	}
	statuses = append(statuses, http.StatusMethodNotAllowed)
	if r.Conflict {
		statuses = append(statuses, http.StatusConflict)
	}
	statuses = append(statuses, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	if r.Limited {
		statuses = append(statuses, http.StatusTooManyRequests)
	}
	statuses = append(statuses, http.StatusInternalServerError, http.StatusServiceUnavailable)
	statuses = append(statuses, r.Statuses...)
	slices.Sort(statuses)
	return slices.Compact(statuses)
}

// Routes returns the route table.
func Routes() []*Route {
	prepareRoutes()
	return routeTable
}

// operationID is the route's OpenAPI operationId.
func (r *Route) operationID() string {
	if r.OperationID != "" {
		return r.OperationID
	}
	return r.Action
}
