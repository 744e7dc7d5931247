package kubernetes

import (
	"context"
	"slices"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Ownership labels and annotations. Raw platform ids go
// into labels; every read of an owned object verifies all expected labels and annotations.
const (
	labelManagedBy        = "app.kubernetes.io/managed-by"
	managedByValue        = "openclaw-enterprise"
	labelNamespace        = "openclaw.dev/namespace"
	labelGatewayNamespace = "openclaw.dev/gateway-namespace"
	labelAgent            = "openclaw.dev/agent"
	labelRevision         = "openclaw.dev/revision"
	labelServicePrincipal = "openclaw.dev/service-principal"
	labelConfiguration    = "openclaw.dev/configuration"
	labelSecret           = "openclaw.dev/secret"
	labelWorkloadRole     = "openclaw.dev/workload-role"
	labelNetworkProfile   = "openclaw.dev/network-profile"
	labelName             = "app.kubernetes.io/name"
	labelMetadataName     = "kubernetes.io/metadata.name"
	labelServiceName      = "kubernetes.io/service-name"

	annotationNamespaceID        = "openclaw.dev/namespace-id"
	annotationAgentID            = "openclaw.dev/agent-id"
	annotationRevisionID         = "openclaw.dev/revision-id"
	annotationServicePrincipalID = "openclaw.dev/service-principal-id"
	annotationNamespaceLifecycle = "openclaw.dev/namespace-lifecycle"
	annotationAgentRevision      = "openclaw.dev/agent-revision"
	annotationAgentRevisionID    = "openclaw.dev/agent-revision-id"

	lifecycleExternal  = "external"
	networkProfile     = "broad-egress-v1"
	roleGateway        = "gateway"
	roleAgent          = "agent"
	pssLevelRestricted = "restricted"
)

// CodeOwnershipConflict is the code of a refused unowned object (KUBERNETES_OWNERSHIP_CONFLICT).
const CodeOwnershipConflict = "KUBERNETES_OWNERSHIP_CONFLICT"

// owner is the ownership an object carries.
type owner struct {
	namespaceID, agentID, revisionID, servicePrincipalID string
}

// labels returns the ownership labels of o.
func (o owner) labels() map[string]string {
	l := map[string]string{labelManagedBy: managedByValue, labelNamespace: o.namespaceID}
	if o.agentID != "" {
		l[labelAgent] = o.agentID
	}
	if o.revisionID != "" {
		l[labelRevision] = o.revisionID
	}
	if o.servicePrincipalID != "" {
		l[labelServicePrincipal] = o.servicePrincipalID
	}
	return l
}

// annotations returns the ownership annotations of o.
func (o owner) annotations() map[string]string {
	a := map[string]string{annotationNamespaceID: o.namespaceID}
	if o.agentID != "" {
		a[annotationAgentID] = o.agentID
	}
	if o.revisionID != "" {
		a[annotationRevisionID] = o.revisionID
	}
	if o.servicePrincipalID != "" {
		a[annotationServicePrincipalID] = o.servicePrincipalID
	}
	return a
}

// owns reports whether m carries every ownership label and annotation of o.
func (o owner) owns(m kube.Meta) bool {
	for k, v := range o.labels() {
		if m.Labels[k] != v {
			return false
		}
	}
	for k, v := range o.annotations() {
		if m.Annotations[k] != v {
			return false
		}
	}
	return true
}

// metadata returns an object's metadata with o's ownership plus extra labels.
func (o owner) metadata(name, namespace string, extraLabels map[string]string) kube.Object {
	labels := o.labels()
	for k, v := range extraLabels {
		labels[k] = v
	}
	m := kube.Object{"name": name, "labels": labels, "annotations": o.annotations()}
	if namespace != "" {
		m["namespace"] = namespace
	}
	return m
}

// ownershipError refuses an object that exists but is not provably ours.
func ownershipError(kind, name string) error {
	return &driver.PermanentError{Code: CodeOwnershipConflict, Reason: "Refusing unowned Kubernetes " + kind + " " + name + "."}
}

// deleteOwned deletes the objects of res in namespace that match selector and that o provably
// owns, except those named in keep, each with its UID as precondition. An object already gone, or
// replaced since the list (409), is passed over. Errors are client errors, classified.
func deleteOwned(ctx context.Context, c *kube.Client, res kube.Resource, namespace, selector string, o owner, keep []string) error {
	var list struct {
		Items []objectView `json:"items"`
	}
	if err := c.List(ctx, res.Path(namespace, ""), selector, &list); err != nil {
		return classify(err)
	}
	for _, it := range list.Items {
		if slices.Contains(keep, it.Metadata.Name) || !o.owns(it.Metadata) {
			continue // kept, or labelled like ours but not provably ours: never delete it
		}
		err := c.Delete(ctx, res.Path(namespace, it.Metadata.Name), it.Metadata.UID, "")
		if err != nil && !kube.IsNotFound(err) && !kube.IsConflict(err) {
			return classify(err)
		}
	}
	return nil
}
