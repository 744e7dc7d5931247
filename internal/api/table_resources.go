package api

import (
	"net/http"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/preset"
	"github.com/openclaw/occ/internal/schema"
	"github.com/openclaw/occ/internal/store"
)

// The routes of Namespace-owned resources: Configurations, Secrets, ServiceAccounts, Agents,
// revisions and deployments. They join routeTable in table.go.

// Audit actions.
const (
	ActionConfigurationsCreate  = "openclaw.configurations.create"
	ActionConfigurationsRead    = "openclaw.configurations.read"
	ActionConfigurationsUpdate  = "openclaw.configurations.update"
	ActionConfigurationsDelete  = "openclaw.configurations.delete"
	ActionSecretsList           = "openclaw.secrets.list"
	ActionSecretsCreate         = "openclaw.secrets.create"
	ActionSecretsRead           = "openclaw.secrets.read"
	ActionSecretsUpdate         = "openclaw.secrets.update"
	ActionSecretsDelete         = "openclaw.secrets.delete"
	ActionServiceAccountsList   = "openclaw.service_accounts.list"
	ActionServiceAccountsCreate = "openclaw.service_accounts.create"
	ActionServiceAccountsRead   = "openclaw.service_accounts.read"
	ActionServiceAccountsUpdate = "openclaw.service_accounts.update"
	ActionServiceAccountsDelete = "openclaw.service_accounts.delete"
	ActionPresetsList           = "openclaw.presets.list"
	ActionPresetsCreate         = "openclaw.presets.create"
	ActionPresetsRead           = "openclaw.presets.read"
	ActionPresetsUpdate         = "openclaw.presets.update"
	ActionPresetsDelete         = "openclaw.presets.delete"
	ActionAgentsList            = "openclaw.agents.list"
	ActionAgentsCreate          = "openclaw.agents.create"
	ActionAgentsRead            = "openclaw.agents.read"
	ActionAgentsUpdate          = "openclaw.agents.update"
	ActionAgentsDelete          = "openclaw.agents.delete"
	ActionAgentsDeploy          = "openclaw.agents.deploy"
	ActionAgentsStop            = "openclaw.agents.stop"
	ActionAgentRevisionsList    = "openclaw.agent_revisions.list"
	ActionAgentRevisionsRead    = "openclaw.agent_revisions.read"
	ActionAgentDeploymentsRead  = "openclaw.agent_deployments.read"
	// ActionLatestDeploymentsList is ours: the newest deployment of every Agent in one read.
	ActionLatestDeploymentsList = "openclaw.agent_deployments.list_latest"
)

// Body limits of the resource routes (ours; upstream's Agent create default): a Secret's
// 65,536-byte value with its JSON escaping, and a Configuration's native document.
const (
	SecretBodyLimit        = 448 << 10
	ConfigurationBodyLimit = 448 << 10
	// PresetBodyLimit is upstream's 1 MiB template with room for its name and envelope.
	PresetBodyLimit = preset.MaxBytes + 16<<10
	// AgentCreateBodyLimit is upstream's create default: four 16 KiB files with their escaping.
	AgentCreateBodyLimit = 448 << 10
)

// Path parameters.
var (
	configurationIDParam  = idOf(platform.PrefixConfiguration)
	secretIDParam         = idOf(platform.PrefixSecret)
	serviceAccountIDParam = idOf(platform.PrefixServiceAccount)
	agentIDParam          = idOf(platform.PrefixAgent)
	revisionIDParam       = idOf(platform.PrefixRevision)
	presetIDParam         = idOf(platform.PrefixPreset)
)

func nsParams(extra ...string) map[string]*schema.Schema {
	m := map[string]*schema.Schema{"namespaceId": namespaceIDParam}
	for _, name := range extra {
		switch name {
		case "configurationId":
			m[name] = configurationIDParam
		case "secretId":
			m[name] = secretIDParam
		case "serviceAccountId":
			m[name] = serviceAccountIDParam
		case "agentId":
			m[name] = agentIDParam
		case "presetId":
			m[name] = presetIDParam
		case "revisionId", "deploymentId":
			m[name] = revisionIDParam
		}
	}
	return m
}

