package kubernetes

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Object builders of the per-Agent and per-revision objects. They
// are pure: every input is the plan, the driver configuration and the already checked Secret
// references, so a repeated prepare applies identical objects.

const (
	harnessPort         = 18790
	configKey           = "openclaw.json"
	configDir           = "/etc/openclaw"
	stateDir            = "/home/node/.openclaw"
	servicePrincipalDir = "/var/run/secrets/openclaw/service-principal"
	tokenModeProjected  = "projectedServiceAccountToken"

	// Driver-owned trusted-proxy authentication of the gateway.
	trustedProxyMode   = "trusted-proxy"
	occIdentityHeader  = "x-occ-identity"
	occWorkspaceIdenty = "occ-workspace-files"

	gatewayStateSize = "10Gi"
	workspaceSize    = "40Gi"
)

// modelEgressExcept are the private ranges the model egress rule excludes.
var modelEgressExcept = []any{"10.0.0.0/8", "100.64.0.0/10", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"}

// settingError refuses a native setting that contradicts the Driver-owned gateway authentication.
// It names the setting path, never its value.
func settingError(path, requirement string) error {
	return &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "Configuration setting " + path + " " + requirement + "."}
}

// renderGatewayConfig merges the Driver-owned trusted-proxy authentication into the revision's
// native document: gateway.trustedProxies = the configured CIDRs, gateway.auth.mode trusted-proxy
// with userHeader x-occ-identity and the single allowed identity occ-workspace-files,
// gateway.allowRealIpFallback true. Explicit values that disagree are refused; an equal CIDR set in
// another order is accepted. Passwords and tokens are refused: this subset projects no gateway
// password. The output is canonical JSON (sorted keys), so a re-render is byte-identical.
func renderGatewayConfig(spec json.RawMessage, cidrs []string) ([]byte, error) {
	doc := map[string]any{}
	if s := bytes.TrimSpace(spec); len(s) > 0 && string(s) != "null" {
		dec := json.NewDecoder(bytes.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, &driver.PermanentError{Code: CodeConfigurationInvalid, Reason: "The revision configuration is not a JSON object."}
		}
	}
	gw, err := childObject(doc, "gateway", "gateway")
	if err != nil {
		return nil, err
	}
	if v, ok := gw["trustedProxies"]; ok && !sameStringSet(v, cidrs) {
		return nil, settingError("gateway.trustedProxies", "must equal the trusted proxy CIDRs of the Kubernetes Compute Driver")
	}
	gw["trustedProxies"] = toAny(cidrs)
	if v, ok := gw["allowRealIpFallback"]; ok && v != true {
		return nil, settingError("gateway.allowRealIpFallback", "must be true")
	}
	gw["allowRealIpFallback"] = true
	auth, err := childObject(gw, "auth", "gateway.auth")
	if err != nil {
		return nil, err
	}
	if v, ok := auth["mode"]; ok && v != trustedProxyMode {
		return nil, settingError("gateway.auth.mode", "must be trusted-proxy")
	}
	for _, k := range []string{"password", "token"} {
		if _, ok := auth[k]; ok {
			return nil, settingError("gateway.auth."+k, "must not be set")
		}
	}
	auth["mode"] = trustedProxyMode
	tp, err := childObject(auth, "trustedProxy", "gateway.auth.trustedProxy")
	if err != nil {
		return nil, err
	}
	if v, ok := tp["userHeader"]; ok && v != occIdentityHeader {
		return nil, settingError("gateway.auth.trustedProxy.userHeader", "must be x-occ-identity")
	}
	if v, ok := tp["allowLoopback"]; ok && v != false {
		return nil, settingError("gateway.auth.trustedProxy.allowLoopback", "must be absent or false")
	}
	if v, ok := tp["allowUsers"]; ok && !sameStringSet(v, []string{occWorkspaceIdenty}) {
		return nil, settingError("gateway.auth.trustedProxy.allowUsers", "must name only occ-workspace-files")
	}
	tp["userHeader"] = occIdentityHeader
	tp["allowUsers"] = []any{occWorkspaceIdenty}
	delete(tp, "allowLoopback")
	return json.Marshal(doc)
}

// childObject returns parent[key] as an object, creating it when absent.
func childObject(parent map[string]any, key, path string) (map[string]any, error) {
	v, ok := parent[key]
	if !ok || v == nil {
		m := map[string]any{}
		parent[key] = m
		return m, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, settingError(path, "must be an object")
	}
	return m, nil
}

