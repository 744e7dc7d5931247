package api

import (
	"net/http"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/runtimelog"
)

// Runtime views: what a deployed revision's workload does, read through the Compute Driver.
// Upstream's routes, operationIds, permissions, query parameters and statuses.

// Audit actions of the runtime views. Only log text is audited: once per view, and every
// download.
const (
	ActionRuntimeRead      = "openclaw.agent_deployments.runtime.read"
	ActionRuntimeLogsView  = "openclaw.agents.runtime_logs.view"
	ActionRuntimeLogsRead  = "openclaw.agent_deployments.runtime_logs.read"
	ActionRuntimeLogsFetch = "openclaw.agents.runtime_logs.download"
	ActionDiagnose         = "openclaw.agent_deployments.diagnose"
	ActionRuntimeImages    = "openclaw.agents.runtime_images.read"
)

var (
	podName      = pattern(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`, 253)
	podUID       = pattern(`^[A-Za-z0-9-]+$`, 64)
	checkToken   = pattern(`^[A-Za-z0-9._~:@-]{1,64}$`, 64)
	logSourceIDs = []string{driver.LogSourceGateway, driver.LogSourceAgent, "sandbox"}

	runtimeStreamSchema = object(
		required("source", enum(logSourceIDs...)),
		optional("pod", podName),
		optional("podUid", podUID),
		optional("container", podName),
		required("restartCount", integer(0, 1<<31-1)),
	)
	runtimeViewSchema = object(
		required("revisionId", idOf(platform.PrefixRevision)),
		required("observedAt", timestamp()),
		required("pods", arrayOf(object(
			required("name", podName),
			required("uid", podUID),
			required("cluster", enum("control", "execution")),
			required("role", enum(driver.LogSourceGateway, driver.LogSourceAgent)),
			required("phase", str(0, 64)),
			required("ready", boolean()),
			required("createdAt", nullable(timestamp())),
			required("containers", arrayOf(object(
				required("name", podName),
				required("state", enum(driver.ContainerWaiting, driver.ContainerRunning, driver.ContainerTerminated, driver.ContainerUnknown)),
				required("reason", nullable(str(0, 128))),
				required("ready", boolean()),
				required("restartCount", integer(0, 1<<31-1)),
				required("startedAt", nullable(timestamp())),
				required("lastTermination", nullable(object(
					required("reason", nullable(str(0, 128))),
					required("exitCode", integer(-1<<31, 1<<31-1)),
					optional("signal", integer(0, 128)),
					required("startedAt", nullable(timestamp())),
					required("finishedAt", nullable(timestamp())),
				))),
				optional("image", str(0, 512)),
				optional("imageId", str(0, 512)),
			), 0, driver.MaxRuntimeContainers)),
			required("events", arrayOf(object(
				required("type", enum("Normal", "Warning")),
				required("reason", str(0, driver.MaxEventReasonBytes)),
				required("message", str(0, driver.MaxEventMessageBytes)),
				required("container", nullable(podName)),
				required("count", integer(1, 1<<31-1)),
				required("lastObservedAt", nullable(timestamp())),
			), 0, driver.MaxPodEvents)),
		), 0, driver.MaxRuntimePods)),
		required("sources", arrayOf(object(
			required("id", enum(logSourceIDs...)),
			required("kind", enum("container", "sandbox")),
			required("available", boolean()),
			optional("unavailableCode", enum(driver.SourceUnavailableNoPod)),
			required("pods", arrayOf(object(
				required("name", podName),
				required("uid", podUID),
				required("container", podName),
				required("restartCount", integer(0, 1<<31-1)),
			), 0, driver.MaxRuntimePods)),
			required("retention", str(0, 512)),
		), 0, 4)),
	)
	runtimeLogsSchema = object(
		required("revisionId", idOf(platform.PrefixRevision)),
		required("source", enum(logSourceIDs...)),
		required("observedAt", timestamp()),
		required("stream", nullable(runtimeStreamSchema)),
		required("records", describe(arrayOf(openObject("a line, withheld or gap record"), 0, runtimelog.MaxTailLines+100),
			"Records in order: type line (time, stream, contentClass operational, kind, level, message, subsystem?, fields?, "+
				"truncated?), withheld (time, stream, count, reason) or gap (time, stream, reason, remedy).")),
		required("truncated", boolean()),
		required("withheld", integer(0, 1<<31-1)),
		required("cursor", nullable(str(1, 2048))),
	)
	diagnosticsSchema = object(
		required("revisionId", idOf(platform.PrefixRevision)),
		required("observedAt", timestamp()),
		required("checks", arrayOf(object(
			required("component", checkToken),
			required("check", checkToken),
			required("state", enum(driver.CheckSucceeded, driver.CheckFailed, driver.CheckUnknown)),
			optional("code", checkToken),
			required("checkedAt", nullable(timestamp())),
		), 0, driver.MaxDiagnosticChecks)),
	)
	runtimeImageSchema = object(
		required("workload", str(1, 253)),
		required("container", str(1, 253)),
		required("image", str(0, 512)),
		required("imageId", nullable(str(0, 512))),
		required("commit", nullable(str(0, 64))),
		required("openclawCommit", nullable(str(0, 64))),
	)
	runtimeImagesSchema = object(
		required("status", enum(runtimeImagesObserved, runtimeImagesUndeployed, runtimeImagesUnsupported)),
		required("images", listOf(runtimeImageSchema)),
	)
	inventoryImagesSchema = object(
		required("status", enum(runtimeImagesObserved, runtimeImagesUnsupported, runtimeImagesUnavailable)),
		required("images", listOf(runtimeImageSchema)),
	)

	runtimeLogsQuery = []QueryParam{
		{Name: "source", Schema: enum(logSourceIDs...), Description: "gateway, agent (the dedicated Harness) or sandbox (no Compute Driver of this OCC has one)."},
		{Name: "pod", Schema: podName, Description: "One of the source's Pods (GET …/runtime); the newest by default."},
		{Name: "previous", Schema: enum("true", "false"), Description: "Read the container's previous instance (after a restart)."},
		{Name: "tailLines", Schema: pattern(`^(?:[1-9][0-9]{0,2}|1000)$`, 4), Description: "Lines to read, 1..1000 (default 200)."},
		{Name: "sinceSeconds", Schema: pattern(`^(?:[1-9][0-9]{0,3}|[1-7][0-9]{4}|8[0-5][0-9]{3}|86[0-3][0-9]{2}|86400)$`, 5), Description: "Only lines of the last 1..86400 seconds."},
		{Name: "minLevel", Schema: enum(runtimelog.LevelError, runtimelog.LevelWarn, runtimelog.LevelInfo, runtimelog.LevelDebug), Description: "Drop lines below this level (unknown-level lines, gaps and withheld counts stay); default info."},
		{Name: "cursor", Schema: pattern(`^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$`, 2048), Description: "The cursor of the previous page of the same view: only newer lines."},
		{Name: "download", Schema: enum("true", "false"), Description: "Answer a text/plain attachment of the last 1000 lines (not with cursor)."},
	}
)

// Statuses of runtime-images.
const (
	runtimeImagesObserved    = "observed"
	runtimeImagesUndeployed  = "undeployed"
	runtimeImagesUnsupported = "unsupported"
	// runtimeImagesUnavailable (the deployment inventory only): the driver did not answer.
	runtimeImagesUnavailable = "unavailable"
)

// runtimeRead are the permissions of the runtime view and diagnostics: operate and read on the
// Agent, read on the revision.
var runtimeRead = []Permission{exact(iam.ActionOperate, iam.KindAgent), exact(iam.ActionRead, iam.KindAgent),
	exact(iam.ActionRead, iam.KindAgentRevision)}

var runtimeRoutes = []*Route{
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}/runtime",
		Action: ActionRuntimeRead, OperationID: "getAgentDeploymentRuntime", Tag: "Agent deployments",
		Summary: "Read Pod status, restarts, Events and log sources for one exact Agent revision.",
		Description: "Read through the Compute Driver, never the Agent's gateway; Event messages are redacted. A driver without " +
			"runtime views answers 501 NOT_IMPLEMENTED; a runtime that does not answer 503 RUNTIME_LOGS_UNAVAILABLE or " +
			"504 RUNTIME_LOGS_TIMEOUT. Each API replica allows each principal 2 reads per second per Agent (burst 10; 429).",
		Auth: auth.ModeAny, Scope: ScopeNamespace, Permissions: runtimeRead,
		PathParams: nsParams("agentId", "deploymentId"), Tx: TxRead, Limited: true,
		Statuses: []int{http.StatusNotImplemented, http.StatusGatewayTimeout},
		Success:  http.StatusOK, Response: runtimeViewSchema, Handler: (*Server).getRuntime,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}/runtime/logs",
		Action: ActionRuntimeLogsRead, OperationID: "getAgentDeploymentRuntimeLogs", Tag: "Agent deployments",
		Summary: "Read one bounded, redacted page of container output for one exact Agent revision.",
		Description: "Needs agent:read_logs (or agent:administer) and agent:read. Every line is classified, redacted and bounded " +
			"before it leaves the driver; losses are labelled gap records. A new view (no cursor) is audited as " +
			ActionRuntimeLogsView + ", each download as " + ActionRuntimeLogsFetch + ". download=true answers text/plain.",
		Auth: auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{
			exact(iam.ActionReadLogs, iam.KindAgent),
			{Action: iam.ActionAdminister, Kind: iam.KindAgent, Target: TargetPathResource, When: "instead of read_logs"},
			exact(iam.ActionRead, iam.KindAgent)},
		PathParams: nsParams("agentId", "deploymentId"), Query: runtimeLogsQuery, Tx: TxWrite, Limited: true,
		Statuses: []int{http.StatusNotImplemented, http.StatusGatewayTimeout},
		Success:  http.StatusOK, Response: runtimeLogsSchema, Handler: (*Server).getRuntimeLogs,
	},
	{
		Method: http.MethodPost, Path: "/namespaces/{namespaceId}/agents/{agentId}/deployments/{deploymentId}/diagnostics",
		Action: ActionDiagnose, OperationID: "diagnoseAgentDeployment", Tag: "Agent deployments",
		Summary: "Run explicit current-runtime diagnostics for one exact Agent revision.",
		Description: "Named checks, each succeeded, failed or unknown with a code; no runtime output. A driver without " +
			"diagnostics answers 409 RUNTIME_DIAGNOSTICS_UNSUPPORTED.",
		Auth: auth.ModeAny, Scope: ScopeNamespace, Permissions: runtimeRead,
		PathParams: nsParams("agentId", "deploymentId"), Tx: TxRead, Conflict: true,
		Success: http.StatusOK, Response: diagnosticsSchema, Handler: (*Server).diagnoseRuntime,
	},
	{
		Method: http.MethodGet, Path: "/namespaces/{namespaceId}/agents/{agentId}/runtime-images",
		Action: ActionRuntimeImages, OperationID: "getAgentRuntimeImages", Tag: "Agents",
		Summary:     "Read observed images and source commits for an Agent's active runtime.",
		Description: "status undeployed without an active revision, unsupported when the Compute Driver cannot tell.",
		Auth:        auth.ModeAny, Scope: ScopeNamespace,
		Permissions: []Permission{exact(iam.ActionRead, iam.KindAgent)},
		PathParams:  nsParams("agentId"), Tx: TxRead,
		Success: http.StatusOK, Response: runtimeImagesSchema, Handler: (*Server).getRuntimeImages,
	},
}
