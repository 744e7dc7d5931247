package api

import (
	"net/http"
	"sync"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/schema"
	"github.com/openclaw/occ/internal/store"
)

// Audit actions of the routes. Ours: openclaw.auth.accounts.create,
// openclaw.audit_events.list, authentication.session.read and the service-principal list/read.
const (
	ActionHealthLive              = "health.live"
	ActionHealthReady             = "health.ready"
	ActionOpenAPI                 = "openapi.read"
	ActionSignIn                  = "authentication.login"
	ActionSignOut                 = "authentication.session.end"
	ActionSessionRead             = "authentication.session.read"
	ActionAccountsCreate          = "openclaw.auth.accounts.create"
	ActionServiceKeysCreate       = "openclaw.auth.service-keys.create"
	ActionServiceKeysRevoke       = "openclaw.auth.service-keys.revoke"
	ActionInstallationRead        = "openclaw.installation.read"
	ActionObservabilityRead       = "openclaw.observability.read"
	ActionDeploymentInventoryRead = "openclaw.installation.deployment_inventory.read"
	ActionAuditEventsList         = "openclaw.audit_events.list"
	ActionNamespacesList          = "openclaw.namespaces.list"
	ActionNamespacesCreate        = "openclaw.namespaces.create"
	ActionNamespacesRead          = "openclaw.namespaces.read"
	ActionNamespacesDelete        = "openclaw.namespaces.delete"
	ActionRolesList               = "openclaw.iam.roles.list"
	ActionRolesCreate             = "openclaw.iam.roles.create"
	ActionRolesRead               = "openclaw.iam.roles.read"
	ActionRolesDelete             = "openclaw.iam.roles.delete"
	ActionBindingsList            = "openclaw.iam.access_bindings.list"
	ActionBindingsCreate          = "openclaw.iam.access_bindings.create"
	ActionBindingsRead            = "openclaw.iam.access_bindings.read"
	ActionBindingsDelete          = "openclaw.iam.access_bindings.delete"
	ActionServicePrincipalsList   = "openclaw.iam.service_principals.list"
	ActionServicePrincipalsCreate = "openclaw.iam.service_principals.create"
	ActionServicePrincipalsRead   = "openclaw.iam.service_principals.read"
)

// Page limits of list routes (ours).
const (
	MaxPageLimit          = 500
	DefaultAuditPageLimit = 100
)

var (
	installationRead       = Permission{Action: iam.ActionRead, Kind: iam.KindInstallation, Target: TargetInstallation}
	installationAdminister = Permission{Action: iam.ActionAdminister, Kind: iam.KindInstallation, Target: TargetInstallation}
	pathNamespaceRead      = Permission{Action: iam.ActionRead, Kind: iam.KindNamespace, Target: TargetPathNamespace}
	// policyAPI is what every Namespace IAM policy route checks.
	policyAPI = []Permission{installationAdminister, pathNamespaceRead}
)

// upstreamNotFound documents the 404 upstream's contract declares on routes that name no resource
// in their path (clients generated from it expect the response).
var upstreamNotFound = []int{http.StatusNotFound}

// Path parameter schemas.
var (
	namespaceIDParam = idOf(platform.PrefixNamespace)
	opaqueParam      = opaqueID()
)

// Query parameters of lists.
var (
	limitParam  = QueryParam{Name: "limit", Schema: integer(1, MaxPageLimit), Description: "Page size (1..500); without it the list is complete."}
	cursorParam = QueryParam{Name: "cursor", Schema: pattern(`^[A-Za-z0-9_-]+$`, 1024), Description: "Opaque position returned as meta.nextCursor."}
	pageParams  = []QueryParam{limitParam, cursorParam}
)

