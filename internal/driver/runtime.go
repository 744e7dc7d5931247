package driver

import (
	"context"
	"time"

	"github.com/openclaw/occ/internal/runtimelog"
)

// Runtime visibility: optional capabilities that describe a revision's running workload, read
// its containers' output and run bounded checks, through the Compute Driver (never through the
// Agent's own gateway). Everything they return is bounded and redacted inside the driver.

// Log sources of a revision: the gateway container, and the dedicated Harness container.
const (
	LogSourceGateway = "gateway"
	LogSourceAgent   = "agent"
)

// Container states of RuntimeContainer.State.
const (
	ContainerWaiting    = "waiting"
	ContainerRunning    = "running"
	ContainerTerminated = "terminated"
	ContainerUnknown    = "unknown"
)

// Diagnostic check states.
const (
	CheckSucceeded = "succeeded"
	CheckFailed    = "failed"
	CheckUnknown   = "unknown"
)

// Bounds of a RuntimeView.
const (
	MaxRuntimePods       = 16
	MaxRuntimeContainers = 16
	MaxPodEvents         = 100
	MaxEventMessageBytes = 2048
	MaxEventReasonBytes  = 128
	MaxDiagnosticChecks  = 32
)

// SourceUnavailableNoPod is RuntimeLogSource.UnavailableCode when no Pod of the revision runs
// the source's container.
const SourceUnavailableNoPod = "NO_POD"

// RuntimeView is what a revision's workload looks like now.
type RuntimeView struct {
	Pods    []RuntimePod
	Sources []RuntimeLogSource
}

// RuntimePod is one Pod (or, for Docker, one container group) of the revision.
type RuntimePod struct {
	Name string
	UID  string
	// Role is LogSourceGateway or LogSourceAgent.
	Role       string
	Phase      string
	Ready      bool
	CreatedAt  *time.Time
	Containers []RuntimeContainer
	// Events are the most recent first-party events about the Pod, messages redacted.
	Events []RuntimeEvent
}

// RuntimeContainer is the state of one container.
type RuntimeContainer struct {
	Name string
	// State is one of the Container* states.
	State string
	// Reason is the runtime's reason for a waiting or terminated state ("" when none), such as
	// CrashLoopBackOff or OOMKilled.
	Reason          string
	Ready           bool
	RestartCount    int
	StartedAt       *time.Time
	LastTermination *ContainerTermination
	Image           string
	ImageID         string
}

// ContainerTermination is how a container's previous instance ended.
type ContainerTermination struct {
	Reason     string
	ExitCode   int
	Signal     int
	StartedAt  *time.Time
	FinishedAt *time.Time
}

// RuntimeEvent is one event about a Pod (Kubernetes Events).
type RuntimeEvent struct {
	// Type is "Normal" or "Warning".
	Type   string
	Reason string
	// Message is redacted by the driver.
	Message string
	// Container is the container the event concerns, "" for the Pod.
	Container      string
	Count          int
	LastObservedAt *time.Time
}

// RuntimeLogSource says where a source's output can be read.
type RuntimeLogSource struct {
	ID        string // LogSourceGateway | LogSourceAgent
	Available bool
	// UnavailableCode is SourceUnavailableNoPod when not available.
	UnavailableCode string
	Pods            []RuntimeLogSourcePod
	// Retention says, in one fixed sentence, how much output the runtime keeps.
	Retention string
}

// RuntimeLogSourcePod is one Pod whose container holds a source's output.
type RuntimeLogSourcePod struct {
	Name, UID, Container string
	RestartCount         int
}

// RuntimeLogQuery selects one page of a source's output.
type RuntimeLogQuery struct {
	Source string
	// Pod is the Pod to read, "" for the source's newest Pod.
	Pod string
	// Previous reads the container's previous instance (after a restart).
	Previous bool
	// TailLines is 1..runtimelog.MaxTailLines.
	TailLines int
	// Since limits the read to lines newer than this age; 0 means no limit.
	Since time.Duration
	// After resumes a view after its previous page; nil for a first page.
	After *runtimelog.Position
	// PEMOpen carries over a PEM block the previous page of the view ended inside.
	PEMOpen bool
	// MinLevel is the level floor ("" for all).
	MinLevel string
}