func sameStringSet(v any, want []string) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	have := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return false
		}
		have = append(have, s)
	}
	slices.Sort(have)
	have = slices.Compact(have)
	w := slices.Clone(want)
	slices.Sort(w)
	w = slices.Compact(w)
	return slices.Equal(have, w)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// withAnnotations adds annotations to a metadata object built by owner.metadata.
func withAnnotations(meta kube.Object, kv ...string) kube.Object {
	a := meta["annotations"].(map[string]string)
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return meta
}

// revisionAnnotations mark the revision a per-Agent object was last written for.
func (p *plan) revisionAnnotations(meta kube.Object) kube.Object {
	return withAnnotations(meta, annotationAgentRevisionID, p.rev.ID, annotationAgentRevision, strconv.FormatInt(p.rev.Number, 10))
}

// snapshotConfigMap is the immutable gateway configuration snapshot of the revision.
func (p *plan) snapshotConfigMap(document []byte) kube.Object {
	return kube.Object{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata":  p.revOwner.metadata(p.snapshot, p.ns, map[string]string{labelWorkloadRole: roleGateway}),
		"immutable": true,
		"data":      map[string]string{configKey: string(document)},
	}
}

func (p *plan) serviceAccount(name, role string) kube.Object {
	return kube.Object{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata":                     p.agentOwner.metadata(name, p.ns, map[string]string{labelWorkloadRole: role}),
		"automountServiceAccountToken": false,
	}
}

// serviceAccounts are the ServiceAccounts of the topology: the embedded gateway runs as agent-<h>;
// a dedicated gateway as gateway-<h> and its Harness as agent-<h>.
func (p *plan) serviceAccounts() []kube.Object {
	if p.dedicated {
		return []kube.Object{p.serviceAccount(p.gateway, roleGateway), p.serviceAccount(p.agent, roleAgent)}
	}
	return []kube.Object{p.serviceAccount(p.agent, roleGateway)}
}

// podSelector selects the Agent's Pods of one role (profile, namespace, agent,
// role, and the revision for the Harness).
func (p *plan) podSelector(role string) kube.Object {
	m := map[string]string{
		labelNetworkProfile: networkProfile, labelNamespace: p.rev.NamespaceID,
		labelAgent: p.rev.AgentID, labelWorkloadRole: role,
	}
	if role == roleAgent {
		m[labelRevision] = p.rev.ID
	}
	return kube.Object{"matchLabels": m}
}

func modelEgress() kube.Object {
	return kube.Object{
		"to":    []any{kube.Object{"ipBlock": kube.Object{"cidr": "0.0.0.0/0", "except": modelEgressExcept}}},
		"ports": []any{kube.Object{"protocol": "TCP", "port": 443}},
	}
}

func harnessPorts() []any {
	return []any{kube.Object{"protocol": "TCP", "port": harnessPort}, kube.Object{"protocol": "TCP", "port": harnessPort + 1}}
}

func (p *plan) networkPolicy(base string, spec kube.Object) kube.Object {
	return kube.Object{
		"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
		"metadata": p.agentOwner.metadata(agentPolicyName(base, p.rev.AgentID), p.ns, nil),
		"spec":     spec,
	}
}

// networkPolicies are the Agent NetworkPolicies (ordinary profile, no plugins,
// channels or repository service). Names match plan.agentPolicies.
func (p *plan) networkPolicies() []kube.Object {
	if !p.dedicated {
		return []kube.Object{p.networkPolicy("allow-agent-runtime", kube.Object{
			"podSelector": p.podSelector(roleGateway), "policyTypes": []any{"Egress"},
			"egress": []any{modelEgress()},
		})}
	}
	gatewayPeer := kube.Object{"podSelector": p.podSelector(roleGateway)}
	harnessPeer := kube.Object{"podSelector": p.podSelector(roleAgent)}
	return []kube.Object{
		p.networkPolicy("allow-gateway-agent", kube.Object{
			"podSelector": p.podSelector(roleGateway), "policyTypes": []any{"Egress"},
			"egress": []any{kube.Object{"to": []any{harnessPeer}, "ports": harnessPorts()}},
		}),
		p.networkPolicy("allow-agent-runtime", kube.Object{
			"podSelector": p.podSelector(roleAgent), "policyTypes": []any{"Ingress", "Egress"},
			"ingress": []any{kube.Object{"from": []any{gatewayPeer}, "ports": harnessPorts()}},
			"egress":  []any{modelEgress()},
		}),
		p.networkPolicy("allow-agent-auth", kube.Object{
			"podSelector": p.podSelector(roleAgent), "policyTypes": []any{"Egress"},
			"egress": []any{modelEgress()},
		}),
	}
}

