package kubernetes

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/testkit/schematest"
)

const cfgTestDigest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// cfgValidComputeJSON is a complete development configuration as the startup loader hands it over
// (numbers as json.Number).
const cfgValidComputeJSON = `{
  "authentication": {"mode": "inCluster"},
  "images": {"gateway": "registry.example/occ/runtime:1.2", "agent": "registry.example/occ/runtime:1.2", "requireImmutableDigest": false},
  "resources": {
    "gateway": {"requests": {"cpu": "100m", "memory": "1792Mi"}, "limits": {"cpu": "4", "memory": "3Gi"}},
    "agent": {"requests": {"cpu": "100m", "memory": "768Mi"}, "limits": {"cpu": "4", "memory": "6Gi"}},
    "namespace": {
      "quota": {"pods": "10", "requests.cpu": "8"},
      "containerDefaults": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "4", "memory": "2Gi"}}
    }
  },
  "network": {
    "dns": {"namespace": "kube-system", "podLabels": {"k8s-app": "kube-dns"}},
    "gatewayPort": 8080,
    "gatewayTrustedProxyCidrs": ["10.0.0.0/8", "fd00::/8"],
    "gatewayClients": [{"namespace": "ingress", "podLabels": {"app.kubernetes.io/name": "ingress-nginx"}}]
  },
  "servicePrincipalCredentials": {"mode": "projectedServiceAccountToken", "audience": "openclaw-enterprise"}
}`

func cfgValidCompute(t *testing.T) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(cfgValidComputeJSON))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// set replaces (or with del, removes) the member at a slash path such as "network/gatewayPort";
// numeric segments index lists.
func cfgSet(t *testing.T, m map[string]any, path string, v any, del bool) {
	t.Helper()
	parts := strings.Split(path, "/")
	var cur any = m
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if del {
					delete(c, p)
				} else {
					c[p] = v
				}
				return
			}
			cur = c[p]
		case []any:
			var idx int
			if _, err := json.Number(p).Int64(); err != nil {
				t.Fatalf("bad index %q", p)
			}
			n, _ := json.Number(p).Int64()
			idx = int(n)
			if last {
				c[idx] = v
				return
			}
			cur = c[idx]
		default:
			t.Fatalf("path %s: %T", path, cur)
		}
	}
}

func cfgDetails(t *testing.T, err error) []problem.Detail {
	t.Helper()
	var ce *driver.ConfigurationError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *ConfigurationError", err)
	}
	out := make([]problem.Detail, 0, len(ce.Details))
	for _, d := range ce.Details {
		if d.Message == "" {
			t.Errorf("detail %s has no message", d.Path)
		}
		out = append(out, problem.Detail{Path: d.Path, Code: d.Code})
	}
	return out
}

