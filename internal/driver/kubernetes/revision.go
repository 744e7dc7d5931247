package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// defaultPodTerminationTimeout bounds a stop's wait for Pods (120 s).
const defaultPodTerminationTimeout = 120 * time.Second

// podPollInterval is how often a stop re-lists the Pods it waits for (100 ms).
const podPollInterval = 100 * time.Millisecond

// errPending ends a prepare pass early as "not ready" (a namespace or object still converging); it
// never leaves the driver.
var errPending = errors.New("kubernetes: pending")

// PrepareRevision implements driver.Compute: it checks the preconditions, applies
// the revision's objects in stage order and reports readiness. Not ready is pending; errors are
// typed driver errors wrapped with their stage (DescribePrepareFailure).
func (d *Compute) PrepareRevision(ctx context.Context, rev driver.Revision, rc driver.RevisionContext) (driver.RevisionReadiness, error) {
	notReady := driver.RevisionReadiness{NamespaceID: rev.NamespaceID, AgentID: rev.AgentID, RevisionID: rev.ID}
	if !d.pinned(rev) {
		return notReady, nil
	}
	// An ended context ends the call as such, before the checks below could answer for it.
	if err := ctx.Err(); err != nil {
		return notReady, err
	}
	if err := checkTopology(rev); err != nil {
		return notReady, atStage(stagePrepareRevision, err)
	}
	if err := checkHarnessAuth(rev, rc); err != nil {
		return notReady, atStage(stageHarnessAuth, err)
	}
	tn, err := findTenantNamespace(ctx, d.client, rev.NamespaceID)
	if err != nil {
		return notReady, atStage(stagePrepareRevision, err)
	}
	if tn == nil || !tn.Active {
		return notReady, nil
	}
	p := newPlan(rev, tn.Name)
	if err := d.apply(ctx, p, rc); err != nil {
		if errors.Is(err, errPending) {
			return notReady, nil
		}
		return notReady, err
	}
	r, err := d.observe(ctx, p)
	return r, atStage(stagePrepareRevision, err)
}

// apply writes every object of the revision, in dependency order: each object exists before the
// objects that refer to it. Each kind of per-Agent object is listed once (applied.go).
func (d *Compute) apply(ctx context.Context, p *plan, rc driver.RevisionContext) error {
	// The namespace-level policies (default-deny first) come from EnsureNamespace; without them
	// an Agent Pod would start unfenced.
	if err := d.checkTenantPolicies(ctx, p); err != nil {
		return atStage(stageNetworkPolicy, err)
	}
	document, err := renderGatewayConfig(p.rev.Spec, d.cfg.GatewayTrustedProxyCIDRs)
	if err != nil {
		return atStage(stageGatewayConfiguration, err)
	}
	we, err := d.checkEnvironment(ctx, p, rc)
	if err != nil {
		return err
	}
	if err := d.ensureSnapshot(ctx, p, document); err != nil {
		return atStage(stageGatewayConfigMap, err)
	}
	if err := d.ensureWorkspaceSetup(ctx, p); err != nil {
		return atStage(stageWorkspaceSetup, err)
	}
	if err := d.ensureEach(ctx, p, kube.ServiceAccounts, "ServiceAccount", p.serviceAccounts()); err != nil {
		return atStage(stageServiceAccount, err)
	}
	if err := d.ensureEach(ctx, p, kube.NetworkPolicies, "NetworkPolicy", p.networkPolicies()); err != nil {
		return atStage(stageNetworkPolicy, err)
	}
	if p.dedicated {
		if err := d.ensureClaim(ctx, p, p.claim(workspaceClaimName(p.rev.AgentID), workspaceSize, "")); err != nil {
			return atStage(stageWorkspaceClaim, err)
		}
	}
	if sc := d.cfg.GatewayStorageClassName; sc != "" {
		if err := d.ensureClaim(ctx, p, p.claim(gatewayStateClaimName(p.rev.AgentID), gatewayStateSize, sc)); err != nil {
			return atStage(stagePrivateStateClaim, err)
		}
	}
	deployments, err := d.listAgentObjects(ctx, p, kube.Deployments)
	if err != nil {
		return atStage(stageGatewayDeployment, err)
	}
	if err := d.ensureGateway(ctx, p, deployments, we); err != nil {
		return atStage(stageGatewayDeployment, err)
	}
	services, err := d.listAgentObjects(ctx, p, kube.Services)
	if err != nil {
		return atStage(stageGatewayService, err)
	}
	if err := d.ensureObject(ctx, p, services, kube.Services, "Service", p.agentOwner, d.gatewayService(p), nil); err != nil {
		return atStage(stageGatewayService, err)
	}
	if !p.dedicated {
		return nil
	}
	if err := d.ensureAgentService(ctx, p, services); err != nil {
		return atStage(stageHarnessService, err)
	}
	if err := d.ensureObject(ctx, p, deployments, kube.Deployments, "Deployment", p.revOwner, d.harnessDeployment(p, we), nil); err != nil {
		return atStage(stageHarnessDeployment, err)
	}
	return nil
}

