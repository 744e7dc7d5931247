// Package simulated is the in-memory Compute Driver (implementation "simulated"): for tests, demos
// and load tests. It keeps its world (Namespaces, revisions, the routed revision per Agent) in maps
// guarded by one mutex, never touches the machine, and is refused in production.
//
// Behaviour
//
//   - EnsureNamespace reports Ready once namespaceReadyAfterMs elapsed since the first ensure,
//     measured with the injectable clock (Options.Now); it never sleeps. DeleteNamespace reports
//     Deleted once namespaceDeletedAfterMs elapsed since the first delete, and then forgets the
//     Namespace and its revisions. Deleting an unknown Namespace reports Deleted.
//   - PrepareRevision reports Ready once revisionReadyAfterMs elapsed since the first prepare of
//     that runtime (a stopped or retired revision starts again). It refuses a revision pinned to
//     another Compute (COMPUTE_DRIVER_MISMATCH) and unknown Harness authentication methods.
//   - ActivateRevision routes the Agent to a ready revision (ActivationPendingError
//     REVISION_NOT_READY otherwise); Stop and Retire are idempotent and no-ops for unknown
//     revisions.
//   - Capabilities (Activator, Preflighter, AgentBinder, RuntimeCredentialDeleter,
//     ExclusiveReplacement, Maintainer, ActivationOrderer, HarnessAuthSupport) are all
//     implemented; stoppedPredecessors, maintenanceIntervalMs and activationOrder select how the
//     worker sees them.
//
// Tests drive failures through faults (InjectNamespace, InjectRevision, InjectAgent,
// InjectPreflight) and observe calls without sleeping: Calls counts them, WaitCalls blocks until a
// call entered, Options.OnCall is invoked synchronously when a call enters. Every method returns
// ctx.Err() promptly once its context ends, including inside a Hang, Block or Delay fault.
package simulated
