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
	"github.com/openclaw/occ/internal/schema"
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
	return driver.NewObjectSchema(&schema.Schema{
		Type:        schema.TypeObject,
		Description: "Production Compute Driver: one Kubernetes namespace per Namespace, a gateway and a Harness Deployment per Agent revision.",
		Properties: []schema.Property{
			schema.Required("authentication", authenticationSchema()),
			schema.Required("images", object("Container images of the gateway and the Harness.",
				schema.Required("gateway", imageSchema("Image of the Agent gateway.")),
				schema.Required("agent", imageSchema("Image of the Agent Harness.")),
				schema.Required("requireImmutableDigest", schema.Describe(schema.Boolean(),
					"When true both images must end with @sha256:<64 hex>. Production requires true.")),
			)),
			schema.Required("resources", object("Container resources and the per-namespace quota.",
				schema.Required("gateway", containerResourcesSchema("Requests and limits of the gateway container.")),
				schema.Required("agent", containerResourcesSchema("Requests and limits of the Harness container.")),
				schema.Required("namespace", object("ResourceQuota openclaw-quota and LimitRange openclaw-limits of every tenant namespace.",
					schema.Required("quota", &schema.Schema{
						Type: schema.TypeObject, Additional: quantitySchema(), KeyRule: checkResourceName,
						MinMembers: 1, MaxMembers: 64, CountIsValue: true,
						Description: "spec.hard of ResourceQuota openclaw-quota: resource name to quantity string.",
					}),
					schema.Required("containerDefaults", containerResourcesSchema("LimitRange default (limits) and defaultRequest (requests) of containers.")),
				)),
			)),
			schema.Required("network", object("NetworkPolicy peers and the gateway's listener.",
				schema.Required("dns", peerSchema("The cluster DNS pods every workload may reach on port 53 and 5353.")),
				schema.Required("gatewayPort", withRule(schema.Describe(schema.SafeInteger(1, 65535),
					"Port of the gateway Service; 18791 is reserved."), checkGatewayPort)),
				schema.Required("gatewayTrustedProxyCidrs", &schema.Schema{
					Type: schema.TypeArray, MinItems: 1, MaxItems: 64, CountIsValue: true,
					Description: "Source CIDRs of the proxies the gateway trusts; none may cover every address.",
					Items:       &schema.Schema{Type: schema.TypeString, MaxBytes: 64, Rule: checkTrustedCIDR},
				}),
				schema.Required("gatewayClients", &schema.Schema{
					Type: schema.TypeArray, MinItems: 1, MaxItems: 32, CountIsValue: true,
					Description: "Peers allowed to reach the gateway port.",
					Items:       peerSchema("A namespace and the labels of its client pods."),
				}),
			)),
			schema.Required("servicePrincipalCredentials", &schema.Schema{
				Type:          schema.TypeObject,
				Description:   "Projected ServiceAccount tokens of the Harness. Production requires projectedServiceAccountToken.",
				Discriminator: "mode",
				Variants: []schema.Variant{
					{Value: TokenModeProjected, Required: []string{"audience"}, Optional: []string{"expirationSeconds"}},
					{Value: TokenModeDisabled},
				},
				Properties: []schema.Property{
					schema.Required("mode", schema.Enum(TokenModeProjected, TokenModeDisabled)),
					schema.Optional("audience", &schema.Schema{Type: schema.TypeString, MaxBytes: 253, Rule: checkPrintable,
						Description: "Audience of the projected token (required with projectedServiceAccountToken)."}),
					schema.Optional("expirationSeconds", schema.Defaulted(schema.SafeInteger(600, 86400),
						int64(DefaultTokenExpirationSec), "Lifetime of the projected token.")),
				},
			}),
			schema.Optional("runtime", object("Optional placement and storage of the workloads.",
				schema.Optional("gatewayStorageClassName", &schema.Schema{Type: schema.TypeString, MaxBytes: 253, Pattern: reDNSSubdomain.String(),
					Description: "StorageClass of the gateway's private-state PVC; without it the gateway keeps no PVC."}),
				schema.Optional("nodeSelector", labelMapSchema(0, "Node labels of the Harness and embedded gateway Pods.")),
				schema.Optional("gatewayNodeSelector", labelMapSchema(0, "Node labels of dedicated gateway Pods.")),
			)),
			schema.Optional("requestTimeoutMs", schema.Defaulted(schema.SafeInteger(100, 120_000),
				int64(DefaultRequestTimeout/time.Millisecond), "Timeout of each Kubernetes API request in milliseconds.")),
			schema.Optional("podTerminationTimeoutMs", schema.Defaulted(schema.SafeInteger(1000, 600_000),
				int64(DefaultPodTerminationTimeout/time.Millisecond), "How long a stop waits for a workload's Pods to terminate, in milliseconds.")),
		},
		ObjectRule: checkCompute,
	})
}

// StorageSchema is the closed configuration schema of the Kubernetes Configuration and Secret
// Drivers: only authentication, with the shape of the Compute Driver's.
func StorageSchema(description string) driver.ObjectSchema {
	return driver.NewObjectSchema(object(description, schema.Required("authentication", authenticationSchema())))
}

