package driver

import (
	"context"
	"encoding/json"
	"time"
)

// Execution modes of a revision (Harness descriptor mode).
const (
	ExecutionEmbedded  = "embedded"
	ExecutionDedicated = "dedicated"
)

// Failure classes of a NamespaceObservation.
const (
	FailureRetryable = "retryable"
	FailurePermanent = "permanent"
)

// Pending reasons a driver may give for a revision that is not ready yet. The worker ignores
// values it does not know.
const (
	PendingWorkloadUnschedulable = "WORKLOAD_UNSCHEDULABLE"
	PendingWorkspaceNode         = "WORKSPACE_NODE_PENDING"
)

// Plugin warning codes of RevisionReadiness.Warnings.
const (
	WarningPluginInstallFailed = "PLUGIN_INSTALL_FAILED"
	WarningPluginAuthRequired  = "PLUGIN_AUTH_REQUIRED"
)

// Kinds of RuntimeFailureCause.Kind.
const (
	CauseProcessExit   = "PROCESS_EXIT"
	CauseProbeStatus   = "PROBE_STATUS"
	CauseInvalidOutput = "INVALID_OUTPUT"
	CauseWrapperError  = "WRAPPER_ERROR"
)

// Runtime failure codes the worker maps to an immediate deployment failure. Other codes keep the
// deployment pending.
const (
	RuntimeAuthenticationFailed = "AUTHENTICATION_FAILED"
	RuntimeModelProbeCPUStarved = "MODEL_PROBE_CPU_STARVED"
	RuntimeModelProbeTimeout    = "MODEL_PROBE_TIMEOUT"
	RuntimeModelProbeFailed     = "MODEL_PROBE_FAILED" // the only code that may carry a Cause
	RuntimeLoginFailed          = "LOGIN_FAILED"
	RuntimeUnavailable          = "UNAVAILABLE"
	RuntimeIncompatibleResponse = "INCOMPATIBLE_RESPONSE"
)

// Harness authentication methods.
const (
	HarnessAuthRuntime  = "runtime"
	HarnessAuthAPIKey   = "api_key"
	HarnessAuthCodexPAT = "codex_pat"
)

// Activation orders (ActivationOrderer).
const (
	ActivationAfterCommit  = "afterCommit"
	ActivationBeforeCommit = "beforeCommit"
)

// Namespace is the tenant a Namespace operation acts on.
type Namespace struct {
	// ID is the OCC Namespace id (ns_<uuid>).
	ID string
	// Name is the Namespace's display name; drivers must not derive object names from it.
	Name string
	// ExistingNamespace is the operator-selected external namespace to adopt, when set.
	ExistingNamespace *string
}

// Harness is the pinned Harness descriptor snapshotted in a revision.
type Harness struct {
	ID      string // "openclaw" | "codex"
	Version string
	Mode    string // ExecutionEmbedded | ExecutionDedicated
}

// ComputeRef names the Compute Driver a revision is pinned to.
type ComputeRef struct {
	ID             string
	Implementation string
}

// Revision is the immutable AgentRevision snapshot a driver realizes.
type Revision struct {
	ID          string // rev_<uuid>
	NamespaceID string
	AgentID     string
	// Number is the revision number, 1 or more, increasing per Agent.
	Number int64
	// ExecutionMode is ExecutionEmbedded or ExecutionDedicated (equal to Harness.Mode).
	ExecutionMode string
	Harness       Harness
	Compute       ComputeRef
	// ServicePrincipalID is the Agent's service principal (the workload identity).
	ServicePrincipalID string
	// HarnessAuthMethod is the admitted Harness authentication method (HarnessAuth*), "" when none.
	HarnessAuthMethod string
	// Spec is the native configuration snapshot of the revision (a JSON object).
	Spec json.RawMessage
	// InitialWorkspaceFiles are the workspace files staged at Agent creation, by file name
	// (WorkspaceFileNames); only the Agent's first revision carries them. The driver writes each into
	// the Agent's workspace before the Harness first runs, never over a file that exists there.
	InitialWorkspaceFiles map[string]string
	// CreatedAt is the admission time of the revision.
	CreatedAt time.Time
}

// WorkspaceFileNames are the files initialWorkspaceFiles may name, in the order drivers write them.
var WorkspaceFileNames = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"}