// Schemas.
var (
	secretRefSchema = object(
		required("kind", enum(platform.RefKindSecret)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("id", idOf(platform.PrefixSecret)),
	)
	secretBindingSchema = object(
		required("source", secretRefSchema),
		optional("delivery", object(required("type", enum(platform.SecretDeliveryEnv)))),
	)
	secretBindingsSchema = describe(mapOf(secretBindingSchema, platform.SecretBindingNameRegex, platform.MaxSecretBindingName, platform.MaxSecretBindings),
		"Environment variable name → Secret reference (at most 64). OPENCLAW_*, CODEX_*, OPENAI_*, ANTHROPIC_*, OCC_*, "+
			"KUBERNETES_*, PATH, HOME and proxy variables are reserved.")
	valuesSchema = openObject("The native OpenClaw document. Model providers' baseUrl must be absolute http(s) URLs and api a supported model API.")

	configurationBody = object(
		required("kind", enum(driver.ConfigurationKindAgent)),
		required("values", valuesSchema),
		optional("secretBindings", secretBindingsSchema),
	)
	configurationPatchBody = object(
		required("values", describe(valuesSchema, "The full replacement of values.")),
		optional("secretBindings", describe(secretBindingsSchema, "Omitted: kept; {}: cleared.")),
		optional("expectedGeneration", describe(integer(1, 9007199254740991),
			"The generation the client read (ours): another value is 409 RESOURCE_CONFLICT and nothing changes.")),
	)
	configurationSchema = object(
		required("id", idOf(platform.PrefixConfiguration)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("kind", enum(driver.ConfigurationKindAgent)),
		required("generation", integer(1, 9007199254740991)),
		required("values", valuesSchema),
		optional("secretBindings", secretBindingsSchema),
		required("createdAt", timestamp()),
	)

	presetTemplateSchema = openObject("{variables?, agent?, configuration?}: typed variables and {{ vars.name }} tokens " +
		"(docs/api.md, Presets). Credential references may omit namespaceId: the path Namespace fills it.")
	presetBody  = object(required("name", name()), required("template", presetTemplateSchema))
	presetPatch = object(optional("name", name()),
		optional("template", describe(presetTemplateSchema, "Replaces the whole template, variables included.")))
	presetSchema = object(
		required("id", idOf(platform.PrefixPreset)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("name", name()),
		required("template", presetTemplateSchema),
		required("createdAt", timestamp()),
	)

	secretValue = describe(str(1, driver.MaxSecretValueBytes), "Non-empty text without NUL, at most 65,536 UTF-8 bytes. Never returned.")
	secretBody  = object(required("name", name()), required("value", secretValue))
	secretPatch = object(required("value", secretValue))
	secretView  = object(
		required("id", idOf(platform.PrefixSecret)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("name", name()),
		required("ref", secretRefSchema),
		optional("consumers", describe(listOf(object(required("kind", str(1, 64)), required("id", str(1, 200)))),
			"Resources consuming the Secret that the caller may read (GET of one Secret).")),
	)

	serviceAccountCredentialBody = object(
		required("kind", enum("api_key", "oauth_access_token")),
		required("secretRef", object(
			required("name", describe(pattern(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`, 253),
				"A Kubernetes Secret in the Namespace's backing namespace (DNS subdomain).")),
			required("key", pattern(`^[-._a-zA-Z0-9]+$`, 253)),
		)),
	)
	serviceAccountSchema = object(
		required("id", idOf(platform.PrefixServiceAccount)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("name", name()),
		optional("credential", openObject("{kind, secretRef?}")),
		required("createdAt", timestamp()),
	)

	typedRefSchema = object(
		required("kind", enum(platform.RefKindSecret, platform.RefKindServiceAccount)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("id", str(1, 200)),
	)
	harnessAuthSchema = describe(nullable(object(
		required("method", enum(platform.HarnessAuthRuntime, platform.HarnessAuthAPIKey, platform.HarnessAuthCodexPAT)),
		optional("source", typedRefSchema),
	)), "runtime (no source), api_key (a Secret) or codex_pat (a Secret or a ServiceAccount); null clears it.")
	nullOnly       = describe(&schema.Schema{Type: schema.TypeString, Nullable: true, Enum: []string{}}, "Backends are not available yet: only null.")
	executionModes = enum(platform.ExecutionEmbedded, platform.ExecutionDedicated)
	// Upstream's Agent members of features this OCC does not implement take upstream's shapes, so
	// that the handler accepts their empty forms and refuses the rest with FEATURE_NOT_AVAILABLE.
	unavailableAgentMembers = []schema.Property{
		optional("backendId", describe(nullable(str(1, 200)), "Backends are not available in this OCC: only null.")),
		optional("plugins", describe(nullable(openObject("")), "Plugins are not available in this OCC: only {} or null.")),
		optional("pluginApprovers", describe(nullable(arrayOf(openObject(""), 0, 64)),
			"Plugin approvers are not available in this OCC: only [] or null.")),
		optional("repositoryBindings", describe(nullable(arrayOf(openObject(""), 0, 16)),
			"Repository bindings are not available in this OCC: only [] or null.")),
		optional("repositoryAccess", describe(nullable(openObject("")), "Repository access is not available in this OCC: only {} or null.")),
		optional("workspaceDefaultsId", describe(nullable(pattern(`^[a-f0-9]{64}$`, 64)),
			"Workspace defaults are not available in this OCC: only null.")),
	}
	workspaceFile         = describe(str(0, platform.MaxWorkspaceFileBytes), "The file's initial content: well-formed Unicode without NUL, at most 16 KiB in UTF-8; \"\" creates an empty file.")
	initialWorkspaceFiles = describe(object(optional("AGENTS.md", workspaceFile), optional("SOUL.md", workspaceFile), optional("IDENTITY.md", workspaceFile), optional("USER.md", workspaceFile)), "Files written into the Agent's workspace before its first deployment runs, never over a file it has since changed; staged privately and never returned. Omitted or {}: native initialization.")
	agentBodySchema       = object(append([]schema.Property{
		required("name", name()),
		required("configurationId", idOf(platform.PrefixConfiguration)),
		optional("executionMode", describe(executionModes, "embedded (OpenClaw, default) or dedicated (Codex); immutable.")),
		optional("harnessAuth", harnessAuthSchema),
		optional("initialWorkspaceFiles", initialWorkspaceFiles),
	}, unavailableAgentMembers...)...)
	agentPatchSchema = object(append([]schema.Property{
		required("configurationId", idOf(platform.PrefixConfiguration)),
		optional("name", name()),
		optional("harnessAuth", harnessAuthSchema),
		optional("executionMode", describe(executionModes, "Immutable: only the Agent's current mode is accepted.")),
	}, unavailableAgentMembers...)...)
	agentSchema = object(
		required("id", idOf(platform.PrefixAgent)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("name", name()),
		required("servicePrincipalId", idOf(platform.PrefixServicePrincipal)),
		required("configurationId", idOf(platform.PrefixConfiguration)),
		required("backendId", nullOnly),
		required("harnessAuth", harnessAuthSchema),
		required("executionMode", executionModes),
		required("desiredRuntimeState", enum(platform.RuntimeRunning, platform.RuntimeStopped)),
		optional("activeRevisionId", idOf(platform.PrefixRevision)),
		required("status", enum(platform.AgentActive, platform.AgentDeleting)),
		required("createdAt", timestamp()),
		optional("configurationReadError", openObject("{code: SAVED_CONFIGURATION_UNREADABLE, field}")),
	)
	revisionSchema = object(
		required("id", idOf(platform.PrefixRevision)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("agentId", idOf(platform.PrefixAgent)),
		required("revision", integer(1, 9007199254740991)),
		required("backendId", nullOnly),
		optional("configurationId", idOf(platform.PrefixConfiguration)),
		optional("configurationKind", enum(driver.ConfigurationKindAgent)),
		optional("configurationGeneration", integer(1, 9007199254740991)),
		optional("configuration", openObject("The admitted native document (a deep copy; Secret references unresolved).")),
		optional("harness", object(required("id", str(1, 64)), required("version", str(1, 64)), required("mode", executionModes))),
		optional("compute", object(required("id", str(1, 128)), required("implementation", str(1, 64)))),
		optional("secretDriverId", str(1, 128)),
		optional("secretBindings", secretBindingsSchema),
		optional("harnessAuth", harnessAuthSchema),
		required("createdAt", timestamp()),
		optional("configurationReadError", openObject("{code: SAVED_CONFIGURATION_UNREADABLE, field}")),
	)
	latestDeploymentSchema = object(
		required("agentId", idOf(platform.PrefixAgent)),
		required("deploymentId", idOf(platform.PrefixRevision)),
		required("revision", integer(1, 9007199254740991)),
		required("status", enum(platform.DeploymentQueued, platform.DeploymentRunning, platform.DeploymentSucceeded, platform.DeploymentFailed)),
		required("error", nullable(object(required("code", str(1, 64)), required("message", str(1, 256)),
			optional("data", openObject("{timeoutMs?, runtimeFailure?}"))))),
	)
	deploymentSchema = object(
		required("deploymentId", idOf(platform.PrefixRevision)),
		required("namespaceId", idOf(platform.PrefixNamespace)),
		required("agentId", idOf(platform.PrefixAgent)),
		required("status", enum(platform.DeploymentQueued, platform.DeploymentRunning, platform.DeploymentSucceeded, platform.DeploymentFailed)),
		required("progress", nullable(object(
			required("lastAttempt", nullable(object(required("at", timestamp()), required("code", str(1, 64)), required("message", str(1, 256))))),
			required("nextAttemptAt", nullable(timestamp())),
		))),
		required("error", nullable(object(required("code", str(1, 64)), required("message", str(1, 256)),
			optional("data", openObject("{timeoutMs?, runtimeFailure?}"))))),
		required("warnings", listOf(object(required("code", enum(driver.WarningPluginInstallFailed, driver.WarningPluginAuthRequired)),
			required("pluginId", str(1, 253))))),
	)
)

func nsCollection(action, kind string) Permission {
	return Permission{Action: action, Kind: kind, Target: TargetNamespaceCollection}
}

func exact(action, kind string) Permission {
	return Permission{Action: action, Kind: kind, Target: TargetPathResource}
}

func referenced(action, kind, when string) Permission {
	return Permission{Action: action, Kind: kind, Target: TargetReferencedResource, When: when}
}

var (
	eachItem = func(kind string) Permission {
		return Permission{Action: iam.ActionRead, Kind: kind, Target: TargetEachItem}
	}
	secretOperateBound = referenced(iam.ActionOperate, iam.KindSecret, "each Secret bound by the request")
)

var resourceRoutes = []*Route{
	// Configurations.
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/configurations", Action: ActionConfigurationsCreate, OperationID: "createConfiguration", Tag: "Configurations",
		Summary: "Create a Configuration (generation 1); values go to the Configuration Driver.",
		Auth:    auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{nsCollection(iam.ActionCreate, iam.KindConfiguration), secretOperateBound},
		PathParams:  nsParams(), Body: configurationBody, BodyLimit: ConfigurationBodyLimit, Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: configurationSchema, Handler: (*Server).createConfiguration,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/configurations/{configurationId}", Action: ActionConfigurationsRead, OperationID: "getConfiguration", Tag: "Configurations",
		Summary: "One Configuration with its values.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindConfiguration)},
		PathParams:  nsParams("configurationId"), Tx: TxRead,
		Success: http.StatusOK, Response: configurationSchema, Handler: (*Server).getConfiguration,
	},
	{
		Method: http.MethodPatch, Path: "/namespaces/{namespaceId}/configurations/{configurationId}", Action: ActionConfigurationsUpdate, OperationID: "updateConfiguration", Tag: "Configurations",
		Summary:     "Replace a Configuration's values (generation + 1).",
		Description: "Existing revisions keep their snapshot; redeploy to use the new values.",
		Auth:        auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{exact(iam.ActionUpdate, iam.KindConfiguration),
			referenced(iam.ActionOperate, iam.KindSecret, "each Secret bound by the result")},
		PathParams: nsParams("configurationId"), Body: configurationPatchBody, BodyLimit: ConfigurationBodyLimit, Conflict: true, Tx: TxWrite,
		Success: http.StatusOK, Response: configurationSchema, Handler: (*Server).patchConfiguration,
	},
	{
		Method: http.MethodDelete, Path: "/namespaces/{namespaceId}/configurations/{configurationId}", Action: ActionConfigurationsDelete, OperationID: "deleteConfiguration", Tag: "Configurations",
		Summary: "Delete a Configuration no Agent or live revision references (409 otherwise).",
		Auth:    auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{exact(iam.ActionDelete, iam.KindConfiguration)},
		PathParams:  nsParams("configurationId"), Conflict: true, Tx: TxWrite,
		Success: http.StatusNoContent, Handler: (*Server).deleteConfiguration,
	},

	// Presets (upstream's operationIds).
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/presets", Action: ActionPresetsList, OperationID: "listPresets", Tag: "Presets",
		Summary: "Presets the caller may read.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{pathNamespaceRead, eachItem(iam.KindPreset)},
		PathParams:  nsParams(), Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(presetSchema), Handler: (*Server).listPresets,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/presets", Action: ActionPresetsCreate, OperationID: "createPreset", Tag: "Presets",
		Summary:     "Create a Preset: a Namespace-unique name and a checked template.",
		Description: "Creates nothing else: clients render the template and use the ordinary Configuration and Agent routes.",
		Auth:        auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{nsCollection(iam.ActionCreate, iam.KindPreset)},
		PathParams:  nsParams(), Body: presetBody, BodyLimit: PresetBodyLimit, Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: presetSchema, Handler: (*Server).createPreset,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/presets/{presetId}", Action: ActionPresetsRead, OperationID: "getPreset", Tag: "Presets",
		Summary: "One Preset with its template.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindPreset)},
		PathParams:  nsParams("presetId"), Tx: TxRead,
		Success: http.StatusOK, Response: presetSchema, Handler: (*Server).getPreset,
	},
	{
		Method: http.MethodPatch, Path: "/namespaces/{namespaceId}/presets/{presetId}", Action: ActionPresetsUpdate, OperationID: "updatePreset", Tag: "Presets",
		Summary: "Rename a Preset or replace its whole template (omitted fields kept).", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: []Permission{exact(iam.ActionUpdate, iam.KindPreset)},
		PathParams: nsParams("presetId"), Body: presetPatch, BodyLimit: PresetBodyLimit, Conflict: true, Tx: TxWrite,
		Success: http.StatusOK, Response: presetSchema, Handler: (*Server).patchPreset,
	},
	{
		Method: http.MethodDelete, Path: "/namespaces/{namespaceId}/presets/{presetId}", Action: ActionPresetsDelete, OperationID: "deletePreset", Tag: "Presets",
		Summary: "Delete a Preset and its exact AccessBindings; Agents made from it are unchanged.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: []Permission{exact(iam.ActionDelete, iam.KindPreset)},
		PathParams: nsParams("presetId"), Conflict: true, Tx: TxWrite,
		Success: http.StatusNoContent, Handler: (*Server).deletePreset,
	},

	// Secrets.
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/secrets", Action: ActionSecretsList, OperationID: "listSecrets", Tag: "Secrets",
		Summary: "Secrets the caller may read (metadata only).", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{pathNamespaceRead, eachItem(iam.KindSecret)},
		PathParams:  nsParams(), Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(secretView), Handler: (*Server).listSecrets,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/secrets", Action: ActionSecretsCreate, OperationID: "createSecret", Tag: "Secrets",
		Summary: "Create a Secret; the value goes to the Secret Driver and is never returned.",
		Auth:    auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{nsCollection(iam.ActionCreate, iam.KindSecret)},
		PathParams:  nsParams(), Body: secretBody, BodyLimit: SecretBodyLimit, Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: secretView, Handler: (*Server).createSecret,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/secrets/{secretId}", Action: ActionSecretsRead, OperationID: "getSecret", Tag: "Secrets",
		Summary: "One Secret's metadata and the consumers the caller may read.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindSecret)},
		PathParams:  nsParams("secretId"), Tx: TxRead,
		Success: http.StatusOK, Response: secretView, Handler: (*Server).getSecret,
	},
	{
		Method: http.MethodPatch, Path: "/namespaces/{namespaceId}/secrets/{secretId}", Action: ActionSecretsUpdate, OperationID: "updateSecret", Tag: "Secrets",
		Summary: "Replace a Secret's value (consumers need a redeploy).", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: []Permission{exact(iam.ActionUpdate, iam.KindSecret)},
		PathParams: nsParams("secretId"), Body: secretPatch, BodyLimit: SecretBodyLimit, Conflict: true, Tx: TxWrite,
		Success: http.StatusOK, Response: secretView, Handler: (*Server).patchSecret,
	},
	{
		Method: http.MethodDelete, Path: "/namespaces/{namespaceId}/secrets/{secretId}", Action: ActionSecretsDelete, OperationID: "deleteSecret", Tag: "Secrets",
		Summary: "Delete a Secret nothing references (409 otherwise).", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: []Permission{exact(iam.ActionDelete, iam.KindSecret)},
		PathParams: nsParams("secretId"), Conflict: true, Tx: TxWrite,
		Success: http.StatusNoContent, Handler: (*Server).deleteSecret,
	},

	// ServiceAccounts.
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/service-accounts", Action: ActionServiceAccountsList, OperationID: "listServiceAccounts", Tag: "Service accounts",
		Summary: "ServiceAccounts the caller may read.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{pathNamespaceRead, eachItem(iam.KindServiceAccount)},
		PathParams:  nsParams(), Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(serviceAccountSchema), Handler: (*Server).listServiceAccounts,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/service-accounts", Action: ActionServiceAccountsCreate, OperationID: "createServiceAccount", Tag: "Service accounts",
		Summary: "Create a ServiceAccount (an upstream-credential holder, not an IAM identity).",
		Auth:    auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{nsCollection(iam.ActionCreate, iam.KindServiceAccount)},
		PathParams:  nsParams(), Body: object(required("name", name())), Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: serviceAccountSchema, Handler: (*Server).createServiceAccount,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/service-accounts/{serviceAccountId}", Action: ActionServiceAccountsRead, OperationID: "getServiceAccount", Tag: "Service accounts",
		Summary: "One ServiceAccount.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindServiceAccount)},
		PathParams:  nsParams("serviceAccountId"), Tx: TxRead,
		Success: http.StatusOK, Response: serviceAccountSchema, Handler: (*Server).getServiceAccount,
	},
	{
		Method: http.MethodPatch, Path: "/namespaces/{namespaceId}/service-accounts/{serviceAccountId}/credential", Action: ActionServiceAccountsUpdate, OperationID: "updateServiceAccountCredential", Tag: "Service accounts",
		Summary: "Set the native credential: a Kubernetes Secret key in the Namespace's backing namespace.",
		Auth:    auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{exact(iam.ActionUpdate, iam.KindServiceAccount)},
		PathParams:  nsParams("serviceAccountId"), Body: serviceAccountCredentialBody, Conflict: true, Tx: TxWrite,
		Success: http.StatusOK, Response: serviceAccountSchema, Handler: (*Server).setServiceAccountCredential,
	},
	{
		Method: http.MethodDelete, Path: "/namespaces/{namespaceId}/service-accounts/{serviceAccountId}", Action: ActionServiceAccountsDelete, OperationID: "deleteServiceAccount", Tag: "Service accounts",
		Summary: "Delete a ServiceAccount nothing references (409 otherwise).", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: []Permission{exact(iam.ActionDelete, iam.KindServiceAccount)},
		PathParams: nsParams("serviceAccountId"), Conflict: true, Tx: TxWrite,
		Success: http.StatusNoContent, Handler: (*Server).deleteServiceAccount,
	},

	// Agents.
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents", Action: ActionAgentsList, OperationID: "listAgents", Tag: "Agents",
		Summary: "Agents the caller may read.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{pathNamespaceRead, eachItem(iam.KindAgent)},
		PathParams:  nsParams(), Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(agentSchema), Handler: (*Server).listAgents,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/agents", Action: ActionAgentsCreate, OperationID: "createAgent", Tag: "Agents",
		Summary: "Create an Agent (active, stopped, no revision) with its own ServicePrincipal.",
		Description: "The Namespace may be provisioning or ready. initialWorkspaceFiles are staged privately and applied before the first deployment runs. Plugins, plugin approvers, repositories, workspace defaults and " +
			"Backends are not available in this OCC: their empty forms ({}, [], null) are accepted, any other value is 400 FEATURE_NOT_AVAILABLE.",
		Auth: auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{nsCollection(iam.ActionCreate, iam.KindAgent),
			referenced(iam.ActionRead, iam.KindConfiguration, "the Agent's Configuration"),
			referenced(iam.ActionOperate, iam.KindSecret, "a Secret harnessAuth source"),
			referenced(iam.ActionRead, iam.KindServiceAccount, "a ServiceAccount harnessAuth source")},
		PathParams: nsParams(), Body: agentBodySchema, BodyLimit: AgentCreateBodyLimit, Conflict: true, Tx: TxWrite,
		Success: http.StatusCreated, Response: agentSchema, Handler: (*Server).createAgent,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents/{agentId}", Action: ActionAgentsRead, OperationID: "getAgent", Tag: "Agents",
		Summary: "One Agent.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindAgent)},
		PathParams:  nsParams("agentId"), Tx: TxRead,
		Success: http.StatusOK, Response: agentSchema, Handler: (*Server).getAgent,
	},
	{
		Method: http.MethodPatch, Path: "/namespaces/{namespaceId}/agents/{agentId}", Action: ActionAgentsUpdate, OperationID: "updateAgent", Tag: "Agents",
		Summary: "Update the Agent's draft (configurationId required; omitted fields kept; harnessAuth null clears).",
		Description: "A deleting Agent answers 409 AGENT_DELETING. executionMode other than the Agent's, and the members of features " +
			"this OCC does not implement with other than their empty forms, are 400 FEATURE_NOT_AVAILABLE.",
		Auth: auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{exact(iam.ActionUpdate, iam.KindAgent),
			referenced(iam.ActionRead, iam.KindConfiguration, "the Agent's Configuration"),
			referenced(iam.ActionOperate, iam.KindSecret, "a Secret harnessAuth source"),
			referenced(iam.ActionRead, iam.KindServiceAccount, "old and new ServiceAccount harnessAuth sources")},
		PathParams: nsParams("agentId"), Body: agentPatchSchema, Conflict: true, Tx: TxWrite,
		Success: http.StatusOK, Response: agentSchema, Handler: (*Server).patchAgent,
	},
	{
		Method: http.MethodDelete, Path: "/namespaces/{namespaceId}/agents/{agentId}", Action: ActionAgentsDelete, OperationID: "deleteAgent", Tag: "Agents",
		Summary: "Delete an Agent (202 deleting, desired stopped; the worker tears it down).",
		Description: "Repeat-safe. After a failed teardown the initiator's repeat requeues it; another caller takes it over " +
			"only once the initiator lost agent:delete.",
		Auth: auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{exact(iam.ActionDelete, iam.KindAgent)},
		PathParams:  nsParams("agentId"), Conflict: true, Tx: TxWrite,
		Success: http.StatusAccepted, Response: agentSchema, Handler: (*Server).deleteAgent,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/agents/{agentId}/deploy", Action: ActionAgentsDeploy, OperationID: "deployAgent", Tag: "Agents",
		Summary: "Admit an immutable revision and queue its deployment (202).",
		Description: "Needs a ready Namespace (409 NAMESPACE_NOT_READY), a live Agent (409 AGENT_DELETING), a Harness " +
			"authentication (409) the selected Compute Driver supports (409 HARNESS_AUTH_UNSUPPORTED). The Agent's own " +
			"ServicePrincipal needs secret:operate on every Secret the revision uses, like the caller.",
		Auth: auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare, AgentLock: store.LockUpdate,
		Permissions: []Permission{exact(iam.ActionDeploy, iam.KindAgent),
			referenced(iam.ActionRead, iam.KindConfiguration, "the Agent's Configuration"),
			referenced(iam.ActionRead, iam.KindServiceAccount, "a ServiceAccount harnessAuth source"),
			referenced(iam.ActionOperate, iam.KindSecret, "every Secret the revision uses, for the caller and for the Agent's ServicePrincipal")},
		PathParams: nsParams("agentId"), Conflict: true, Tx: TxWrite, KeepsPolicy: true,
		Success: http.StatusAccepted, Response: revisionSchema, Handler: (*Server).deployAgent,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/agents/{agentId}/stop", Action: ActionAgentsStop, OperationID: "stopAgent", Tag: "Agents",
		Summary: "Stop the Agent (202, desired stopped; the worker stops its runtime).", Auth: auth.ModeAny, Scope: ScopeNamespace,
		NamespaceLock: store.LockShare, Permissions: []Permission{exact(iam.ActionOperate, iam.KindAgent)},
		PathParams: nsParams("agentId"), Conflict: true, Tx: TxWrite, KeepsPolicy: true,
		Success: http.StatusAccepted, Response: agentSchema, Handler: (*Server).stopAgent,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents/{agentId}/revisions", Action: ActionAgentRevisionsList, OperationID: "listAgentRevisions", Tag: "Agent revisions",
		Summary: "The Agent's revisions the caller may read, by number.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindAgent), eachItem(iam.KindAgentRevision)},
		PathParams:  nsParams("agentId"), Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(revisionSchema), Handler: (*Server).listRevisions,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents/{agentId}/revisions/{revisionId}", Action: ActionAgentRevisionsRead, OperationID: "getAgentRevision", Tag: "Agent revisions",
		Summary: "One immutable revision.", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindAgentRevision)},
		PathParams:  nsParams("agentId", "revisionId"), Tx: TxRead,
		Success: http.StatusOK, Response: revisionSchema, Handler: (*Server).getRevision,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}", Action: ActionAgentDeploymentsRead, OperationID: "getAgentDeployment", Tag: "Agent deployments",
		Summary: "The deployment status of a revision (deploymentId is the revision id).", Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindAgentRevision)},
		PathParams:  nsParams("agentId", "deploymentId"), Tx: TxRead,
		Success: http.StatusOK, Response: deploymentSchema, Handler: (*Server).getDeployment,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/latest-deployments", Action: ActionLatestDeploymentsList, OperationID: "listLatestAgentDeployments", Tag: "Agent deployments",
		Summary: "The newest revision of each Agent with its deployment status (ours).",
		Description: "In Agent creation order; Agents without a revision, or whose newest revision the caller may not read, are left out. " +
			"Status and error as GET …/deployments/{deploymentId}, without progress.",
		Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{pathNamespaceRead, eachItem(iam.KindAgentRevision)},
		PathParams:  nsParams(), Query: pageParams, Tx: TxRead, Paged: true,
		Success: http.StatusOK, Response: listOf(latestDeploymentSchema), Handler: (*Server).listLatestDeployments,
	},
}