// checkTenantPolicies is errPending until every namespace-level policy exists and is ours (one
// list: the policies labelled as the Namespace's and as no Agent's).
func (d *Compute) checkTenantPolicies(ctx context.Context, p *plan) error {
	sel := kube.Selector(labelManagedBy, managedByValue, labelNamespace, p.rev.NamespaceID) + ",!" + labelAgent
	live, err := d.listLive(ctx, kube.NetworkPolicies, p.ns, sel)
	if err != nil {
		return err
	}
	for _, name := range tenantPolicyNames {
		np, found := live[name]
		if !found || !(owner{namespaceID: p.rev.NamespaceID}).owns(np.meta) {
			return errPending
		}
	}
	return nil
}

// ensureEach lists the Agent's objects of res once and ensures each of objs (owned by the Agent).
func (d *Compute) ensureEach(ctx context.Context, p *plan, res kube.Resource, kind string, objs []kube.Object) error {
	live, err := d.listAgentObjects(ctx, p, res)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := d.ensureObject(ctx, p, live, res, kind, p.agentOwner, obj, nil); err != nil {
			return err
		}
	}
	return nil
}

// read GETs one object into out; found is false on 404.
func (d *Compute) read(ctx context.Context, res kube.Resource, namespace, name string, out any) (bool, error) {
	err := d.client.Get(ctx, res.Path(namespace, name), out)
	if kube.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, classify(err)
	}
	return true, nil
}

func objectName(obj kube.Object) string {
	name, _ := obj["metadata"].(kube.Object)["name"].(string)
	return name
}

type snapshotView struct {
	Metadata  kube.Meta         `json:"metadata"`
	Immutable *bool             `json:"immutable"`
	Data      map[string]string `json:"data"`
}

// ensureSnapshot creates the immutable snapshot once; an existing one must be ours, immutable and
// hold exactly the same document.
func (d *Compute) ensureSnapshot(ctx context.Context, p *plan, document []byte) error {
	var v snapshotView
	found, err := d.read(ctx, kube.ConfigMaps, p.ns, p.snapshot, &v)
	if err != nil {
		return err
	}
	if found {
		if !p.revOwner.owns(v.Metadata) || v.Immutable == nil || !*v.Immutable || len(v.Data) != 1 || v.Data[configKey] != string(document) {
			return ownershipError("ConfigMap", p.snapshot)
		}
		return nil
	}
	return classify(d.client.Apply(ctx, kube.ConfigMaps.Path(p.ns, p.snapshot), p.snapshotConfigMap(document), nil))
}

type claimView struct {
	Metadata kube.Meta `json:"metadata"`
	Spec     struct {
		AccessModes      []string `json:"accessModes"`
		StorageClassName *string  `json:"storageClassName"`
		VolumeMode       *string  `json:"volumeMode"`
		Resources        struct {
			Requests map[string]string `json:"requests"`
		} `json:"resources"`
	} `json:"spec"`
}