// SecretRef locates a secret value in its backend. It is a reference, never a value.
type SecretRef struct {
	NamespaceName string
	Name          string
	Key           string
	UID           string
}

// SecretEnvironmentRef projects one bound Secret into the workload environment as Name.
type SecretEnvironmentRef struct {
	Name     string
	SecretID string
	Ref      SecretRef
}

// HarnessAuthRef is the resolved Harness authentication of a revision: its method and, for
// Secret-backed methods, where the credential lives.
type HarnessAuthRef struct {
	Method   string
	SecretID string
	Ref      *SecretRef
}

// RevisionContext is what the worker resolved for a revision after authorization. It carries
// secret references only, never secret values.
type RevisionContext struct {
	HarnessAuth       *HarnessAuthRef
	SecretEnvironment []SecretEnvironmentRef
}

// AgentRef identifies an Agent for Agent-level operations (binding, runtime credentials).
type AgentRef struct {
	NamespaceID        string
	AgentID            string
	ServicePrincipalID string
}

// NamespaceObservation is the result of EnsureNamespace (Ready set) or DeleteNamespace (Deleted
// set). Build it with NamespaceReady, NamespacePending, NamespaceDeleted, NamespaceDeleting or
// NamespaceFailure; check it with CheckNamespaceObservation.
type NamespaceObservation struct {
	// NamespaceID must equal the Namespace the operation was called with.
	NamespaceID string
	// Ready is set by EnsureNamespace.
	Ready *bool
	// Deleted is set by DeleteNamespace.
	Deleted *bool
	// Failure is "", FailureRetryable or FailurePermanent.
	Failure string
	// Reason is an optional explanation for the log: at most 256 printable characters from the
	// driver's own fixed sentences, never another tenant's values. The constructors pass it
	// through SanitizeReason, which the worker applies again before logging.
	Reason string
}

// PluginWarning reports a plugin problem that does not block readiness.
type PluginWarning struct {
	Code     string // WarningPluginInstallFailed | WarningPluginAuthRequired
	PluginID string
}

// RuntimeFailureCause details a MODEL_PROBE_FAILED runtime failure.
type RuntimeFailureCause struct {
	Kind   string // CauseProcessExit | CauseProbeStatus | CauseInvalidOutput | CauseWrapperError
	Detail string
}

// RuntimeFailure is evidence that the runtime checked itself and failed (for example
// AUTHENTICATION_FAILED, MODEL_PROBE_TIMEOUT). The worker holds some codes as an immediate
// deployment failure and keeps the others pending.
type RuntimeFailure struct {
	Component string
	Check     string
	CheckedAt string // RFC 3339 UTC
	Code      string
	Cause     *RuntimeFailureCause
}

// RevisionReadiness is the result of PrepareRevision.
type RevisionReadiness struct {
	NamespaceID, AgentID, RevisionID string
	Ready                            bool
	// PendingReason is PendingWorkloadUnschedulable or PendingWorkspaceNode, only when not ready.
	PendingReason  string
	RuntimeFailure *RuntimeFailure
	Warnings       []PluginWarning
}

// Compute is the Compute Driver contract. Optional
// capabilities are the small interfaces below, discovered by type assertion.
type Compute interface {
	// ID is the operator's selection id, recorded in revisions and work.
	ID() string
	// Implementation is the compiled-in implementation name ("docker", "simulated", ...).
	Implementation() string

	// EnsureNamespace creates or verifies the tenant infrastructure. It needs no Agent.
	EnsureNamespace(ctx context.Context, ns Namespace) (NamespaceObservation, error)
	// DeleteNamespace removes the tenant infrastructure of an empty Namespace, including the Agent
	// runtimes it still owns; it never deletes operator-owned external namespaces. Deleting an
	// unknown Namespace succeeds.
	DeleteNamespace(ctx context.Context, ns Namespace) (NamespaceObservation, error)
	// PrepareRevision creates or reuses the Agent's gateway and Harness for rev and reports
	// readiness. Ready false is pending.
	PrepareRevision(ctx context.Context, rev Revision, rc RevisionContext) (RevisionReadiness, error)
	// StopRevision removes inbound routing and stops execution; it keeps snapshots, runtime
	// credentials and workspace data. Idempotent; a revision never started is a no-op. When opts
	// allows it (Yield), a stop still waiting for workloads to terminate may return
	// *StopYieldedError instead of waiting; the caller repeats it later.
	StopRevision(ctx context.Context, rev Revision, opts StopOptions) error
	// RetireRevision revokes workload access and stops the workload, without removing a gateway
	// that a replacement revision owns. Idempotent; a revision never started is a no-op.
	RetireRevision(ctx context.Context, rev Revision) error
}

