package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Harness ids of the supported topologies (openclaw+embedded, codex+dedicated).
const (
	harnessOpenClaw = "openclaw"
	harnessCodex    = "codex"
)

// Prepare stages of the failure diagnostics; the Harness stages are ours, the
// reference has no name for a Compute-owned Harness.
const (
	stageHarnessAuth          = "harness_auth"
	stageGatewayConfiguration = "gateway_configuration"
	stageGatewayConfigMap     = "gateway_config_map"
	stageWorkspaceSetup       = "workspace_setup_secret"
	stageServiceAccount       = "gateway_service_account"
	stageNetworkPolicy        = "gateway_network_policy"
	stageWorkspaceClaim       = "harness_workspace_claim"
	stagePrivateStateClaim    = "gateway_private_state_claim"
	stageSecretEnvironment    = "gateway_secret_environment"
	stageGatewayDeployment    = "gateway_deployment"
	stageGatewayService       = "gateway_service"
	stageHarnessDeployment    = "harness_deployment"
	stageHarnessService       = "harness_service"
	stagePrepareRevision      = "prepare_revision"
)

// CodeRevisionNotReady is the ActivationPendingError code of activating a revision whose workloads
// are not ready (yet).
const CodeRevisionNotReady = "REVISION_NOT_READY"

// CodeStopTimeout is the RetryableError code of a stop (without yield permission) whose Pods
// outlived PodTerminationTimeout.
const CodeStopTimeout = "KUBERNETES_STOP_TIMEOUT"

// plan is everything a revision operation derives from the revision alone: its topology, the
// Kubernetes namespace and the object names and ownerships.
type plan struct {
	rev       driver.Revision
	dedicated bool
	ns        string // Kubernetes namespace name

	agentOwner owner // per-Agent objects (gateway, Services, ServiceAccounts, policies, PVCs)
	revOwner   owner // per-revision objects (snapshot ConfigMap, Harness Deployment)

	gateway, agent, harness, snapshot string
	workspaceSetup                    string // the initial workspace files Secret

	// live holds the objects this pass listed or applied, by resource and name, so that its
	// readiness checks need not read them again.
	live map[string]json.RawMessage
}

// observed keeps raw as the current state of the object of res named name.
func (p *plan) observed(res kube.Resource, name string, raw json.RawMessage) {
	if p.live == nil {
		p.live = map[string]json.RawMessage{}
	}
	p.live[res.Plural+"/"+name] = raw
}

func newPlan(rev driver.Revision, namespace string) *plan {
	ao := owner{namespaceID: rev.NamespaceID, agentID: rev.AgentID, servicePrincipalID: rev.ServicePrincipalID}
	ro := ao
	ro.revisionID = rev.ID
	return &plan{
		rev: rev, dedicated: rev.ExecutionMode == driver.ExecutionDedicated, ns: namespace,
		agentOwner: ao, revOwner: ro,
		gateway: gatewayName(rev.AgentID), agent: agentName(rev.AgentID),
		harness:        harnessDeploymentName(rev.AgentID, rev.ID),
		snapshot:       snapshotConfigMapName(rev.AgentID, rev.ID),
		workspaceSetup: workspaceSetupSecretName(rev.AgentID, rev.ID),
	}
}

// inactiveSelector is the Agent Service selector value that matches no Pod.
func (p *plan) inactiveSelector() string { return p.agent + "-inactive" }

// agentPolicies are the Agent NetworkPolicy names this revision's topology writes.
func (p *plan) agentPolicies() []string {
	if p.dedicated {
		return []string{
			agentPolicyName("allow-gateway-agent", p.rev.AgentID),
			agentPolicyName("allow-agent-runtime", p.rev.AgentID),
			agentPolicyName("allow-agent-auth", p.rev.AgentID),
		}
	}
	return []string{agentPolicyName("allow-agent-runtime", p.rev.AgentID)}
}

// pinned reports whether rev was admitted for this driver.
func (d *Compute) pinned(rev driver.Revision) bool {
	return rev.Compute.ID == d.id && rev.Compute.Implementation == Name
}

func mismatchError() error {
	return &driver.PermanentError{Code: driver.CodeComputeDriverMismatch, Reason: "The revision is pinned to another Compute Driver."}
}

// checkTopology accepts embedded OpenClaw and dedicated Codex only.
func checkTopology(rev driver.Revision) error {
	ok := rev.ExecutionMode == rev.Harness.Mode &&
		((rev.Harness.ID == harnessOpenClaw && rev.Harness.Mode == driver.ExecutionEmbedded) ||
			(rev.Harness.ID == harnessCodex && rev.Harness.Mode == driver.ExecutionDedicated))
	if !ok {
		return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "The Kubernetes Compute Driver supports embedded OpenClaw and dedicated Codex only."}
	}
	if rev.ServicePrincipalID == "" {
		return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "The revision has no service principal."}
	}
	return nil
}

