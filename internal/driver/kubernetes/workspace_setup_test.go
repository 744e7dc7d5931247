package kubernetes

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/testkit/kubetest"
)

// runSetupScript runs the init container's script with /bin/sh, as the container does.
func runSetupScript(t *testing.T, workspace, revisionID, src string) {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", workspaceSetupScript, workspaceSetupContainer, workspace, revisionID, src).CombinedOutput()
	if err != nil {
		t.Fatalf("setup script: %v: %s", err, out)
	}
}

func readFile(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// TestWorkspaceSetupScript: the script writes each supplied file that is absent, never one that
// exists (or a symlink), then a marker; once the marker is there it writes nothing again, so a file
// the Agent changed or removed stays as the Agent left it.
func TestWorkspaceSetupScript(t *testing.T) {
	src, ws := t.TempDir(), filepath.Join(t.TempDir(), "workspace")
	for name, content := range map[string]string{"AGENTS.md": "Answer support questions.\r\n", "USER.md": "", "SOUL.md": "calm", "IDENTITY.md": "me"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "SOUL.md"), []byte("the Agent's own"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent", filepath.Join(ws, "IDENTITY.md")); err != nil {
		t.Fatal(err)
	}
	runSetupScript(t, ws, "rev_1", src)
	for name, want := range map[string]string{"AGENTS.md": "Answer support questions.\r\n", "USER.md": "", "SOUL.md": "the Agent's own"} {
		if got, ok := readFile(t, filepath.Join(ws, name)); !ok || got != want {
			t.Errorf("%s = %q (present %v), want %q", name, got, ok, want)
		}
	}
	if target, err := os.Readlink(filepath.Join(ws, "IDENTITY.md")); err != nil || target != "/nonexistent" {
		t.Errorf("the symlink was replaced: %q, %v", target, err)
	}
	if m, ok := readFile(t, filepath.Join(ws, workspaceSetupMarker)); !ok || m != "rev_1\n" {
		t.Fatalf("marker %q (present %v)", m, ok)
	}
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".occ-partial") {
			t.Errorf("a partial file is left: %s", e.Name())
		}
	}

	// The Agent edits one file and removes another; the Pod restarts: nothing is rewritten.
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("edited"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "USER.md")); err != nil {
		t.Fatal(err)
	}
	runSetupScript(t, ws, "rev_1", src)
	if got, _ := readFile(t, filepath.Join(ws, "AGENTS.md")); got != "edited" {
		t.Errorf("AGENTS.md rewritten: %q", got)
	}
	if _, ok := readFile(t, filepath.Join(ws, "USER.md")); ok {
		t.Error("a removed USER.md was written again")
	}

	// A fresh workspace that does not exist yet is created.
	fresh := filepath.Join(t.TempDir(), "a", "b")
	runSetupScript(t, fresh, "rev_2", src)
	if got, ok := readFile(t, filepath.Join(fresh, "SOUL.md")); !ok || got != "calm" {
		t.Errorf("fresh SOUL.md %q", got)
	}
}

// setupContainer returns the Pod template's workspace-setup init container, nil without one.
func setupContainer(t *testing.T, deployment kubetest.Object) kubetest.Object {
	t.Helper()
	inits := kubetest.Slice(deployment, "spec", "template", "spec", "initContainers")
	if len(inits) == 0 {
		return nil
	}
	if len(inits) != 1 || kubetest.Str(inits[0], "name") != workspaceSetupContainer {
		t.Fatalf("init containers %v", inits)
	}
	return inits[0]
}

// checkSetupContainer checks the init container: the fixed script, the workspace at dir through
// the main container's volume, the Secret read-only and nothing else (no environment, no model
// credential), hardened like the main container.
func checkSetupContainer(t *testing.T, deployment kubetest.Object, p *plan, image, volume, mountPath, dir string) {
	t.Helper()
	ctr := setupContainer(t, deployment)
	if ctr == nil {
		t.Fatal("no workspace-setup init container")
	}
	cmd, _ := kubetest.Field(ctr, "command").([]any)
	if kubetest.Str(ctr, "image") != image || len(cmd) != 7 || cmd[2] != workspaceSetupScript || cmd[4] != dir || cmd[5] != p.rev.ID || cmd[6] != workspaceSetupDir {
		t.Fatalf("init container %v", ctr)
	}
	if ctr["env"] != nil || ctr["envFrom"] != nil {
		t.Fatalf("the init container has an environment: %v", ctr)
	}
	mounts := kubetest.Slice(ctr, "volumeMounts")
	if len(mounts) != 2 || kubetest.Str(mounts[0], "name") != volume || kubetest.Str(mounts[0], "mountPath") != mountPath ||
		kubetest.Str(mounts[1], "name") != workspaceSetupVolume || kubetest.Field(mounts[1], "readOnly") != true {
		t.Fatalf("init container mounts %v", mounts)
	}
	if kubetest.Field(ctr, "securityContext", "readOnlyRootFilesystem") != true || kubetest.Field(ctr, "securityContext", "allowPrivilegeEscalation") != false {
		t.Fatalf("init container security context %v", ctr["securityContext"])
	}
	found := false
	for _, v := range kubetest.Slice(deployment, "spec", "template", "spec", "volumes") {
		if kubetest.Str(v, "name") == workspaceSetupVolume {
			found = kubetest.Str(v, "secret", "secretName") == p.workspaceSetup
		}
	}
	if !found {
		t.Fatal("no Secret volume of the revision's workspace files")
	}
	for _, c := range kubetest.Slice(deployment, "spec", "template", "spec", "containers") {
		for _, m := range kubetest.Slice(c, "volumeMounts") {
			if kubetest.Str(m, "name") == workspaceSetupVolume {
				t.Fatalf("container %s mounts the workspace files", kubetest.Str(c, "name"))
			}
		}
	}
}

