package kubernetes

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/drivertest"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/testkit/kubetest"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [3]int
		ok   bool
	}{
		{"v1.37.2", [3]int{1, 37, 2}, true},
		{"1.35.0", [3]int{1, 35, 0}, true},
		{"v1.34.9-gke.1200", [3]int{1, 34, 9}, true},
		{"v1.36.0+k3s1", [3]int{1, 36, 0}, true},
		{"v1.35", [3]int{}, false},
		{"", [3]int{}, false},
		{"x1.35.0", [3]int{}, false},
	} {
		got, ok := parseVersion(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseVersion(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestVersionWarnings(t *testing.T) {
	w := versionWarnings([3]int{1, 34, 9})
	if len(w) != 1 || w[0].Code != "KUBERNETES_VERSION_BELOW_MINIMUM" || w[0].Message != "Kubernetes 1.34.9 is below the supported minimum 1.35.0." {
		t.Fatalf("warnings for 1.34.9: %+v", w)
	}
	for _, v := range [][3]int{{1, 35, 0}, {1, 37, 2}, {2, 0, 0}} {
		if w := versionWarnings(v); len(w) != 0 {
			t.Errorf("warnings for %v: %+v", v, w)
		}
	}
}

// writeUntrustedCA writes the PEM of a fresh self-signed CA that signed nothing the cluster serves.
func writeUntrustedCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "untrusted-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serverPort is the port of cluster c's API server.
func serverPort(t *testing.T, c *kubetest.Cluster) int {
	t.Helper()
	u, err := url.Parse(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func requirePreflightError(t *testing.T, err error, code, host string, port int) {
	t.Helper()
	var pe *driver.PreflightError
	if !errors.As(err, &pe) {
		t.Fatalf("Preflight error %v (class %s), want *driver.PreflightError %s", err, driver.ErrorClass(err), code)
	}
	if pe.Code != code || pe.Host != host || pe.Port != port {
		t.Fatalf("PreflightError{%s %s %d}, want {%s %s %d}", pe.Code, pe.Host, pe.Port, code, host, port)
	}
	if !strings.Contains(err.Error(), host+":"+strconv.Itoa(port)) {
		t.Fatalf("error text %q does not name %s:%d", err.Error(), host, port)
	}
}

func TestPreflightPassesAgainstCluster(t *testing.T) {
	t.Parallel()
	// A private cluster: tests on the shared one create leftover split-layout namespaces on
	// purpose, which the preflight refuses.
	c := kubetest.Start(t, kubetest.Options{})
	d := newTestCompute(t, c, nil)
	warnings, err := d.Preflight(context.Background())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Preflight against %s: warnings %+v, error %v", kubetest.KubeVersion, warnings, err)
	}
}

func TestPreflightReportsClosedPort(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	d := newTestCompute(t, c, func(cfg *Config) { cfg.Auth.Server = "https://127.0.0.1:" + strconv.Itoa(port) })
	_, err = d.Preflight(context.Background())
	requirePreflightError(t, err, "KUBERNETES_API_UNAVAILABLE", "127.0.0.1", port)
}

func TestPreflightRefusesUntrustedCertificate(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	ca := writeUntrustedCA(t)
	d := newTestCompute(t, c, func(cfg *Config) { cfg.Auth.CAPath = ca })
	_, err := d.Preflight(context.Background())
	requirePreflightError(t, err, CodeTLSUntrusted, "127.0.0.1", serverPort(t, c))
	// Namespace work against an untrusted server is a failure, never a success.
	ns := drivertest.NewNamespace()
	if obs := ensureOnce(t, d, ns); obs.Failure == "" {
		t.Fatalf("ensure against an untrusted server: %+v", obs)
	}
}

func TestPreflightEndedContext(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Preflight(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Preflight with a cancelled context: %v", err)
	}
}

// TestPreflightErrorCodes maps client errors to startup codes without a cluster.
func TestPreflightErrorCodes(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := NewCompute(testComputeID, Config{Auth: kube.Auth{Mode: kube.ModeTokenFile, Server: "https://kube.example.test:6443", TokenPath: token, CAPath: writeUntrustedCA(t)}}, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		code string
	}{
		{&kube.TransportError{Code: "ECONNREFUSED"}, "KUBERNETES_API_UNAVAILABLE"},
		{&kube.TransportError{Code: "TIMEOUT"}, "KUBERNETES_API_UNAVAILABLE"},
		{&kube.TransportError{Code: "EIO", Err: x509.UnknownAuthorityError{}}, CodeTLSUntrusted},
		{&kube.TransportError{Code: "TOKEN_UNREADABLE"}, CodeCredentialsUnreadable},
		{&kube.APIError{Status: 401, Message: "secret"}, CodeAccessDenied},
		{&kube.APIError{Status: 403}, CodeAccessDenied},
		{&kube.APIError{Status: 429}, "KUBERNETES_API_UNAVAILABLE"},
		{&kube.APIError{Status: 503}, "KUBERNETES_API_UNAVAILABLE"},
		{&kube.APIError{Status: 404}, "KUBERNETES_API_REJECTED"},
		{&kube.APIError{Status: 200, Reason: "InvalidResponse"}, CodeAPIIncompatible},
	} {
		got := d.preflightError(context.Background(), tc.err)
		var pe *driver.PreflightError
		if !errors.As(got, &pe) || pe.Code != tc.code || pe.Host != "kube.example.test" || pe.Port != 6443 {
			t.Errorf("preflightError(%v) = %v, want %s at kube.example.test:6443", tc.err, got, tc.code)
		}
		if strings.Contains(got.Error(), "secret") {
			t.Errorf("preflight error carries the server's message: %v", got)
		}
	}
}

// TestAccessAndAvailability runs on a private cluster: it changes grants and stops the API server.
func TestAccessAndAvailability(t *testing.T) {
	t.Parallel()
	const tenantless = "tenantless"
	c := kubetest.Start(t, kubetest.Options{ExtraIdentities: []string{tenantless}, NoControllerManager: true, NoKubelet: true})
	port := serverPort(t, c)
	ctx := context.Background()
	worker := newTestCompute(t, c, nil)

	t.Run("TenantRoleBindingsNotBoundYet", func(t *testing.T) {
		// The operator grants namespace access cluster-wide and tenant access per namespace.
		c.GrantClusterRole(t, tenantless, kubetest.NamespaceWorkerRole)
		d := newTestCompute(t, c, withIdentity(t, c, tenantless))
		ns := drivertest.NewNamespace()
		name := managedNamespaceName(ns.ID)
		for range 2 {
			obs := ensureOnce(t, d, ns)
			if *obs.Ready || obs.Failure != "" || !strings.Contains(obs.Reason, "RoleBindings are not bound") {
				t.Fatalf("ensure without tenant access: %+v, want pending", obs)
			}
		}
		if phase := kubetest.Str(adminGet(t, c, kubetest.CorePath("", "namespaces", name)), "status", "phase"); phase != "Active" {
			t.Fatalf("tenant namespace phase %q", phase)
		}
		requireAbsent(t, c, tenantObjectPaths(name)["quota"])
		c.GrantClusterRoleInNamespace(t, tenantless, kubetest.TenantWorkerRole, name)
		pollObservation(t, "ensure after the RoleBinding",
			func(ctx context.Context) (driver.NamespaceObservation, error) { return d.EnsureNamespace(ctx, ns) },
			func(o driver.NamespaceObservation) error { return driver.CheckEnsureObservation(ns.ID, o) },
			func(o driver.NamespaceObservation) bool { return *o.Ready })
		for _, path := range tenantObjectPaths(name) {
			requireOwned(t, adminGet(t, c, path), ns.ID)
		}
		if _, err := d.Preflight(ctx); err != nil {
			t.Fatalf("Preflight with namespace access: %v", err)
		}
	})

	t.Run("NoAccess", func(t *testing.T) {
		d := newTestCompute(t, c, withIdentity(t, c, kubetest.Nobody))
		ns := drivertest.NewNamespace()
		requireFailure(t, ensureOnce(t, d, ns), driver.FailurePermanent, "HTTP status 403")
		requireFailure(t, deleteOnce(t, d, ns), driver.FailurePermanent, "HTTP status 403")
		requireAbsent(t, c, kubetest.CorePath("", "namespaces", managedNamespaceName(ns.ID)))
		_, err := d.Preflight(ctx)
		requirePreflightError(t, err, CodeAccessDenied, "127.0.0.1", port)
	})

	t.Run("SplitGatewayNamespace", func(t *testing.T) {
		name := uniqueName("split-gateways")
		createTestNamespace(t, c, name, map[string]string{labelGatewayNamespace: "ns_legacy"}, nil)
		_, err := worker.Preflight(ctx)
		requirePreflightError(t, err, CodeSplitGatewayNamespace, "127.0.0.1", port)
		// Without a controller manager a deleted namespace stays; drop the label instead.
		if _, err := c.Admin().Patch(kubetest.CorePath("", "namespaces", name), kubetest.MergePatch,
			kubetest.Object{"metadata": kubetest.Object{"labels": kubetest.Object{labelGatewayNamespace: nil}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := worker.Preflight(ctx); err != nil {
			t.Fatalf("Preflight after the label was removed: %v", err)
		}
	})

	t.Run("NamespaceListIsPaginated", func(t *testing.T) {
		for range 5 {
			ns := drivertest.NewNamespace()
			o := owner{namespaceID: ns.ID}
			labels := o.labels()
			labels[labelGatewayNamespace] = ns.ID
			createTestNamespace(t, c, uniqueName("paged"), labels, o.annotations())
		}
		all, err := c.Admin().List(kubetest.CorePath("", "namespaces", ""), url.Values{"labelSelector": {labelGatewayNamespace}})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		if err := listGatewayNamespaces(ctx, worker.client, 2, func(v namespaceView) error {
			if seen[v.Metadata.Name] {
				t.Errorf("namespace %s listed twice", v.Metadata.Name)
			}
			seen[v.Metadata.Name] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(all) < 5 || len(seen) != len(all) {
			t.Fatalf("paginated listing saw %d namespaces, a single list %d", len(seen), len(all))
		}
		if _, err := worker.Preflight(ctx); err != nil {
			t.Fatalf("Preflight: %v", err)
		}
	})

	t.Run("APIServerStopped", func(t *testing.T) {
		c.StopAPIServer(t)
		_, err := worker.Preflight(ctx)
		requirePreflightError(t, err, "KUBERNETES_API_UNAVAILABLE", "127.0.0.1", port)
		ns := drivertest.NewNamespace()
		requireFailure(t, ensureOnce(t, worker, ns), driver.FailureRetryable, "The Kubernetes API server is unreachable.")
		requireFailure(t, deleteOnce(t, worker, ns), driver.FailureRetryable, "The Kubernetes API server is unreachable.")
		c.StartAPIServer(t)
		if _, err := worker.Preflight(ctx); err != nil {
			t.Fatalf("Preflight after the API server restarted: %v", err)
		}
	})
}
