package kubernetes

import (
	"math/big"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/problem"
)

// Defaults and bounds of the configuration (requestTimeoutMs and
// podTerminationTimeoutMs are ours: upstream reads them from the environment or hard-codes them).
const (
	DefaultRequestTimeout        = kube.DefaultRequestTimeout
	DefaultPodTerminationTimeout = 120 * time.Second
	DefaultTokenExpirationSec    = 900
	// reservedGatewayPort is the gateway's internal port; the public port must differ.
	reservedGatewayPort = 18791
)

// Service principal credential modes.
const (
	TokenModeProjected = "projectedServiceAccountToken"
	TokenModeDisabled  = "disabled"
)

var (
	reDNSLabel     = regexp.MustCompile(`^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$`)
	reDNSSubdomain = regexp.MustCompile(`^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$`)
	reLabelName    = regexp.MustCompile(`^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	reLabelValue   = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	// reResourceName is a ResourceQuota key: "pods", "requests.cpu", "count/deployments.apps", ...
	reResourceName = regexp.MustCompile(`^[A-Za-z0-9](?:[-A-Za-z0-9_./]{0,251}[A-Za-z0-9])?$`)
	// reQuantity is the Kubernetes quantity grammar without a sign (negative amounts make no sense
	// for requests, limits or quotas).
	reQuantity = regexp.MustCompile(`^(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$`)
	// reImageRef is a registry reference: no whitespace, no control characters, no shell syntax.
	reImageRef  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`)
	reDigestRef = regexp.MustCompile(`@sha256:[a-f0-9]{64}$`)
)

// quantityTypeMessage is upstream's hint for an unquoted YAML number: a fixed example, never the
// submitted value.
const quantityTypeMessage = `Must be a string: write "4", not 4.`

// Schema is the closed configuration schema of the Kubernetes Compute Driver (the supported subset
// of the upstream options plus requestTimeoutMs and podTerminationTimeoutMs). Unsupported upstream
// options (gatewayRouting, executionCluster, runtime.transportSecretPrefix, ...) fail as
// UNKNOWN_FIELD.
func Schema() driver.ObjectSchema {
	return driver.ObjectSchema{
		Description: "Production Compute Driver: one Kubernetes namespace per Namespace, a gateway and a Harness Deployment per Agent revision.",
		Properties: []driver.Property{
			authenticationProperty(),
			{
				Name: "images", Type: driver.TypeObject, Required: true,
				Description: "Container images of the gateway and the Harness.",
				Properties: []driver.Property{
					imageProperty("gateway", "Image of the Agent gateway."),
					imageProperty("agent", "Image of the Agent Harness."),
					{Name: "requireImmutableDigest", Type: driver.TypeBoolean, Required: true,
						Description: "When true both images must end with @sha256:<64 hex>. Production requires true."},
				},
			},
			{
				Name: "resources", Type: driver.TypeObject, Required: true,
				Description: "Container resources and the per-namespace quota.",
				Properties: []driver.Property{
					containerResourcesProperty("gateway", "Requests and limits of the gateway container."),
					containerResourcesProperty("agent", "Requests and limits of the Harness container."),
					{
						Name: "namespace", Type: driver.TypeObject, Required: true,
						Description: "ResourceQuota openclaw-quota and LimitRange openclaw-limits of every tenant namespace.",
						Properties: []driver.Property{
							{
								Name: "quota", Type: driver.TypeStringMap, Required: true, MinItems: 1, MaxItems: 64,
								Description: "spec.hard of ResourceQuota openclaw-quota: resource name to quantity string.",
								KeyCheck:    checkResourceName,
								Items:       quantityItem(),
							},
							containerResourcesProperty("containerDefaults", "LimitRange default (limits) and defaultRequest (requests) of containers."),
						},
					},
				},
			},
			{
				Name: "network", Type: driver.TypeObject, Required: true,
				Description: "NetworkPolicy peers and the gateway's listener.",
				Properties: []driver.Property{
					peerProperty("dns", true, "The cluster DNS pods every workload may reach on port 53 and 5353."),
					{Name: "gatewayPort", Type: driver.TypeInteger, Required: true, Minimum: 1, Maximum: 65535,
						Description: "Port of the gateway Service; 18791 is reserved.", Check: checkGatewayPort},
					{
						Name: "gatewayTrustedProxyCidrs", Type: driver.TypeArray, Required: true, MinItems: 1, MaxItems: 64,
						Description: "Source CIDRs of the proxies the gateway trusts; none may cover every address.",
						Items:       &driver.Property{Type: driver.TypeString, MaxLength: 64, Check: checkTrustedCIDR},
					},
					{
						Name: "gatewayClients", Type: driver.TypeArray, Required: true, MinItems: 1, MaxItems: 32,
						Description: "Peers allowed to reach the gateway port.",
						Items:       ptr(peerProperty("", false, "A namespace and the labels of its client pods.")),
					},
				},
			},
			{
				Name: "servicePrincipalCredentials", Type: driver.TypeObject, Required: true,
				Description:   "Projected ServiceAccount tokens of the Harness. Production requires projectedServiceAccountToken.",
				Discriminator: "mode",
				Variants: []driver.Variant{
					{Value: TokenModeProjected, Required: []string{"audience"}, Optional: []string{"expirationSeconds"}},
					{Value: TokenModeDisabled},
				},
				Properties: []driver.Property{
					{Name: "mode", Type: driver.TypeString, Required: true, Enum: []string{TokenModeProjected, TokenModeDisabled}},
					{Name: "audience", Type: driver.TypeString, MaxLength: 253, Check: checkPrintable,
						Description: "Audience of the projected token (required with projectedServiceAccountToken)."},
					{Name: "expirationSeconds", Type: driver.TypeInteger, Minimum: 600, Maximum: 86400,
						Default: int64(DefaultTokenExpirationSec), Description: "Lifetime of the projected token."},
				},
			},
			{
				Name: "runtime", Type: driver.TypeObject,
				Description: "Optional placement and storage of the workloads.",
				Properties: []driver.Property{
					{Name: "gatewayStorageClassName", Type: driver.TypeString, MaxLength: 253, Pattern: reDNSSubdomain.String(),
						Description: "StorageClass of the gateway's private-state PVC; without it the gateway keeps no PVC."},
					labelMapProperty("nodeSelector", "Node labels of the Harness and embedded gateway Pods."),
					labelMapProperty("gatewayNodeSelector", "Node labels of dedicated gateway Pods."),
				},
			},
			{Name: "requestTimeoutMs", Type: driver.TypeInteger, Minimum: 100, Maximum: 120_000,
				Default: int64(DefaultRequestTimeout / time.Millisecond), Description: "Timeout of each Kubernetes API request in milliseconds."},
			{Name: "podTerminationTimeoutMs", Type: driver.TypeInteger, Minimum: 1000, Maximum: 600_000,
				Default: int64(DefaultPodTerminationTimeout / time.Millisecond), Description: "How long a stop waits for a workload's Pods to terminate, in milliseconds."},
		},
		Check: checkCompute,
	}
}

// StorageSchema is the closed configuration schema of the Kubernetes Configuration and Secret
// Drivers: only authentication, with the shape of the Compute Driver's.
func StorageSchema(description string) driver.ObjectSchema {
	return driver.ObjectSchema{Description: description, Properties: []driver.Property{authenticationProperty()}}
}

// authenticationProperty is the closed oneOf of the three authentication modes.
func authenticationProperty() driver.Property {
	return driver.Property{
		Name: "authentication", Type: driver.TypeObject, Required: true,
		Description:   "How the driver authenticates to the API server; nothing ambient (default kubeconfig, current context) is used.",
		Discriminator: "mode",
		Variants: []driver.Variant{
			{Value: kube.ModeInCluster},
			{Value: kube.ModeKubeconfig, Required: []string{"kubeconfigPath", "context"}},
			{Value: kube.ModeTokenFile, Required: []string{"server", "tokenPath", "caPath"}},
		},
		Properties: []driver.Property{
			{Name: "mode", Type: driver.TypeString, Required: true, Enum: []string{kube.ModeInCluster, kube.ModeKubeconfig, kube.ModeTokenFile}},
			absolutePathProperty("kubeconfigPath", "Absolute path of the kubeconfig file (kubeconfig mode)."),
			{Name: "context", Type: driver.TypeString, MaxLength: 253, Check: checkPrintable,
				Description: "Exact name of the kubeconfig context (kubeconfig mode)."},
			{Name: "server", Type: driver.TypeString, MaxLength: 2048, Check: checkServer,
				Description: "https URL of the API server (tokenFile mode)."},
			absolutePathProperty("tokenPath", "Absolute path of the bearer token file, re-read on every request (tokenFile mode)."),
			absolutePathProperty("caPath", "Absolute path of the CA bundle of the API server (tokenFile mode)."),
		},
	}
}

func ptr[T any](v T) *T { return &v }

func absolutePathProperty(name, description string) driver.Property {
	return driver.Property{Name: name, Type: driver.TypeString, MaxLength: 4096, Description: description,
		Check: func(v any) (string, string) {
			s, _ := v.(string)
			if !filepath.IsAbs(s) || filepath.Clean(s) != s || strings.ContainsRune(s, 0) {
				return problem.DetailInvalidValue, "Must be an absolute, clean path."
			}
			return "", ""
		}}
}

func imageProperty(name, description string) driver.Property {
	return driver.Property{Name: name, Type: driver.TypeString, Required: true, MaxLength: 1024,
		Pattern: reImageRef.String(), Description: description}
}

func quantityItem() *driver.Property {
	return &driver.Property{Type: driver.TypeString, MaxLength: 64, TypeMessage: quantityTypeMessage, Check: checkQuantity}
}

func quantitiesProperty(name, description string) driver.Property {
	q := func(n string) driver.Property {
		p := *quantityItem()
		p.Name, p.Required = n, true
		return p
	}
	return driver.Property{Name: name, Type: driver.TypeObject, Required: true, Description: description,
		Properties: []driver.Property{q("cpu"), q("memory")}}
}

func containerResourcesProperty(name, description string) driver.Property {
	return driver.Property{Name: name, Type: driver.TypeObject, Required: true, Description: description,
		Properties: []driver.Property{
			quantitiesProperty("requests", "cpu and memory requests (quantity strings)."),
			quantitiesProperty("limits", "cpu and memory limits (quantity strings), each at least the request."),
		}}
}

// peerProperty is a NetworkPolicy peer: pods labelled podLabels in the namespace called namespace.
func peerProperty(name string, required bool, description string) driver.Property {
	labels := labelMapProperty("podLabels", "Labels the peer pods carry (at least one).")
	labels.Required, labels.MinItems = true, 1
	return driver.Property{Name: name, Type: driver.TypeObject, Required: required, Description: description,
		Properties: []driver.Property{
			{Name: "namespace", Type: driver.TypeString, Required: true, MaxLength: 63, Pattern: reDNSLabel.String(),
				Description: "Name of the peer's Kubernetes namespace (DNS label)."},
			labels,
		}}
}

func labelMapProperty(name, description string) driver.Property {
	return driver.Property{Name: name, Type: driver.TypeStringMap, MaxItems: 32, Description: description,
		KeyCheck: checkLabelKey,
		Items:    &driver.Property{Type: driver.TypeString, MaxLength: 63, Pattern: reLabelValue.String()}}
}

// validLabelKey is Kubernetes' qualified name: [prefix/]name, prefix a DNS subdomain of at most
// 253 characters, name at most 63 characters.
func validLabelKey(k string) bool {
	prefix, name, found := strings.Cut(k, "/")
	if !found {
		name, prefix = prefix, ""
	} else if prefix == "" || len(prefix) > 253 || !reDNSSubdomain.MatchString(prefix) {
		return false
	}
	return reLabelName.MatchString(name)
}

func checkLabelKey(k string) (string, string) {
	if !validLabelKey(k) {
		return problem.DetailInvalidFormat, "Must be a Kubernetes label key."
	}
	return "", ""
}

func checkResourceName(k string) (string, string) {
	if !reResourceName.MatchString(k) {
		return problem.DetailInvalidFormat, "Must be a Kubernetes resource name."
	}
	return "", ""
}

func checkQuantity(v any) (string, string) {
	if _, ok := parseQuantity(v.(string)); !ok {
		return problem.DetailInvalidFormat, "Must be a Kubernetes quantity such as 100m, 2 or 512Mi."
	}
	return "", ""
}

func checkPrintable(v any) (string, string) {
	s, _ := v.(string)
	if s == "" || strings.TrimSpace(s) != s || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return problem.DetailInvalidFormat, "Must be non-empty printable text without surrounding spaces."
	}
	return "", ""
}