// claim is a ReadWriteOnce Filesystem PVC; storageClass "" leaves the cluster default.
func (p *plan) claim(name, size, storageClass string) kube.Object {
	spec := kube.Object{
		"accessModes": []any{"ReadWriteOnce"},
		"volumeMode":  "Filesystem",
		"resources":   kube.Object{"requests": kube.Object{"storage": size}},
	}
	if storageClass != "" {
		spec["storageClassName"] = storageClass
	}
	return kube.Object{
		"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": p.agentOwner.metadata(name, p.ns, nil),
		"spec":     spec,
	}
}

func resources(r ContainerResources) kube.Object {
	out := kube.Object{}
	if q := quantities(r.Requests); len(q) > 0 {
		out["requests"] = q
	}
	if q := quantities(r.Limits); len(q) > 0 {
		out["limits"] = q
	}
	return out
}

// podSecurityContext and containerSecurityContext are the hardened contexts (Pod Security
// restricted); together they satisfy Pod Security "restricted".
func podSecurityContext() kube.Object {
	return kube.Object{
		"runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000,
		"fsGroupChangePolicy": "OnRootMismatch",
		"seccompProfile":      kube.Object{"type": "RuntimeDefault"},
	}
}

func containerSecurityContext() kube.Object {
	return kube.Object{
		"allowPrivilegeEscalation": false,
		"readOnlyRootFilesystem":   true,
		"capabilities":             kube.Object{"drop": []any{"ALL"}},
	}
}

func env(name, value string) kube.Object { return kube.Object{"name": name, "value": value} }

// secretEnv is an environment variable read by the kubelet from a Secret key: the driver never
// sees the value.
func secretEnv(name string, ref driver.SecretRef) kube.Object {
	return kube.Object{"name": name, "valueFrom": kube.Object{"secretKeyRef": kube.Object{"name": ref.Name, "key": ref.Key}}}
}

func podUIDEnv() kube.Object {
	return kube.Object{"name": "OPENCLAW_POD_UID", "valueFrom": kube.Object{"fieldRef": kube.Object{"fieldPath": "metadata.uid"}}}
}

func mount(volume, path, subPath string, readOnly bool) kube.Object {
	m := kube.Object{"name": volume, "mountPath": path}
	if subPath != "" {
		m["subPath"] = subPath
	}
	if readOnly {
		m["readOnly"] = true
	}
	return m
}

// runtimeVolumes are the private writable home and /tmp of every container (the root filesystem
// is read-only).
func runtimeVolumes() ([]any, []any) {
	return []any{
			kube.Object{"name": "runtime-state", "emptyDir": kube.Object{"sizeLimit": "1Gi"}},
			kube.Object{"name": "runtime-temporary", "emptyDir": kube.Object{"sizeLimit": "64Mi"}},
		}, []any{
			mount("runtime-state", "/home/node", "home", false),
			mount("runtime-temporary", "/tmp", "tmp", false),
		}
}

// servicePrincipalVolume projects the Agent's service principal token (model-executing workloads
// only) when the configuration enables it.
func (d *Compute) servicePrincipalVolume() (kube.Object, kube.Object, bool) {
	if d.cfg.ServicePrincipalTokenMode != tokenModeProjected {
		return nil, nil, false
	}
	tok := kube.Object{"path": "token"}
	if d.cfg.ServicePrincipalAudience != "" {
		tok["audience"] = d.cfg.ServicePrincipalAudience
	}
	if d.cfg.ServicePrincipalExpiry > 0 {
		tok["expirationSeconds"] = d.cfg.ServicePrincipalExpiry
	}
	vol := kube.Object{"name": "openclaw-service-principal", "projected": kube.Object{
		"sources": []any{kube.Object{"serviceAccountToken": tok}},
	}}
	return vol, mount("openclaw-service-principal", servicePrincipalDir, "", true), true
}

// podTemplate wraps one container into the hardened Pod template (Pod Security restricted).
func podTemplate(labels map[string]string, annotations map[string]string, sa string, nodeSelector map[string]string, container kube.Object, volumes []any) kube.Object {
	spec := kube.Object{
		"serviceAccountName":           sa,
		"automountServiceAccountToken": false,
		"securityContext":              podSecurityContext(),
		"containers":                   []any{container},
		"volumes":                      volumes,
	}
	if len(nodeSelector) > 0 {
		spec["nodeSelector"] = nodeSelector
	}
	meta := kube.Object{"labels": labels}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	return kube.Object{"metadata": meta, "spec": spec}
}