func TestParseConfigValid(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(cfgValidCompute(t), driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Auth:         kube.Auth{Mode: kube.ModeInCluster},
		GatewayImage: "registry.example/occ/runtime:1.2", AgentImage: "registry.example/occ/runtime:1.2",
		GatewayResources:          ContainerResources{Requests: Quantities{"100m", "1792Mi"}, Limits: Quantities{"4", "3Gi"}},
		AgentResources:            ContainerResources{Requests: Quantities{"100m", "768Mi"}, Limits: Quantities{"4", "6Gi"}},
		NamespaceQuota:            map[string]string{"pods": "10", "requests.cpu": "8"},
		ContainerDefaults:         ContainerResources{Requests: Quantities{"100m", "128Mi"}, Limits: Quantities{"4", "2Gi"}},
		DNS:                       Peer{Namespace: "kube-system", PodLabels: map[string]string{"k8s-app": "kube-dns"}},
		GatewayPort:               8080,
		GatewayTrustedProxyCIDRs:  []string{"10.0.0.0/8", "fd00::/8"},
		GatewayClients:            []Peer{{Namespace: "ingress", PodLabels: map[string]string{"app.kubernetes.io/name": "ingress-nginx"}}},
		ServicePrincipalTokenMode: TokenModeProjected,
		ServicePrincipalAudience:  "openclaw-enterprise",
		ServicePrincipalExpiry:    900,
		RequestTimeout:            10 * time.Second,
		PodTerminationTimeout:     120 * time.Second,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("ParseConfig =\n%+v\nwant\n%+v", cfg, want)
	}

	// Production with digests, every optional key, and the other authentication modes.
	m := cfgValidCompute(t)
	cfgSet(t, m, "images/gateway", "registry.example/occ/runtime"+cfgTestDigest, false)
	cfgSet(t, m, "images/agent", "registry.example/occ/runtime:1.2"+cfgTestDigest, false)
	cfgSet(t, m, "images/requireImmutableDigest", true, false)
	cfgSet(t, m, "servicePrincipalCredentials/expirationSeconds", json.Number("3600"), false)
	cfgSet(t, m, "runtime", map[string]any{"gatewayStorageClassName": "occ-gateway-rwo",
		"nodeSelector": map[string]any{"oce-role": "agents"}, "gatewayNodeSelector": map[string]any{"example.com/role": "control"}}, false)
	cfgSet(t, m, "requestTimeoutMs", json.Number("2500"), false)
	cfgSet(t, m, "podTerminationTimeoutMs", float64(30000), false)
	cfgSet(t, m, "authentication", map[string]any{"mode": "kubeconfig", "kubeconfigPath": "/etc/occ/kubeconfig", "context": "prod"}, false)
	cfg, err = ParseConfig(m, driver.Environment{Production: true})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.RequireImmutableDigest || cfg.ServicePrincipalExpiry != 3600 || cfg.GatewayStorageClassName != "occ-gateway-rwo" ||
		cfg.NodeSelector["oce-role"] != "agents" || cfg.GatewayNodeSelector["example.com/role"] != "control" ||
		cfg.RequestTimeout != 2500*time.Millisecond || cfg.PodTerminationTimeout != 30*time.Second ||
		cfg.Auth != (kube.Auth{Mode: kube.ModeKubeconfig, KubeconfigPath: "/etc/occ/kubeconfig", Context: "prod"}) {
		t.Fatalf("ParseConfig = %+v", cfg)
	}
	cfgSet(t, m, "authentication", map[string]any{"mode": "tokenFile", "server": "https://10.0.0.1:6443", "tokenPath": "/var/run/token", "caPath": "/var/run/ca.crt"}, false)
	cfgSet(t, m, "servicePrincipalCredentials", map[string]any{"mode": "disabled"}, false)
	cfg, err = ParseConfig(m, driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth != (kube.Auth{Mode: kube.ModeTokenFile, Server: "https://10.0.0.1:6443", TokenPath: "/var/run/token", CAPath: "/var/run/ca.crt"}) ||
		cfg.ServicePrincipalTokenMode != TokenModeDisabled || cfg.ServicePrincipalAudience != "" {
		t.Fatalf("ParseConfig = %+v", cfg)
	}
}

func TestParseConfigRefusals(t *testing.T) {
	t.Parallel()
	type edit struct {
		path string
		v    any
		del  bool
	}
	const marker = "zz-submitted-value-zz"
	cases := []struct {
		name       string
		edits      []edit
		production bool
		want       []problem.Detail
	}{
		{"unsupported upstream option", []edit{{path: "gatewayRouting", v: map[string]any{}}},
			false, []problem.Detail{{Path: "/gatewayRouting", Code: problem.DetailUnknownField}}},
		{"injected clients", []edit{{path: "clients", v: marker}},
			false, []problem.Detail{{Path: "/clients", Code: problem.DetailUnknownField}}},
		{"unsupported runtime option", []edit{{path: "runtime", v: map[string]any{"transportSecretPrefix": "x"}}},
			false, []problem.Detail{{Path: "/runtime/transportSecretPrefix", Code: problem.DetailUnknownField}}},
		{"authentication missing", []edit{{path: "authentication", del: true}},
			false, []problem.Detail{{Path: "/authentication", Code: problem.DetailRequired}}},
		{"authentication mode unknown", []edit{{path: "authentication/mode", v: "exec"}},
			false, []problem.Detail{{Path: "/authentication/mode", Code: problem.DetailInvalidValue}}},
		{"kubeconfig without context", []edit{{path: "authentication", v: map[string]any{"mode": "kubeconfig", "kubeconfigPath": "/k"}}},
			false, []problem.Detail{{Path: "/authentication/context", Code: problem.DetailRequired}}},
		{"kubeconfig relative path", []edit{{path: "authentication", v: map[string]any{"mode": "kubeconfig", "kubeconfigPath": "k/" + marker, "context": "c"}}},
			false, []problem.Detail{{Path: "/authentication/kubeconfigPath", Code: problem.DetailInvalidValue}}},
		{"inCluster with a server", []edit{{path: "authentication/server", v: "https://" + marker}},
			false, []problem.Detail{{Path: "/authentication/server", Code: problem.DetailUnknownField}}},
		{"tokenFile over http", []edit{{path: "authentication", v: map[string]any{"mode": "tokenFile", "server": "http://" + marker, "tokenPath": "/t", "caPath": "/c"}}},
			false, []problem.Detail{{Path: "/authentication/server", Code: problem.DetailInvalidFormat}}},
		{"tokenFile missing keys", []edit{{path: "authentication", v: map[string]any{"mode": "tokenFile", "server": "https://a"}}},
			false, []problem.Detail{{Path: "/authentication/tokenPath", Code: problem.DetailRequired}, {Path: "/authentication/caPath", Code: problem.DetailRequired}}},
		{"requireImmutableDigest missing", []edit{{path: "images/requireImmutableDigest", del: true}},
			false, []problem.Detail{{Path: "/images/requireImmutableDigest", Code: problem.DetailRequired}}},
		{"digest required", []edit{{path: "images/requireImmutableDigest", v: true}, {path: "images/agent", v: "r/a" + cfgTestDigest}},
			false, []problem.Detail{{Path: "/images/gateway", Code: problem.DetailInvalidValue}}},
		{"uppercase digest", []edit{{path: "images/requireImmutableDigest", v: true}, {path: "images/gateway", v: "r/g@sha256:" + strings.ToUpper(cfgTestDigest[8:])}, {path: "images/agent", v: "r/a" + cfgTestDigest}},
			false, []problem.Detail{{Path: "/images/gateway", Code: problem.DetailInvalidValue}}},
		{"image with whitespace", []edit{{path: "images/agent", v: "r/a " + marker}},
			false, []problem.Detail{{Path: "/images/agent", Code: problem.DetailInvalidFormat}}},
		{"production requires digests", nil,
			true, []problem.Detail{{Path: "/images/requireImmutableDigest", Code: problem.DetailInvalidValue}}},
		{"production requires projected tokens", []edit{{path: "images/requireImmutableDigest", v: true}, {path: "images/gateway", v: "r/g" + cfgTestDigest}, {path: "images/agent", v: "r/a" + cfgTestDigest}, {path: "servicePrincipalCredentials", v: map[string]any{"mode": "disabled"}}},
			true, []problem.Detail{{Path: "/servicePrincipalCredentials/mode", Code: problem.DetailInvalidValue}}},
		{"unquoted quantity", []edit{{path: "resources/gateway/limits/cpu", v: json.Number("4")}},
			false, []problem.Detail{{Path: "/resources/gateway/limits/cpu", Code: problem.DetailInvalidType}}},
		{"bad quantity", []edit{{path: "resources/agent/requests/memory", v: "1 " + marker}},
			false, []problem.Detail{{Path: "/resources/agent/requests/memory", Code: problem.DetailInvalidFormat}}},
		{"negative quantity", []edit{{path: "resources/agent/requests/cpu", v: "-1"}},
			false, []problem.Detail{{Path: "/resources/agent/requests/cpu", Code: problem.DetailInvalidFormat}}},
		{"request above limit", []edit{{path: "resources/gateway/requests/memory", v: "3073Mi"}, {path: "resources/namespace/containerDefaults/requests/cpu", v: "4001m"}},
			false, []problem.Detail{{Path: "/resources/gateway/requests/memory", Code: problem.DetailInvalidValue}, {Path: "/resources/namespace/containerDefaults/requests/cpu", Code: problem.DetailInvalidValue}}},
		{"limits missing", []edit{{path: "resources/agent/limits", del: true}},
			false, []problem.Detail{{Path: "/resources/agent/limits", Code: problem.DetailRequired}}},
		{"empty quota", []edit{{path: "resources/namespace/quota", v: map[string]any{}}},
			false, []problem.Detail{{Path: "/resources/namespace/quota", Code: problem.DetailInvalidValue}}},
		{"quota number and bad key", []edit{{path: "resources/namespace/quota", v: map[string]any{"pods": json.Number("10"), "a b": "1"}}},
			false, []problem.Detail{{Path: "/resources/namespace/quota/a b", Code: problem.DetailInvalidFormat}, {Path: "/resources/namespace/quota/pods", Code: problem.DetailInvalidType}}},
		{"reserved gateway port", []edit{{path: "network/gatewayPort", v: json.Number("18791")}},
			false, []problem.Detail{{Path: "/network/gatewayPort", Code: problem.DetailInvalidValue}}},
		{"gateway port range", []edit{{path: "network/gatewayPort", v: json.Number("0")}},
			false, []problem.Detail{{Path: "/network/gatewayPort", Code: problem.DetailInvalidValue}}},
		{"gateway port as string", []edit{{path: "network/gatewayPort", v: "8080"}},
			false, []problem.Detail{{Path: "/network/gatewayPort", Code: problem.DetailInvalidType}}},
		{"no trusted proxies", []edit{{path: "network/gatewayTrustedProxyCidrs", v: []any{}}},
			false, []problem.Detail{{Path: "/network/gatewayTrustedProxyCidrs", Code: problem.DetailInvalidValue}}},
		{"trusted proxies covering everything", []edit{{path: "network/gatewayTrustedProxyCidrs", v: []any{"0.0.0.0/0", "::/0", "::ffff:0:0/96", "::/64", marker, "10.0.0.1/8", "192.168.0.0/16"}}},
			false, []problem.Detail{
				{Path: "/network/gatewayTrustedProxyCidrs/0", Code: problem.DetailInvalidValue},
				{Path: "/network/gatewayTrustedProxyCidrs/1", Code: problem.DetailInvalidValue},
				{Path: "/network/gatewayTrustedProxyCidrs/2", Code: problem.DetailInvalidValue},
				{Path: "/network/gatewayTrustedProxyCidrs/3", Code: problem.DetailInvalidValue},
				{Path: "/network/gatewayTrustedProxyCidrs/4", Code: problem.DetailInvalidFormat},
				{Path: "/network/gatewayTrustedProxyCidrs/5", Code: problem.DetailInvalidFormat},
			}},
		{"gateway clients missing", []edit{{path: "network/gatewayClients", del: true}},
			false, []problem.Detail{{Path: "/network/gatewayClients", Code: problem.DetailRequired}}},
		{"gateway clients empty", []edit{{path: "network/gatewayClients", v: []any{}}},
			false, []problem.Detail{{Path: "/network/gatewayClients", Code: problem.DetailInvalidValue}}},
		{"peer namespace not a DNS label", []edit{{path: "network/dns/namespace", v: "Kube_" + marker}},
			false, []problem.Detail{{Path: "/network/dns/namespace", Code: problem.DetailInvalidFormat}}},
		{"peer labels", []edit{{path: "network/gatewayClients/0/podLabels", v: map[string]any{"bad key": "v", "ok": "bad value", "long": strings.Repeat("a", 64), "-x/y": "v"}}},
			false, []problem.Detail{
				{Path: "/network/gatewayClients/0/podLabels/-x~1y", Code: problem.DetailInvalidFormat},
				{Path: "/network/gatewayClients/0/podLabels/bad key", Code: problem.DetailInvalidFormat},
				{Path: "/network/gatewayClients/0/podLabels/long", Code: problem.DetailTooLong},
				{Path: "/network/gatewayClients/0/podLabels/ok", Code: problem.DetailInvalidFormat},
			}},
		{"peer without labels", []edit{{path: "network/dns/podLabels", v: map[string]any{}}},
			false, []problem.Detail{{Path: "/network/dns/podLabels", Code: problem.DetailInvalidValue}}},
		{"peer unknown key", []edit{{path: "network/dns/port", v: json.Number("53")}},
			false, []problem.Detail{{Path: "/network/dns/port", Code: problem.DetailUnknownField}}},
		{"audience required", []edit{{path: "servicePrincipalCredentials/audience", del: true}},
			false, []problem.Detail{{Path: "/servicePrincipalCredentials/audience", Code: problem.DetailRequired}}},
		{"disabled with audience", []edit{{path: "servicePrincipalCredentials/mode", v: "disabled"}},
			false, []problem.Detail{{Path: "/servicePrincipalCredentials/audience", Code: problem.DetailUnknownField}}},
		{"token lifetime", []edit{{path: "servicePrincipalCredentials/expirationSeconds", v: json.Number("599")}},
			false, []problem.Detail{{Path: "/servicePrincipalCredentials/expirationSeconds", Code: problem.DetailInvalidValue}}},
		{"runtime selectors and storage class", []edit{{path: "runtime", v: map[string]any{"gatewayStorageClassName": "Bad_Class", "nodeSelector": map[string]any{"a": "b c"}}}},
			false, []problem.Detail{{Path: "/runtime/gatewayStorageClassName", Code: problem.DetailInvalidFormat}, {Path: "/runtime/nodeSelector/a", Code: problem.DetailInvalidFormat}}},
		{"request timeout", []edit{{path: "requestTimeoutMs", v: json.Number("99")}},
			false, []problem.Detail{{Path: "/requestTimeoutMs", Code: problem.DetailInvalidValue}}},
		{"termination timeout", []edit{{path: "podTerminationTimeoutMs", v: 1.5}},
			false, []problem.Detail{{Path: "/podTerminationTimeoutMs", Code: problem.DetailInvalidType}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := cfgValidCompute(t)
			for _, e := range tc.edits {
				cfgSet(t, m, e.path, e.v, e.del)
			}
			_, err := ParseConfig(m, driver.Environment{Production: tc.production})
			if got := cfgDetails(t, err); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("details = %v\nwant %v", got, tc.want)
			}
			var ce *driver.ConfigurationError
			errors.As(err, &ce)
			for _, d := range ce.Details {
				if strings.Contains(d.Message, marker) || strings.Contains(d.Message, "Kube_") || strings.Contains(d.Message, "3073") {
					t.Fatalf("message %q repeats the submitted value", d.Message)
				}
			}
			if strings.Contains(err.Error(), marker) {
				t.Fatalf("error %q repeats the submitted value", err)
			}
		})
	}
	// The unquoted number gets upstream's hint.
	m := cfgValidCompute(t)
	cfgSet(t, m, "resources/agent/limits/memory", json.Number("4"), false)
	_, err := ParseConfig(m, driver.Environment{})
	var ce *driver.ConfigurationError
	if !errors.As(err, &ce) || ce.Details[0].Message != `Must be a string: write "4", not 4.` {
		t.Fatalf("unquoted quantity: %v", err)
	}
}

