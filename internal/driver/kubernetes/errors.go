package kubernetes

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Failure codes of prepareRevision diagnostics.
const (
	CodeConfigurationInvalid  = "KUBERNETES_CONFIGURATION_INVALID"
	CodeAPITimeout            = "KUBERNETES_API_TIMEOUT"
	CodeAPIUnavailable        = driver.CodeKubernetesAPIUnavailable
	CodeAPIRejected           = "KUBERNETES_API_REJECTED"
	CodeDependencyUnavailable = "KUBERNETES_DEPENDENCY_UNAVAILABLE"
	CodePreparationFailed     = "KUBERNETES_PREPARATION_FAILED"
)

// classify turns a client error into the driver error the worker understands:
//   - no answer, HTTP 429 or 5xx, or a 401 or 403 soon after a request that got no answer (a
//     restarted kube-apiserver refuses everyone until its RBAC authorizer has loaded:
//     kube.APIError.AfterOutage): *driver.TransientDependencyError (the worker waits; no attempt
//     is spent);
//   - a server certificate that does not verify: *driver.RetryableError KUBERNETES_TLS_UNTRUSTED;
//   - any other HTTP status: *driver.RetryableError KUBERNETES_API_REJECTED with the status and
//     the Status reason, never the server's message. Revision operations retry it with backoff
//     (only configuration, ownership and Harness errors are permanent there).
//
// Errors that are not from the client pass through unchanged. Namespace operations use
// classifyNamespace.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var te *kube.TransportError
	if errors.As(err, &te) {
		if te.Code == kube.CodeTLSUntrusted {
			return &driver.RetryableError{Code: CodeTLSUntrusted, Reason: "The Kubernetes API server's certificate does not verify against the configured CA."}
		}
		if te.Timeout() {
			return &driver.TransientDependencyError{Dependency: driver.DependencyKubernetesAPI, Code: CodeAPITimeout, Reason: driver.TransientTimeout}
		}
		return &driver.TransientDependencyError{Dependency: driver.DependencyKubernetesAPI, Code: CodeAPIUnavailable, Reason: driver.TransientUnreachable}
	}
	var ae *kube.APIError
	if !errors.As(err, &ae) {
		return err
	}
	if kube.IsTransient(err) {
		return &driver.TransientDependencyError{Dependency: driver.DependencyKubernetesAPI, Code: CodeAPIUnavailable, Status: ae.Status, Reason: driver.TransientUnavailable}
	}
	reason := "A Kubernetes API request failed with HTTP status " + strconv.Itoa(ae.Status) + "."
	statusReason := safeStatusReason(ae.Reason)
	return &driver.RetryableError{Code: CodeAPIRejected, Reason: reason, Status: ae.Status, StatusReason: statusReason}
}

// classifyNamespace is classify for Namespace operations, where HTTP 400, 401, 403 and 422 are
// permanent; err may be a client error or one classify already returned.
func classifyNamespace(err error) error {
	err = classify(err)
	var re *driver.RetryableError
	if errors.As(err, &re) && re.Code == CodeAPIRejected {
		switch re.Status {
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity:
			return &driver.PermanentError{Code: re.Code, Reason: re.Reason, Status: re.Status, StatusReason: re.StatusReason}
		}
	}
	return err
}

// safeStatusReason keeps a Kubernetes Status reason only when it is one CamelCase word (Forbidden,
// NotFound, Conflict, ...): it is logged, and a server could put anything there.
func safeStatusReason(reason string) string {
	if reason == "" || len(reason) > 64 {
		return ""
	}
	for _, r := range reason {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
			return ""
		}
	}
	return reason
}