func deployment(meta kube.Object, name string, template kube.Object) kube.Object {
	return kube.Object{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": meta,
		"spec": kube.Object{
			"replicas": 1,
			"strategy": kube.Object{"type": "Recreate"},
			"selector": kube.Object{"matchLabels": map[string]string{labelName: name}},
			"template": template,
		},
	}
}

// workloadEnv is the checked environment of one revision: Secret bindings (gateway only) and the
// model credential (model-executing container only), both by secretKeyRef.
type workloadEnv struct {
	gatewaySecrets []any
	model          []any
}

// gatewayDeployment is the Agent's gateway (embedded: its only workload), annotated and labelled
// for the revision whose template it carries.
func (d *Compute) gatewayDeployment(p *plan, we workloadEnv) kube.Object {
	podLabels := p.agentOwner.labels()
	podLabels[labelRevision] = p.rev.ID
	podLabels[labelWorkloadRole] = roleGateway
	podLabels[labelNetworkProfile] = networkProfile
	podLabels[labelName] = p.gateway

	volumes, mounts := runtimeVolumes()
	volumes = append(volumes, kube.Object{"name": "config", "configMap": kube.Object{
		"name": p.snapshot, "items": []any{kube.Object{"key": configKey, "path": configKey}},
	}})
	mounts = append(mounts, mount("config", configDir, "", true))
	if d.cfg.GatewayStorageClassName != "" {
		volumes = append(volumes, kube.Object{"name": "gateway-state", "persistentVolumeClaim": kube.Object{"claimName": gatewayStateClaimName(p.rev.AgentID)}})
		mounts = append(mounts,
			mount("gateway-state", stateDir+"/state", "state", false),
			mount("gateway-state", stateDir+"/agents/main/agent", "agent", false),
			mount("gateway-state", stateDir+"/media", "media", false))
		if p.dedicated {
			mounts = append(mounts, mount("gateway-state", stateDir+"/agents/main/sessions", "sessions", false))
		} else {
			mounts = append(mounts, mount("gateway-state", stateDir+"/workspace", "workspace", false))
		}
	}
	envs := []any{
		env("OPENCLAW_CONFIG_PATH", configDir+"/"+configKey),
		env("OPENCLAW_STATE_DIR", stateDir),
		env("OPENCLAW_GATEWAY_PORT", strconv.Itoa(d.cfg.GatewayPort)),
		env("OPENCLAW_AGENT_REVISION_ID", p.rev.ID),
		podUIDEnv(),
	}
	sa, nodeSelector := p.agent, d.cfg.NodeSelector
	if p.dedicated {
		envs = append(envs, env("APP_SERVER_URL", "ws://"+p.agent+"."+p.ns+".svc:"+strconv.Itoa(harnessPort)))
		sa, nodeSelector = p.gateway, d.cfg.GatewayNodeSelector
	} else if vol, m, ok := d.servicePrincipalVolume(); ok {
		volumes, mounts = append(volumes, vol), append(mounts, m)
	}
	envs = append(envs, we.gatewaySecrets...)
	if !p.dedicated {
		envs = append(envs, we.model...)
	}
	container := kube.Object{
		"name": "gateway", "image": d.cfg.GatewayImage, "imagePullPolicy": "IfNotPresent",
		"ports":           []any{kube.Object{"name": "http", "containerPort": d.cfg.GatewayPort, "protocol": "TCP"}},
		"env":             envs,
		"volumeMounts":    mounts,
		"securityContext": containerSecurityContext(),
		"readinessProbe": kube.Object{
			"httpGet": kube.Object{"path": "/readyz", "port": "http"}, "periodSeconds": 2,
		},
	}
	if r := resources(d.cfg.GatewayResources); len(r) > 0 {
		container["resources"] = r
	}
	meta := p.revisionAnnotations(p.agentOwner.metadata(p.gateway, p.ns, map[string]string{labelWorkloadRole: roleGateway}))
	tmpl := podTemplate(podLabels, map[string]string{annotationAgentRevisionID: p.rev.ID}, sa, nodeSelector, container, volumes)
	if !p.dedicated {
		tmpl = p.withWorkspaceSetup(tmpl, d.cfg.GatewayImage, resources(d.cfg.GatewayResources), d.embeddedWorkspaceMount(p), embeddedWorkspaceDir)
	}
	return deployment(meta, p.gateway, tmpl)
}

