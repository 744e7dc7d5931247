package api

import (
	"net/http"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/schema"
	"github.com/openclaw/occ/internal/store"
)

// The guided provisioning routes (upstream's operations). They join routeTable in table.go.

// Audit actions.
const (
	ActionAgentsProvision      = "openclaw.agents.provision"
	ActionAgentsProvisionRead  = "openclaw.agents.provision.read"
	ActionAgentsProvisionRetry = "openclaw.agents.provision.retry"
)

// ProvisioningBodyLimit is upstream's Agent create default: the body carries the Configuration's
// native document too.
const ProvisioningBodyLimit = 448 << 10

var (
	// provisioningWorkIDParam is upstream's workId rule; ours are apw_<uuid>, anything else is 404.
	provisioningWorkIDParam = pattern(`^[A-Za-z0-9._~:@/-]{1,200}$`, 200)

	// provisionBodySchema is the Agent create body without configurationId, with the requestId and
	// the inline Configuration (the Configuration create body): a member added to either create
	// schema is accepted here too.
	provisionBodySchema = newProvisionBodySchema()

	provisioningError    = object(required("at", timestamp()), required("code", str(1, 64)), required("message", str(1, 512)))
	provisioningPhase    = enum(store.ProvisioningPhaseConfiguration, store.ProvisioningPhaseAgent, store.ProvisioningPhaseGrant, store.ProvisioningPhaseAdmission, store.ProvisioningPhaseDone)
	provisioningStatus   = enum(store.ProvisioningQueued, provisioningRunning, store.ProvisioningSucceeded, store.ProvisioningFailed)
	provisioningResponse = object(required("provisioning", object(
		required("workId", provisioningWorkIDParam),
		required("requestId", idOf(platform.PrefixRequest)),
		required("status", provisioningStatus),
		required("phase", describe(provisioningPhase, "The step the provisioning is at (done once the first revision is admitted).")),
		required("attemptCount", integer(0, 1000)),
		required("run", describe(integer(1, 1<<31-1), "1, plus one per retry (ours).")),
		required("updatedAt", timestamp()),
		optional("configurationId", idOf(platform.PrefixConfiguration)),
		optional("agentId", idOf(platform.PrefixAgent)),
		optional("revisionId", idOf(platform.PrefixRevision)),
		required("url", str(1, 512)),
		optional("error", provisioningError),
		required("steps", describe(listOf(object(
			required("step", provisioningPhase),
			required("status", enum(stepPending, provisioningRunning, store.ProvisioningSucceeded, store.ProvisioningFailed)),
			optional("error", provisioningError),
		)), "Each step in order with its outcome (ours).")),
	)))
)

// newProvisionBodySchema copies the Agent create schema's members (but configurationId) after the
// requestId and the Configuration.
func newProvisionBodySchema() *schema.Schema {
	props := []schema.Property{
		required("requestId", describe(idOf(platform.PrefixRequest), "req_<uuid>: the same requestId and body answer the same provisioning.")),
		required("configuration", configurationBody),
	}
	for _, p := range agentBodySchema.Properties {
		if p.Name != "configurationId" {
			props = append(props, p)
		}
	}
	s := *agentBodySchema
	s.Properties = props
	return &s
}

var provisioningPath = Permission{Action: iam.ActionCreate, Kind: iam.KindAgent, Target: TargetNamespaceCollection}

var provisioningRoutes = []*Route{
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/agents/provision", Action: ActionAgentsProvision, OperationID: "provisionAgent", Tag: "Agents",
		Summary: "Create a Configuration and an Agent, grant its ServicePrincipal its Secrets and admit the first revision, in steps the worker runs (202).",
		Description: "Idempotent per requestId: the same body answers the recorded provisioning, another body 409 PROVISIONING_REQUEST_CONFLICT. " +
			"Validated up front as Configuration create, Agent create and deploy; the Namespace must be ready. Each step re-checks the requester's " +
			"own rights: configuration:create, agent:create, the AccessBinding rules, agent:deploy.",
		Auth: auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{provisioningPath, nsCollection(iam.ActionCreate, iam.KindConfiguration), installationAdminister, pathNamespaceRead,
			referenced(iam.ActionOperate, iam.KindSecret, "each Secret the Configuration binds and a Secret harnessAuth source"),
			referenced(iam.ActionRead, iam.KindServiceAccount, "a ServiceAccount harnessAuth source")},
		PathParams: nsParams(), Body: provisionBodySchema, BodyLimit: ProvisioningBodyLimit, Conflict: true, Tx: TxWrite,
		Success: http.StatusAccepted, Response: provisioningResponse, Handler: (*Server).provisionAgent,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents/provision/{workId}", Action: ActionAgentsProvisionRead, OperationID: "getAgentProvisioning", Tag: "Agents",
		Summary:     "The status of a provisioning, step by step.",
		Description: "Only its requester sees it (404 otherwise); once created, reading it needs read on its Configuration and Agent.",
		Auth:        auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{provisioningPath, nsCollection(iam.ActionCreate, iam.KindConfiguration),
			referenced(iam.ActionRead, iam.KindConfiguration, "the created Configuration"), referenced(iam.ActionRead, iam.KindAgent, "the created Agent")},
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam, "workId": provisioningWorkIDParam}, Tx: TxRead,
		Success: http.StatusOK, Response: provisioningResponse, Handler: (*Server).getProvisioning,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/agents/provision/{workId}/retry", Action: ActionAgentsProvisionRetry, OperationID: "retryAgentProvisioning", Tag: "Agents",
		Summary:     "Run a failed provisioning again from the step that failed (202; 409 PROVISIONING_NOT_FAILED otherwise).",
		Description: "Only its requester may retry it; the steps re-check the requester's rights as they run.",
		Auth:        auth.ModeAny, Scope: ScopeNamespace, NamespaceLock: store.LockShare,
		Permissions: []Permission{provisioningPath, nsCollection(iam.ActionCreate, iam.KindConfiguration),
			referenced(iam.ActionRead, iam.KindConfiguration, "the created Configuration"), referenced(iam.ActionRead, iam.KindAgent, "the created Agent")},
		PathParams: map[string]*schema.Schema{"namespaceId": namespaceIDParam, "workId": provisioningWorkIDParam}, Conflict: true, Tx: TxWrite,
		Success: http.StatusAccepted, Response: provisioningResponse, Handler: (*Server).retryProvisioning,
	},
}