// PreflightWarning is logged as compute.preflight-warning; startup continues.
type PreflightWarning struct {
	Code    string
	Message string // fixed operator-facing sentence
}

// Preflighter checks the driver's dependencies before a process serves or claims anything. An
// error (usually *PreflightError) blocks startup.
type Preflighter interface {
	Preflight(ctx context.Context) ([]PreflightWarning, error)
}

// Activator stages routing: ActivateRevision publishes a ready revision (idempotent; fails unless
// the runtime is ready and authenticated), DeactivateRevision withdraws an unpublished candidate.
// Required in production.
type Activator interface {
	ActivateRevision(ctx context.Context, rev Revision, rc RevisionContext) error
	DeactivateRevision(ctx context.Context, rev Revision) error
}

// ActivationOrderer reports ActivationAfterCommit (the default when absent) or
// ActivationBeforeCommit.
type ActivationOrderer interface {
	ActivationOrder() string
}

// AgentBinder receives the approved Agent before revision work; a failure stops the attempt.
type AgentBinder interface {
	BindAgent(ctx context.Context, ns Namespace, agent AgentRef) error
}

// RuntimeCredentialDeleter removes an Agent's runtime credentials after all its revisions
// retired. Idempotent.
type RuntimeCredentialDeleter interface {
	DeleteAgentRuntimeCredentials(ctx context.Context, agent AgentRef) error
}

// PrepareFailureDescriber maps an error of PrepareRevision to a stable diagnostic code and the
// stage it came from, for the worker's worker.compute-prepare-failed line (Kubernetes: KUBERNETES_*
// codes and stages such as gateway_deployment).
type PrepareFailureDescriber interface {
	DescribePrepareFailure(err error) (code, stage string)
}

// ExclusiveReplacement means the driver cannot run a revision next to its predecessors: the worker
// stops every earlier revision before preparing rev (Kubernetes: dedicated revisions).
type ExclusiveReplacement interface {
	RequiresStoppedPredecessors(rev Revision) bool
}

// StopOptions are the caller's terms for one StopRevision. The zero value waits the termination
// out.
type StopOptions struct {
	// Yield allows the stop to end its wait for terminating workloads early with
	// *StopYieldedError; the caller repeats the stop later.
	Yield bool
	// OtherWorkWaiting, consulted only when Yield is set, reports whether other work waits now, so
	// the stop should yield before its termination timeout. Nil means never.
	OtherWorkWaiting func(context.Context) bool
}

// ShouldYield reports whether a yielding stop should end its termination wait now: yields are
// allowed and the caller says other work is waiting.
func (o StopOptions) ShouldYield(ctx context.Context) bool {
	return o.Yield && o.OtherWorkWaiting != nil && o.OtherWorkWaiting(ctx)
}

// Maintainer asks the worker to re-run prepare and activate for the active revision every
// MaintenanceInterval. An interval of zero or less means no maintenance.
type Maintainer interface {
	MaintenanceInterval() time.Duration
}

// HarnessAuthSupport is the side-effect-free admission check of a Harness authentication method.
// The API refuses a deployment whose method the selected Compute does not support. A driver
// without it supports none.
type HarnessAuthSupport interface {
	SupportsHarnessAuth(method string) bool
}

// SupportsHarnessAuth reports whether c accepts Harness authentication method.
func SupportsHarnessAuth(c Compute, method string) bool {
	s, ok := c.(HarnessAuthSupport)
	return ok && s.SupportsHarnessAuth(method)
}

// ActivationOrder returns c's activation order, ActivationAfterCommit when c does not say.
func ActivationOrder(c Compute) string {
	if o, ok := c.(ActivationOrderer); ok && o.ActivationOrder() == ActivationBeforeCommit {
		return ActivationBeforeCommit
	}
	return ActivationAfterCommit
}