// checkSetupSecret checks the revision's Secret: ours, per revision, immutable, the files as sent.
func checkSetupSecret(t *testing.T, c *kubetest.Cluster, namespace string, p *plan, files map[string]string) {
	t.Helper()
	sec := rtGet(t, c, kube.Secrets, namespace, p.workspaceSetup)
	if sec["immutable"] != true || kubetest.Str(sec, "metadata", "labels", labelRevision) != p.rev.ID ||
		kubetest.Str(sec, "metadata", "labels", labelAgent) != p.rev.AgentID {
		t.Fatalf("workspace setup Secret %v", sec["metadata"])
	}
	data, _ := sec["data"].(map[string]any)
	if len(data) != len(files) {
		t.Fatalf("Secret keys %v, want %v", data, files)
	}
	for name := range files {
		if _, ok := data[name]; !ok {
			t.Fatalf("Secret lacks %s", name)
		}
	}
}

// TestRevisionInitialWorkspaceFiles: the first revision's files reach the workspace owner through
// a per-revision Secret and one init container (embedded: the gateway, on its state claim or its
// home; dedicated: the Harness on the workspace claim), the contents appear in no ConfigMap,
// Deployment or Pod, the next revision has no init container, and retiring the first deletes its
// Secret.
func TestRevisionInitialWorkspaceFiles(t *testing.T) {
	c := kubetest.Shared(t)
	content := "Answer support questions. " + uuid.NewString()
	files := map[string]string{"AGENTS.md": content, "USER.md": ""}
	for _, tc := range []struct {
		name      string
		dedicated bool
		storage   string
	}{{"embedded", false, ""}, {"embedded-state-claim", false, "standard"}, {"dedicated", true, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestCompute(t, c, func(cfg *Config) { cfg.GatewayStorageClassName = tc.storage })
			ns := revTestNamespace()
			k8s := ensureTestNamespace(t, d, ns)
			agentID := rtAgentID()
			rc := rtModelKey(t, c, k8s)
			rev1 := revTestRevision(ns.ID, agentID, 1, tc.dedicated, driver.HarnessAuthAPIKey)
			rev1.InitialWorkspaceFiles = files
			p1 := newPlan(rev1, k8s)
			rtPrepareReady(t, d, rev1, rc)
			checkSetupSecret(t, c, k8s, p1, files)
			switch {
			case tc.dedicated:
				checkSetupContainer(t, rtGet(t, c, kube.Deployments, k8s, p1.harness), p1, d.cfg.AgentImage, "workspace", dedicatedWorkspaceDir, dedicatedWorkspaceDir)
				if setupContainer(t, rtGet(t, c, kube.Deployments, k8s, p1.gateway)) != nil {
					t.Fatal("the dedicated gateway got the workspace setup")
				}
			case tc.storage != "":
				checkSetupContainer(t, rtGet(t, c, kube.Deployments, k8s, p1.gateway), p1, d.cfg.GatewayImage, "gateway-state", embeddedWorkspaceDir, embeddedWorkspaceDir)
			default:
				checkSetupContainer(t, rtGet(t, c, kube.Deployments, k8s, p1.gateway), p1, d.cfg.GatewayImage, "runtime-state", "/home/node", embeddedWorkspaceDir)
			}
			rtNoValueAnywhere(t, c, k8s, content)
			if err := d.ActivateRevision(context.Background(), rev1, rc); err != nil {
				t.Fatalf("ActivateRevision 1: %v", err)
			}
			// A repeated prepare accepts its own Secret.
			rtPrepareOnce(t, d, rev1, rc)

			rev2 := revTestRevision(ns.ID, agentID, 2, tc.dedicated, driver.HarnessAuthAPIKey)
			p2 := newPlan(rev2, k8s)
			if tc.dedicated {
				if err := d.StopRevision(context.Background(), rev1, driver.StopOptions{}); err != nil {
					t.Fatalf("StopRevision 1: %v", err)
				}
			}
			rtPrepareReady(t, d, rev2, rc)
			owner := p2.gateway
			if tc.dedicated {
				owner = p2.harness
			}
			if setupContainer(t, rtGet(t, c, kube.Deployments, k8s, owner)) != nil {
				t.Fatal("revision 2 writes the initial workspace files again")
			}
			if rtExists(t, c, kube.Secrets, k8s, p2.workspaceSetup) {
				t.Fatal("revision 2 has a workspace setup Secret")
			}
			if err := d.RetireRevision(context.Background(), rev1); err != nil {
				t.Fatalf("RetireRevision 1: %v", err)
			}
			if rtExists(t, c, kube.Secrets, k8s, p1.workspaceSetup) {
				t.Fatal("the retired revision's workspace setup Secret is still there")
			}
		})
	}
}