// ensureClaim creates a PVC once and otherwise only checks it: claims are never re-applied (their
// spec is mostly immutable) and never waited for (a WaitForFirstConsumer class binds only once the
// Pod exists).
func (d *Compute) ensureClaim(ctx context.Context, p *plan, obj kube.Object) error {
	name := objectName(obj)
	var v claimView
	found, err := d.read(ctx, kube.PVCs, p.ns, name, &v)
	if err != nil {
		return err
	}
	if !found {
		return classify(d.client.Apply(ctx, kube.PVCs.Path(p.ns, name), obj, nil))
	}
	if !p.agentOwner.owns(v.Metadata) {
		return ownershipError("PersistentVolumeClaim", name)
	}
	if v.Metadata.Terminating() {
		return errPending
	}
	spec := obj["spec"].(kube.Object)
	size := spec["resources"].(kube.Object)["requests"].(kube.Object)["storage"].(string)
	class, _ := spec["storageClassName"].(string)
	if !slices.Equal(v.Spec.AccessModes, []string{"ReadWriteOnce"}) ||
		(v.Spec.VolumeMode != nil && *v.Spec.VolumeMode != "Filesystem") ||
		v.Spec.Resources.Requests["storage"] != size ||
		(class != "" && (v.Spec.StorageClassName == nil || *v.Spec.StorageClassName != class)) {
		return &driver.PermanentError{Code: CodeOwnershipConflict, Reason: "Refusing Kubernetes PersistentVolumeClaim " + name + " with a different specification."}
	}
	return nil
}

// ensureGateway applies the per-Agent gateway with this revision's template (Recreate replaces a
// predecessor's Pod). A gateway already written for a newer revision is left alone: this revision
// stays pending and the worker's supersession ends it.
func (d *Compute) ensureGateway(ctx context.Context, p *plan, deployments liveSet, we workloadEnv) error {
	newer := func(m kube.Meta) bool {
		n, err := strconv.ParseInt(m.Annotations[annotationAgentRevision], 10, 64)
		return err == nil && n > p.rev.Number
	}
	return d.ensureObject(ctx, p, deployments, kube.Deployments, "Deployment", p.agentOwner, d.gatewayDeployment(p, we), newer)
}

// ensureAgentService applies the dedicated Harness Service. The first deploy routes it to this
// revision at once; later it points at the inactive selector until ActivateRevision switches it
// (a repeated prepare of the routed revision keeps its route). services is the Agent's listed
// Services.
func (d *Compute) ensureAgentService(ctx context.Context, p *plan, services liveSet) error {
	selector := p.harness
	cur, found, err := d.lookup(ctx, services, kube.Services, p.ns, p.agent)
	if err != nil {
		return err
	}
	if found {
		var v serviceView
		if err := json.Unmarshal(cur.raw, &v); err != nil {
			return err
		}
		if v.Spec.Selector[labelName] != p.harness {
			selector = p.inactiveSelector()
		}
		services = liveSet{p.agent: cur} // read once: ensureObject judges the same object
	}
	return d.ensureObject(ctx, p, services, kube.Services, "Service", p.agentOwner, p.agentService(selector, ""), nil)
}

type secretMetaView struct {
	Metadata kube.Meta           `json:"metadata"`
	Data     map[string]presence `json:"data"`
}

// presence decodes a Secret data entry without keeping its value: only the key survives.
type presence struct{}

func (*presence) UnmarshalJSON([]byte) error { return nil }

// checkEnvironment turns the Secret references of rc into secretKeyRef variables after checking
// that each Secret exists in the tenant namespace as the very object (UID) that was resolved.
// Secret bindings go to the gateway; the model credential to the model-executing container.
func (d *Compute) checkEnvironment(ctx context.Context, p *plan, rc driver.RevisionContext) (workloadEnv, error) {
	var we workloadEnv
	seen := map[string]bool{}
	for _, n := range fixedEnvNames {
		seen[n] = true
	}
	bindings := slices.Clone(rc.SecretEnvironment)
	slices.SortFunc(bindings, func(a, b driver.SecretEnvironmentRef) int { return strings.Compare(a.Name, b.Name) })
	for _, b := range bindings {
		if b.Name == "" || seen[b.Name] {
			return we, atStage(stageSecretEnvironment, &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "A Secret binding uses a reserved or duplicate environment variable name."})
		}
		seen[b.Name] = true
		if err := d.checkSecretRef(ctx, p, b.Ref); err != nil {
			return we, atStage(stageSecretEnvironment, err)
		}
		we.gatewaySecrets = append(we.gatewaySecrets, secretEnv(b.Name, b.Ref))
	}
	ha := rc.HarnessAuth
	if ha == nil || ha.Ref == nil {
		return we, nil
	}
	name := modelCredentialName(p.rev, ha.Method)
	if name == "" {
		return we, nil // checkHarnessAuth refused every method without a Secret
	}
	if err := d.checkSecretRef(ctx, p, *ha.Ref); err != nil {
		return we, atStage(stageHarnessAuth, err)
	}
	we.model = []any{secretEnv(name, *ha.Ref)}
	return we, nil
}