// RuntimeLogPage is one bounded, redacted page, built with runtimelog.Build.
type RuntimeLogPage struct {
	Stream runtimelog.Stream
	Page   runtimelog.Page
}

// RuntimeDescriber describes a revision's workload.
type RuntimeDescriber interface {
	DescribeRuntime(ctx context.Context, rev Revision) (RuntimeView, error)
}

// RuntimeLogReader reads bounded, redacted pages of a revision's container output.
type RuntimeLogReader interface {
	ReadRuntimeLogs(ctx context.Context, rev Revision, q RuntimeLogQuery) (RuntimeLogPage, error)
}

// DiagnosticCheck is the result of one named check.
type DiagnosticCheck struct {
	Component string
	Check     string
	// State is CheckSucceeded, CheckFailed or CheckUnknown.
	State string
	// Code is a stable code for a failed or unknown check ("" when none).
	Code      string
	CheckedAt *time.Time
}

// RuntimeDiagnoser runs bounded checks of a revision's runtime now.
type RuntimeDiagnoser interface {
	DiagnoseRuntime(ctx context.Context, rev Revision) ([]DiagnosticCheck, error)
}

// RuntimeImage is one image a revision's workload runs.
type RuntimeImage struct {
	Workload  string
	Container string
	Image     string
	// ImageID is the resolved image digest ("" when the runtime has not reported it).
	ImageID string
	// Commit and OpenClawCommit are the source commits the image declares ("" when unknown).
	Commit         string
	OpenClawCommit string
}

// RuntimeImageReader reports the images a revision's workload runs.
type RuntimeImageReader interface {
	RuntimeImages(ctx context.Context, rev Revision) ([]RuntimeImage, error)
}

// Codes of *RuntimeReadError.
const (
	// RuntimePodInvalid: the Pod named is not one of the revision's (or the source has none).
	RuntimePodInvalid = "RUNTIME_LOGS_POD_INVALID"
	// RuntimeSourceUnavailable: no container of the revision holds the source now.
	RuntimeSourceUnavailable = "RUNTIME_LOGS_SOURCE_UNAVAILABLE"
	// RuntimeClusterRBAC: the driver's identity may not read what the view needs.
	RuntimeClusterRBAC = "RUNTIME_LOGS_CLUSTER_RBAC"
	// RuntimeReadUnavailable: the runtime did not answer.
	RuntimeReadUnavailable = "RUNTIME_LOGS_UNAVAILABLE"
	// RuntimeReadTimeout: the runtime did not answer in time.
	RuntimeReadTimeout = "RUNTIME_LOGS_TIMEOUT"
)

// RuntimeReadError is a coded refusal or failure of a runtime read. Message is a fixed
// operator-facing sentence, never runtime output.
type RuntimeReadError struct {
	Code    string
	Message string
	Err     error
}

func (e *RuntimeReadError) Error() string { return e.Code + ": " + e.Message }
func (e *RuntimeReadError) Unwrap() error { return e.Err }

// RuntimeCapabilities says which runtime views a Compute Driver offers.
type RuntimeCapabilities struct {
	Status, Logs, Diagnostics, Images bool
}

// RuntimeCapabilitiesOf reports c's runtime capabilities.
func RuntimeCapabilitiesOf(c Compute) RuntimeCapabilities {
	_, status := c.(RuntimeDescriber)
	_, logs := c.(RuntimeLogReader)
	_, diag := c.(RuntimeDiagnoser)
	_, images := c.(RuntimeImageReader)
	return RuntimeCapabilities{Status: status, Logs: logs, Diagnostics: diag, Images: images}
}