// TestRevisionWorkspaceSetupRefusesForeignSecret: a Secret of the setup name that is not the
// revision's is refused, never adopted or overwritten.
func TestRevisionWorkspaceSetupRefusesForeignSecret(t *testing.T) {
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns)
	rev := revTestRevision(ns.ID, rtAgentID(), 1, false, driver.HarnessAuthAPIKey)
	rev.InitialWorkspaceFiles = map[string]string{"SOUL.md": "calm"}
	p := newPlan(rev, k8s)
	if _, err := c.Admin().Create(kube.Secrets.Path(k8s, ""), kubetest.Object{
		"apiVersion": "v1", "kind": "Secret", "metadata": kubetest.Object{"name": p.workspaceSetup},
		"stringData": map[string]string{"SOUL.md": "planted"},
	}); err != nil {
		t.Fatal(err)
	}
	_, err := d.PrepareRevision(context.Background(), rev, rtModelKey(t, c, k8s))
	rtWantCode(t, err, CodeOwnershipConflict)
	if _, stage := d.DescribePrepareFailure(err); stage != stageWorkspaceSetup {
		t.Fatalf("described at %s", stage)
	}
}

// asTestObject turns a built object into what the API server would return to the tests.
func asTestObject(t *testing.T, obj kube.Object) kubetest.Object {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out kubetest.Object
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWorkspaceSetupWorkloads checks the built Pod templates without an API server: the init
// container goes only to the workspace owner of a revision with files, never with the model
// credential.
func TestWorkspaceSetupWorkloads(t *testing.T) {
	key := driver.SecretRef{NamespaceName: "oce-x", Name: "model", Key: "value", UID: "u"}
	we := workloadEnv{model: []any{secretEnv("OPENAI_API_KEY", key)}}
	for _, storage := range []string{"", "standard"} {
		d := &Compute{cfg: Config{GatewayImage: "gateway:1", AgentImage: "agent:1", GatewayPort: 8080, GatewayStorageClassName: storage}}
		emb := revTestRevision("ns_1", "agt_1", 1, false, driver.HarnessAuthAPIKey)
		emb.InitialWorkspaceFiles = map[string]string{"AGENTS.md": "x"}
		p := newPlan(emb, "oce-x")
		gw := asTestObject(t, d.gatewayDeployment(p, we))
		volume, mountPath := "runtime-state", "/home/node"
		if storage != "" {
			volume, mountPath = "gateway-state", embeddedWorkspaceDir
		}
		checkSetupContainer(t, gw, p, "gateway:1", volume, mountPath, embeddedWorkspaceDir)
		rtOnlyContainerReads(t, gw, "gateway", key.Name)

		ded := revTestRevision("ns_1", "agt_1", 1, true, driver.HarnessAuthAPIKey)
		ded.InitialWorkspaceFiles = emb.InitialWorkspaceFiles
		pd := newPlan(ded, "oce-x")
		h := asTestObject(t, d.harnessDeployment(pd, we))
		checkSetupContainer(t, h, pd, "agent:1", "workspace", dedicatedWorkspaceDir, dedicatedWorkspaceDir)
		rtOnlyContainerReads(t, h, "harness", key.Name)
		if setupContainer(t, asTestObject(t, d.gatewayDeployment(pd, we))) != nil {
			t.Fatal("the dedicated gateway got the workspace setup")
		}

		later := revTestRevision("ns_1", "agt_1", 2, false, driver.HarnessAuthAPIKey)
		if setupContainer(t, asTestObject(t, d.gatewayDeployment(newPlan(later, "oce-x"), we))) != nil {
			t.Fatal("a revision without files got the workspace setup")
		}
	}
}
