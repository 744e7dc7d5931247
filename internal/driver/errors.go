package driver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/problem"
)

// Stable error codes shared by drivers and the worker.
const (
	CodeKubernetesAPIUnavailable = "KUBERNETES_API_UNAVAILABLE"
	CodeAgentGatewayUnavailable  = "AGENT_GATEWAY_UNAVAILABLE"
	CodeDockerEngineUnavailable  = "DOCKER_ENGINE_UNAVAILABLE"
	// CodeHarnessAuthenticationUnsupported is the same code the API answers at admission, so a
	// refusal reads the same whether deploy or the worker's prepare made it.
	CodeHarnessAuthenticationUnsupported = "HARNESS_AUTH_UNSUPPORTED"
	CodeComputeDriverMismatch            = "COMPUTE_DRIVER_MISMATCH"
	CodeInvalidDriverObservation         = "INVALID_DRIVER_OBSERVATION"
	// CodeDriverConfigurationInvalid is the startup code of a configuration that fails its
	// implementation's schema or semantic validation.
	CodeDriverConfigurationInvalid = problem.CodeDriverConfigurationInvalid
	// CodeDriverUnavailableInProduction refuses a development-only implementation in production.
	CodeDriverUnavailableInProduction = "DRIVER_UNAVAILABLE_IN_PRODUCTION"
	// CodeDriverImplementationUnknown refuses an implementation name that is not compiled in.
	CodeDriverImplementationUnknown = "DRIVER_IMPLEMENTATION_UNKNOWN"
	// CodeComputeStopYielded is the code of StopYieldedError: a stop that ended its termination
	// wait early, leaving workloads still terminating.
	CodeComputeStopYielded = "COMPUTE_STOP_YIELDED"
)

// Dependencies named by TransientDependencyError.Dependency.
const (
	DependencyKubernetesAPI = "kubernetes_api"
	DependencyAgentGateway  = "agent_gateway"
	DependencySandbox       = "sandbox"
	DependencyDocker        = "docker"
)

// Closed reasons of TransientDependencyError.Reason.
const (
	TransientTimeout     = "timeout"
	TransientUnreachable = "unreachable"
	TransientUnavailable = "unavailable"
)

// coder is implemented by every typed error of this package.
type coder interface{ ErrorCode() string }

// TransientDependencyError is a self-clearing dependency failure: a request timeout, a socket
// failure, HTTP 429 or 5xx. During deployment the worker waits within the deadline instead of
// spending attempts.
type TransientDependencyError struct {
	Dependency string // Dependency* constant
	Code       string // e.g. KUBERNETES_API_UNAVAILABLE, DOCKER_ENGINE_UNAVAILABLE
	Status     int    // HTTP status when one was received, else 0
	Reason     string // TransientTimeout | TransientUnreachable | TransientUnavailable
}

func (e *TransientDependencyError) Error() string { return codeAndReason(e.Code, e.sentence()) }

// sentence describes the failure from the closed fields only, e.g. "Dependency docker is
// unavailable with HTTP status 503." It is also the Namespace observation reason.
func (e *TransientDependencyError) sentence() string {
	var b strings.Builder
	b.WriteString("Dependency ")
	b.WriteString(e.Dependency)
	b.WriteString(" is ")
	if e.Reason != "" {
		b.WriteString(e.Reason)
	} else {
		b.WriteString(TransientUnavailable)
	}
	if e.Status != 0 {
		b.WriteString(" with HTTP status ")
		b.WriteString(strconv.Itoa(e.Status))
	}
	b.WriteString(".")
	return b.String()
}

// ErrorCode returns Code.
func (e *TransientDependencyError) ErrorCode() string { return e.Code }

// StopYieldedError (upstream ComputeStopYieldedError) is returned by StopRevision when the stop is
// in progress but not finished, for example Pods that are still terminating: routing is withdrawn
// and termination was requested, but the driver ended its wait early. A driver returns it only when
// the caller allows it (StopOptions.Yield), preferably when StopOptions.ShouldYield says other work
// waits. It is not a failure: the caller repeats the (idempotent) stop later. Reason is an optional
// fixed sentence.
type StopYieldedError struct {
	Reason string
}

func (e *StopYieldedError) Error() string {
	if e.Reason == "" {
		return codeAndReason(CodeComputeStopYielded, "the stop yielded while workloads terminate")
	}
	return codeAndReason(CodeComputeStopYielded, e.Reason)
}

