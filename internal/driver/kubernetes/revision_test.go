package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// --- fixtures ------------------------------------------------------------------------------------

func revTestNamespace() driver.Namespace {
	id := "ns_" + uuid.NewString()
	return driver.Namespace{ID: id, Name: "revision test " + id[3:11]}
}

// revTestRevision builds revision n of agentID: embedded OpenClaw (api_key) or dedicated Codex
// (method api_key or codex_pat).
func revTestRevision(nsID, agentID string, n int64, dedicated bool, method string) driver.Revision {
	rev := driver.Revision{
		ID: "rev_" + uuid.NewString(), NamespaceID: nsID, AgentID: agentID, Number: n,
		Compute:            driver.ComputeRef{ID: testComputeID, Implementation: Name},
		ServicePrincipalID: "sp_" + strings.TrimPrefix(agentID, "agt_"),
		Spec:               json.RawMessage(`{"agents":{"defaults":{"model":"openai/gpt-5"}},"gateway":{"trustedProxies":["10.0.0.0/8"]}}`),
		CreatedAt:          time.Now(),
	}
	if dedicated {
		rev.ExecutionMode = driver.ExecutionDedicated
		rev.Harness = driver.Harness{ID: harnessCodex, Version: "1.0.0", Mode: driver.ExecutionDedicated}
		rev.HarnessAuthMethod = method
	} else {
		rev.ExecutionMode = driver.ExecutionEmbedded
		rev.Harness = driver.Harness{ID: harnessOpenClaw, Version: "1.0.0", Mode: driver.ExecutionEmbedded}
		rev.HarnessAuthMethod = driver.HarnessAuthAPIKey
	}
	return rev
}

// rtModelKey is the RevisionContext of an api_key revision whose model credential is a fresh
// Secret of the tenant namespace.
func rtModelKey(t *testing.T, c *kubetest.Cluster, namespace string) driver.RevisionContext {
	t.Helper()
	ref := revTestSecret(t, c, namespace, "sk-model-"+uuid.NewString())
	return driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey, SecretID: "sec_model", Ref: &ref}}
}

func rtAgentID() string { return "agt_" + uuid.NewString() }

// revTestSecret creates, as the Secret Driver would (here: admin), a Secret in the tenant
// namespace holding value under key "value" and returns its reference.
func revTestSecret(t *testing.T, c *kubetest.Cluster, namespace, value string) driver.SecretRef {
	t.Helper()
	name := uniqueName("secret")
	created, err := c.Admin().Create(kubetest.CorePath(namespace, "secrets", ""), kubetest.Object{
		"apiVersion": "v1", "kind": "Secret", "metadata": kubetest.Object{"name": name},
		"stringData": map[string]string{"value": value},
	})
	if err != nil {
		t.Fatalf("create secret: %v", err)
	}
	return driver.SecretRef{NamespaceName: namespace, Name: name, Key: "value", UID: kubetest.Str(created, "metadata", "uid")}
}

func rtPrepareOnce(t *testing.T, d *Compute, rev driver.Revision, rc driver.RevisionContext) driver.RevisionReadiness {
	t.Helper()
	r, err := d.PrepareRevision(context.Background(), rev, rc)
	if err != nil {
		code, stage := d.DescribePrepareFailure(err)
		t.Fatalf("PrepareRevision %d: %v (%s at %s)", rev.Number, err, code, stage)
	}
	if err := driver.CheckRevisionReadiness(rev, r); err != nil {
		t.Fatalf("PrepareRevision %d: %v", rev.Number, err)
	}
	return r
}

// prepareUntil repeats PrepareRevision until done accepts the readiness.
func rtPrepareUntil(t *testing.T, d *Compute, rev driver.Revision, rc driver.RevisionContext, what string, done func(driver.RevisionReadiness) bool) driver.RevisionReadiness {
	t.Helper()
	var r driver.RevisionReadiness
	wait.NoError(t, wait.Long, fmt.Sprintf("PrepareRevision %d to be %s", rev.Number, what), func() error {
		if r = rtPrepareOnce(t, d, rev, rc); !done(r) {
			return fmt.Errorf("last %+v", r)
		}
		return nil
	})
	return r
}

func rtPrepareReady(t *testing.T, d *Compute, rev driver.Revision, rc driver.RevisionContext) {
	t.Helper()
	rtPrepareUntil(t, d, rev, rc, "ready", func(r driver.RevisionReadiness) bool { return r.Ready })
}

func rtGet(t *testing.T, c *kubetest.Cluster, res kube.Resource, namespace, name string) kubetest.Object {
	t.Helper()
	obj, err := c.Admin().Get(res.Path(namespace, name))
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", res.Plural, namespace, name, err)
	}
	return obj
}

func rtExists(t *testing.T, c *kubetest.Cluster, res kube.Resource, namespace, name string) bool {
	t.Helper()
	_, err := c.Admin().Get(res.Path(namespace, name))
	if kubetest.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", res.Plural, namespace, name, err)
	}
	return true
}

// goneOrTerminating reports whether an object is deleted (a PVC in use keeps its finalizer).
func rtGoneOrTerminating(t *testing.T, c *kubetest.Cluster, res kube.Resource, namespace, name string) bool {
	t.Helper()
	obj, err := c.Admin().Get(res.Path(namespace, name))
	if kubetest.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", res.Plural, namespace, name, err)
	}
	return kubetest.Str(obj, "metadata", "deletionTimestamp") != ""
}

func rtList(t *testing.T, c *kubetest.Cluster, res kube.Resource, namespace string, labels map[string]string) []kubetest.Object {
	t.Helper()
	items, err := c.Admin().List(res.Path(namespace, ""), kubetest.Selector(labels))
	if err != nil {
		t.Fatalf("list %s in %s: %v", res.Plural, namespace, err)
	}
	return items
}

func rtRevisionPods(t *testing.T, c *kubetest.Cluster, namespace string, rev driver.Revision) []kubetest.Object {
	t.Helper()
	return rtList(t, c, kube.Pods, namespace, map[string]string{labelAgent: rev.AgentID, labelRevision: rev.ID})
}

func rtContainerEnv(t *testing.T, deployment kubetest.Object) map[string]kubetest.Object {
	t.Helper()
	out := map[string]kubetest.Object{}
	for _, ctr := range kubetest.Slice(deployment, "spec", "template", "spec", "containers") {
		for _, e := range kubetest.Slice(ctr, "env") {
			out[kubetest.Str(e, "name")] = e
		}
	}
	return out
}

