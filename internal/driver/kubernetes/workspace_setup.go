package kubernetes

import (
	"context"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Initial workspace files. The first revision of an Agent may carry files staged at its creation.
// They travel in an immutable per-revision Secret (the contents are the Agent's private prompt
// material: a Secret is readable only by who may read Secrets, unlike a ConfigMap), mounted only
// into one init container of the workload that owns the workspace (embedded: the gateway;
// dedicated: the Harness). The init container copies each file that is absent from the workspace,
// then writes a marker; with the marker present it does nothing, so a file the Agent changed or
// removed since is never written again. Later revisions carry no files and get no init container.

const (
	workspaceSetupContainer = "workspace-setup"
	workspaceSetupVolume    = "workspace-setup"
	workspaceSetupDir       = "/var/run/occ/workspace-setup"
	// workspaceSetupMarker, in the workspace, records that the initial files were applied.
	workspaceSetupMarker = ".occ-initial-workspace-files"
	// embeddedWorkspaceDir is embedded OpenClaw's workspace (under its state directory).
	embeddedWorkspaceDir  = stateDir + "/workspace"
	dedicatedWorkspaceDir = "/home/node/workspace"
)

// workspaceSetupScript is fixed: file contents reach it only through the mounted Secret, never
// through arguments or the environment. $1 is the workspace, $2 the revision id for the marker, $3
// the mounted files. Each file is written under a temporary name and renamed, so a Pod stopped
// midway leaves no partial file under the real name (the next start copies it again).
const workspaceSetupScript = `set -eu
ws="$1"; src="$3"; marker="$ws/` + workspaceSetupMarker + `"
mkdir -p "$ws"
if [ -e "$marker" ] || [ -L "$marker" ]; then exit 0; fi
for f in AGENTS.md SOUL.md IDENTITY.md USER.md; do
  if [ -f "$src/$f" ] && [ ! -e "$ws/$f" ] && [ ! -L "$ws/$f" ]; then
    cp "$src/$f" "$ws/.$f.occ-partial"
    mv -f "$ws/.$f.occ-partial" "$ws/$f"
  fi
done
printf '%s\n' "$2" > "$marker.occ-partial"
mv -f "$marker.occ-partial" "$marker"
`

// workspaceSetupSecretName names the per-revision Secret of the initial workspace files.
func workspaceSetupSecretName(agentID, revisionID string) string {
	return "workspace-setup-" + agentHash(agentID) + "-rev-" + revisionHash(revisionID)
}

// hasWorkspaceSetup reports whether the revision writes initial workspace files.
func (p *plan) hasWorkspaceSetup() bool { return len(p.rev.InitialWorkspaceFiles) > 0 }

// workspaceSetupFiles are the revision's files under the names drivers know, nothing else.
func (p *plan) workspaceSetupFiles() map[string]string {
	out := map[string]string{}
	for _, name := range driver.WorkspaceFileNames {
		if v, ok := p.rev.InitialWorkspaceFiles[name]; ok {
			out[name] = v
		}
	}
	return out
}

func (p *plan) workspaceSetupSecret() kube.Object {
	role := roleGateway
	if p.dedicated {
		role = roleAgent
	}
	return kube.Object{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   p.revOwner.metadata(p.workspaceSetup, p.ns, map[string]string{labelWorkloadRole: role}),
		"type":       "Opaque",
		"immutable":  true,
		"stringData": p.workspaceSetupFiles(),
	}
}

type setupSecretView struct {
	Metadata  kube.Meta           `json:"metadata"`
	Immutable *bool               `json:"immutable"`
	Data      map[string]presence `json:"data"`
}

// ensureWorkspaceSetup creates the revision's Secret once (the worker may create Secrets but not
// patch them); an existing one must be ours, immutable and hold the same file names.
func (d *Compute) ensureWorkspaceSetup(ctx context.Context, p *plan) error {
	if !p.hasWorkspaceSetup() {
		return nil
	}
	var v setupSecretView
	found, err := d.read(ctx, kube.Secrets, p.ns, p.workspaceSetup, &v)
	if err != nil {
		return err
	}
	if !found {
		err := d.client.Create(ctx, kube.Secrets.Path(p.ns, ""), p.workspaceSetupSecret(), nil)
		if kube.IsConflict(err) {
			return errPending // created meanwhile: the next pass checks it
		}
		return classify(err)
	}
	want := p.workspaceSetupFiles()
	if !p.revOwner.owns(v.Metadata) {
		return ownershipError("Secret", p.workspaceSetup)
	}
	if v.Metadata.Terminating() {
		return errPending
	}
	if v.Immutable == nil || !*v.Immutable || len(v.Data) != len(want) {
		return ownershipError("Secret", p.workspaceSetup)
	}
	for name := range want {
		if _, ok := v.Data[name]; !ok {
			return ownershipError("Secret", p.workspaceSetup)
		}
	}
	return nil
}

// withWorkspaceSetup adds the init container and its Secret volume to a Pod template whose main
// container mounts the workspace with workspaceMount at workspaceDir. image and res are the main
// container's (the init container needs only a POSIX shell, which the runtime images have).
func (p *plan) withWorkspaceSetup(tmpl kube.Object, image string, res kube.Object, workspaceMount kube.Object, workspaceDir string) kube.Object {
	if !p.hasWorkspaceSetup() {
		return tmpl
	}
	spec := tmpl["spec"].(kube.Object)
	spec["volumes"] = append(spec["volumes"].([]any), kube.Object{"name": workspaceSetupVolume, "secret": kube.Object{
		"secretName": p.workspaceSetup, "defaultMode": 0o440,
	}})
	ctr := kube.Object{
		"name": workspaceSetupContainer, "image": image, "imagePullPolicy": "IfNotPresent",
		"command":         []any{"/bin/sh", "-c", workspaceSetupScript, workspaceSetupContainer, workspaceDir, p.rev.ID, workspaceSetupDir},
		"volumeMounts":    []any{workspaceMount, mount(workspaceSetupVolume, workspaceSetupDir, "", true)},
		"securityContext": containerSecurityContext(),
	}
	if len(res) > 0 {
		ctr["resources"] = res
	}
	spec["initContainers"] = []any{ctr}
	return tmpl
}

// embeddedWorkspaceMount is the mount under which embedded OpenClaw's workspace lives: its private
// state claim when configured, otherwise the Pod-local home.
func (d *Compute) embeddedWorkspaceMount(p *plan) kube.Object {
	if d.cfg.GatewayStorageClassName != "" {
		return mount("gateway-state", embeddedWorkspaceDir, "workspace", false)
	}
	return mount("runtime-state", "/home/node", "home", false)
}
