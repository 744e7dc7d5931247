package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/installcfg"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
)

const kubeDigest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// kubernetesStartupYAML selects the Kubernetes drivers everywhere (token file authentication, so
// that the drivers build outside a Pod without contacting a server).
func kubernetesStartupYAML(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, token := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("t0k3n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := "{mode: tokenFile, server: 'https://127.0.0.1:6443', tokenPath: " + token + ", caPath: " + ca + "}"
	return `occ: {cluster: test}
drivers:
  iam: {id: native-iam, configuration: {}}
  configuration: {id: config-kubernetes, configuration: {authentication: ` + auth + `}}
  secret: {id: secret-kubernetes, configuration: {authentication: ` + auth + `}}
  compute:
    id: compute-kubernetes
    configuration:
      authentication: ` + auth + `
      images: {gateway: "r/gateway` + kubeDigest + `", agent: "r/agent` + kubeDigest + `", requireImmutableDigest: true}
      resources:
        gateway: {requests: {cpu: 100m, memory: 1792Mi}, limits: {cpu: "4", memory: 3Gi}}
        agent: {requests: {cpu: 100m, memory: 768Mi}, limits: {cpu: "4", memory: 6Gi}}
        namespace:
          quota: {pods: "10"}
          containerDefaults: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "4", memory: 2Gi}}
      network:
        dns: {namespace: kube-system, podLabels: {k8s-app: kube-dns}}
        gatewayPort: 8080
        gatewayTrustedProxyCidrs: ["10.0.0.0/8"]
        gatewayClients: [{namespace: ingress, podLabels: {app: ingress}}]
      servicePrincipalCredentials: {mode: projectedServiceAccountToken, audience: openclaw-enterprise, expirationSeconds: 900}
`
}

func writeStartupYAML(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "installation.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func noEnv(string) (string, bool) { return "", false }

func TestStartupConfigKubernetes(t *testing.T) {
	t.Parallel()
	doc := kubernetesStartupYAML(t)
	cfg, compute, err := startupConfig(noEnv, settings.Production, writeStartupYAML(t, doc), "", "")
	if err != nil {
		t.Fatalf("startupConfig: %v", err)
	}
	if compute.ID() != "compute-kubernetes" || compute.Implementation() != "kubernetes" {
		t.Fatalf("compute = %s/%s", compute.ID(), compute.Implementation())
	}
	configurations, secrets, err := storageDrivers(cfg, settings.Production, noEnv)
	if err != nil {
		t.Fatalf("storageDrivers: %v", err)
	}
	if configurations == nil || configurations.ID() != "config-kubernetes" || configurations.Implementation() != "kubernetes" ||
		secrets == nil || secrets.ID() != "secret-kubernetes" || secrets.Implementation() != "kubernetes" {
		t.Fatalf("storage drivers = %v, %v", configurations, secrets)
	}
}

func TestStartupConfigKubernetesRefusals(t *testing.T) {
	t.Parallel()
	doc := kubernetesStartupYAML(t)
	cases := []struct {
		name, old, new string
		production     bool
		wantPath       string
	}{
		{"configuration option", "configuration: {id: config-kubernetes, configuration: {authentication: ",
			"configuration: {id: config-kubernetes, configuration: {namespace: x, authentication: ", false,
			"/drivers/configuration/configuration/namespace"},
		{"secret authentication", "secret: {id: secret-kubernetes, configuration: {authentication: {mode: tokenFile, server: 'https://127.0.0.1:6443',",
			"secret: {id: secret-kubernetes, configuration: {authentication: {mode: kubeconfig, kubeconfigPath: /k, context: c, server: 'https://127.0.0.1:6443',", false,
			"/drivers/secret/configuration/authentication/server"},
		{"compute schema", "gatewayPort: 8080", "gatewayPort: 18791", false,
			"/drivers/compute/configuration/network/gatewayPort"},
		{"compute production rule", "requireImmutableDigest: true", "requireImmutableDigest: false", true,
			"/drivers/compute/configuration/images/requireImmutableDigest"},
		{"compute unquoted quantity", `limits: {cpu: "4", memory: 3Gi}`, `limits: {cpu: 4, memory: 3Gi}`, false,
			"/drivers/compute/configuration/resources/gateway/limits/cpu"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(doc, tc.old) {
				t.Fatalf("test document lacks %q", tc.old)
			}
			mode := settings.Development
			if tc.production {
				mode = settings.Production
			}
			_, _, err := startupConfig(noEnv, mode, writeStartupYAML(t, strings.Replace(doc, tc.old, tc.new, 1)), "", "")
			var ie *problem.Error
			if !errors.As(err, &ie) || ie.Code != installcfg.CodeDriverConfigurationInvalid {
				t.Fatalf("startupConfig = %v", err)
			}
			found := false
			for _, d := range ie.Details {
				found = found || d.Path == tc.wantPath
			}
			if !found {
				t.Fatalf("details = %+v, want one at %s", ie.Details, tc.wantPath)
			}
		})
	}

	// The storage drivers resolve their authentication when built: inCluster outside a Pod fails
	// at the selection's path.
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  configuration: {id: config-kubernetes") {
			lines[i] = "  configuration: {id: config-kubernetes, configuration: {authentication: {mode: inCluster}}}"
		}
	}
	inCluster := strings.Join(lines, "\n")
	cfg, _, err := startupConfig(noEnv, settings.Development, writeStartupYAML(t, inCluster), "", "")
	if err != nil {
		t.Fatalf("startupConfig: %v", err)
	}
	_, _, err = storageDrivers(cfg, settings.Development, noEnv)
	var ie *problem.Error
	if !errors.As(err, &ie) || len(ie.Details) != 1 || ie.Details[0].Path != "/drivers/configuration/configuration/authentication/mode" {
		t.Fatalf("storageDrivers with inCluster outside a Pod = %v", err)
	}
}