// checkHarnessAuth pairs the admitted method with the topology, as upstream: embedded OpenClaw
// takes api_key, dedicated Codex api_key or codex_pat, each with a Secret the kubelet projects into
// the model-executing container. runtime (host-managed credentials) is refused for every Harness:
// a Pod has no operator-provided host environment, so it could only start without a credential.
func checkHarnessAuth(rev driver.Revision, rc driver.RevisionContext) error {
	method := rev.HarnessAuthMethod
	if rc.HarnessAuth != nil && rc.HarnessAuth.Method != method {
		return unsupportedAuth()
	}
	switch {
	case rev.Harness.ID == harnessOpenClaw && method == driver.HarnessAuthAPIKey,
		rev.Harness.ID == harnessCodex && (method == driver.HarnessAuthAPIKey || method == driver.HarnessAuthCodexPAT):
		if rc.HarnessAuth == nil || rc.HarnessAuth.Ref == nil {
			return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "The Harness authentication has no Secret reference."}
		}
		return nil
	}
	return unsupportedAuth()
}

func unsupportedAuth() error {
	return &driver.UnsupportedError{Code: driver.CodeHarnessAuthenticationUnsupported, Reason: "The Kubernetes Compute Driver does not support this Harness authentication for this Harness: embedded OpenClaw takes api_key, dedicated Codex api_key or codex_pat, each with a Secret."}
}

// SupportsHarnessAuth implements driver.HarnessAuthSupport. Admission sees the method only, not
// the Harness, so every method one supported topology accepts is supported here: api_key (both)
// and codex_pat (dedicated Codex). runtime is refused at admission; PrepareRevision refuses it
// again for a revision admitted before (HARNESS_AUTH_UNSUPPORTED), and refuses codex_pat on
// embedded OpenClaw.
func (d *Compute) SupportsHarnessAuth(method string) bool {
	switch method {
	case driver.HarnessAuthAPIKey, driver.HarnessAuthCodexPAT:
		return true
	}
	return false
}

// RequiresStoppedPredecessors implements driver.ExclusiveReplacement: a dedicated Harness owns the
// Agent's workspace PVC (ReadWriteOnce), so predecessors must stop first.
func (d *Compute) RequiresStoppedPredecessors(rev driver.Revision) bool {
	return rev.ExecutionMode == driver.ExecutionDedicated
}

// agentKinds are the kinds of per-Agent objects DeleteAgentRuntimeCredentials removes, workloads
// first so nothing restarts on a deleted ServiceAccount or claim.
var agentKinds = []struct {
	res  kube.Resource
	kind string
}{
	{kube.Deployments, "Deployment"},
	{kube.Services, "Service"},
	{kube.NetworkPolicies, "NetworkPolicy"},
	{kube.ConfigMaps, "ConfigMap"},
	{kube.ServiceAccounts, "ServiceAccount"},
	{kube.PVCs, "PersistentVolumeClaim"},
}

// DeleteAgentRuntimeCredentials implements driver.RuntimeCredentialDeleter: it deletes every
// remaining object labelled for the Agent (Deployments, Services, NetworkPolicies, snapshot
// ConfigMaps, ServiceAccounts and PVCs), each with its UID precondition. Objects of other Agents,
// Namespace-level objects and Secrets are never selected. Idempotent.
func (d *Compute) DeleteAgentRuntimeCredentials(ctx context.Context, agent driver.AgentRef) error {
	if agent.NamespaceID == "" || agent.AgentID == "" {
		return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "The Agent reference is incomplete."}
	}
	tn, err := findTenantNamespace(ctx, d.client, agent.NamespaceID)
	if err != nil || tn == nil {
		return err
	}
	o := owner{namespaceID: agent.NamespaceID, agentID: agent.AgentID}
	sel := kube.Selector(labelManagedBy, managedByValue, labelNamespace, agent.NamespaceID, labelAgent, agent.AgentID)
	for _, k := range agentKinds {
		if err := deleteOwned(ctx, d.client, k.res, tn.Name, sel, o, nil); err != nil {
			return err
		}
	}
	return nil
}

// stageError names the prepare stage an error came from; it unwraps to the driver error.
type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

func atStage(stage string, err error) error {
	if err == nil {
		return nil
	}
	var se *stageError
	if errors.As(err, &se) {
		return err
	}
	return &stageError{stage: stage, err: err}
}

// DescribePrepareFailure maps a PrepareRevision error to its diagnostic code and
// stage for the worker's compute-prepare-failed log line.
func (d *Compute) DescribePrepareFailure(err error) (code, stage string) {
	stage = stagePrepareRevision
	var se *stageError
	if errors.As(err, &se) {
		stage = se.stage
	}
	c := driver.Code(err)
	switch {
	case c == CodeOwnershipConflict, c == CodeAPITimeout, c == CodeAPIUnavailable, c == CodeAPIRejected,
		c == CodeConfigurationInvalid, c == CodeDependencyUnavailable:
		return c, stage
	case c == driver.CodeHarnessAuthenticationUnsupported, c == driver.CodeComputeDriverMismatch:
		return CodeConfigurationInvalid, stage
	case strings.HasPrefix(c, "KUBERNETES_"):
		return c, stage
	}
	return CodePreparationFailed, stage
}
