package simulated

import (
	"time"

	"github.com/openclaw/occ/internal/driver"
)

// Op names a driver operation, for faults and call counts.
type Op string

// Operations.
const (
	OpPreflight                     Op = "Preflight"
	OpEnsureNamespace               Op = "EnsureNamespace"
	OpDeleteNamespace               Op = "DeleteNamespace"
	OpPrepareRevision               Op = "PrepareRevision"
	OpActivateRevision              Op = "ActivateRevision"
	OpDeactivateRevision            Op = "DeactivateRevision"
	OpStopRevision                  Op = "StopRevision"
	OpRetireRevision                Op = "RetireRevision"
	OpBindAgent                     Op = "BindAgent"
	OpDeleteAgentRuntimeCredentials Op = "DeleteAgentRuntimeCredentials"
	OpDescribeRuntime               Op = "DescribeRuntime"
	OpReadRuntimeLogs               Op = "ReadRuntimeLogs"
	OpDiagnoseRuntime               Op = "DiagnoseRuntime"
	OpRuntimeImages                 Op = "RuntimeImages"
)

// Fault changes what calls on one target do. A call takes the first matching fault of its target;
// waits (Hang, Release, Delay) happen first, then Err, then the ordinary effect whose result the
// remaining fields adjust.
type Fault struct {
	// Op restricts the fault to one operation; "" matches every operation on the target.
	Op Op
	// Times is how many calls the fault affects before it disappears; 0 means until ClearFaults.
	Times int

	// Hang blocks the call until its context ends, then returns ctx.Err().
	Hang bool
	// Release blocks the call until the channel is closed (then it proceeds) or its context ends.
	Release <-chan struct{}
	// Delay makes the call take this much real time before it proceeds (context honoured).
	Delay time.Duration

	// Err is the failure to report. Revision, Agent and preflight operations return it. Namespace
	// operations report it the way a driver reports a classified failure, in the observation
	// (Failure permanent for driver.IsPermanent errors, retryable otherwise, and the error's
	// reason), unless Raw is set: then the Namespace operation returns Err itself.
	Err error
	Raw bool

	// NotReady makes EnsureNamespace report not ready, DeleteNamespace not deleted and
	// PrepareRevision not ready, without a failure. Reason is the Namespace observation's reason.
	NotReady bool
	Reason   string
	// PendingReason is reported by a not-ready PrepareRevision.
	PendingReason string
	// RuntimeFailure makes PrepareRevision report not ready with this runtime failure code.
	RuntimeFailure string
	// Warnings are added to PrepareRevision's readiness.
	Warnings []driver.PluginWarning
}

// On restricts f to op.
func (f Fault) On(op Op) Fault { f.Op = op; return f }

// Once makes f affect only the next matching call.
func (f Fault) Once() Fault { f.Times = 1; return f }

// For makes f affect the next n matching calls.
func (f Fault) For(n int) Fault { f.Times = n; return f }

// Retryable fails with a *driver.RetryableError.
func Retryable(code, reason string) Fault {
	return Fault{Err: &driver.RetryableError{Code: code, Reason: reason}}
}

// Permanent fails with a *driver.PermanentError.
func Permanent(code, reason string) Fault {
	return Fault{Err: &driver.PermanentError{Code: code, Reason: reason}}
}

// Transient fails with a *driver.TransientDependencyError (reason "unavailable").
func Transient(dependency, code string) Fault {
	return Fault{Err: &driver.TransientDependencyError{Dependency: dependency, Code: code, Reason: driver.TransientUnavailable}}
}

// Error returns err from any operation as is, Namespace operations included.
func Error(err error) Fault { return Fault{Err: err, Raw: true} }

// Hang blocks until the call's context ends.
func Hang() Fault { return Fault{Hang: true} }

// Block blocks until release is closed or the call's context ends.
func Block(release <-chan struct{}) Fault { return Fault{Release: release} }

// Delay makes calls take d longer.
func Delay(d time.Duration) Fault { return Fault{Delay: d} }

// NotReady keeps Namespace operations and PrepareRevision converging.
func NotReady(reason string) Fault { return Fault{NotReady: true, Reason: reason} }

// Pending keeps PrepareRevision not ready with a pending reason (driver.Pending*).
func Pending(pendingReason string) Fault { return Fault{NotReady: true, PendingReason: pendingReason} }

// RuntimeFailure makes PrepareRevision report not ready with runtime failure code (for example
// driver.RuntimeAuthenticationFailed).
func RuntimeFailure(code string) Fault { return Fault{RuntimeFailure: code} }

type targetKind int

const (
	targetPreflight targetKind = iota
	targetNamespace
	targetRevision
	targetAgent
)

type faultKey struct {
	kind targetKind
	id   string
}

type faultEntry struct {
	fault     Fault
	remaining int // meaningful when fault.Times > 0
}