// rtOnlyContainerReads fails unless the Pod template reads Secret secretName in container name
// alone, by secretKeyRef: never in another or an init container, by envFrom or as a volume.
func rtOnlyContainerReads(t *testing.T, deployment kubetest.Object, name, secretName string) {
	t.Helper()
	spec := kubetest.Object(kubetest.Field(deployment, "spec", "template", "spec").(map[string]any))
	found := false
	for _, list := range []string{"initContainers", "containers"} {
		for _, ctr := range kubetest.Slice(spec, list) {
			if len(kubetest.Slice(ctr, "envFrom")) > 0 {
				t.Fatalf("%s %s takes environment from a whole object", list, kubetest.Str(ctr, "name"))
			}
			for _, e := range kubetest.Slice(ctr, "env") {
				if kubetest.Str(e, "valueFrom", "secretKeyRef", "name") != secretName {
					continue
				}
				if list != "containers" || kubetest.Str(ctr, "name") != name {
					t.Fatalf("%s %s reads the model credential Secret", list, kubetest.Str(ctr, "name"))
				}
				found = true
			}
		}
	}
	for _, v := range kubetest.Slice(spec, "volumes") {
		if kubetest.Str(v, "secret", "secretName") == secretName {
			t.Fatalf("the model credential Secret is mounted as volume %s", kubetest.Str(v, "name"))
		}
	}
	if !found {
		t.Fatalf("container %s does not read the model credential Secret", name)
	}
}

func rtWantCode(t *testing.T, err error, code string) {
	t.Helper()
	if driver.Code(err) != code {
		t.Fatalf("error %v: code %q, want %q", err, driver.Code(err), code)
	}
}

// noValueAnywhere fails when value appears in a ConfigMap, a Deployment, a Service, a Pod or in
// any annotation of the tenant namespace.
func rtNoValueAnywhere(t *testing.T, c *kubetest.Cluster, namespace, value string) {
	t.Helper()
	for _, res := range []kube.Resource{kube.ConfigMaps, kube.Deployments, kube.Services, kube.Pods, kube.ServiceAccounts, kube.NetworkPolicies, kube.PVCs} {
		for _, obj := range rtList(t, c, res, namespace, nil) {
			raw, _ := json.Marshal(obj)
			if strings.Contains(string(raw), value) {
				t.Fatalf("the Secret value appears in %s %s", res.Plural, kubetest.Str(obj, "metadata", "name"))
			}
		}
	}
}

// --- pure unit tests -----------------------------------------------------------------------------

