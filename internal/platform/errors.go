package platform

import (
	"net/http"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/problem"
)

// API error codes. The status of each is fixed by StatusOf.
const (
	CodeInvalidRequest     = "INVALID_REQUEST"
	CodeUnauthenticated    = "UNAUTHENTICATED"
	CodeForbidden          = "FORBIDDEN"
	CodeNotFound           = "NOT_FOUND"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodeInstallationExists = "INSTALLATION_EXISTS"
	CodeResourceConflict   = "RESOURCE_CONFLICT"
	CodeAgentDeleting      = "AGENT_DELETING"
	CodeNamespaceNotReady  = "NAMESPACE_NOT_READY"
	CodeNamespaceNotEmpty  = "NAMESPACE_NOT_EMPTY"
	// CodeHarnessAuthUnsupported (ours): deploy refused at admission because the selected
	// Compute Driver does not support the Agent's Harness authentication method.
	CodeHarnessAuthUnsupported = "HARNESS_AUTH_UNSUPPORTED"
	// CodeFeatureNotAvailable (ours): a request member upstream defines for a feature this OCC
	// does not implement carries a value other than its empty form.
	CodeFeatureNotAvailable   = "FEATURE_NOT_AVAILABLE"
	CodePayloadTooLarge       = "PAYLOAD_TOO_LARGE"
	CodeUnsupportedMediaType  = "UNSUPPORTED_MEDIA_TYPE"
	CodeRateLimited           = "RATE_LIMITED"
	CodeInternalError         = "INTERNAL_ERROR"
	CodeNotImplemented        = "NOT_IMPLEMENTED"
	CodeDependencyUnavailable = "DEPENDENCY_UNAVAILABLE"
	CodeUnknownOutcome        = "UNKNOWN_OUTCOME"
	// The answers of the `occ login` token exchange (RFC 8628 device flow errors, upper-cased).
	CodeAuthorizationPending = "AUTHORIZATION_PENDING"
	CodeSlowDown             = "SLOW_DOWN"
	CodeAccessDenied         = "ACCESS_DENIED"
	CodeExpiredToken         = "EXPIRED_TOKEN"
	CodeCLISessionLimit      = "CLI_SESSION_LIMIT"
	// Runtime views (upstream's codes, but RUNTIME_DIAGNOSTICS_UNSUPPORTED, ours).
	CodeRuntimeLogsCursorInvalid      = "RUNTIME_LOGS_CURSOR_INVALID"
	CodeRuntimeLogsPodInvalid         = "RUNTIME_LOGS_POD_INVALID"
	CodeRuntimeLogsSourceUnavailable  = "RUNTIME_LOGS_SOURCE_UNAVAILABLE"
	CodeRuntimeLogsRateLimited        = "RUNTIME_LOGS_RATE_LIMITED"
	CodeRuntimeLogsClusterRBAC        = "RUNTIME_LOGS_CLUSTER_RBAC"
	CodeRuntimeLogsUnavailable        = "RUNTIME_LOGS_UNAVAILABLE"
	CodeRuntimeLogsTimeout            = "RUNTIME_LOGS_TIMEOUT"
	CodeRuntimeDiagnosticsUnsupported = "RUNTIME_DIAGNOSTICS_UNSUPPORTED"
	// Guided provisioning (ours): a requestId repeated with another body, and a retry of a
	// provisioning that has not failed.
	CodeProvisioningRequestConflict = "PROVISIONING_REQUEST_CONFLICT"
	CodeProvisioningNotFailed       = "PROVISIONING_NOT_FAILED"
)

// Fixed messages for errors whose cause must never reach the client.
const (
	MessageDependencyUnavailable = "A required platform dependency is unavailable."
	MessageUnknownOutcome        = "The outcome of the request is unknown. Read the resource before retrying."
	MessageInternalError         = "An internal error occurred."
	MessageForbidden             = "The caller is not allowed to perform this operation."
	MessageUnauthenticated       = "Authentication is required."
)