// modelCredentialName is the variable the model credential is delivered as: CODEX_ACCESS_TOKEN for
// codex_pat; for api_key, ANTHROPIC_API_KEY when embedded OpenClaw's primary model is an
// anthropic/ model and OPENAI_API_KEY otherwise (Codex reads only the OpenAI name).
func modelCredentialName(rev driver.Revision, method string) string {
	switch method {
	case driver.HarnessAuthCodexPAT:
		return "CODEX_ACCESS_TOKEN"
	case driver.HarnessAuthAPIKey:
		if rev.Harness.ID == harnessOpenClaw && modelProvider(rev.Spec) == "anthropic" {
			return "ANTHROPIC_API_KEY"
		}
		return "OPENAI_API_KEY"
	}
	return ""
}

// modelProvider is the provider of the native primary model (agents.defaults.model, a
// "provider/model" string or an object with primary), "" when the document names none.
func modelProvider(spec json.RawMessage) string {
	var doc struct {
		Agents struct {
			Defaults struct {
				Model json.RawMessage `json:"model"`
			} `json:"defaults"`
		} `json:"agents"`
	}
	if json.Unmarshal(spec, &doc) != nil {
		return ""
	}
	var model string
	if json.Unmarshal(doc.Agents.Defaults.Model, &model) != nil {
		var obj struct {
			Primary string `json:"primary"`
		}
		if json.Unmarshal(doc.Agents.Defaults.Model, &obj) != nil {
			return ""
		}
		model = obj.Primary
	}
	provider, _, ok := strings.Cut(model, "/")
	if !ok {
		return ""
	}
	return provider
}

func (d *Compute) checkSecretRef(ctx context.Context, p *plan, ref driver.SecretRef) error {
	if ref.Name == "" || ref.Key == "" || ref.UID == "" || ref.NamespaceName != p.ns {
		return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "A Secret reference does not name a Secret of the tenant namespace."}
	}
	var v secretMetaView
	found, err := d.read(ctx, kube.Secrets, p.ns, ref.Name, &v)
	if err != nil {
		return err
	}
	if !found {
		return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "A referenced Secret does not exist."}
	}
	if v.Metadata.UID != ref.UID || v.Metadata.Terminating() {
		return ownershipError("Secret", ref.Name)
	}
	if _, ok := v.Data[ref.Key]; !ok {
		return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "A referenced Secret has no such key."}
	}
	return nil
}

// forRevision matches a per-Agent object last written for revisionID.
func forRevision(revisionID string) func(kube.Meta) bool {
	return func(m kube.Meta) bool { return m.Annotations[annotationAgentRevisionID] == revisionID }
}

// deleteIf deletes an owned object for which match holds (nil: always), with its UID and
// resourceVersion as preconditions, so an object rewritten meanwhile (for example a gateway just
// taken over by the next revision) is re-read and re-judged instead of deleted. Absent is done.
func (d *Compute) deleteIf(ctx context.Context, res kube.Resource, kind, namespace, name string, o owner, match func(kube.Meta) bool) error {
	for range 4 {
		var v objectView
		found, err := d.read(ctx, res, namespace, name, &v)
		if err != nil || !found {
			return err
		}
		if !o.owns(v.Metadata) {
			return ownershipError(kind, name)
		}
		if (match != nil && !match(v.Metadata)) || v.Metadata.Terminating() {
			return nil
		}
		err = d.client.Delete(ctx, res.Path(namespace, name), v.Metadata.UID, v.Metadata.ResourceVersion)
		if err == nil || kube.IsNotFound(err) {
			return nil
		}
		if !kube.IsConflict(err) {
			return classify(err)
		}
	}
	return &driver.RetryableError{Code: CodeAPIRejected, Reason: "A Kubernetes " + kind + " kept changing while it was being deleted."}
}