// authenticationSchema is the closed oneOf of the three authentication modes.
func authenticationSchema() *schema.Schema {
	return &schema.Schema{
		Type:          schema.TypeObject,
		Description:   "How the driver authenticates to the API server; nothing ambient (default kubeconfig, current context) is used.",
		Discriminator: "mode",
		Variants: []schema.Variant{
			{Value: kube.ModeInCluster},
			{Value: kube.ModeKubeconfig, Required: []string{"kubeconfigPath", "context"}},
			{Value: kube.ModeTokenFile, Required: []string{"server", "tokenPath", "caPath"}},
		},
		Properties: []schema.Property{
			schema.Required("mode", schema.Enum(kube.ModeInCluster, kube.ModeKubeconfig, kube.ModeTokenFile)),
			schema.Optional("kubeconfigPath", absolutePathSchema("Absolute path of the kubeconfig file (kubeconfig mode).")),
			schema.Optional("context", &schema.Schema{Type: schema.TypeString, MaxBytes: 253, Rule: checkPrintable,
				Description: "Exact name of the kubeconfig context (kubeconfig mode)."}),
			schema.Optional("server", &schema.Schema{Type: schema.TypeString, MaxBytes: 2048, Rule: checkServer,
				Description: "https URL of the API server (tokenFile mode)."}),
			schema.Optional("tokenPath", absolutePathSchema("Absolute path of the bearer token file, re-read on every request (tokenFile mode).")),
			schema.Optional("caPath", absolutePathSchema("Absolute path of the CA bundle of the API server (tokenFile mode).")),
		},
	}
}

// object is a closed object of props with a description.
func object(description string, props ...schema.Property) *schema.Schema {
	return &schema.Schema{Type: schema.TypeObject, Description: description, Properties: props}
}

func withRule(s *schema.Schema, rule func(any) (string, string)) *schema.Schema {
	s.Rule = rule
	return s
}

func absolutePathSchema(description string) *schema.Schema {
	return &schema.Schema{Type: schema.TypeString, MaxBytes: 4096, Description: description,
		Rule: func(v any) (string, string) {
			s, _ := v.(string)
			if !filepath.IsAbs(s) || filepath.Clean(s) != s || strings.ContainsRune(s, 0) {
				return problem.DetailInvalidValue, "Must be an absolute, clean path."
			}
			return "", ""
		}}
}

func imageSchema(description string) *schema.Schema {
	return &schema.Schema{Type: schema.TypeString, MaxBytes: 1024, Pattern: reImageRef.String(), Description: description}
}

func quantitySchema() *schema.Schema {
	return &schema.Schema{Type: schema.TypeString, MaxBytes: 64, TypeMessage: quantityTypeMessage, Rule: checkQuantity}
}

func quantitiesSchema(description string) *schema.Schema {
	return object(description, schema.Required("cpu", quantitySchema()), schema.Required("memory", quantitySchema()))
}

func containerResourcesSchema(description string) *schema.Schema {
	return object(description,
		schema.Required("requests", quantitiesSchema("cpu and memory requests (quantity strings).")),
		schema.Required("limits", quantitiesSchema("cpu and memory limits (quantity strings), each at least the request.")),
	)
}

// peerSchema is a NetworkPolicy peer: pods labelled podLabels in the namespace called namespace.
func peerSchema(description string) *schema.Schema {
	return object(description,
		schema.Required("namespace", &schema.Schema{Type: schema.TypeString, MaxBytes: 63, Pattern: reDNSLabel.String(),
			Description: "Name of the peer's Kubernetes namespace (DNS label)."}),
		schema.Required("podLabels", labelMapSchema(1, "Labels the peer pods carry (at least one).")),
	)
}

// labelMapSchema is a map of Kubernetes labels, at least minLabels and at most 32.
func labelMapSchema(minLabels int, description string) *schema.Schema {
	return &schema.Schema{Type: schema.TypeObject, MinMembers: minLabels, MaxMembers: 32, CountIsValue: true,
		Description: description, KeyRule: checkLabelKey,
		Additional: &schema.Schema{Type: schema.TypeString, MaxBytes: 63, Pattern: reLabelValue.String()}}
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
	if n, _ := schema.IntegerValue(v); n == reservedGatewayPort {
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
	port, _ := schema.IntegerValue(network["gatewayPort"])
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
		if n, ok := schema.IntegerValue(spc["expirationSeconds"]); ok {
			cfg.ServicePrincipalExpiry = n
		}
	}
	if rt, ok := configuration["runtime"].(map[string]any); ok {
		cfg.GatewayStorageClassName, _ = rt["gatewayStorageClassName"].(string)
		cfg.NodeSelector = stringMap(rt["nodeSelector"])
		cfg.GatewayNodeSelector = stringMap(rt["gatewayNodeSelector"])
	}
	if n, ok := schema.IntegerValue(configuration["requestTimeoutMs"]); ok {
		cfg.RequestTimeout = time.Duration(n) * time.Millisecond
	}
	if n, ok := schema.IntegerValue(configuration["podTerminationTimeoutMs"]); ok {
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
