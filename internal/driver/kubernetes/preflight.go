package kubernetes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"regexp"
	"strconv"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Preflight codes. KUBERNETES_VERSION_BELOW_MINIMUM is a warning; the others
// are *driver.PreflightError codes that block startup. Upstream only names
// KUBERNETES_API_UNAVAILABLE; the others are this implementation's, so that an operator can tell
// an untrusted certificate, a refused identity and an unexpected cluster apart.
const (
	// CodeVersionBelowMinimum warns that the cluster is older than MinimumVersion.
	CodeVersionBelowMinimum = "KUBERNETES_VERSION_BELOW_MINIMUM"
	// CodeTLSUntrusted: the API server's certificate does not verify against the configured CA
	// (or its name does not match the server address).
	CodeTLSUntrusted = "KUBERNETES_TLS_UNTRUSTED"
	// CodeAccessDenied: the API server answered 401 or 403 to /version or to the namespace list;
	// the credentials are wrong or the ClusterRole binding is missing.
	CodeAccessDenied = "KUBERNETES_ACCESS_DENIED"
	// CodeCredentialsUnreadable: the token file could not be read when the request was made.
	CodeCredentialsUnreadable = "KUBERNETES_CREDENTIALS_UNREADABLE"
	// CodeAPIIncompatible: /version has no parsable gitVersion, or a list answer is not the
	// expected JSON.
	CodeAPIIncompatible = "KUBERNETES_API_INCOMPATIBLE"
	// CodeSplitGatewayNamespace: a namespace carries openclaw.dev/gateway-namespace without
	// openclaw.dev/namespace, a leftover of the unsupported split (two-cluster) layout.
	CodeSplitGatewayNamespace = "KUBERNETES_SPLIT_GATEWAY_NAMESPACE"
)

// MinimumVersion is the oldest supported Kubernetes release; older clusters get a warning.
var MinimumVersion = [3]int{1, 35, 0}

// preflightPageSize is the page size of the namespace list (upstream: 100).
const preflightPageSize = 100

var _ driver.Preflighter = (*Compute)(nil)

var gitVersion = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)`)

// parseVersion reads major, minor and patch from a gitVersion such as "v1.37.2-gke.100".
func parseVersion(s string) ([3]int, bool) {
	m := gitVersion.FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, false
	}
	var v [3]int
	for i := range v {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return [3]int{}, false
		}
		v[i] = n
	}
	return v, true
}

func versionLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// versionWarnings warns about a cluster older than MinimumVersion; startup continues.
func versionWarnings(v [3]int) []driver.PreflightWarning {
	if !versionLess(v, MinimumVersion) {
		return nil
	}
	return []driver.PreflightWarning{{
		Code:    CodeVersionBelowMinimum,
		Message: "Kubernetes " + versionString(v) + " is below the supported minimum " + versionString(MinimumVersion) + ".",
	}}
}

func versionString(v [3]int) string {
	return strconv.Itoa(v[0]) + "." + strconv.Itoa(v[1]) + "." + strconv.Itoa(v[2])
}

// Preflight implements driver.Preflighter: GET /version, then list the
// namespaces labelled openclaw.dev/gateway-namespace page by page to prove the identity's
// namespace access. Failures are *driver.PreflightError with the API server's host and port; the
// process logs them and exits. A cluster older than MinimumVersion is only a warning.
func (d *Compute) Preflight(ctx context.Context) ([]driver.PreflightWarning, error) {
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := d.client.RawGet(ctx, "/version", &version); err != nil {
		return nil, d.preflightError(ctx, err)
	}
	v, ok := parseVersion(version.GitVersion)
	if !ok {
		return nil, d.preflightFailure(CodeAPIIncompatible)
	}
	warnings := versionWarnings(v)
	err := listGatewayNamespaces(ctx, d.client, preflightPageSize, func(v namespaceView) error {
		if v.Metadata.Labels[labelNamespace] == "" {
			return d.preflightFailure(CodeSplitGatewayNamespace)
		}
		return nil
	})
	var pe *driver.PreflightError
	switch {
	case errors.As(err, &pe):
		return nil, pe
	case err != nil:
		return nil, d.preflightError(ctx, err)
	}
	return warnings, nil
}

// listGatewayNamespaces calls fn for every namespace labelled openclaw.dev/gateway-namespace,
// reading pageSize at a time. An expired continue token starts the listing again once.
func listGatewayNamespaces(ctx context.Context, c *kube.Client, pageSize int, fn func(namespaceView) error) error {
	cont, restarted := "", false
	for {
		var page struct {
			Metadata kube.ListMeta   `json:"metadata"`
			Items    []namespaceView `json:"items"`
		}
		err := c.ListPage(ctx, kube.Namespaces.Path("", ""), labelGatewayNamespace, pageSize, cont, &page)
		if kube.StatusOf(err) == http.StatusGone && !restarted {
			cont, restarted = "", true
			continue
		}
		if err != nil {
			return err
		}
		for _, v := range page.Items {
			if err := fn(v); err != nil {
				return err
			}
		}
		if page.Metadata.Continue == "" {
			return nil
		}
		cont = page.Metadata.Continue
	}
}

func (d *Compute) preflightFailure(code string) *driver.PreflightError {
	return &driver.PreflightError{Code: code, Host: d.client.Host(), Port: d.client.Port()}
}

// preflightError maps a client error to its startup code. It never carries the server's text.
func (d *Compute) preflightError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var (
		te  *kube.TransportError
		ae  *kube.APIError
		cve *tls.CertificateVerificationError
		uae x509.UnknownAuthorityError
		he  x509.HostnameError
		cie x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &he), errors.As(err, &cie):
		return d.preflightFailure(CodeTLSUntrusted)
	case errors.As(err, &te) && te.Code == "TOKEN_UNREADABLE":
		return d.preflightFailure(CodeCredentialsUnreadable)
	case errors.As(err, &te):
		return d.preflightFailure(CodeAPIUnavailable)
	case errors.As(err, &ae):
		switch {
		case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden:
			return d.preflightFailure(CodeAccessDenied)
		case kube.IsTransient(err):
			return d.preflightFailure(CodeAPIUnavailable)
		case ae.Status >= http.StatusOK && ae.Status < http.StatusMultipleChoices:
			return d.preflightFailure(CodeAPIIncompatible)
		}
		return d.preflightFailure(CodeAPIRejected)
	}
	return d.preflightFailure(CodeAPIUnavailable)
}