// ErrorCode returns COMPUTE_STOP_YIELDED.
func (e *StopYieldedError) ErrorCode() string { return CodeComputeStopYielded }

// IsStopYielded reports whether err is (or wraps) a *StopYieldedError.
func IsStopYielded(err error) bool {
	var y *StopYieldedError
	return errors.As(err, &y)
}

// PermanentError is a failure that repeating cannot fix: configuration, ownership, an HTTP
// 400/401/403/409/422 answer. Reason is a fixed, safe sentence.
type PermanentError struct {
	Code   string
	Reason string
	// Status and StatusReason are the HTTP status and the dependency's own reason word (for
	// Kubernetes the Status reason, such as Forbidden) when an HTTP answer caused the failure; the
	// worker logs them as status and reason.
	Status       int
	StatusReason string
}

// HTTPStatus returns the HTTP status and reason word that caused the failure (0 and "" when none).
func (e *PermanentError) HTTPStatus() (int, string) { return e.Status, e.StatusReason }

func (e *PermanentError) Error() string { return codeAndReason(e.Code, e.Reason) }

// ErrorCode returns Code.
func (e *PermanentError) ErrorCode() string { return e.Code }

// RetryableError is a failure worth retrying with backoff, spending an attempt.
type RetryableError struct {
	Code   string
	Reason string
	// Status and StatusReason as in PermanentError.
	Status       int
	StatusReason string
}

// HTTPStatus returns the HTTP status and reason word that caused the failure (0 and "" when none).
func (e *RetryableError) HTTPStatus() (int, string) { return e.Status, e.StatusReason }

// HTTPFailure is implemented by errors that may carry the HTTP answer that caused them.
type HTTPFailure interface {
	HTTPStatus() (status int, reason string)
}

func (e *RetryableError) Error() string { return codeAndReason(e.Code, e.Reason) }

// ErrorCode returns Code.
func (e *RetryableError) ErrorCode() string { return e.Code }

// ActivationPendingError means activation cannot complete yet (WORKSPACE_NODE_PENDING,
// WORKSPACE_NODE_BINDING_PENDING); the worker keeps the revision pending.
type ActivationPendingError struct {
	Code string
}

func (e *ActivationPendingError) Error() string {
	return codeAndReason(e.Code, "activation is pending")
}

// ErrorCode returns Code.
func (e *ActivationPendingError) ErrorCode() string { return e.Code }

// ActivationFailedError means activation failed for good (for example AGENT_GATEWAY_UNAUTHORIZED).
type ActivationFailedError struct {
	Code string
}

func (e *ActivationFailedError) Error() string { return codeAndReason(e.Code, "activation failed") }

// ErrorCode returns Code.
func (e *ActivationFailedError) ErrorCode() string { return e.Code }

// UnsupportedError refuses something the driver cannot do at all (for example
// HARNESS_AUTH_UNSUPPORTED). Permanent.
type UnsupportedError struct {
	Code   string
	Reason string // optional fixed sentence
}

func (e *UnsupportedError) Error() string {
	if e.Reason == "" {
		return codeAndReason(e.Code, "unsupported")
	}
	return codeAndReason(e.Code, e.Reason)
}

// ErrorCode returns Code.
func (e *UnsupportedError) ErrorCode() string { return e.Code }

// PreflightError blocks startup: the process logs its Code with the host and port fields and
// exits (for example KUBERNETES_API_UNAVAILABLE). Host names the endpoint (for a Unix socket
// "unix://<path>"); Port is 0 when there is none.
type PreflightError struct {
	Code string
	Host string
	Port int
}

func (e *PreflightError) Error() string {
	s := e.Code + ": preflight failed for " + e.Host
	if e.Port != 0 {
		s += ":" + strconv.Itoa(e.Port)
	}
	return s
}

// ErrorCode returns Code.
func (e *PreflightError) ErrorCode() string { return e.Code }

// ImplementationUnavailableError refuses an implementation selection: not compiled in
// (DRIVER_IMPLEMENTATION_UNKNOWN) or not allowed in this environment
// (DRIVER_UNAVAILABLE_IN_PRODUCTION). Startup reports it as DRIVER_CONFIGURATION_INVALID at the
// selection's implementation path.
type ImplementationUnavailableError struct {
	Implementation string
	Code           string
}

func (e *ImplementationUnavailableError) Error() string {
	if e.Code == CodeDriverUnavailableInProduction {
		return codeAndReason(e.Code, "the "+e.Implementation+" implementation cannot be selected in production")
	}
	return codeAndReason(e.Code, "no such implementation is compiled in")
}