func checkServer(v any) (string, string) {
	u, err := url.Parse(v.(string))
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return problem.DetailInvalidFormat, "Must be an https URL without path, user info, query or fragment."
	}
	return "", ""
}

func checkGatewayPort(v any) (string, string) {
	if n, _ := driver.IntegerValue(v); n == reservedGatewayPort {
		return problem.DetailInvalidValue, "Port 18791 is reserved for the gateway's internal listener."
	}
	return "", ""
}

// everyV4Mapped is ::ffff:0:0/96: a prefix containing it admits every IPv4 source.
var everyV4Mapped = netip.MustParsePrefix("::ffff:0:0/96")

func checkTrustedCIDR(v any) (string, string) {
	p, err := netip.ParsePrefix(v.(string))
	if err != nil {
		return problem.DetailInvalidFormat, "Must be a CIDR such as 10.0.0.0/8."
	}
	if p.Masked() != p {
		return problem.DetailInvalidFormat, "Must be a CIDR without host bits."
	}
	if p.Bits() == 0 || (p.Addr().Is6() && p.Bits() <= everyV4Mapped.Bits() && p.Contains(everyV4Mapped.Addr())) {
		return problem.DetailInvalidValue, "Must not cover every source address."
	}
	return "", ""
}

// parseQuantity reads a Kubernetes quantity as an exact rational.
func parseQuantity(s string) (*big.Rat, bool) {
	if !reQuantity.MatchString(s) {
		return nil, false
	}
	num, mult := s, new(big.Rat).SetInt64(1)
	suffixes := []struct {
		suffix string
		value  *big.Rat
	}{
		{"Ki", pow(2, 10)}, {"Mi", pow(2, 20)}, {"Gi", pow(2, 30)}, {"Ti", pow(2, 40)}, {"Pi", pow(2, 50)}, {"Ei", pow(2, 60)},
		{"n", new(big.Rat).SetFrac64(1, 1e9)}, {"u", new(big.Rat).SetFrac64(1, 1e6)}, {"m", new(big.Rat).SetFrac64(1, 1e3)},
		{"k", pow(10, 3)}, {"M", pow(10, 6)}, {"G", pow(10, 9)}, {"T", pow(10, 12)}, {"P", pow(10, 15)}, {"E", pow(10, 18)},
	}
	matched := false
	for _, sf := range suffixes {
		if strings.HasSuffix(s, sf.suffix) {
			num, mult, matched = strings.TrimSuffix(s, sf.suffix), sf.value, true
			break
		}
	}
	if !matched {
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			exp := new(big.Int)
			if _, ok := exp.SetString(strings.TrimPrefix(s[i+1:], "+"), 10); !ok || exp.CmpAbs(big.NewInt(30)) > 0 {
				return nil, false
			}
			num = s[:i]
			e := int(exp.Int64())
			if e >= 0 {
				mult = pow(10, e)
			} else {
				mult = new(big.Rat).Inv(pow(10, -e))
			}
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil, false
	}
	return r.Mul(r, mult), true
}

