package kube

import (
	"net/url"
	"strings"
)

// Object is a Kubernetes object as the drivers build it: plain JSON.
type Object = map[string]any

// Meta is the part of metadata the drivers read back.
type Meta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	Generation        int64             `json:"generation"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	DeletionTimestamp *string           `json:"deletionTimestamp"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences"`
}

// OwnerReference names an owning object.
type OwnerReference struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// Terminating reports whether the object is being deleted.
func (m Meta) Terminating() bool { return m.DeletionTimestamp != nil }

// Resource locates a kind: its API group/version and plural resource name.
type Resource struct {
	GroupVersion string // "v1", "apps/v1", "networking.k8s.io/v1", ...
	Plural       string
	Namespaced   bool
}

// The resources the drivers manage.
var (
	Namespaces      = Resource{"v1", "namespaces", false}
	ConfigMaps      = Resource{"v1", "configmaps", true}
	Secrets         = Resource{"v1", "secrets", true}
	ServiceAccounts = Resource{"v1", "serviceaccounts", true}
	Services        = Resource{"v1", "services", true}
	Pods            = Resource{"v1", "pods", true}
	Events          = Resource{"v1", "events", true}
	PVCs            = Resource{"v1", "persistentvolumeclaims", true}
	ResourceQuotas  = Resource{"v1", "resourcequotas", true}
	LimitRanges     = Resource{"v1", "limitranges", true}
	Deployments     = Resource{"apps/v1", "deployments", true}
	NetworkPolicies = Resource{"networking.k8s.io/v1", "networkpolicies", true}
	EndpointSlices  = Resource{"discovery.k8s.io/v1", "endpointslices", true}
)

// Path returns the URL path of one object (name != "") or of the collection in namespace.
func (r Resource) Path(namespace, name string) string {
	var b strings.Builder
	if strings.Contains(r.GroupVersion, "/") {
		b.WriteString("/apis/")
	} else {
		b.WriteString("/api/")
	}
	b.WriteString(r.GroupVersion)
	if r.Namespaced {
		b.WriteString("/namespaces/")
		b.WriteString(url.PathEscape(namespace))
	}
	b.WriteString("/")
	b.WriteString(r.Plural)
	if name != "" {
		b.WriteString("/")
		b.WriteString(url.PathEscape(name))
	}
	return b.String()
}

// Selector renders matchLabels as a label selector string, keys sorted by the caller's order.
func Selector(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, pairs[i]+"="+pairs[i+1])
	}
	return strings.Join(parts, ",")
}