func TestRenderGatewayConfig(t *testing.T) {
	cidrs := []string{"10.0.0.0/8", "192.168.0.0/16"}
	out, err := renderGatewayConfig(json.RawMessage(`{"agents":{"x":1.50},"gateway":{"trustedProxies":["192.168.0.0/16","10.0.0.0/8"],"auth":{"mode":"trusted-proxy"}}}`), cidrs)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"agents":{"x":1.50},"gateway":{"allowRealIpFallback":true,"auth":{"mode":"trusted-proxy","trustedProxy":{"allowUsers":["occ-workspace-files"],"userHeader":"x-occ-identity"}},"trustedProxies":["10.0.0.0/8","192.168.0.0/16"]}}`
	if string(out) != want {
		t.Fatalf("rendered\n%s\nwant\n%s", out, want)
	}
	again, _ := renderGatewayConfig(json.RawMessage(`{"agents":{"x":1.50},"gateway":{"trustedProxies":["192.168.0.0/16","10.0.0.0/8"],"auth":{"mode":"trusted-proxy"}}}`), cidrs)
	if string(again) != string(out) {
		t.Fatal("a re-render differs")
	}
	if out, err := renderGatewayConfig(nil, cidrs); err != nil || !strings.Contains(string(out), `"mode":"trusted-proxy"`) {
		t.Fatalf("empty spec: %s, %v", out, err)
	}
	for spec, path := range map[string]string{
		`{"gateway":{"trustedProxies":["0.0.0.0/0"]}}`:                            "gateway.trustedProxies",
		`{"gateway":{"auth":{"mode":"token"}}}`:                                   "gateway.auth.mode",
		`{"gateway":{"auth":{"password":"plaintext-password"}}}`:                  "gateway.auth.password",
		`{"gateway":{"auth":{"trustedProxy":{"userHeader":"x-forwarded-user"}}}}`: "gateway.auth.trustedProxy.userHeader",
		`{"gateway":{"auth":{"trustedProxy":{"allowLoopback":true}}}}`:            "gateway.auth.trustedProxy.allowLoopback",
		`{"gateway":{"auth":{"trustedProxy":{"allowUsers":["someone-else"]}}}}`:   "gateway.auth.trustedProxy.allowUsers",
		`{"gateway":{"allowRealIpFallback":false}}`:                               "gateway.allowRealIpFallback",
		`{"gateway":"open"}`: "gateway",
		`[1,2]`:              "",
	} {
		_, err := renderGatewayConfig(json.RawMessage(spec), cidrs)
		rtWantCode(t, err, CodeConfigurationInvalid)
		if path != "" && !strings.Contains(err.Error(), "Configuration setting "+path+" ") {
			t.Errorf("%s: %v does not name %s", spec, err, path)
		}
		if strings.Contains(err.Error(), "plaintext-password") || strings.Contains(err.Error(), "x-forwarded-user") {
			t.Errorf("%s: the error quotes a value: %v", spec, err)
		}
	}
}

func TestRevisionCapabilities(t *testing.T) {
	d := &Compute{id: testComputeID}
	for _, m := range []string{driver.HarnessAuthAPIKey, driver.HarnessAuthCodexPAT} {
		if !d.SupportsHarnessAuth(m) {
			t.Errorf("SupportsHarnessAuth(%s) = false", m)
		}
	}
	if d.SupportsHarnessAuth(driver.HarnessAuthRuntime) {
		t.Error("runtime is supported: Kubernetes refuses host-managed Harness credentials at admission")
	}
	if d.SupportsHarnessAuth("oauth") || d.SupportsHarnessAuth("") {
		t.Error("unknown methods are supported")
	}
	emb := revTestRevision("ns_1", "agt_1", 1, false, "")
	ded := revTestRevision("ns_1", "agt_1", 1, true, driver.HarnessAuthAPIKey)
	if d.RequiresStoppedPredecessors(emb) || !d.RequiresStoppedPredecessors(ded) {
		t.Error("RequiresStoppedPredecessors must be true for dedicated revisions only")
	}
	var _ driver.Activator = d
	var _ driver.ExclusiveReplacement = d
	var _ driver.RuntimeCredentialDeleter = d
	var _ driver.HarnessAuthSupport = d

	bad := emb
	bad.Harness.Mode, bad.ExecutionMode = driver.ExecutionDedicated, driver.ExecutionDedicated
	rtWantCode(t, checkTopology(bad), CodeConfigurationInvalid)
	noSP := emb
	noSP.ServicePrincipalID = ""
	rtWantCode(t, checkTopology(noSP), CodeConfigurationInvalid)
	withKey := func(method string) driver.RevisionContext {
		return driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: method, Ref: &driver.SecretRef{}}}
	}
	if err := checkHarnessAuth(emb, withKey(driver.HarnessAuthAPIKey)); err != nil {
		t.Errorf("embedded api_key: %v", err)
	}
	patCodex := ded
	patCodex.HarnessAuthMethod = driver.HarnessAuthCodexPAT
	for _, r := range []driver.Revision{ded, patCodex} {
		if err := checkHarnessAuth(r, withKey(r.HarnessAuthMethod)); err != nil {
			t.Errorf("dedicated %s: %v", r.HarnessAuthMethod, err)
		}
	}
	patEmbedded := emb
	patEmbedded.HarnessAuthMethod = driver.HarnessAuthCodexPAT
	rtWantCode(t, checkHarnessAuth(patEmbedded, withKey(driver.HarnessAuthCodexPAT)), driver.CodeHarnessAuthenticationUnsupported)
	for _, r := range []driver.Revision{emb, ded} {
		runtime := r
		runtime.HarnessAuthMethod = driver.HarnessAuthRuntime
		rtWantCode(t, checkHarnessAuth(runtime, driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthRuntime}}), driver.CodeHarnessAuthenticationUnsupported)
		rtWantCode(t, checkHarnessAuth(runtime, driver.RevisionContext{}), driver.CodeHarnessAuthenticationUnsupported)
	}
	rtWantCode(t, checkHarnessAuth(emb, withKey(driver.HarnessAuthCodexPAT)), driver.CodeHarnessAuthenticationUnsupported)
	rtWantCode(t, checkHarnessAuth(ded, driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey}}), CodeConfigurationInvalid)
	rtWantCode(t, checkHarnessAuth(emb, driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey}}), CodeConfigurationInvalid)

	// The api_key variable follows embedded OpenClaw's model provider; Codex reads OpenAI's.
	anthropic := emb
	anthropic.Spec = json.RawMessage(`{"agents":{"defaults":{"model":{"primary":"anthropic/claude-sonnet-4"}}}}`)
	codexAnthropic := ded
	codexAnthropic.Spec = anthropic.Spec
	for _, tc := range []struct {
		rev    driver.Revision
		method string
		want   string
	}{
		{emb, driver.HarnessAuthAPIKey, "OPENAI_API_KEY"},
		{anthropic, driver.HarnessAuthAPIKey, "ANTHROPIC_API_KEY"},
		{codexAnthropic, driver.HarnessAuthAPIKey, "OPENAI_API_KEY"},
		{ded, driver.HarnessAuthCodexPAT, "CODEX_ACCESS_TOKEN"},
		{emb, driver.HarnessAuthRuntime, ""},
	} {
		if got := modelCredentialName(tc.rev, tc.method); got != tc.want {
			t.Errorf("modelCredentialName(%s, %s, %s) = %q, want %q", tc.rev.Harness.ID, tc.rev.Spec, tc.method, got, tc.want)
		}
	}

	// A revision pinned to another Compute is not ready, and the others refuse it.
	other := emb
	other.Compute.ID = "compute-other"
	r, err := d.PrepareRevision(context.Background(), other, driver.RevisionContext{})
	if err != nil || r.Ready || r.RevisionID != other.ID {
		t.Fatalf("mismatched prepare: %+v, %v", r, err)
	}
	rtWantCode(t, d.StopRevision(context.Background(), other, driver.StopOptions{}), driver.CodeComputeDriverMismatch)
	rtWantCode(t, d.RetireRevision(context.Background(), other), driver.CodeComputeDriverMismatch)
}

func TestDescribePrepareFailure(t *testing.T) {
	d := &Compute{}
	for _, c := range []struct {
		err         error
		code, stage string
	}{
		{atStage(stageGatewayDeployment, &driver.TransientDependencyError{Code: CodeAPIUnavailable}), CodeAPIUnavailable, stageGatewayDeployment},
		{atStage(stageGatewayService, &driver.TransientDependencyError{Code: CodeAPITimeout}), CodeAPITimeout, stageGatewayService},
		{atStage(stageNetworkPolicy, &driver.PermanentError{Code: CodeAPIRejected}), CodeAPIRejected, stageNetworkPolicy},
		{atStage(stageGatewayConfigMap, ownershipError("ConfigMap", "x")), CodeOwnershipConflict, stageGatewayConfigMap},
		{atStage(stageHarnessAuth, unsupportedAuth()), CodeConfigurationInvalid, stageHarnessAuth},
		{atStage(stageGatewayConfiguration, settingError("gateway.auth.mode", "must be trusted-proxy")), CodeConfigurationInvalid, stageGatewayConfiguration},
		{errors.New("boom"), CodePreparationFailed, stagePrepareRevision},
		{context.DeadlineExceeded, CodePreparationFailed, stagePrepareRevision},
	} {
		code, stage := d.DescribePrepareFailure(c.err)
		if code != c.code || stage != c.stage {
			t.Errorf("%v: %s at %s, want %s at %s", c.err, code, stage, c.code, c.stage)
		}
	}
	// The stage wrapper keeps the driver error visible to the worker.
	err := atStage(stageGatewayService, &driver.TransientDependencyError{Code: CodeAPIUnavailable})
	var td *driver.TransientDependencyError
	if !errors.As(err, &td) || driver.ErrorClass(err) != "TransientDependencyError" {
		t.Fatalf("wrapped error lost its class: %v", err)
	}
}

// --- against the API server ----------------------------------------------------------------------

// TestRevisionEmbeddedDeploy covers an embedded OpenClaw revision: the objects and their
// ownership, Pod Security restricted admission, readiness only once the Pod is Ready and listed by
// the EndpointSlice, Secret bindings by secretKeyRef only, and a stop that keeps storage.
func TestRevisionEmbeddedDeploy(t *testing.T) {
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, func(cfg *Config) {
		cfg.GatewayStorageClassName = "standard"
		cfg.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	})
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns)
	agentID := rtAgentID()
	rev := revTestRevision(ns.ID, agentID, 1, false, "")
	p := newPlan(rev, k8s)
	secretValue := "sk-test-" + uuid.NewString()
	ref := revTestSecret(t, c, k8s, secretValue)
	modelValue := "sk-model-" + uuid.NewString()
	modelRef := revTestSecret(t, c, k8s, modelValue)
	rc := driver.RevisionContext{
		HarnessAuth:       &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey, SecretID: "sec_model", Ref: &modelRef},
		SecretEnvironment: []driver.SecretEnvironmentRef{{Name: "OPENAI_API_KEY_BINDING", SecretID: "sec_1", Ref: ref}},
	}

	// The tenant namespace enforces Pod Security "restricted": a created Pod passed admission.
	if l := kubetest.Str(rtGet(t, c, kube.Namespaces, "", k8s), "metadata", "labels", "pod-security.kubernetes.io/enforce"); l != pssLevelRestricted {
		t.Fatalf("namespace enforces %q", l)
	}
	// Held by the simulated kubelet: the Pod exists (PSA admitted it) but is not Ready.
	c.Kubelet().SetHeld(k8s, nil, true)
	t.Cleanup(func() { c.Kubelet().SetHeld(k8s, nil, false) })
	r := rtPrepareOnce(t, d, rev, rc)
	if r.Ready {
		t.Fatal("ready before any Pod ran")
	}
	wait.Until(t, wait.Medium, "gateway Pod created", func() (bool, error) {
		return len(rtRevisionPods(t, c, k8s, rev)) == 1, nil
	})
	if r := rtPrepareOnce(t, d, rev, rc); r.Ready || r.RuntimeFailure != nil || r.PendingReason != "" {
		t.Fatalf("held Pod: %+v", r)
	}

	// Objects, names and ownership.
	cm := rtGet(t, c, kube.ConfigMaps, k8s, p.snapshot)
	if cm["immutable"] != true || kubetest.Str(cm, "metadata", "labels", labelRevision) != rev.ID {
		t.Fatalf("snapshot ConfigMap: %v", cm)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(kubetest.Str(cm, "data", configKey)), &doc); err != nil {
		t.Fatal(err)
	}
	if kubetest.Str(doc, "gateway", "auth", "mode") != trustedProxyMode || kubetest.Str(doc, "agents", "defaults", "model") != "openai/gpt-5" {
		t.Fatalf("snapshot document: %v", doc)
	}
	sa := rtGet(t, c, kube.ServiceAccounts, k8s, agentName(agentID))
	if sa["automountServiceAccountToken"] != false || kubetest.Str(sa, "metadata", "labels", labelServicePrincipal) != rev.ServicePrincipalID {
		t.Fatalf("ServiceAccount: %v", sa)
	}
	if rtExists(t, c, kube.ServiceAccounts, k8s, gatewayName(agentID)) {
		t.Fatal("an embedded Agent got a gateway ServiceAccount")
	}
	np := rtGet(t, c, kube.NetworkPolicies, k8s, agentPolicyName("allow-agent-runtime", agentID))
	if kubetest.Str(np, "spec", "podSelector", "matchLabels", labelWorkloadRole) != roleGateway {
		t.Fatalf("allow-agent-runtime: %v", np)
	}
	pvc := rtGet(t, c, kube.PVCs, k8s, gatewayStateClaimName(agentID))
	if kubetest.Str(pvc, "spec", "storageClassName") != "standard" || kubetest.Str(pvc, "spec", "resources", "requests", "storage") != "10Gi" {
		t.Fatalf("gateway-state PVC: %v", pvc)
	}
	if rtExists(t, c, kube.PVCs, k8s, workspaceClaimName(agentID)) {
		t.Fatal("an embedded Agent got a workspace PVC")
	}
	dep := rtGet(t, c, kube.Deployments, k8s, p.gateway)
	if kubetest.Str(dep, "metadata", "annotations", annotationAgentRevisionID) != rev.ID ||
		kubetest.Str(dep, "spec", "strategy", "type") != "Recreate" ||
		kubetest.Str(dep, "spec", "template", "metadata", "labels", labelRevision) != rev.ID ||
		kubetest.Str(dep, "spec", "template", "metadata", "labels", labelNetworkProfile) != networkProfile ||
		kubetest.Str(dep, "spec", "template", "spec", "serviceAccountName") != agentName(agentID) ||
		kubetest.Str(dep, "spec", "template", "spec", "nodeSelector", "kubernetes.io/os") != "linux" {
		t.Fatalf("gateway Deployment: %v", dep)
	}
	envs := rtContainerEnv(t, dep)
	if kubetest.Str(envs["OPENAI_API_KEY_BINDING"], "valueFrom", "secretKeyRef", "name") != ref.Name ||
		kubetest.Str(envs["OPENAI_API_KEY_BINDING"], "valueFrom", "secretKeyRef", "key") != "value" ||
		envs["OPENAI_API_KEY_BINDING"]["value"] != nil {
		t.Fatalf("Secret binding env: %v", envs["OPENAI_API_KEY_BINDING"])
	}
	// The model credential reaches the gateway (it executes the embedded Harness) by reference only,
	// and no other container of the Pod.
	if kubetest.Str(envs["OPENAI_API_KEY"], "valueFrom", "secretKeyRef", "name") != modelRef.Name ||
		kubetest.Str(envs["OPENAI_API_KEY"], "valueFrom", "secretKeyRef", "key") != modelRef.Key ||
		envs["OPENAI_API_KEY"]["value"] != nil {
		t.Fatalf("model credential env: %v", envs["OPENAI_API_KEY"])
	}
	rtOnlyContainerReads(t, dep, "gateway", modelRef.Name)
	var vols []string
	for _, v := range kubetest.Slice(dep, "spec", "template", "spec", "volumes") {
		vols = append(vols, kubetest.Str(v, "name"))
		if v["projected"] != nil && kubetest.Str(kubetest.Slice(v, "projected", "sources")[0], "serviceAccountToken", "audience") != "openclaw-enterprise" {
			t.Fatalf("service principal token volume: %v", v)
		}
	}
	if strings.Join(vols, ",") != "runtime-state,runtime-temporary,config,gateway-state,openclaw-service-principal" {
		t.Fatalf("volumes %v", vols)
	}
	svc := rtGet(t, c, kube.Services, k8s, p.gateway)
	if kubetest.Str(svc, "spec", "selector", labelName) != p.gateway || kubetest.Str(kubetest.Slice(svc, "spec", "ports")[0], "name") != "http" {
		t.Fatalf("gateway Service: %v", svc)
	}
	pod := rtRevisionPods(t, c, k8s, rev)[0]
	if kubetest.Str(pod, "metadata", "labels", labelWorkloadRole) != roleGateway || kubetest.Str(pod, "metadata", "labels", labelName) != p.gateway {
		t.Fatalf("gateway Pod labels: %v", pod["metadata"])
	}
	rtNoValueAnywhere(t, c, k8s, secretValue)
	rtNoValueAnywhere(t, c, k8s, modelValue)

	// Released: ready only once the EndpointSlice lists the ready Pod.
	c.Kubelet().SetHeld(k8s, nil, false)
	rtPrepareReady(t, d, rev, rc)
	eps := rtList(t, c, kube.EndpointSlices, k8s, map[string]string{labelServiceName: p.gateway})
	readyEndpoint := false
	for _, s := range eps {
		for _, e := range kubetest.Slice(s, "endpoints") {
			if kubetest.Field(e, "conditions", "ready") == true {
				readyEndpoint = true
			}
		}
	}
	if !readyEndpoint {
		t.Fatal("ready without a ready endpoint in the gateway's EndpointSlice")
	}
	if err := d.ActivateRevision(context.Background(), rev, rc); err != nil {
		t.Fatalf("ActivateRevision: %v", err)
	}
	rtNoValueAnywhere(t, c, k8s, secretValue)

	// Stop: the gateway goes, storage, snapshot and Service stay; repeating is a no-op.
	if err := d.StopRevision(context.Background(), rev, driver.StopOptions{}); err != nil {
		t.Fatalf("StopRevision: %v", err)
	}
	if rtExists(t, c, kube.Deployments, k8s, p.gateway) || len(rtRevisionPods(t, c, k8s, rev)) != 0 {
		t.Fatal("the gateway survived the stop")
	}
	for _, o := range []struct {
		res  kube.Resource
		name string
	}{{kube.PVCs, gatewayStateClaimName(agentID)}, {kube.ConfigMaps, p.snapshot}, {kube.ServiceAccounts, agentName(agentID)}} {
		if !rtExists(t, c, o.res, k8s, o.name) {
			t.Fatalf("stop removed %s %s", o.res.Plural, o.name)
		}
	}
	if err := d.StopRevision(context.Background(), rev, driver.StopOptions{}); err != nil {
		t.Fatalf("repeated StopRevision: %v", err)
	}
	if r := rtPrepareOnce(t, d, rev, rc); r.Ready {
		t.Fatal("ready right after the stop")
	}
}

// TestRevisionEmbeddedRedeploy: revision 2 takes the per-Agent gateway over (Recreate), and
// retiring revision 1 afterwards leaves revision 2's gateway alone.
func TestRevisionEmbeddedRedeploy(t *testing.T) {
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns)
	agentID := rtAgentID()
	rc := rtModelKey(t, c, k8s)
	rev1 := revTestRevision(ns.ID, agentID, 1, false, "")
	rev2 := revTestRevision(ns.ID, agentID, 2, false, "")
	p1, p2 := newPlan(rev1, k8s), newPlan(rev2, k8s)

	rtPrepareReady(t, d, rev1, rc)
	if err := d.ActivateRevision(context.Background(), rev1, rc); err != nil {
		t.Fatalf("ActivateRevision 1: %v", err)
	}
	uid := kubetest.Str(rtGet(t, c, kube.Deployments, k8s, p1.gateway), "metadata", "uid")

	rtPrepareReady(t, d, rev2, rc)
	dep := rtGet(t, c, kube.Deployments, k8s, p2.gateway)
	if kubetest.Str(dep, "metadata", "uid") != uid || kubetest.Str(dep, "metadata", "annotations", annotationAgentRevisionID) != rev2.ID {
		t.Fatalf("the gateway was not re-applied for revision 2: %v", dep["metadata"])
	}
	if n := len(rtRevisionPods(t, c, k8s, rev1)); n != 0 {
		t.Fatalf("%d Pods of revision 1 left after the Recreate rollout", n)
	}
	// Revision 1 is no longer what the gateway runs.
	if r := rtPrepareOnce(t, d, rev1, rc); r.Ready {
		t.Fatal("revision 1 reports ready on revision 2's gateway")
	}
	if err := d.ActivateRevision(context.Background(), rev2, rc); err != nil {
		t.Fatalf("ActivateRevision 2: %v", err)
	}
	if err := d.RetireRevision(context.Background(), rev1); err != nil {
		t.Fatalf("RetireRevision 1: %v", err)
	}
	if rtExists(t, c, kube.ConfigMaps, k8s, p1.snapshot) {
		t.Fatal("revision 1's snapshot survived its retirement")
	}
	for _, o := range []struct {
		res  kube.Resource
		name string
	}{{kube.Deployments, p2.gateway}, {kube.Services, p2.gateway}, {kube.ConfigMaps, p2.snapshot}} {
		if !rtExists(t, c, o.res, k8s, o.name) {
			t.Fatalf("retiring revision 1 removed %s %s", o.res.Plural, o.name)
		}
	}
	if r := rtPrepareOnce(t, d, rev2, rc); !r.Ready {
		t.Fatalf("revision 2 not ready after retiring revision 1: %+v", r)
	}
	// Retiring the serving revision removes its gateway; again is a no-op.
	for range 2 {
		if err := d.RetireRevision(context.Background(), rev2); err != nil {
			t.Fatalf("RetireRevision 2: %v", err)
		}
	}
	if rtExists(t, c, kube.Deployments, k8s, p2.gateway) || rtExists(t, c, kube.Services, k8s, p2.gateway) || rtExists(t, c, kube.ConfigMaps, k8s, p2.snapshot) {
		t.Fatal("retiring the serving revision left its gateway")
	}
}

// TestRevisionDedicated covers dedicated Codex: per-revision Harness, model credential only in the
// Harness, the Agent Service switch at activation, deactivation, stop yields while Pods terminate,
// storage kept.
func TestRevisionDedicated(t *testing.T) {
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, func(cfg *Config) { cfg.GatewayNodeSelector = map[string]string{"kubernetes.io/arch": "amd64"} })
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns)
	agentID := rtAgentID()
	key := "sk-dedicated-" + uuid.NewString()
	ref := revTestSecret(t, c, k8s, key)
	rev1 := revTestRevision(ns.ID, agentID, 1, true, driver.HarnessAuthAPIKey)
	rc1 := driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey, SecretID: "sec_1", Ref: &ref}}
	p1 := newPlan(rev1, k8s)
	if !d.RequiresStoppedPredecessors(rev1) {
		t.Fatal("dedicated revisions must require stopped predecessors")
	}

	rtPrepareReady(t, d, rev1, rc1)
	for _, name := range []string{gatewayName(agentID), agentName(agentID)} {
		if sa := rtGet(t, c, kube.ServiceAccounts, k8s, name); sa["automountServiceAccountToken"] != false {
			t.Fatalf("ServiceAccount %s: %v", name, sa)
		}
	}
	for _, name := range p1.agentPolicies() {
		rtGet(t, c, kube.NetworkPolicies, k8s, name)
	}
	ws := rtGet(t, c, kube.PVCs, k8s, workspaceClaimName(agentID))
	if kubetest.Str(ws, "spec", "resources", "requests", "storage") != "40Gi" {
		t.Fatalf("workspace PVC: %v", ws)
	}
	gw := rtGet(t, c, kube.Deployments, k8s, p1.gateway)
	h := rtGet(t, c, kube.Deployments, k8s, p1.harness)
	if kubetest.Str(h, "spec", "strategy", "type") != "Recreate" || kubetest.Str(h, "metadata", "labels", labelRevision) != rev1.ID {
		t.Fatalf("Harness Deployment: %v", h["metadata"])
	}
	if e := rtContainerEnv(t, h)["OPENAI_API_KEY"]; kubetest.Str(e, "valueFrom", "secretKeyRef", "name") != ref.Name {
		t.Fatalf("Harness model credential: %v", e)
	}
	rtOnlyContainerReads(t, h, "harness", ref.Name)
	gwEnv := rtContainerEnv(t, gw)
	if _, ok := gwEnv["OPENAI_API_KEY"]; ok {
		t.Fatal("the dedicated gateway got the model credential")
	}
	if !strings.HasPrefix(kubetest.Str(gwEnv["APP_SERVER_URL"], "value"), "ws://"+agentName(agentID)+"."+k8s+".svc:18790") {
		t.Fatalf("APP_SERVER_URL %v", gwEnv["APP_SERVER_URL"])
	}
	if kubetest.Str(gw, "spec", "template", "spec", "serviceAccountName") != gatewayName(agentID) ||
		kubetest.Str(gw, "spec", "template", "spec", "nodeSelector", "kubernetes.io/arch") != "amd64" {
		t.Fatalf("dedicated gateway Pod spec: %v", kubetest.Field(gw, "spec", "template", "spec"))
	}
	for _, v := range kubetest.Slice(gw, "spec", "template", "spec", "volumes") {
		if v["projected"] != nil {
			t.Fatal("the dedicated gateway got the service principal token")
		}
	}
	// First deploy: the Agent Service routes to revision 1 at once.
	svcSel := func() string {
		return kubetest.Str(rtGet(t, c, kube.Services, k8s, agentName(agentID)), "spec", "selector", labelName)
	}
	if svcSel() != p1.harness {
		t.Fatalf("first deploy Agent Service selector %q", svcSel())
	}
	if err := d.ActivateRevision(context.Background(), rev1, rc1); err != nil {
		t.Fatalf("ActivateRevision 1: %v", err)
	}
	rtNoValueAnywhere(t, c, k8s, key)

	// Exclusive replacement: stop revision 1 first. Paused, its Pods keep terminating: a stop
	// that may yield yields, and succeeds once they are gone.
	c.Kubelet().Pause()
	paused := true
	t.Cleanup(func() {
		if paused {
			c.Kubelet().Resume()
		}
	})
	yieldNow := driver.StopOptions{Yield: true, OtherWorkWaiting: func(context.Context) bool { return true }}
	err := d.StopRevision(context.Background(), rev1, yieldNow)
	if !driver.IsStopYielded(err) {
		t.Fatalf("StopRevision while Pods terminate: %v, want a yield", err)
	}
	c.Kubelet().Resume()
	paused = false
	wait.Until(t, wait.Long, "stop of revision 1", func() (bool, error) {
		err := d.StopRevision(context.Background(), rev1, yieldNow)
		if driver.IsStopYielded(err) {
			return false, err
		}
		return err == nil, err
	})
	if rtExists(t, c, kube.Deployments, k8s, p1.harness) || rtExists(t, c, kube.Deployments, k8s, p1.gateway) {
		t.Fatal("workloads survived the stop")
	}
	if !rtExists(t, c, kube.PVCs, k8s, workspaceClaimName(agentID)) || !rtExists(t, c, kube.ConfigMaps, k8s, p1.snapshot) {
		t.Fatal("the stop removed storage or the snapshot")
	}

	// Revision 2 (codex_pat): prepared behind the inactive selector, routed at activation.
	pat := revTestSecret(t, c, k8s, "pat-"+uuid.NewString())
	rev2 := revTestRevision(ns.ID, agentID, 2, true, driver.HarnessAuthCodexPAT)
	rc2 := driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthCodexPAT, SecretID: "sec_2", Ref: &pat}}
	p2 := newPlan(rev2, k8s)
	rtPrepareReady(t, d, rev2, rc2)
	if svcSel() != p2.inactiveSelector() {
		t.Fatalf("Agent Service selector %q before activation, want the inactive one", svcSel())
	}
	if e := rtContainerEnv(t, rtGet(t, c, kube.Deployments, k8s, p2.harness))["CODEX_ACCESS_TOKEN"]; kubetest.Str(e, "valueFrom", "secretKeyRef", "name") != pat.Name {
		t.Fatalf("codex_pat credential: %v", e)
	}
	if err := d.ActivateRevision(context.Background(), rev2, rc2); err != nil {
		t.Fatalf("ActivateRevision 2: %v", err)
	}
	if svcSel() != p2.harness {
		t.Fatalf("Agent Service selector %q after activation", svcSel())
	}
	// Deactivating revision 1 must not touch revision 2's route; deactivating 2 withdraws it.
	if err := d.DeactivateRevision(context.Background(), rev1); err != nil || svcSel() != p2.harness {
		t.Fatalf("DeactivateRevision 1: %v, selector %q", err, svcSel())
	}
	// The switch is guarded: an apply carrying a stale resourceVersion is refused.
	stale := kubetest.Str(rtGet(t, c, kube.Services, k8s, agentName(agentID)), "metadata", "resourceVersion")
	if err := d.ensureObject(context.Background(), p2, nil, kube.Services, "Service", p2.agentOwner, p2.agentService(p2.harness, ""), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().Patch(kube.Services.Path(k8s, agentName(agentID)), kubetest.MergePatch, kubetest.Object{"metadata": kubetest.Object{"labels": kubetest.Object{"touched": "yes"}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.client.Apply(context.Background(), kube.Services.Path(k8s, agentName(agentID)), p2.agentService(p2.inactiveSelector(), stale), nil); !kube.IsConflict(err) {
		t.Fatalf("guarded apply with a stale resourceVersion: %v", err)
	}
	if err := d.DeactivateRevision(context.Background(), rev2); err != nil || svcSel() != p2.inactiveSelector() {
		t.Fatalf("DeactivateRevision 2: %v, selector %q", err, svcSel())
	}
	if err := d.ActivateRevision(context.Background(), rev2, rc2); err != nil || svcSel() != p2.harness {
		t.Fatalf("re-ActivateRevision 2: %v, selector %q", err, svcSel())
	}
	if err := d.RetireRevision(context.Background(), rev1); err != nil {
		t.Fatalf("RetireRevision 1: %v", err)
	}
	if rtExists(t, c, kube.ConfigMaps, k8s, p1.snapshot) || !rtExists(t, c, kube.Services, k8s, agentName(agentID)) || !rtExists(t, c, kube.Deployments, k8s, p2.harness) {
		t.Fatal("retiring revision 1 removed the wrong objects")
	}
	if r := rtPrepareOnce(t, d, rev2, rc2); !r.Ready || svcSel() != p2.harness {
		t.Fatalf("maintenance prepare of the routed revision: %+v, selector %q", r, svcSel())
	}
}

// TestRevisionPendingReasons: a crash-looping gateway is RuntimeFailure UNAVAILABLE evidence and an
// unschedulable one WORKLOAD_UNSCHEDULABLE; both stay not ready.
func TestRevisionPendingReasons(t *testing.T) {
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns)
	rc := rtModelKey(t, c, k8s)

	failing := revTestRevision(ns.ID, rtAgentID(), 1, false, "")
	c.Kubelet().SetFailing(k8s, map[string]string{labelAgent: failing.AgentID}, true)
	t.Cleanup(func() { c.Kubelet().SetFailing(k8s, map[string]string{labelAgent: failing.AgentID}, false) })
	r := rtPrepareUntil(t, d, failing, rc, "failing", func(r driver.RevisionReadiness) bool { return r.RuntimeFailure != nil })
	if r.Ready || r.RuntimeFailure.Code != driver.RuntimeUnavailable || r.RuntimeFailure.Component != "gateway" ||
		r.RuntimeFailure.Cause != nil || !driver.ValidRuntimeFailure(r.RuntimeFailure) {
		t.Fatalf("crash loop readiness: %+v %+v", r, r.RuntimeFailure)
	}
	if err := d.ActivateRevision(context.Background(), failing, rc); driver.Code(err) != CodeRevisionNotReady {
		t.Fatalf("ActivateRevision of a failing revision: %v", err)
	}

	stuck := revTestRevision(ns.ID, rtAgentID(), 1, false, "")
	c.Kubelet().SetUnschedulable(k8s, map[string]string{labelAgent: stuck.AgentID}, true)
	t.Cleanup(func() { c.Kubelet().SetUnschedulable(k8s, map[string]string{labelAgent: stuck.AgentID}, false) })
	r = rtPrepareUntil(t, d, stuck, rc, "unschedulable", func(r driver.RevisionReadiness) bool { return r.PendingReason != "" })
	if r.Ready || r.PendingReason != driver.PendingWorkloadUnschedulable || r.NamespaceID != ns.ID || r.AgentID != stuck.AgentID || r.RevisionID != stuck.ID {
		t.Fatalf("unschedulable readiness: %+v", r)
	}
	c.Kubelet().SetUnschedulable(k8s, map[string]string{labelAgent: stuck.AgentID}, false)
	rtPrepareReady(t, d, stuck, rc)
}

// TestRevisionRefusals: preconditions and references that make a prepare refuse or wait.
func TestRevisionRefusals(t *testing.T) {
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	ns := revTestNamespace()
	// No Secret can exist before the namespace: the reference is checked only once it does.
	rc := driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey, Ref: &driver.SecretRef{}}}
	rev := revTestRevision(ns.ID, rtAgentID(), 1, false, "")

	// No tenant namespace yet: pending.
	if r := rtPrepareOnce(t, d, rev, rc); r.Ready {
		t.Fatal("ready without a namespace")
	}
	if err := d.StopRevision(context.Background(), rev, driver.StopOptions{}); err != nil {
		t.Fatalf("stop without a namespace: %v", err)
	}
	k8s := ensureTestNamespace(t, d, ns)
	rc = rtModelKey(t, c, k8s)

	// A revision admitted with runtime before Kubernetes refused it at admission: its next prepare
	// fails permanently with the admission code, at the Harness stage, before any object exists.
	for _, dedicated := range []bool{false, true} {
		admittedEarlier := revTestRevision(ns.ID, rtAgentID(), 1, dedicated, driver.HarnessAuthRuntime)
		admittedEarlier.HarnessAuthMethod = driver.HarnessAuthRuntime
		_, err := d.PrepareRevision(context.Background(), admittedEarlier, driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthRuntime}})
		rtWantCode(t, err, driver.CodeHarnessAuthenticationUnsupported)
		if !driver.IsPermanent(err) {
			t.Fatalf("runtime refusal is not permanent: %v", err)
		}
		if _, stage := d.DescribePrepareFailure(err); stage != stageHarnessAuth {
			t.Fatalf("runtime refusal described at %s", stage)
		}
		if objs := rtList(t, c, kube.Deployments, k8s, map[string]string{labelAgent: admittedEarlier.AgentID}); len(objs) != 0 {
			t.Fatalf("a refused runtime revision wrote %d Deployments", len(objs))
		}
		rtWantCode(t, d.ActivateRevision(context.Background(), admittedEarlier, driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthRuntime}}), driver.CodeHarnessAuthenticationUnsupported)
	}
	// codex_pat belongs to dedicated Codex only.
	pat := rev
	pat.HarnessAuthMethod = driver.HarnessAuthCodexPAT
	_, err := d.PrepareRevision(context.Background(), pat, driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthCodexPAT, Ref: rc.HarnessAuth.Ref}})
	rtWantCode(t, err, driver.CodeHarnessAuthenticationUnsupported)

	// Unsupported topology.
	odd := rev
	odd.Harness.Mode, odd.ExecutionMode = driver.ExecutionDedicated, driver.ExecutionDedicated
	_, err = d.PrepareRevision(context.Background(), odd, rc)
	rtWantCode(t, err, CodeConfigurationInvalid)

	// A Secret reference whose UID no longer matches (the Secret was re-created).
	ref := revTestSecret(t, c, k8s, "v-"+uuid.NewString())
	stale := ref
	stale.UID = uuid.NewString()
	bad := driver.RevisionContext{HarnessAuth: rc.HarnessAuth, SecretEnvironment: []driver.SecretEnvironmentRef{{Name: "TOKEN", Ref: stale}}}
	_, err = d.PrepareRevision(context.Background(), rev, bad)
	rtWantCode(t, err, CodeOwnershipConflict)
	if code, stage := d.DescribePrepareFailure(err); code != CodeOwnershipConflict || stage != stageSecretEnvironment {
		t.Fatalf("described as %s at %s", code, stage)
	}
	other := ref
	other.NamespaceName = "kube-system"
	_, err = d.PrepareRevision(context.Background(), rev, driver.RevisionContext{HarnessAuth: rc.HarnessAuth, SecretEnvironment: []driver.SecretEnvironmentRef{{Name: "TOKEN", Ref: other}}})
	rtWantCode(t, err, CodeConfigurationInvalid)
	missingKey := ref
	missingKey.Key = "nope"
	_, err = d.PrepareRevision(context.Background(), rev, driver.RevisionContext{HarnessAuth: rc.HarnessAuth, SecretEnvironment: []driver.SecretEnvironmentRef{{Name: "TOKEN", Ref: missingKey}}})
	rtWantCode(t, err, CodeConfigurationInvalid)
	_, err = d.PrepareRevision(context.Background(), rev, driver.RevisionContext{HarnessAuth: rc.HarnessAuth, SecretEnvironment: []driver.SecretEnvironmentRef{{Name: "OPENCLAW_CONFIG_PATH", Ref: ref}}})
	rtWantCode(t, err, CodeConfigurationInvalid)

	// An object of our name that is not ours is refused, never adopted.
	p := newPlan(rev, k8s)
	if _, err := c.Admin().Create(kube.ServiceAccounts.Path(k8s, ""), kubetest.Object{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": kubetest.Object{"name": p.agent},
	}); err != nil {
		t.Fatal(err)
	}
	_, err = d.PrepareRevision(context.Background(), rev, rc)
	rtWantCode(t, err, CodeOwnershipConflict)
	if code, stage := d.DescribePrepareFailure(err); code != CodeOwnershipConflict || stage != stageServiceAccount {
		t.Fatalf("described as %s at %s", code, stage)
	}
	if sa := rtGet(t, c, kube.ServiceAccounts, k8s, p.agent); kubetest.Str(sa, "metadata", "labels", labelAgent) != "" {
		t.Fatal("the foreign ServiceAccount was modified")
	}
}

// TestDeleteAgentRuntimeCredentials removes every object of one Agent and nothing of another.
func TestDeleteAgentRuntimeCredentials(t *testing.T) {
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, func(cfg *Config) { cfg.GatewayStorageClassName = "standard" })
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns)
	rc := rtModelKey(t, c, k8s)
	key := revTestSecret(t, c, k8s, "k-"+uuid.NewString())
	rcCodex := driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey, Ref: &key}}
	gone := revTestRevision(ns.ID, rtAgentID(), 1, true, driver.HarnessAuthAPIKey)
	kept := revTestRevision(ns.ID, rtAgentID(), 1, false, "")
	rtPrepareOnce(t, d, gone, rcCodex)
	rtPrepareOnce(t, d, kept, rc)

	agent := driver.AgentRef{NamespaceID: ns.ID, AgentID: gone.AgentID, ServicePrincipalID: gone.ServicePrincipalID}
	for range 2 {
		if err := d.DeleteAgentRuntimeCredentials(context.Background(), agent); err != nil {
			t.Fatalf("DeleteAgentRuntimeCredentials: %v", err)
		}
	}
	for _, k := range agentKinds {
		for _, obj := range rtList(t, c, k.res, k8s, map[string]string{labelAgent: gone.AgentID}) {
			if kubetest.Str(obj, "metadata", "deletionTimestamp") == "" {
				t.Errorf("%s %s of the deleted Agent survived", k.kind, kubetest.Str(obj, "metadata", "name"))
			}
		}
		if len(rtList(t, c, k.res, k8s, map[string]string{labelAgent: kept.AgentID})) == 0 {
			t.Errorf("the other Agent lost its %s objects", k.kind)
		}
	}
	if !rtGoneOrTerminating(t, c, kube.PVCs, k8s, workspaceClaimName(gone.AgentID)) {
		t.Error("the workspace PVC survived")
	}
	for _, name := range tenantPolicyNames {
		rtGet(t, c, kube.NetworkPolicies, k8s, name)
	}
	if !rtExists(t, c, kube.Secrets, k8s, key.Name) {
		t.Error("a canonical Secret was deleted")
	}
	if err := d.DeleteAgentRuntimeCredentials(context.Background(), driver.AgentRef{NamespaceID: "ns_" + uuid.NewString(), AgentID: gone.AgentID}); err != nil {
		t.Fatalf("unknown Namespace: %v", err)
	}
}

// TestRevisionAPIServerStopped: without an API server every revision operation is a transient
// KUBERNETES_API_UNAVAILABLE failure.
func TestRevisionAPIServerStopped(t *testing.T) {
	c := kubetest.Start(t, kubetest.Options{})
	d := newTestCompute(t, c, func(cfg *Config) { cfg.RequestTimeout = 2 * time.Second })
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns) // registered first: its cleanup runs after the restart below
	rev := revTestRevision(ns.ID, rtAgentID(), 1, false, "")
	rc := rtModelKey(t, c, k8s)
	rtPrepareOnce(t, d, rev, rc)

	c.StopAPIServer(t)
	t.Cleanup(func() { c.StartAPIServer(t) })
	_, err := d.PrepareRevision(context.Background(), rev, rc)
	var td *driver.TransientDependencyError
	if !errors.As(err, &td) || td.Code != driver.CodeKubernetesAPIUnavailable || td.Dependency != driver.DependencyKubernetesAPI {
		t.Fatalf("PrepareRevision without an API server: %v", err)
	}
	if code, _ := d.DescribePrepareFailure(err); code != CodeAPIUnavailable {
		t.Fatalf("described as %s", code)
	}
	for name, op := range map[string]func() error{
		"StopRevision":   func() error { return d.StopRevision(context.Background(), rev, driver.StopOptions{}) },
		"RetireRevision": func() error { return d.RetireRevision(context.Background(), rev) },
		"Activate":       func() error { return d.ActivateRevision(context.Background(), rev, rc) },
		"DeleteAgent": func() error {
			return d.DeleteAgentRuntimeCredentials(context.Background(), driver.AgentRef{NamespaceID: ns.ID, AgentID: rev.AgentID})
		},
	} {
		if err := op(); !errors.As(err, &td) || td.Code != driver.CodeKubernetesAPIUnavailable {
			t.Errorf("%s without an API server: %v", name, err)
		}
	}
}
