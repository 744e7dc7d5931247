package platform

// Agent lifecycle values.
const (
	AgentActive   = "active"
	AgentDeleting = "deleting"

	RuntimeRunning = "running"
	RuntimeStopped = "stopped"

	AgentTargetStopped = "stopped"
	AgentTargetDeleted = "deleted"
)

// Deployment statuses.
const (
	DeploymentQueued    = "queued"
	DeploymentRunning   = "running"
	DeploymentSucceeded = "succeeded"
	DeploymentFailed    = "failed"
)

// Revision result codes the deployment status reads.
const (
	CodeRevisionActivated          = "REVISION_ACTIVATED"
	CodeRevisionAlreadyActive      = "REVISION_ALREADY_ACTIVE"
	CodeConvergenceDeadline        = "CONVERGENCE_DEADLINE_EXCEEDED"
	CodeRuntimeModelProbeFailed    = "RUNTIME_MODEL_PROBE_FAILED"
	CodeReconciliationPending      = "RECONCILIATION_PENDING"
	MessageReconciliationPending   = "Deployment has not completed. Another reconciliation is pending."
	MessageDeploymentFailedDefault = "Deployment reconciliation failed."
)

// progressMessages are the fixed messages of progress.lastAttempt; any
// other code is reported as RECONCILIATION_PENDING.
var progressMessages = map[string]string{
	"REVISION_INCOMPLETE":             "Deployment is waiting for the runtime to become ready.",
	"REVISION_UNSCHEDULABLE":          "Deployment is waiting for the cluster to find room for its Pods.",
	"WORKSPACE_NODE_PENDING":          "Workloads are ready; waiting for the workspace node to connect to the Gateway.",
	"WORKSPACE_NODE_BINDING_PENDING":  "Workloads are ready; waiting for the Gateway to apply the workspace node.",
	"DEPENDENCY_UNAVAILABLE":          "A dependency was unavailable; reconciliation will retry.",
	"AGENT_GATEWAY_UNAVAILABLE":       "The Agent gateway is not yet reachable through its route.",
	"KUBERNETES_API_UNAVAILABLE":      "The Kubernetes API is unavailable; reconciliation will retry.",
	"SANDBOX_ADMISSION_LIMIT_REACHED": "The sandbox gateway refuses new requests for now; reconciliation will retry.",
	"ACTIVE_REVISION_CHANGED":         "The selected version changed; reconciliation will retry.",
	"LEASE_EXPIRED":                   "The previous reconciliation claim expired; reconciliation resumes.",
	"ACTIVE_REVISION_RECOVERY":        "The claim expired after publication; activation will finish.",
	"REFUSED_CANDIDATE_STOP_PENDING":  "A refused candidate is being stopped; reconciliation will retry.",
	// Ours: upstream lists no message for the two stop yields.
	"PREDECESSOR_STOP_YIELDED": "The previous version is still stopping; deployment continues once it has stopped.",
	"AGENT_STOP_YIELDED":       "The Agent's runtime is still stopping; reconciliation will continue.",
	"KUBERNETES_API_TIMEOUT":   "The Kubernetes API did not answer in time; reconciliation will retry.",
	"KUBERNETES_API_REJECTED":  "The Kubernetes API refused a request; reconciliation will retry.",
}

// ProgressOf maps an evidence code to the code and fixed message deployment progress reports.
func ProgressOf(code string) (string, string) {
	if m, ok := progressMessages[code]; ok {
		return code, m
	}
	return CodeReconciliationPending, MessageReconciliationPending
}

// failureMessages are the fixed messages of a failed deployment's error.
var failureMessages = map[string]string{
	"CONVERGENCE_DEADLINE_EXCEEDED":          "Deployment did not converge before its deadline.",
	"RUNTIME_AUTHENTICATION_FAILED":          "The runtime credentials were rejected.",
	"RUNTIME_CPU_STARVED":                    "The runtime did not get enough CPU to start.",
	"RUNTIME_MODEL_PROBE_TIMEOUT":            "The runtime's startup model check timed out.",
	"RUNTIME_MODEL_PROBE_FAILED":             "The runtime's startup model check failed.",
	"RUNTIME_LOGIN_FAILED":                   "The runtime could not sign in to the model provider.",
	"RUNTIME_STARTUP_FAILED":                 "The runtime failed a startup check.",
	"REVISION_SUPERSEDED":                    "Deployment was superseded by a newer revision.",
	"REVISION_STOPPED":                       "Deployment ended because the Agent was stopped.",
	"AGENT_GATEWAY_UNAVAILABLE":              "The Agent gateway was still unreachable at the deadline.",
	"AGENT_GATEWAY_UNAUTHORIZED":             "The gateway refused its own CLI; set gateway.auth.password to OPENCLAW_GATEWAY_PASSWORD and redeploy.",
	"KUBERNETES_API_UNAVAILABLE":             "The Kubernetes API was still unavailable at the deadline.",
	"SANDBOX_SECRET_ENVIRONMENT_UNSUPPORTED": "The sandbox cannot deliver Secret-backed environment variables.",
	"SANDBOX_HARNESS_UNSUPPORTED":            "The sandbox does not support this Harness.",
	"SANDBOX_ADMISSION_LIMIT_REACHED":        "The sandbox gateway still refused new requests at the deadline.",
}

// FailureMessage is the fixed message of a failed deployment with code.
func FailureMessage(code string) string {
	if m, ok := failureMessages[code]; ok {
		return m
	}
	return MessageDeploymentFailedDefault
}