// StopRevision implements driver.Compute: it deletes the gateway Deployment when
// it still carries this revision and the revision's Harness Deployment, then waits for their Pods.
// PVCs, snapshots, ServiceAccounts, policies and Services stay: stop scales the Agent to zero and
// keeps storage. A missing namespace is already stopped. While Pods terminate, a stop that may
// yield returns *driver.StopYieldedError instead of blocking the worker.
func (d *Compute) StopRevision(ctx context.Context, rev driver.Revision, opts driver.StopOptions) error {
	if !d.pinned(rev) {
		return mismatchError()
	}
	tn, err := findTenantNamespace(ctx, d.client, rev.NamespaceID)
	if err != nil || tn == nil {
		return err
	}
	return d.stopWorkloads(ctx, newPlan(rev, tn.Name), opts)
}

func (d *Compute) stopWorkloads(ctx context.Context, p *plan, opts driver.StopOptions) error {
	if err := d.deleteIf(ctx, kube.Deployments, "Deployment", p.ns, p.gateway, p.agentOwner, forRevision(p.rev.ID)); err != nil {
		return err
	}
	if p.dedicated {
		if err := d.deleteIf(ctx, kube.Deployments, "Deployment", p.ns, p.harness, p.revOwner, nil); err != nil {
			return err
		}
	}
	return d.waitPodsGone(ctx, p, opts)
}

