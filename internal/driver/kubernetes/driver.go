package kubernetes

import (
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/problem"
)

// Name is the implementation name of the Kubernetes drivers (compute, configuration, secret).
const Name = "kubernetes"

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "openclaw-enterprise-compute"

// Peer is a NetworkPolicy peer: pods with PodLabels in the namespace named Namespace.
type Peer struct {
	Namespace string
	PodLabels map[string]string
}

// Quantities are a container's cpu and memory.
type Quantities struct {
	CPU, Memory string
}

// ContainerResources are requests and limits.
type ContainerResources struct {
	Requests, Limits Quantities
}

// Config is the typed configuration of the Kubernetes Compute Driver (the
// supported subset is documented in docs/kubernetes.md).
type Config struct {
	Auth kube.Auth

	GatewayImage, AgentImage string
	RequireImmutableDigest   bool

	GatewayResources, AgentResources ContainerResources
	// NamespaceQuota is ResourceQuota openclaw-quota's spec.hard.
	NamespaceQuota map[string]string
	// ContainerDefaults is LimitRange openclaw-limits' default and defaultRequest.
	ContainerDefaults ContainerResources

	DNS                      Peer
	GatewayPort              int
	GatewayTrustedProxyCIDRs []string
	GatewayClients           []Peer

	// ServicePrincipalTokenMode is "projectedServiceAccountToken" or "disabled".
	ServicePrincipalTokenMode string
	ServicePrincipalAudience  string
	ServicePrincipalExpiry    int64 // seconds

	// GatewayStorageClassName, when set, gives the gateway a private-state PVC
	// (runtime.gatewayStorageClassName).
	GatewayStorageClassName string
	NodeSelector            map[string]string
	GatewayNodeSelector     map[string]string

	// RequestTimeout bounds each API request; 0 means kube.DefaultRequestTimeout.
	RequestTimeout time.Duration
	// PodTerminationTimeout bounds how long stop waits for a workload's Pods before yielding.
	PodTerminationTimeout time.Duration
}

// Compute is the Kubernetes Compute Driver.
type Compute struct {
	id     string
	cfg    Config
	client *kube.Client
	// applied lets a prepare pass skip applies that would change nothing (applied.go).
	applied *appliedLedger
}

// NewCompute builds the driver from a parsed configuration. It makes no request: Preflight does.
func NewCompute(id string, cfg Config, env driver.Environment) (*Compute, error) {
	c, err := kube.New(kube.Options{Auth: cfg.Auth, Env: env.Getenv, FieldManager: FieldManager, RequestTimeout: cfg.RequestTimeout})
	if err != nil {
		return nil, authConfigurationError(err)
	}
	return &Compute{id: id, cfg: cfg, client: c, applied: newAppliedLedger()}, nil
}

// ID implements driver.Compute.
func (d *Compute) ID() string { return d.id }

// Implementation implements driver.Compute.
func (d *Compute) Implementation() string { return Name }

// authConfigurationError reports an unusable authentication setting as a configuration error.
func authConfigurationError(err error) error {
	if ce, ok := err.(*kube.ConfigError); ok {
		return driver.NewConfigurationError([]problem.Detail{{Path: "/" + ce.Path, Code: problem.DetailInvalidValue, Message: ce.Message}}...)
	}
	return err
}