func TestParseQuantity(t *testing.T) {
	t.Parallel()
	eq := [][2]string{{"1Gi", "1024Mi"}, {"500m", "0.5"}, {"1k", "1000"}, {"1e3", "1k"}, {"1E3", "1000"}, {"2E", "2e18"}, {"1Ki", "1024"}, {".5", "500m"}, {"100n", "0.1u"}}
	for _, p := range eq {
		a, ok1 := parseQuantity(p[0])
		b, ok2 := parseQuantity(p[1])
		if !ok1 || !ok2 || a.Cmp(b) != 0 {
			t.Errorf("%s != %s", p[0], p[1])
		}
	}
	for _, bad := range []string{"", "1.", "-1", "+1", "1 Gi", "1gi", "1e", "1Gi3", "abc", "1e99", "0x10"} {
		if _, ok := parseQuantity(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	small, _ := parseQuantity("999Mi")
	big1, _ := parseQuantity("1Gi")
	if small.Cmp(big1) >= 0 || big1.Cmp(new(big.Rat).SetInt64(1<<30)) != 0 {
		t.Error("quantity order")
	}
}

// TestSchemasAgreeWithTheReferenceValidator checks the Compute and storage schemas against an
// independent JSON Schema validator, from the valid example and each authentication mode.
func TestSchemasAgreeWithTheReferenceValidator(t *testing.T) {
	t.Parallel()
	schematest.Agree(t, "kubernetes-compute", Schema(), cfgValidCompute(t))
	schematest.Agree(t, "kubernetes-storage", StorageSchema("Kubernetes storage."),
		map[string]any{"authentication": map[string]any{"mode": "inCluster"}},
		map[string]any{"authentication": map[string]any{"mode": "kubeconfig", "kubeconfigPath": "/etc/occ/kubeconfig", "context": "prod"}},
		map[string]any{"authentication": map[string]any{"mode": "tokenFile", "server": "https://kube.example:6443",
			"tokenPath": "/var/run/secrets/token", "caPath": "/var/run/secrets/ca.crt"}})
}

func TestSchemaDocuments(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]driver.ObjectSchema{"compute": Schema(), "configuration": ConfigurationSchema(), "secret": SecretSchema()} {
		doc := s.JSONSchema()
		if doc["additionalProperties"] != false {
			t.Fatalf("%s schema is open", name)
		}
		if _, err := json.Marshal(doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		auth := doc["properties"].(map[string]any)["authentication"].(map[string]any)
		if len(auth["oneOf"].([]any)) != 3 || auth["additionalProperties"] != false {
			t.Fatalf("%s authentication: %v", name, auth)
		}
	}
	for _, s := range []driver.ObjectSchema{ConfigurationSchema(), SecretSchema()} {
		if err := s.Validate(map[string]any{"authentication": map[string]any{"mode": "inCluster"}}); err != nil {
			t.Fatal(err)
		}
		got := cfgDetails(t, s.Validate(map[string]any{"authentication": map[string]any{"mode": "inCluster"}, "namespace": "x"}))
		if !reflect.DeepEqual(got, []problem.Detail{{Path: "/namespace", Code: problem.DetailUnknownField}}) {
			t.Fatalf("storage schema accepted another option: %v", got)
		}
	}
}

// cfgWriteAuthFiles writes a token and a CA bundle holding one self-signed certificate.
func cfgWriteAuthFiles(t *testing.T) (tokenPath, caPath string) {
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
	tokenPath, caPath = filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(tokenPath, []byte("token-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tokenPath, caPath
}

func TestFactoryAuthentication(t *testing.T) {
	t.Parallel()
	impl := ComputeImplementation()
	if impl.Name != "kubernetes" || !impl.Production || impl.Schema.JSONSchema()["additionalProperties"] != false {
		t.Fatalf("implementation = %+v", impl)
	}
	// inCluster outside a Pod names the setting, not the environment's values.
	_, err := impl.New("compute-kubernetes", cfgValidCompute(t), driver.Environment{})
	if got := cfgDetails(t, err); !reflect.DeepEqual(got, []problem.Detail{{Path: "/authentication/mode", Code: problem.DetailInvalidValue}}) {
		t.Fatalf("inCluster outside a Pod: %v", got)
	}
	tokenPath, caPath := cfgWriteAuthFiles(t)
	m := cfgValidCompute(t)
	cfgSet(t, m, "authentication", map[string]any{"mode": "tokenFile", "server": "https://127.0.0.1:1", "tokenPath": tokenPath, "caPath": filepath.Join(filepath.Dir(caPath), "missing")}, false)
	_, err = impl.New("compute-kubernetes", m, driver.Environment{})
	if got := cfgDetails(t, err); !reflect.DeepEqual(got, []problem.Detail{{Path: "/authentication/caPath", Code: problem.DetailInvalidValue}}) {
		t.Fatalf("missing CA: %v", got)
	}
	cfg, err := ParseConfig(cfgValidCompute(t), driver.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = kube.Auth{Mode: kube.ModeTokenFile, Server: "https://127.0.0.1:1", TokenPath: tokenPath, CAPath: caPath}
	c, err := NewCompute("compute-kubernetes", cfg, driver.Environment{})
	if err != nil || c.ID() != "compute-kubernetes" || c.Implementation() != "kubernetes" {
		t.Fatalf("NewCompute = %v, %v", c, err)
	}
	cfgSet(t, m, "authentication/caPath", caPath, false)
	if dc, err := impl.New("compute-kubernetes", m, driver.Environment{}); err != nil || dc.ID() != "compute-kubernetes" {
		t.Fatalf("factory = %v, %v", dc, err)
	}

	// The storage drivers take only authentication and build without a request.
	env := driver.Environment{LookupEnv: func(string) (string, bool) { return "", false }}
	auth := map[string]any{"authentication": map[string]any{"mode": "tokenFile", "server": "https://127.0.0.1:1", "tokenPath": tokenPath, "caPath": caPath}}
	if d, err := NewConfigurations("config-kubernetes", auth, env); err != nil || d.ID() != "config-kubernetes" || d.Implementation() != "kubernetes" {
		t.Fatalf("NewConfigurations = %v, %v", d, err)
	}
	if d, err := NewSecrets("secret-kubernetes", auth, env); err != nil || d.ID() != "secret-kubernetes" || d.Implementation() != "kubernetes" {
		t.Fatalf("NewSecrets = %v, %v", d, err)
	}
	_, err = NewSecrets("secret-kubernetes", map[string]any{"authentication": map[string]any{"mode": "inCluster"}}, env)
	if got := cfgDetails(t, err); !reflect.DeepEqual(got, []problem.Detail{{Path: "/authentication/mode", Code: problem.DetailInvalidValue}}) {
		t.Fatalf("NewSecrets inCluster outside a Pod: %v", got)
	}
	_, err = NewConfigurations("config-kubernetes", map[string]any{}, env)
	if got := cfgDetails(t, err); !reflect.DeepEqual(got, []problem.Detail{{Path: "/authentication", Code: problem.DetailRequired}}) {
		t.Fatalf("NewConfigurations {}: %v", got)
	}
	if bytes.Contains([]byte(err.Error()), []byte("token-value")) {
		t.Fatal("an error carries the token")
	}
}