// waitPodsGone waits until no Pod of the revision is left (the garbage collector removes them
// after their Deployment). It yields when the caller allows it and says other work waits, or at
// the timeout when yields are allowed; otherwise the timeout is a retryable failure.
func (d *Compute) waitPodsGone(ctx context.Context, p *plan, opts driver.StopOptions) error {
	timeout := d.cfg.PodTerminationTimeout
	if timeout <= 0 {
		timeout = defaultPodTerminationTimeout
	}
	deadline := time.Now().Add(timeout)
	sel := kube.Selector(labelManagedBy, managedByValue, labelNamespace, p.rev.NamespaceID, labelAgent, p.rev.AgentID, labelRevision, p.rev.ID)
	yield := &driver.StopYieldedError{Reason: "Pods of the revision are still terminating."}
	for {
		var pods struct {
			Items []objectView `json:"items"`
		}
		if err := d.client.List(ctx, kube.Pods.Path(p.ns, ""), sel, &pods); err != nil {
			return classify(err)
		}
		if len(pods.Items) == 0 {
			return nil
		}
		if opts.ShouldYield(ctx) {
			return yield
		}
		if time.Now().After(deadline) {
			if opts.Yield {
				return yield
			}
			return &driver.RetryableError{Code: CodeStopTimeout, Reason: "Pods of the revision did not terminate in time."}
		}
		t := time.NewTimer(podPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// RetireRevision implements driver.Compute: the stop teardown, then the revision's snapshot
// ConfigMap, then the gateway Service (and the dedicated Agent Service) only while they were last
// written for this revision, so a replacement's gateway and routes survive. Agent-level
// ServiceAccounts, policies and PVCs stay for DeleteAgentRuntimeCredentials.
func (d *Compute) RetireRevision(ctx context.Context, rev driver.Revision) error {
	if !d.pinned(rev) {
		return mismatchError()
	}
	tn, err := findTenantNamespace(ctx, d.client, rev.NamespaceID)
	if err != nil || tn == nil {
		return err
	}
	p := newPlan(rev, tn.Name)
	// A retirement never yields: it waits the termination out.
	if err := d.stopWorkloads(ctx, p, driver.StopOptions{}); err != nil {
		return err
	}
	if err := d.deleteIf(ctx, kube.ConfigMaps, "ConfigMap", p.ns, p.snapshot, p.revOwner, nil); err != nil {
		return err
	}
	if err := d.deleteIf(ctx, kube.Secrets, "Secret", p.ns, p.workspaceSetup, p.revOwner, nil); err != nil {
		return err
	}
	if err := d.deleteIf(ctx, kube.Services, "Service", p.ns, p.gateway, p.agentOwner, forRevision(rev.ID)); err != nil {
		return err
	}
	if p.dedicated {
		return d.deleteIf(ctx, kube.Services, "Service", p.ns, p.agent, p.agentOwner, forRevision(rev.ID))
	}
	return nil
}

// ActivateRevision implements driver.Activator: it re-checks readiness (ActivationPendingError
// REVISION_NOT_READY otherwise), routes the dedicated Agent Service to this revision's Harness and
// deletes Agent policies this revision does not write. Idempotent.
func (d *Compute) ActivateRevision(ctx context.Context, rev driver.Revision, rc driver.RevisionContext) error {
	if !d.pinned(rev) {
		return mismatchError()
	}
	if err := checkTopology(rev); err != nil {
		return err
	}
	if err := checkHarnessAuth(rev, rc); err != nil {
		return err
	}
	tn, err := findTenantNamespace(ctx, d.client, rev.NamespaceID)
	if err != nil {
		return err
	}
	if tn == nil || !tn.Active {
		return &driver.ActivationPendingError{Code: CodeRevisionNotReady}
	}
	p := newPlan(rev, tn.Name)
	r, err := d.observe(ctx, p)
	if err != nil {
		return err
	}
	if !r.Ready {
		return &driver.ActivationPendingError{Code: CodeRevisionNotReady}
	}
	if p.dedicated {
		if err := d.ensureObject(ctx, p, nil, kube.Services, "Service", p.agentOwner, p.agentService(p.harness, ""), nil); err != nil {
			if errors.Is(err, errPending) {
				return &driver.ActivationPendingError{Code: CodeRevisionNotReady}
			}
			return err
		}
	}
	return d.trimPolicies(ctx, p)
}

// trimPolicies deletes the Agent's NetworkPolicies that this revision's topology does not write.
func (d *Compute) trimPolicies(ctx context.Context, p *plan) error {
	sel := kube.Selector(labelManagedBy, managedByValue, labelNamespace, p.rev.NamespaceID, labelAgent, p.rev.AgentID)
	return deleteOwned(ctx, d.client, kube.NetworkPolicies, p.ns, sel, owner{namespaceID: p.rev.NamespaceID, agentID: p.rev.AgentID}, p.agentPolicies())
}

// DeactivateRevision implements driver.Activator: a dedicated Agent Service that routes to this
// revision is pointed back at the inactive selector, guarded by the resourceVersion it was read
// at, so a concurrent switch to another revision is never undone. Embedded gateways have no
// separate route to withdraw (their Service must list the gateway for readiness).
func (d *Compute) DeactivateRevision(ctx context.Context, rev driver.Revision) error {
	if !d.pinned(rev) {
		return mismatchError()
	}
	if rev.ExecutionMode != driver.ExecutionDedicated {
		return nil
	}
	tn, err := findTenantNamespace(ctx, d.client, rev.NamespaceID)
	if err != nil || tn == nil {
		return err
	}
	p := newPlan(rev, tn.Name)
	for range 4 {
		var v serviceView
		found, err := d.read(ctx, kube.Services, p.ns, p.agent, &v)
		if err != nil || !found {
			return err
		}
		if !p.agentOwner.owns(v.Metadata) {
			return ownershipError("Service", p.agent)
		}
		if v.Spec.Selector[labelName] != p.harness || v.Metadata.Terminating() {
			return nil
		}
		err = d.client.Apply(ctx, kube.Services.Path(p.ns, p.agent), p.agentService(p.inactiveSelector(), v.Metadata.ResourceVersion), nil)
		if err == nil {
			return nil
		}
		if !kube.IsConflict(err) {
			return classify(err)
		}
	}
	return &driver.RetryableError{Code: CodeAPIRejected, Reason: "The Agent Service kept changing during deactivation."}
}
