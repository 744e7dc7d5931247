package kube

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
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA writes a self-signed CA certificate and returns its path.
func testCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kube-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func kubeconfigFile(t *testing.T, server, ca, user string) string {
	return writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
current-context: other
clusters:
- name: c1
  cluster: {server: "`+server+`", certificate-authority: "`+ca+`"}
users:
- name: u1
  user: `+user+`
contexts:
- name: ctx
  context: {cluster: c1, user: u1}
- name: other
  context: {cluster: missing, user: u1}
`)
}

func TestKubeconfigUsesTheNamedContextOnly(t *testing.T) {
	ca := testCA(t)
	path := kubeconfigFile(t, "https://127.0.0.1:6443", ca, "{token: abc}")
	c, err := New(Options{Auth: Auth{Mode: ModeKubeconfig, KubeconfigPath: path, Context: "ctx"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Host() != "127.0.0.1" || c.Port() != 6443 {
		t.Fatalf("server %s:%d", c.Host(), c.Port())
	}
	if tok, _ := c.token(); tok != "abc" {
		t.Fatalf("token %q", tok)
	}
	// The current context (which names a missing cluster) is never used; an unknown name is refused.
	for _, tc := range []struct{ name, context, user, server, want string }{
		{"unknown context", "nope", "{token: abc}", "https://127.0.0.1:6443", "no context with this name"},
		{"broken context", "other", "{token: abc}", "https://127.0.0.1:6443", "one cluster and one user"},
		{"exec plugin", "ctx", "{exec: {command: aws}}", "https://127.0.0.1:6443", "exec plugins"},
		{"plain http", "ctx", "{token: abc}", "http://127.0.0.1:6443", "https URL"},
		{"path in server", "ctx", "{token: abc}", "https://127.0.0.1:6443/k8s", "https URL"},
		{"user info", "ctx", "{token: abc}", "https://u:p@127.0.0.1:6443", "https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := kubeconfigFile(t, tc.server, ca, tc.user)
			_, err := New(Options{Auth: Auth{Mode: ModeKubeconfig, KubeconfigPath: path, Context: tc.context}})
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(ce.Message, tc.want) || strings.Contains(ce.Error(), "abc") {
				t.Fatalf("error %v, want a ConfigError saying %q", err, tc.want)
			}
		})
	}
}

func TestKubeconfigRefusesSkippingTLSVerification(t *testing.T) {
	path := writeFile(t, "kubeconfig", `clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users: [{name: u1, user: {token: abc}}]
contexts: [{name: ctx, context: {cluster: c1, user: u1}}]
`)
	_, err := New(Options{Auth: Auth{Mode: ModeKubeconfig, KubeconfigPath: path, Context: "ctx"}})
	if err == nil || !strings.Contains(err.Error(), "insecure-skip-tls-verify") {
		t.Fatalf("error %v", err)
	}
}

func TestTokenFileIsReadOnEveryRequest(t *testing.T) {
	ca := testCA(t)
	token := writeFile(t, "token", "first\n")
	c, err := New(Options{Auth: Auth{Mode: ModeTokenFile, Server: "https://127.0.0.1:6443", TokenPath: token, CAPath: ca}})
	if err != nil {
		t.Fatal(err)
	}
	if tok, _ := c.token(); tok != "first" {
		t.Fatalf("token %q", tok)
	}
	if err := os.WriteFile(token, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, _ := c.token(); tok != "rotated" {
		t.Fatalf("token after rotation %q", tok)
	}
	for _, tc := range []struct {
		name string
		auth Auth
	}{
		{"empty token", Auth{Mode: ModeTokenFile, Server: "https://127.0.0.1:6443", TokenPath: writeFile(t, "empty", " \n"), CAPath: ca}},
		{"not a CA", Auth{Mode: ModeTokenFile, Server: "https://127.0.0.1:6443", TokenPath: token, CAPath: token}},
		{"in-cluster outside a Pod", Auth{Mode: ModeInCluster}},
		{"unknown mode", Auth{Mode: "ambient"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ce *ConfigError
			if _, err := New(Options{Auth: tc.auth}); !errors.As(err, &ce) {
				t.Fatalf("error %v, want a ConfigError", err)
			}
		})
	}
}

func TestResourcePaths(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Namespaces.Path("", ""), "/api/v1/namespaces"},
		{Namespaces.Path("", "oce-1"), "/api/v1/namespaces/oce-1"},
		{ConfigMaps.Path("oce-1", "cfg"), "/api/v1/namespaces/oce-1/configmaps/cfg"},
		{Deployments.Path("oce-1", ""), "/apis/apps/v1/namespaces/oce-1/deployments"},
		{EndpointSlices.Path("n", "s"), "/apis/discovery.k8s.io/v1/namespaces/n/endpointslices/s"},
	} {
		if tc.got != tc.want {
			t.Errorf("path %q, want %q", tc.got, tc.want)
		}
	}
	if s := Selector("a", "1", "b", "2"); s != "a=1,b=2" {
		t.Errorf("selector %q", s)
	}
}

func TestTransientClassification(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&TransportError{Code: "ECONNREFUSED"}, true},
		{&TransportError{Code: "TIMEOUT"}, true},
		{&TransportError{Code: CodeTLSUntrusted}, false},
		{&APIError{Status: 429}, true},
		{&APIError{Status: 503}, true},
		{&APIError{Status: 403, Reason: "Forbidden"}, false},
		{&APIError{Status: 404}, false},
		{errors.New("other"), false},
	} {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v", tc.err, got)
		}
	}
	if !IsNotFound(&APIError{Status: 404}) || !IsConflict(&APIError{Status: 409}) || !IsForbidden(&APIError{Status: 403}) {
		t.Error("status helpers")
	}
	if e := (&APIError{Status: 403, Reason: "Forbidden", Message: "secret-ish server text"}); strings.Contains(e.Error(), "secret-ish") {
		t.Error("APIError.Error repeats the server's message")
	}
}

// TestForbiddenJustAfterAnOutageIsTransient: a 401 or 403 that follows a request that got no
// answer, within AuthWarmup, is marked AfterOutage and is transient (reads retry it); without a
// recent outage, or once the warm-up has passed, it is the server's refusal. The server is a
// loopback stand-in (httptest): a real kube-apiserver's RBAC warm-up after a restart lasts an
// unpredictable moment, so only a stand-in can answer "no answer, then 403" on demand;
// TestKubernetesAPIServerOutageDuringDeployment in cmd/occ restarts a real one.
func TestForbiddenJustAfterAnOutageIsTransient(t *testing.T) {
	var mode atomic.Value
	mode.Store("forbidden")
	var requests atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch mode.Load() {
		case "hang up":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		case "forbidden":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","reason":"Forbidden","code":403}`))
		case "ok":
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	defer srv.Close()
	ca := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	c, err := New(Options{
		Auth:       Auth{Mode: ModeTokenFile, Server: srv.URL, TokenPath: writeFile(t, "token", "t"), CAPath: ca},
		AuthWarmup: 3 * time.Second, // longer than a read's retry budget (2 s)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func() error { return c.Get(ctx, "/api/v1/namespaces/oce-1", nil) }

	err = get()
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 403 || ae.AfterOutage || IsTransient(err) {
		t.Fatalf("a 403 without an outage: %#v", err)
	}
	mode.Store("hang up")
	outage := time.Now()
	var te *TransportError
	if err := c.Delete(ctx, "/api/v1/namespaces/oce-1", "0a7c3d8e-uid", ""); !errors.As(err, &te) {
		t.Fatalf("no answer: %v", err)
	}
	mode.Store("forbidden")
	requests.Store(0)
	err = get()
	if !errors.As(err, &ae) || ae.Status != 403 || !ae.AfterOutage || !IsTransient(err) {
		t.Fatalf("a 403 just after the outage: %#v", err)
	}
	if n := requests.Load(); n < 2 {
		t.Fatalf("the read was sent %d times; a transient failure is retried", n)
	}
	time.Sleep(time.Until(outage.Add(3*time.Second + 100*time.Millisecond))) // past AuthWarmup
	err = get()
	if !errors.As(err, &ae) || ae.AfterOutage || IsTransient(err) {
		t.Fatalf("a 403 after the warm-up: %#v", err)
	}
	mode.Store("ok")
	if err := get(); err != nil {
		t.Fatal(err)
	}
}