// ErrorCode returns Code.
func (e *ImplementationUnavailableError) ErrorCode() string { return e.Code }

// InvalidObservationError is returned by CheckNamespaceObservation and CheckRevisionReadiness:
// the worker fails the work permanently with INVALID_DRIVER_OBSERVATION.
type InvalidObservationError struct {
	Reason string // fixed sentence naming the broken rule
}

func (e *InvalidObservationError) Error() string {
	return codeAndReason(CodeInvalidDriverObservation, e.Reason)
}

// ErrorCode returns INVALID_DRIVER_OBSERVATION.
func (e *InvalidObservationError) ErrorCode() string { return CodeInvalidDriverObservation }

func codeAndReason(code, reason string) string {
	if reason == "" {
		return code
	}
	return code + ": " + reason
}

// Code returns the stable code of the first typed error in err's chain, or "".
func Code(err error) string {
	var c coder
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return ""
}

// ErrorClass names err's class for logs (the worker.completed cause field): the name of the first
// typed error of this package in the chain, "Canceled" or "DeadlineExceeded" for context errors,
// "Error" for anything else and "" for nil. It never returns error text.
func ErrorClass(err error) string {
	if err == nil {
		return ""
	}
	var (
		transient   *TransientDependencyError
		permanent   *PermanentError
		retryable   *RetryableError
		pending     *ActivationPendingError
		failed      *ActivationFailedError
		unsupported *UnsupportedError
		preflight   *PreflightError
		config      *ConfigurationError
		unavailable *ImplementationUnavailableError
		invalid     *InvalidObservationError
		yielded     *StopYieldedError
	)
	switch {
	case errors.As(err, &yielded):
		return "StopYieldedError"
	case errors.As(err, &transient):
		return "TransientDependencyError"
	case errors.As(err, &permanent):
		return "PermanentError"
	case errors.As(err, &retryable):
		return "RetryableError"
	case errors.As(err, &pending):
		return "ActivationPendingError"
	case errors.As(err, &failed):
		return "ActivationFailedError"
	case errors.As(err, &unsupported):
		return "UnsupportedError"
	case errors.As(err, &preflight):
		return "PreflightError"
	case errors.As(err, &config):
		return "ConfigurationError"
	case errors.As(err, &unavailable):
		return "ImplementationUnavailableError"
	case errors.As(err, &invalid):
		return "InvalidObservationError"
	case errors.Is(err, context.Canceled):
		return "Canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "DeadlineExceeded"
	}
	return "Error"
}

// IsPermanent reports whether err is a failure that repeating cannot fix: *PermanentError,
// *UnsupportedError, *ActivationFailedError, *ConfigurationError,
// *ImplementationUnavailableError or *InvalidObservationError.
func IsPermanent(err error) bool {
	var (
		permanent   *PermanentError
		unsupported *UnsupportedError
		failed      *ActivationFailedError
		config      *ConfigurationError
		unavailable *ImplementationUnavailableError
		invalid     *InvalidObservationError
	)
	return errors.As(err, &permanent) || errors.As(err, &unsupported) || errors.As(err, &failed) ||
		errors.As(err, &config) || errors.As(err, &unavailable) || errors.As(err, &invalid)
}

// IsContextError reports whether err comes from a context that was cancelled or timed out.
func IsContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// ConfigurationError is a driver configuration that fails its schema or semantic validation.
// Startup reports it as DRIVER_CONFIGURATION_INVALID with the details, whose paths are JSON
// Pointers relative to the driver's configuration object ("" is the object itself); the startup
// loader prefixes them with the selection's path.
type ConfigurationError struct {
	problem.Problem
}

// NewConfigurationError returns the refusal of details (at most problem.MaxDetails are kept).
// Its message names the first detail and how many follow; it holds paths and fixed sentences,
// never a submitted value.
func NewConfigurationError(details ...problem.Detail) *ConfigurationError {
	details = problem.Limit(details)
	message := ""
	if len(details) > 0 {
		d := details[0]
		message = d.Code + " at " + pointerOrRoot(d.Path) + ": " + d.Message
		if n := len(details) - 1; n > 0 {
			message += fmt.Sprintf(" (and %d more)", n)
		}
	}
	return &ConfigurationError{Problem: problem.Problem{Code: CodeDriverConfigurationInvalid, Message: message, Details: details}}
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
