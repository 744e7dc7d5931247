// Package driver defines the contracts between OCC and its drivers, starting with the Compute
// Driver, and the value types, typed errors and configuration schemas they share.
//
// Implementations live in sub-packages (simulated, docker, later kubernetes) and know nothing of
// store, platform or HTTP: the worker hands them plain values (a Namespace, an immutable revision
// snapshot, secret references) and they answer with observations or typed errors. Package builtin
// assembles the compiled-in implementations into a registry; it is separate because this package
// cannot import its own implementations without an import cycle, and we do not register through
// init() side effects.
//
// # How outcomes are reported
//
// Namespace operations (EnsureNamespace, DeleteNamespace) report a failure the driver classified in
// the observation: Failure "retryable" or "permanent" plus a bounded, printable Reason, with a nil
// error (upstream's NamespaceEnsureResult / NamespaceDeleteResult). Ready (ensure) or Deleted
// (delete) false without a Failure means "still converging": the worker defers. A non-nil error
// means there is no observation at all: the context ended (the error then satisfies
// errors.Is(err, ctx.Err())), or something the driver could not classify happened; the worker
// treats the latter as a retry (DEPENDENCY_UNAVAILABLE). [NamespaceEnsureFailed] and
// [NamespaceDeleteFailed] turn a typed error into the observation a driver should return, and
// [CheckEnsureObservation] / [CheckDeleteObservation] are the worker's validity checks.
//
// Revision operations (PrepareRevision, StopRevision, RetireRevision and the optional ones) return
// typed errors; the worker classifies them with errors.As, never by text:
//
//   - *TransientDependencyError: a self-clearing dependency failure (timeout, unreachable, HTTP 429
//     or 5xx); deployment stays pending within its deadline and spends no attempt.
//   - *RetryableError: retry, spending an attempt.
//   - *PermanentError, *UnsupportedError, *ActivationFailedError: permanent failure with the
//     error's code.
//   - *ActivationPendingError: activation is pending (for example WORKSPACE_NODE_PENDING).
//   - anything else: retry DEPENDENCY_UNAVAILABLE.
//
// Every method honours its context: once ctx is done it returns promptly with an error that
// satisfies errors.Is(err, ctx.Err()). Error messages and observation reasons are fixed,
// driver-authored sentences: they never contain response bodies, credentials or another tenant's
// identifiers, so [ErrorClass], [Code] and reasons can be logged.
package driver
