package driver

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxReasonLength bounds NamespaceObservation.Reason.
const MaxReasonLength = 256

func boolPtr(b bool) *bool { return &b }

// NamespaceReady is the observation of a converged EnsureNamespace.
func NamespaceReady(namespaceID string) NamespaceObservation {
	return NamespaceObservation{NamespaceID: namespaceID, Ready: boolPtr(true)}
}

// NamespacePending is the observation of an EnsureNamespace that is still converging; reason is
// optional and passes through SanitizeReason.
func NamespacePending(namespaceID, reason string) NamespaceObservation {
	return NamespaceObservation{NamespaceID: namespaceID, Ready: boolPtr(false), Reason: SanitizeReason(reason)}
}

// NamespaceDeleted is the observation of a completed DeleteNamespace.
func NamespaceDeleted(namespaceID string) NamespaceObservation {
	return NamespaceObservation{NamespaceID: namespaceID, Deleted: boolPtr(true)}
}

// NamespaceDeleting is the observation of a DeleteNamespace that is still converging.
func NamespaceDeleting(namespaceID, reason string) NamespaceObservation {
	return NamespaceObservation{NamespaceID: namespaceID, Deleted: boolPtr(false), Reason: SanitizeReason(reason)}
}

// NamespaceEnsureFailed is the observation a driver returns from EnsureNamespace for a failure it
// classified as err: permanent when IsPermanent(err), retryable otherwise, with the reason of
// FailureReason.
func NamespaceEnsureFailed(namespaceID string, err error) NamespaceObservation {
	return NamespaceObservation{
		NamespaceID: namespaceID,
		Ready:       boolPtr(false),
		Failure:     FailureClass(err),
		Reason:      FailureReason(err, "Namespace preparation failed."),
	}
}

// NamespaceDeleteFailed is NamespaceEnsureFailed for DeleteNamespace.
func NamespaceDeleteFailed(namespaceID string, err error) NamespaceObservation {
	return NamespaceObservation{
		NamespaceID: namespaceID,
		Deleted:     boolPtr(false),
		Failure:     FailureClass(err),
		Reason:      FailureReason(err, "Namespace teardown failed."),
	}
}

// FailureClass maps err to a Namespace failure class: FailurePermanent when IsPermanent(err),
// FailureRetryable otherwise.
func FailureClass(err error) string {
	if IsPermanent(err) {
		return FailurePermanent
	}
	return FailureRetryable
}

// FailureReason returns a loggable reason for err: the Reason of a typed error that has one, a
// sentence built from a TransientDependencyError's closed fields, or fallback. The result passes
// SanitizeReason.
func FailureReason(err error, fallback string) string {
	var (
		permanent   *PermanentError
		retryable   *RetryableError
		unsupported *UnsupportedError
		transient   *TransientDependencyError
		reason      string
	)
	switch {
	case errors.As(err, &permanent):
		reason = permanent.Reason
	case errors.As(err, &retryable):
		reason = retryable.Reason
	case errors.As(err, &unsupported):
		reason = unsupported.Reason
	case errors.As(err, &transient):
		reason = transient.sentence()
	}
	if reason == "" {
		reason = fallback
	}
	return SanitizeReason(reason)
}

// SanitizeReason makes s safe for the reason log field: characters outside [A-Za-z0-9._: /@-]
// become '_', leading characters that are not letters or digits are dropped, and the result is cut
// to MaxReasonLength characters, ending in "..." when cut. Drivers still must only pass their own
// fixed sentences: sanitizing cannot remove another tenant's values.
func SanitizeReason(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() == 0 && !isAlnum(r) {
			continue
		}
		if isAlnum(r) || strings.ContainsRune("._: /@-", r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := strings.TrimRight(b.String(), " ")
	if len(out) > MaxReasonLength {
		out = strings.TrimRight(out[:MaxReasonLength-3], " ") + "..."
	}
	return out
}

func isAlnum(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

// CheckEnsureObservation validates an EnsureNamespace observation for namespaceID: it must
// set Ready and only Ready, for that Namespace. It returns *InvalidObservationError.
func CheckEnsureObservation(namespaceID string, o NamespaceObservation) error {
	if o.Ready == nil || o.Deleted != nil {
		return &InvalidObservationError{Reason: "an ensure observation must set Ready and only Ready"}
	}
	return checkNamespaceObservation(namespaceID, o, *o.Ready)
}

// CheckDeleteObservation validates a DeleteNamespace observation for namespaceID.
func CheckDeleteObservation(namespaceID string, o NamespaceObservation) error {
	if o.Deleted == nil || o.Ready != nil {
		return &InvalidObservationError{Reason: "a delete observation must set Deleted and only Deleted"}
	}
	return checkNamespaceObservation(namespaceID, o, *o.Deleted)
}

func checkNamespaceObservation(namespaceID string, o NamespaceObservation, done bool) error {
	switch {
	case o.NamespaceID != namespaceID:
		return &InvalidObservationError{Reason: "the observation names another Namespace"}
	case o.Failure != "" && o.Failure != FailureRetryable && o.Failure != FailurePermanent:
		return &InvalidObservationError{Reason: "unknown failure class"}
	case o.Failure != "" && done:
		return &InvalidObservationError{Reason: "a failed observation cannot be complete"}
	case !boundedPrintable(o.Reason):
		return &InvalidObservationError{Reason: "the reason is not a bounded printable sentence"}
	}
	return nil
}

// boundedPrintable reports whether s is valid UTF-8 of at most MaxReasonLength characters without
// control characters. The worker still logs SanitizeReason(s).
func boundedPrintable(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxReasonLength {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// CheckRevisionReadiness validates a PrepareRevision result for rev: it must name
// rev's Namespace, Agent and revision, and its warnings must use known codes with a plugin id,
// without duplicates. Whether a warning's plugin was admitted is the worker's check. A
// RuntimeFailure that ValidRuntimeFailure refuses is dropped by the worker, not an invalid
// observation.
func CheckRevisionReadiness(rev Revision, r RevisionReadiness) error {
	if r.NamespaceID != rev.NamespaceID || r.AgentID != rev.AgentID || r.RevisionID != rev.ID {
		return &InvalidObservationError{Reason: "the readiness names another Namespace, Agent or revision"}
	}
	seen := make(map[PluginWarning]bool, len(r.Warnings))
	for _, w := range r.Warnings {
		if (w.Code != WarningPluginInstallFailed && w.Code != WarningPluginAuthRequired) || w.PluginID == "" {
			return &InvalidObservationError{Reason: "a plugin warning has an unknown code or no plugin id"}
		}
		if seen[w] {
			return &InvalidObservationError{Reason: "duplicate plugin warning"}
		}
		seen[w] = true
	}
	return nil
}

var runtimeCode = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// ValidRuntimeFailure reports whether f is well-formed evidence: a code of capital letters, digits
// and underscores, and a Cause only with MODEL_PROBE_FAILED and a known kind.
func ValidRuntimeFailure(f *RuntimeFailure) bool {
	if f == nil || !runtimeCode.MatchString(f.Code) {
		return false
	}
	if f.Cause == nil {
		return true
	}
	if f.Code != RuntimeModelProbeFailed {
		return false
	}
	switch f.Cause.Kind {
	case CauseProcessExit, CauseProbeStatus, CauseInvalidOutput, CauseWrapperError:
		return true
	}
	return false
}