var statusByCode = map[string]int{
	CodeInvalidRequest:         http.StatusBadRequest,
	CodeUnauthenticated:        http.StatusUnauthorized,
	CodeForbidden:              http.StatusForbidden,
	CodeNotFound:               http.StatusNotFound,
	CodeMethodNotAllowed:       http.StatusMethodNotAllowed,
	CodeInstallationExists:     http.StatusConflict,
	CodeResourceConflict:       http.StatusConflict,
	CodeAgentDeleting:          http.StatusConflict,
	CodeNamespaceNotReady:      http.StatusConflict,
	CodeNamespaceNotEmpty:      http.StatusConflict,
	CodeHarnessAuthUnsupported: http.StatusConflict,
	CodeFeatureNotAvailable:    http.StatusBadRequest,
	CodePayloadTooLarge:        http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType:   http.StatusUnsupportedMediaType,
	CodeRateLimited:            http.StatusTooManyRequests,
	CodeInternalError:          http.StatusInternalServerError,
	CodeNotImplemented:         http.StatusNotImplemented,
	CodeDependencyUnavailable:  http.StatusServiceUnavailable,
	CodeUnknownOutcome:         http.StatusServiceUnavailable,
	CodeAuthorizationPending:   http.StatusBadRequest,
	CodeSlowDown:               http.StatusBadRequest,
	CodeAccessDenied:           http.StatusBadRequest,
	CodeExpiredToken:           http.StatusBadRequest,
	CodeCLISessionLimit:        http.StatusConflict,

	CodeRuntimeLogsCursorInvalid:      http.StatusBadRequest,
	CodeRuntimeLogsPodInvalid:         http.StatusBadRequest,
	CodeRuntimeLogsSourceUnavailable:  http.StatusNotFound,
	CodeRuntimeLogsRateLimited:        http.StatusTooManyRequests,
	CodeRuntimeLogsClusterRBAC:        http.StatusServiceUnavailable,
	CodeRuntimeLogsUnavailable:        http.StatusServiceUnavailable,
	CodeRuntimeLogsTimeout:            http.StatusGatewayTimeout,
	CodeRuntimeDiagnosticsUnsupported: http.StatusConflict,
	CodeProvisioningRequestConflict:   http.StatusConflict,
	CodeProvisioningNotFailed:         http.StatusConflict,
}

// Codes returns every error code the API answers with, in a stable order.
func Codes() []string {
	return []string{
		CodeInvalidRequest, CodeUnauthenticated, CodeForbidden, CodeNotFound, CodeMethodNotAllowed,
		CodeInstallationExists, CodeResourceConflict, CodeAgentDeleting, CodeNamespaceNotReady,
		CodeNamespaceNotEmpty, CodeHarnessAuthUnsupported, CodeFeatureNotAvailable, CodePayloadTooLarge, CodeUnsupportedMediaType, CodeRateLimited,
		CodeInternalError, CodeNotImplemented, CodeDependencyUnavailable, CodeUnknownOutcome,
		CodeAuthorizationPending, CodeSlowDown, CodeAccessDenied, CodeExpiredToken, CodeCLISessionLimit,
		CodeRuntimeLogsCursorInvalid, CodeRuntimeLogsPodInvalid, CodeRuntimeLogsSourceUnavailable,
		CodeRuntimeLogsRateLimited, CodeRuntimeLogsClusterRBAC, CodeRuntimeLogsUnavailable, CodeRuntimeLogsTimeout,
		CodeRuntimeDiagnosticsUnsupported, CodeProvisioningRequestConflict, CodeProvisioningNotFailed,
	}
}

// StatusOf returns the HTTP status of an error code; an unknown code is an internal error.
func StatusOf(code string) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is an API error: a problem (code, a fixed client-safe message of 1..256 characters,
// details; the cause never leaves the server) answered with the HTTP status of its code.
type Error struct {
	problem.Problem
	RetryAfter time.Duration // 429 only: the Retry-After header
}

// Status is the HTTP status of the error's code.
func (e *Error) Status() int { return StatusOf(e.Code) }

// NewError returns an error with code, message and details (at most MaxDetails are kept).
func NewError(code, message string, details ...problem.Detail) *Error {
	return &Error{Problem: problem.Problem{Code: code, Message: clampMessage(message), Details: problem.Limit(details)}}
}

// Invalid is a 400 INVALID_REQUEST naming one field.
func Invalid(message, path, detailCode string) *Error {
	return NewError(CodeInvalidRequest, message, problem.Detail{Path: path, Code: detailCode})
}

// Conflict is a 409 RESOURCE_CONFLICT.
func Conflict(message string) *Error { return NewError(CodeResourceConflict, message) }

// NotFound is a 404 NOT_FOUND.
func NotFound(message string) *Error { return NewError(CodeNotFound, message) }

// Unavailable is a 503 DEPENDENCY_UNAVAILABLE with the fixed message; cause stays on the server.
func Unavailable(cause error) *Error {
	return &Error{Problem: problem.Problem{Code: CodeDependencyUnavailable, Message: MessageDependencyUnavailable, Cause: cause}}
}

// clampMessage keeps a message within 1..256 characters.
func clampMessage(m string) string {
	m = strings.TrimSpace(m)
	if m == "" {
		return "The request failed."
	}
	return TruncateRunes(m, 256)
}

// TruncateRunes cuts s to at most n code points, ending with "…" when it was cut.
func TruncateRunes(s string, n int) string {
	count := 0
	for i := range s {
		if count == n-1 {
			rest := s[i:]
			if len([]rune(rest)) <= 1 {
				return s
			}
			return s[:i] + "…"
		}
		count++
	}
	return s
}