func pow(base int64, exp int) *big.Rat {
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(base), big.NewInt(int64(exp)), nil))
}

// checkCompute is the semantic validation across keys (runs after the property checks passed).
func checkCompute(cfg map[string]any) []problem.Detail {
	var out []problem.Detail
	images := cfg["images"].(map[string]any)
	if images["requireImmutableDigest"] == true {
		for _, k := range []string{"gateway", "agent"} {
			if !reDigestRef.MatchString(images[k].(string)) {
				out = append(out, problem.Detail{Path: "/images/" + k, Code: problem.DetailInvalidValue,
					Message: "Must end with @sha256: and 64 lowercase hex digits because requireImmutableDigest is true."})
			}
		}
	}
	res := cfg["resources"].(map[string]any)
	for _, c := range []struct {
		path string
		v    any
	}{
		{"/resources/gateway", res["gateway"]},
		{"/resources/agent", res["agent"]},
		{"/resources/namespace/containerDefaults", res["namespace"].(map[string]any)["containerDefaults"]},
	} {
		m := c.v.(map[string]any)
		req, lim := m["requests"].(map[string]any), m["limits"].(map[string]any)
		for _, k := range []string{"cpu", "memory"} {
			r, _ := parseQuantity(req[k].(string))
			l, _ := parseQuantity(lim[k].(string))
			if r.Cmp(l) > 0 {
				out = append(out, problem.Detail{Path: c.path + "/requests/" + k, Code: problem.DetailInvalidValue,
					Message: "The request must not exceed the limit."})
			}
		}
	}
	return out
}