// harnessDeployment is the dedicated Codex Harness of the revision.
func (d *Compute) harnessDeployment(p *plan, we workloadEnv) kube.Object {
	podLabels := p.revOwner.labels()
	podLabels[labelWorkloadRole] = roleAgent
	podLabels[labelNetworkProfile] = networkProfile
	podLabels[labelName] = p.harness

	volumes, mounts := runtimeVolumes()
	volumes = append(volumes, kube.Object{"name": "workspace", "persistentVolumeClaim": kube.Object{"claimName": workspaceClaimName(p.rev.AgentID)}})
	mounts = append(mounts,
		mount("workspace", "/home/node/workspace", "workspace", false),
		mount("workspace", "/home/node/.codex/generated_images", "generated-images", false),
		mount("workspace", "/home/node/.codex/sessions", "codex-sessions", false))
	if vol, m, ok := d.servicePrincipalVolume(); ok {
		volumes, mounts = append(volumes, vol), append(mounts, m)
	}
	envs := []any{
		env("CODEX_HOME", "/home/node/.codex"),
		env("LOG_FORMAT", "json"),
		env("RUST_LOG", "info,codex_otel=off"),
		env("OPENCLAW_AGENT_REVISION_ID", p.rev.ID),
		podUIDEnv(),
	}
	envs = append(envs, we.model...)
	container := kube.Object{
		"name": "harness", "image": d.cfg.AgentImage, "imagePullPolicy": "IfNotPresent",
		"ports":           []any{kube.Object{"name": "websocket", "containerPort": harnessPort, "protocol": "TCP"}},
		"env":             envs,
		"volumeMounts":    mounts,
		"securityContext": containerSecurityContext(),
		// Without the private runtime status port (not in this subset) the Harness has no HTTP
		// readiness path; a listening app-server socket is the readiness signal.
		"readinessProbe": kube.Object{
			"tcpSocket": kube.Object{"port": "websocket"}, "periodSeconds": 2,
		},
	}
	if r := resources(d.cfg.AgentResources); len(r) > 0 {
		container["resources"] = r
	}
	meta := p.revisionAnnotations(p.revOwner.metadata(p.harness, p.ns, map[string]string{labelWorkloadRole: roleAgent}))
	tmpl := podTemplate(podLabels, map[string]string{annotationAgentRevisionID: p.rev.ID}, p.agent, d.cfg.NodeSelector, container, volumes)
	tmpl = p.withWorkspaceSetup(tmpl, d.cfg.AgentImage, resources(d.cfg.AgentResources), mount("workspace", dedicatedWorkspaceDir, "workspace", false), dedicatedWorkspaceDir)
	return deployment(meta, p.harness, tmpl)
}

// fixedEnvNames are the variables the driver sets itself; a Secret binding may not shadow them.
var fixedEnvNames = []string{
	"OPENCLAW_CONFIG_PATH", "OPENCLAW_STATE_DIR", "OPENCLAW_GATEWAY_PORT", "OPENCLAW_AGENT_REVISION_ID",
	"OPENCLAW_POD_UID", "APP_SERVER_URL", "CODEX_HOME", "LOG_FORMAT", "RUST_LOG",
	"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CODEX_ACCESS_TOKEN",
}

// gatewayService is the ClusterIP Service of the gateway, annotated for the revision that last
// wrote it (retire removes it only for that revision).
func (d *Compute) gatewayService(p *plan) kube.Object {
	return kube.Object{
		"apiVersion": "v1", "kind": "Service",
		"metadata": p.revisionAnnotations(p.agentOwner.metadata(p.gateway, p.ns, map[string]string{labelWorkloadRole: roleGateway})),
		"spec": kube.Object{
			"type":     "ClusterIP",
			"selector": map[string]string{labelName: p.gateway},
			"ports": []any{kube.Object{
				"name": "http", "protocol": "TCP", "port": d.cfg.GatewayPort, "targetPort": "http",
			}},
		},
	}
}

// agentService is the dedicated Harness Service; selector names the Harness Deployment it routes
// to, or plan.inactiveSelector. resourceVersion, when set, makes the apply a guarded switch.
func (p *plan) agentService(selector, resourceVersion string) kube.Object {
	meta := p.revisionAnnotations(p.agentOwner.metadata(p.agent, p.ns, map[string]string{labelWorkloadRole: roleAgent}))
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	return kube.Object{
		"apiVersion": "v1", "kind": "Service",
		"metadata": meta,
		"spec": kube.Object{
			"type":     "ClusterIP",
			"selector": map[string]string{labelName: selector},
			"ports": []any{kube.Object{
				"name": "websocket", "protocol": "TCP", "port": harnessPort, "targetPort": "websocket",
			}},
		},
	}
}
