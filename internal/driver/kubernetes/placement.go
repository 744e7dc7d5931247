package kubernetes

import (
	"context"

	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// tenantNamespace is the Kubernetes namespace that holds an OCC Namespace's objects.
type tenantNamespace struct {
	Name     string
	UID      string
	External bool // adopted (existingNamespace), never deleted by the driver
	Active   bool // status.phase Active and not terminating
	Meta     kube.Meta
}

type namespaceView struct {
	Metadata kube.Meta `json:"metadata"`
	Status   struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

func (v namespaceView) tenant() *tenantNamespace {
	return &tenantNamespace{
		Name:     v.Metadata.Name,
		UID:      v.Metadata.UID,
		External: v.Metadata.Annotations[annotationNamespaceLifecycle] == lifecycleExternal,
		Active:   v.Status.Phase == "Active" && !v.Metadata.Terminating(),
		Meta:     v.Metadata,
	}
}

// findTenantNamespace discovers the namespace labelled for namespaceID:
// nil when there is none, an ownership failure when several claim it or the one found does not
// carry the ownership annotation.
func findTenantNamespace(ctx context.Context, c *kube.Client, namespaceID string) (*tenantNamespace, error) {
	var list struct {
		Items []namespaceView `json:"items"`
	}
	if err := c.List(ctx, kube.Namespaces.Path("", ""), kube.Selector(labelNamespace, namespaceID), &list); err != nil {
		return nil, classify(err)
	}
	switch len(list.Items) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, ownershipError("Namespace", "for "+namespaceID)
	}
	v := list.Items[0]
	o := owner{namespaceID: namespaceID}
	if !o.owns(v.Metadata) && !(v.Metadata.Annotations[annotationNamespaceLifecycle] == lifecycleExternal && v.Metadata.Labels[labelNamespace] == namespaceID && v.Metadata.Annotations[annotationNamespaceID] == namespaceID) {
		return nil, ownershipError("Namespace", v.Metadata.Name)
	}
	return v.tenant(), nil
}