// ParseConfig validates configuration (schema, semantic rules and the production rules: immutable
// image digests and projected ServiceAccount tokens) and returns the typed Config. It reads no file
// and makes no request: NewCompute resolves the authentication.
func ParseConfig(configuration map[string]any, env driver.Environment) (Config, error) {
	if err := Schema().Validate(configuration); err != nil {
		return Config{}, err
	}
	var details []problem.Detail
	images := configuration["images"].(map[string]any)
	if env.Production && images["requireImmutableDigest"] != true {
		details = append(details, problem.Detail{Path: "/images/requireImmutableDigest", Code: problem.DetailInvalidValue,
			Message: "Production requires immutable image digests."})
	}
	spc := configuration["servicePrincipalCredentials"].(map[string]any)
	if env.Production && spc["mode"] != TokenModeProjected {
		details = append(details, problem.Detail{Path: "/servicePrincipalCredentials/mode", Code: problem.DetailInvalidValue,
			Message: "Production requires projectedServiceAccountToken."})
	}
	if len(details) > 0 {
		return Config{}, driver.NewConfigurationError(details...)
	}

	cfg := Config{
		Auth:                   parseAuth(configuration),
		GatewayImage:           images["gateway"].(string),
		AgentImage:             images["agent"].(string),
		RequireImmutableDigest: images["requireImmutableDigest"].(bool),
		RequestTimeout:         DefaultRequestTimeout,
		PodTerminationTimeout:  DefaultPodTerminationTimeout,
	}
	res := configuration["resources"].(map[string]any)
	ns := res["namespace"].(map[string]any)
	cfg.GatewayResources = containerResources(res["gateway"])
	cfg.AgentResources = containerResources(res["agent"])
	cfg.ContainerDefaults = containerResources(ns["containerDefaults"])
	cfg.NamespaceQuota = stringMap(ns["quota"])

	network := configuration["network"].(map[string]any)
	cfg.DNS = parsePeer(network["dns"])
	port, _ := driver.IntegerValue(network["gatewayPort"])
	cfg.GatewayPort = int(port)
	for _, c := range network["gatewayTrustedProxyCidrs"].([]any) {
		cfg.GatewayTrustedProxyCIDRs = append(cfg.GatewayTrustedProxyCIDRs, c.(string))
	}
	for _, p := range network["gatewayClients"].([]any) {
		cfg.GatewayClients = append(cfg.GatewayClients, parsePeer(p))
	}

	cfg.ServicePrincipalTokenMode = spc["mode"].(string)
	if cfg.ServicePrincipalTokenMode == TokenModeProjected {
		cfg.ServicePrincipalAudience = spc["audience"].(string)
		cfg.ServicePrincipalExpiry = DefaultTokenExpirationSec
		if n, ok := driver.IntegerValue(spc["expirationSeconds"]); ok {
			cfg.ServicePrincipalExpiry = n
		}
	}
	if rt, ok := configuration["runtime"].(map[string]any); ok {
		cfg.GatewayStorageClassName, _ = rt["gatewayStorageClassName"].(string)
		cfg.NodeSelector = stringMap(rt["nodeSelector"])
		cfg.GatewayNodeSelector = stringMap(rt["gatewayNodeSelector"])
	}
	if n, ok := driver.IntegerValue(configuration["requestTimeoutMs"]); ok {
		cfg.RequestTimeout = time.Duration(n) * time.Millisecond
	}
	if n, ok := driver.IntegerValue(configuration["podTerminationTimeoutMs"]); ok {
		cfg.PodTerminationTimeout = time.Duration(n) * time.Millisecond
	}
	return cfg, nil
}