// Response schemas.
var (
	namespaceSchema = object(
		required("id", idOf(platform.PrefixNamespace)),
		required("name", name()),
		optional("existingNamespace", pattern(platform.DNSLabelPattern, 63)),
		required("status", enum(platform.NamespaceProvisioning, platform.NamespaceReady, platform.NamespaceFailed, platform.NamespaceDeleting)),
		required("createdAt", timestamp()),
	)
	installationSchema = object(
		required("id", idOf(platform.PrefixInstallation)),
		required("name", name()),
		required("createdAt", timestamp()),
		optional("capabilities", object(
			optional("agentProvisioning", describe(object(
				required("executionModes", arrayOf(enum(platform.ExecutionEmbedded, platform.ExecutionDedicated), 1, 2)),
			), "The execution modes a new Agent can be deployed in (absent: none).")),
			required("harnessAuth", describe(object(
				required(platform.ExecutionEmbedded, listOf(enum(platform.HarnessAuthAPIKey, platform.HarnessAuthCodexPAT, platform.HarnessAuthRuntime))),
				required(platform.ExecutionDedicated, listOf(enum(platform.HarnessAuthAPIKey, platform.HarnessAuthCodexPAT, platform.HarnessAuthRuntime))),
			), "Per execution mode, the Harness authentication methods the Compute Driver admits at deploy (ours).")),
			required("presets", describe(boolean(), "Presets are available (ours).")),
			required("runtime", describe(object(
				required("status", boolean()),
				required("logs", boolean()),
				required("diagnostics", boolean()),
				required("images", boolean()),
			), "Which runtime views of deployed revisions the Compute Driver offers (ours).")),
		)),
	)
	inventorySchema = object(
		required("installationId", idOf(platform.PrefixInstallation)),
		required("namespaces", listOf(object(
			required("id", idOf(platform.PrefixNamespace)),
			required("status", enum(platform.NamespaceProvisioning, platform.NamespaceReady, platform.NamespaceFailed, platform.NamespaceDeleting)),
			required("agents", listOf(object(
				required("id", idOf(platform.PrefixAgent)),
				required("name", name()),
				required("status", enum(platform.AgentActive, platform.AgentDeleting)),
				required("desiredRuntimeState", enum(platform.RuntimeRunning, platform.RuntimeStopped)),
				required("executionMode", enum(platform.ExecutionEmbedded, platform.ExecutionDedicated)),
				optional("activeRevisionId", idOf(platform.PrefixRevision)),
				required("deploymentInProgress", boolean()),
				optional("activeRevision", describe(object(
					required("revision", integer(1, 9007199254740991)),
					required("harness", object(required("id", str(1, 64)), required("version", str(1, 64)),
						required("mode", enum(platform.ExecutionEmbedded, platform.ExecutionDedicated)))),
					required("compute", object(required("id", str(1, 128)), required("implementation", str(1, 64)))),
					required("images", inventoryImagesSchema),
				), "What the active revision pinned at admission, and the images its runtime runs (ours).")),
			))),
		))),
	)
	permissionSchema = object(
		required("action", enum(iam.Actions()...)),
		required("resourceKind", enum(platform.NamespaceRoleKinds...)),
	)
	roleSchema = object(
		required("id", opaqueID()),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		optional("name", name()),
		required("permissions", arrayOf(object(
			required("action", enum(iam.Actions()...)),
			required("resourceKind", enum(iam.ResourceKinds()...)),
		), 1, iam.MaxRolePermissions)),
	)
	bindingSchema = object(
		required("id", opaqueID()),
		optional("namespaceId", idOf(platform.PrefixNamespace)),
		required("subjectKind", enum(iam.SubjectKindIdentity, iam.SubjectKindGroup)),
		required("subjectId", opaqueID()),
		required("roleId", opaqueID()),
		optional("resourceKind", enum(iam.ResourceKinds()...)),
		optional("resourceId", str(1, 200)),
		optional("runtimeRole", str(1, 128)),
	)
	servicePrincipalSchema = object(
		required("id", idOf(platform.PrefixServicePrincipal)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
	)
	auditResourceSchema = object(
		required("kind", str(1, 64)),
		required("id", str(1, 512)),
		optional("namespaceId", str(1, 200)),
	)
	auditEventSchema = object(
		required("schemaVersion", integer(1, 1)),
		required("id", idOf(platform.PrefixAudit)),
		required("installationId", idOf(platform.PrefixInstallation)),
		optional("namespaceId", str(1, 200)),
		required("occurredAt", timestamp()),
		required("source", str(1, 64)),
		required("kind", enum("bootstrap", "mutation", "authorization_denial", "access")),
		required("actorId", str(1, 200)),
		optional("actor", openObject("Who acted, as far as it was resolved.")),
		required("action", str(1, 200)),
		required("resource", auditResourceSchema),
		required("outcome", enum("success", "denied", "failure")),
		optional("requestId", str(1, 200)),
		optional("admissionDecisionId", str(1, 200)),
		optional("iamDriverId", str(1, 200)),
		optional("authorization", openObject("The IAM request a decision answered.")),
		optional("decisionReason", str(1, 120)),
		optional("reasonCode", str(1, 64)),
		optional("details", openObject("Non-secret identifiers describing the event.")),
	)
	serviceKeySchema = object(
		required("id", opaqueID()),
		required("servicePrincipalId", opaqueID()),
		optional("namespaceId", idOf(platform.PrefixNamespace)),
		required("name", str(1, 32)),
		required("expiresAt", timestamp()),
		required("key", describe(str(1, 512), "The key itself. Shown once: store it now.")),
	)
	sessionSchema = object(
		required("authenticated", boolean()),
		required("sessionKey", str(43, 43)),
		required("user", object(
			required("id", str(1, 200)),
			required("email", str(3, 320)),
			required("name", str(1, 200)),
		)),
	)
	healthSchema   = object(required("status", enum("ok")))
	livenessSchema = object(required("status", enum("ok")),
		required("version", describe(str(0, 128), "The build version of the server (dev for source builds).")))
)

// Request schemas.
var (
	signInSchema = object(
		required("email", str(3, 320)),
		required("password", str(auth.MinPasswordLength, auth.MaxPasswordLength)),
	)
	accountBody = object(
		required("email", str(3, 320)),
		required("password", str(auth.MinPasswordLength, auth.MaxPasswordLength)),
		optional("name", name()),
		optional("roleId", opaqueID()),
		optional("github", object(required("subject", pattern(`^[1-9][0-9]{0,19}$`, 0)))),
	)
	serviceKeyBody = object(
		required("servicePrincipalId", opaqueID()),
		optional("namespaceId", idOf(platform.PrefixNamespace)),
		required("name", describe(&schema.Schema{Type: schema.TypeString, MinLength: 1, MaxLength: 32, Format: occName},
			"1 to 32 characters; the Name rule applies.")),
		optional("expiresIn", describe(integer(86400, 31536000), "Lifetime in seconds (1 to 365 days; default 30 days).")),
	)
	namespaceBody = object(
		required("name", name()),
		optional("existingNamespace", describe(pattern(platform.DNSLabelPattern, 63),
			"A Kubernetes namespace to adopt (DNS-1123 label); needs installation:administer.")),
	)
	roleBody = object(
		optional("name", name()),
		required("permissions", arrayOf(permissionSchema, 1, iam.MaxRolePermissions)),
	)
	bindingBody = object(
		required("subjectKind", enum(iam.SubjectKindIdentity, iam.SubjectKindGroup)),
		required("subjectId", opaqueID()),
		required("roleId", opaqueID()),
		required("resourceKind", enum(iam.ResourceKinds()...)),
		required("resourceId", opaqueID()),
		optional("runtimeRole", describe(pattern(`^[!-~]([ -~]{0,126}[!-~])?$`, 128),
			"A runtime role (1..128 printable characters, trimmed) for a human Principal on an Agent.")),
	)
	auditQuery = []QueryParam{
		{Name: "namespaceId", Schema: str(1, 200), Description: "Only events of this Namespace."},
		{Name: "resourceKind", Schema: str(1, 64), Description: "Only events about this resource kind."},
		{Name: "resourceId", Schema: str(1, 512), Description: "Only events about this resource id."},
		{Name: "actorId", Schema: str(1, 200), Description: "Only events of this actor (a Principal or ServicePrincipal id; ours)."},
		{Name: "since", Schema: timestamp(), Description: "Only events at or after this time."},
		{Name: "until", Schema: timestamp(), Description: "Only events before this time."},
		{Name: "limit", Schema: integer(1, MaxPageLimit), Description: "Page size (1..500, default 100)."},
		cursorParam,
	}
)

func listOf(s *schema.Schema) *schema.Schema { return arrayOf(s, 0, 0) }

var routeTable = append(append([]*Route{
	{
		Method: http.MethodGet, Path: "/healthz", Action: ActionHealthLive, OperationID: "getLiveness", Tag: "Health",
		Summary: "Liveness: the process is up, and its build version.", Auth: auth.ModePublic,
		Success: http.StatusOK, Response: livenessSchema, Handler: (*Server).healthz, Unmetered: true,
	},
	{
		Method: http.MethodGet, Path: "/readyz", Action: ActionHealthReady, OperationID: "getReadiness", Tag: "Health",
		Summary: "Readiness: PostgreSQL answers.", Auth: auth.ModePublic,
		Success: http.StatusOK, Response: healthSchema, Handler: (*Server).readyz, Unmetered: true,
	},
	{
		Method: http.MethodGet, Path: "/openapi.json", Action: ActionOpenAPI, OperationID: "getOpenAPIDocument", Tag: "Meta",
		Summary: "This OpenAPI 3.1 document (served bare, without the envelope).", Auth: auth.ModePublic,
		Success: http.StatusOK, Response: openObject("An OpenAPI 3.1 document."), Handler: (*Server).openAPI,
	},

	// Authentication.
	{
		Method: http.MethodPost, Path: "/api/auth/sign-in/email", Action: ActionSignIn, OperationID: "signInEmail", Tag: "Authentication",
		Summary:     "Sign in with email and password.",
		Description: "Sets the session cookie. Wrong password and unknown email answer alike (401). 10 failures a minute per email, then 429 with Retry-After.",
		Auth:        auth.ModeAnonymous, SignInOrigin: true, Body: signInSchema, Limited: true,
		Success: http.StatusOK, Response: object(required("authenticated", boolean()), required("sessionKey", str(43, 43))),
		Handler: (*Server).signIn,
	},
	{
		Method: http.MethodPost, Path: "/api/auth/sign-out", Action: ActionSignOut, OperationID: "signOut", Tag: "Authentication",
		Summary: "End the current browser session and clear its cookie.",
		Auth:    auth.ModeSession, SignInOrigin: true, Tx: TxWrite,
		Success: http.StatusOK, Response: object(), Handler: (*Server).signOut,
	},
	{
		Method: http.MethodGet, Path: "/api/auth/session", Action: ActionSessionRead, OperationID: "getAuthSession", Tag: "Authentication",
		Summary: "The current browser session, or null.", Description: "Cookie only: service keys never produce a session.",
		Auth: auth.ModeSessionOptional, Success: http.StatusOK, Response: nullable(sessionSchema), Handler: (*Server).session,
	},
	{
		Method: http.MethodPost, Path: "/api/auth/accounts", Action: ActionAccountsCreate, OperationID: "createAuthAccount", Tag: "Authentication",
		Summary:     "Create a password account and its Principal.",
		Description: "Browser session only. With roleId, the Role (Installation-scoped) is bound to the new Principal on the Installation itself.",
		Auth:        auth.ModeSession, Scope: ScopeInstallation, Permissions: []Permission{installationAdminister},
		Body: accountBody, Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: object(
			required("id", str(1, 200)), required("email", str(3, 320)), required("name", name()),
			required("principalId", idOf(platform.PrefixPrincipal))),
		Handler: (*Server).createAccount,
	},
	{
		Method: http.MethodPost, Path: "/api/auth/service-keys", Action: ActionServiceKeysCreate, OperationID: "createServiceKey", Tag: "Authentication",
		Summary:     "Issue a service key for a ServicePrincipal.",
		Description: "The key is in the response only. Caller: a browser session or an Installation-scoped key.",
		Auth:        auth.ModeAny, Scope: ScopeInstallation, Permissions: []Permission{installationAdminister},
		Coverage: "The caller must hold every grant of the target ServicePrincipal (identity coverage).",
		Body:     serviceKeyBody, Conflict: true, Tx: TxWrite, RefusesCLISession: true, Statuses: upstreamNotFound,
		Success: http.StatusCreated, Response: serviceKeySchema, Handler: (*Server).issueServiceKey,
	},
	{
		Method: http.MethodDelete, Path: "/api/auth/service-keys/{keyId}", Action: ActionServiceKeysRevoke, OperationID: "revokeServiceKey", Tag: "Authentication",
		Summary: "Revoke a service key at once.",
		Auth:    auth.ModeAny, Scope: ScopeInstallation, Permissions: []Permission{installationAdminister},
		Coverage:   "The caller must hold every grant of the key's ServicePrincipal (identity coverage).",
		PathParams: map[string]*schema.Schema{"keyId": opaqueParam}, Tx: TxWrite, RefusesCLISession: true, Conflict: true,
		Success: http.StatusOK, Response: object(required("id", opaqueID()), required("revoked", boolean())),
		Handler: (*Server).revokeServiceKey,
	},

	// Installation.
	{
		Method: http.MethodGet, Path: "/installation", Action: ActionInstallationRead, OperationID: "getInstallation", Tag: "Installation",
		Summary: "The Installation.", Auth: auth.ModeAny, Scope: ScopeInstallation,
		Permissions: []Permission{installationRead}, Tx: TxRead, Statuses: upstreamNotFound,
		Success: http.StatusOK, Response: installationSchema, Handler: (*Server).getInstallation,
	},
	{
		Method: http.MethodGet, Path: "/installation/deployment-inventory", Action: ActionDeploymentInventoryRead,
		OperationID: "getInstallationDeploymentInventory", Tag: "Installation",
		Summary: "Every Agent of the Installation by Namespace, with its active revision's Harness, Compute and images.",
		Description: "Agents in creation order, grouped by Namespace; with limit, pages of limit Agents continued with cursor " +
			"(a Namespace whose Agents span pages appears in each). deploymentInProgress: the newest revision is queued or running.",
		Auth: auth.ModeAny, Scope: ScopeInstallation, Permissions: []Permission{installationAdminister},
		Query: pageParams, Tx: TxRead, Paged: true, Statuses: upstreamNotFound,
		Success: http.StatusOK, Response: inventorySchema, Handler: (*Server).getDeploymentInventory,
	},
	{
		Method: http.MethodGet, Path: "/observability", Action: ActionObservabilityRead, OperationID: "getObservability", Tag: "Installation",
		Summary:     "The external observability console this Installation links to.",
		Description: "The startup YAML's observability.url; null when unset.",
		Auth:        auth.ModeAny, Scope: ScopeInstallation, Permissions: []Permission{installationAdminister},
		Tx: TxRead, Statuses: upstreamNotFound, Success: http.StatusOK,
		Response: object(required("url", nullable(str(1, 2048)))), Handler: (*Server).getObservability,
	},
	{
		Method: http.MethodGet, Path: "/audit-events", Action: ActionAuditEventsList, OperationID: "listAuditEvents", Tag: "Audit events",
		Summary:     "Audit events, newest first.",
		Description: "Filtered by Namespace, resource, actor and time; pages of limit events (default 100) continued with cursor.",
		Auth:        auth.ModeAny, Scope: ScopeInstallation, Permissions: []Permission{installationAdminister},
		Query: auditQuery, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(auditEventSchema), Handler: (*Server).listAuditEvents,
	},

	// Namespaces.
	{
		Method: http.MethodGet, Path: "/namespaces", Action: ActionNamespacesList, OperationID: "listNamespaces", Tag: "Namespaces",
		Summary: "Namespaces the caller may read.", Auth: auth.ModeAny, Scope: ScopeCollection,
		Permissions: []Permission{{Action: iam.ActionRead, Kind: iam.KindNamespace, Target: TargetEachItem}},
		Query:       pageParams, Tx: TxRead, Paged: true, Statuses: upstreamNotFound,
		Success: http.StatusOK, Response: listOf(namespaceSchema), Handler: (*Server).listNamespaces,
	},
	{
		Method: http.MethodPost, Path: "/namespaces", Action: ActionNamespacesCreate, OperationID: "createNamespace", Tag: "Namespaces",
		Summary:     "Create a Namespace (status provisioning); the worker makes it ready.",
		Description: "Names stay reserved forever, also after deletion (409).",
		Auth:        auth.ModeAny, Scope: ScopeInstallation,
		Permissions: []Permission{
			{Action: iam.ActionCreate, Kind: iam.KindNamespace, Target: TargetInstallationCollection},
			{Action: iam.ActionAdminister, Kind: iam.KindInstallation, Target: TargetInstallation,
				When: "existingNamespace is set", Cond: func(c *call) bool { return c.bodyHas("existingNamespace") }},
			referenced(iam.ActionCreate, iam.KindPreset, "the new Namespace's Presets, when the Installation has default Presets"),
		},
		Body: namespaceBody, Conflict: true, Tx: TxWrite, KeepsPolicy: true, Statuses: upstreamNotFound,
		Success: http.StatusCreated, Response: namespaceSchema, Handler: (*Server).createNamespace,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}", Action: ActionNamespacesRead, OperationID: "getNamespace", Tag: "Namespaces",
		Summary: "One Namespace.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{pathNamespaceRead}, PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam},
		Tx: TxRead, Success: http.StatusOK, Response: namespaceSchema, Handler: (*Server).getNamespace,
	},
	{
		Method: http.MethodDelete, Path: "/namespaces/{namespaceId}", Action: ActionNamespacesDelete, OperationID: "deleteNamespace", Tag: "Namespaces",
		Summary: "Delete an empty Namespace (202 deleting; the worker tears it down).",
		Description: "Repeat-safe: while deleting, 202 without new work. After a failed teardown the initiator's repeat " +
			"requeues it; another caller may take it over only once the initiator lost namespace:delete.",
		Auth: auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockUpdate,
		Permissions: []Permission{{Action: iam.ActionDelete, Kind: iam.KindNamespace, Target: TargetPathNamespace}},
		PathParams:  map[string]*schema.Schema{"namespaceId": namespaceIDParam}, Conflict: true, Tx: TxWrite,
		Success: http.StatusAccepted, Response: namespaceSchema, Handler: (*Server).deleteNamespace,
	},

	// Namespace IAM policy.
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/iam/roles", Action: ActionRolesList, OperationID: "listIAMRoles", Tag: "IAM",
		Summary: "Roles of the Namespace (Installation Roles are not listed).",
		Auth:    auth.ModeAny, Scope: ScopeNamespace, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam}, Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(roleSchema), Handler: (*Server).listRoles,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/iam/roles", Action: ActionRolesCreate, OperationID: "createIAMRole", Tag: "IAM",
		Summary:     "Create an immutable Role.",
		Description: "Permissions from the supported matrix, Namespace kinds only, namespace only with read, no duplicates.",
		Auth:        auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam}, Body: roleBody, Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: roleSchema, Handler: (*Server).createRole,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/iam/roles/{roleId}", Action: ActionRolesRead, OperationID: "getIAMRole", Tag: "IAM",
		Summary: "One Role.", Auth: auth.ModeAny, Scope: ScopeNamespace, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam, "roleId": opaqueParam}, Tx: TxRead,
		Success: http.StatusOK, Response: roleSchema, Handler: (*Server).getRole,
	},
	{
		Method: http.MethodDelete, Path: "/namespaces/{namespaceId}/iam/roles/{roleId}", Action: ActionRolesDelete, OperationID: "deleteIAMRole", Tag: "IAM",
		Summary: "Delete a Role no binding references.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam, "roleId": opaqueParam}, Conflict: true, Tx: TxWrite,
		Success: http.StatusNoContent, Handler: (*Server).deleteRole,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/iam/access-bindings", Action: ActionBindingsList, OperationID: "listIAMAccessBindings", Tag: "IAM",
		Summary: "AccessBindings of the Namespace, including broad and Group bindings.",
		Auth:    auth.ModeAny, Scope: ScopeNamespace, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam}, Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(bindingSchema), Handler: (*Server).listBindings,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/iam/access-bindings", Action: ActionBindingsCreate, OperationID: "createIAMAccessBinding", Tag: "IAM",
		Summary: "Bind a Role to an identity on one exact resource of the Namespace.",
		Auth:    auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: append(append([]Permission(nil), policyAPI...),
			Permission{Action: iam.ActionRead, Kind: "(resourceKind)", Target: TargetBodyResource, When: "always: read on the exact target"}),
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam}, Body: bindingBody, Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: bindingSchema, Handler: (*Server).createBinding,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/iam/access-bindings/{bindingId}", Action: ActionBindingsRead, OperationID: "getIAMAccessBinding", Tag: "IAM",
		Summary: "One AccessBinding.", Auth: auth.ModeAny, Scope: ScopeNamespace, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam, "bindingId": opaqueParam}, Tx: TxRead,
		Success: http.StatusOK, Response: bindingSchema, Handler: (*Server).getBinding,
	},
	{
		Method: http.MethodDelete, Path: "/namespaces/{namespaceId}/iam/access-bindings/{bindingId}", Action: ActionBindingsDelete, OperationID: "deleteIAMAccessBinding", Tag: "IAM",
		Summary: "Delete an AccessBinding (broad and Group bindings too).", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam, "bindingId": opaqueParam}, Tx: TxWrite, Conflict: true,
		Success: http.StatusNoContent, Handler: (*Server).deleteBinding,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/iam/service-principals", Action: ActionServicePrincipalsList, OperationID: "listIAMServicePrincipals", Tag: "IAM",
		Summary: "Non-Agent ServicePrincipals of the Namespace.", Auth: auth.ModeAny, Scope: ScopeNamespace, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam}, Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(servicePrincipalSchema), Handler: (*Server).listServicePrincipals,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/iam/service-principals", Action: ActionServicePrincipalsCreate, OperationID: "createIAMServicePrincipal", Tag: "IAM",
		Summary: "Create a ServicePrincipal of the Namespace, without grants.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam}, Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: servicePrincipalSchema, Handler: (*Server).createServicePrincipal,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/iam/service-principals/{servicePrincipalId}", Action: ActionServicePrincipalsRead, OperationID: "getIAMServicePrincipal", Tag: "IAM",
		Summary: "One ServicePrincipal of the Namespace.", Auth: auth.ModeAny, Scope: ScopeNamespace, Permissions: policyAPI,
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam, "servicePrincipalId": opaqueParam}, Tx: TxRead,
		Success: http.StatusOK, Response: servicePrincipalSchema, Handler: (*Server).getServicePrincipal,
	},
}, append(resourceRoutes, provisioningRoutes...)...), append(runtimeRoutes, signInRoutes...)...)

// prepareRoutes compiles the table's schemas once (patterns, format checks).
var prepareRoutes = sync.OnceFunc(func() {
	for _, r := range routeTable {
		r.Body.Prepare()
		r.Response.Prepare()
		for _, p := range r.PathParams {
			p.Prepare()
		}
		for _, q := range r.Query {
			q.Schema.Prepare()
		}
	}
	emptyBody.Prepare()
})