// parseAuth reads a schema-validated authentication object.
func parseAuth(configuration map[string]any) kube.Auth {
	m := configuration["authentication"].(map[string]any)
	s := func(k string) string { v, _ := m[k].(string); return v }
	return kube.Auth{Mode: s("mode"), KubeconfigPath: s("kubeconfigPath"), Context: s("context"),
		Server: s("server"), TokenPath: s("tokenPath"), CAPath: s("caPath")}
}

func containerResources(v any) ContainerResources {
	m := v.(map[string]any)
	q := func(k string) Quantities {
		x := m[k].(map[string]any)
		return Quantities{CPU: x["cpu"].(string), Memory: x["memory"].(string)}
	}
	return ContainerResources{Requests: q("requests"), Limits: q("limits")}
}

func parsePeer(v any) Peer {
	m := v.(map[string]any)
	return Peer{Namespace: m["namespace"].(string), PodLabels: stringMap(m["podLabels"])}
}

// stringMap copies a schema-validated string map (nil when absent).
func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		out[k] = x.(string)
	}
	return out
}

// Factory is the driver.ComputeFactory of the Kubernetes Compute Driver.
func Factory(id string, configuration map[string]any, env driver.Environment) (driver.Compute, error) {
	cfg, err := ParseConfig(configuration, env)
	if err != nil {
		return nil, err
	}
	c, err := NewCompute(id, cfg, env)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ComputeImplementation describes the Kubernetes Compute Driver for a driver.ComputeRegistry.
func ComputeImplementation() driver.ComputeImplementation {
	return driver.ComputeImplementation{Name: Name, Schema: Schema(), Production: true, New: Factory}
}
