package kubernetes

import (
	"context"
	"encoding/json"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// Typed views of the objects the revision operations read back.

type objectView struct {
	Metadata kube.Meta `json:"metadata"`
}

type deploymentView struct {
	Metadata kube.Meta `json:"metadata"`
	Spec     struct {
		Replicas *int64 `json:"replicas"`
		Template struct {
			Metadata kube.Meta `json:"metadata"`
		} `json:"template"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64 `json:"observedGeneration"`
		Replicas           int64 `json:"replicas"`
		UpdatedReplicas    int64 `json:"updatedReplicas"`
		ReadyReplicas      int64 `json:"readyReplicas"`
	} `json:"status"`
}

type serviceView struct {
	Metadata kube.Meta `json:"metadata"`
	Spec     struct {
		Selector map[string]string `json:"selector"`
	} `json:"spec"`
}

type endpointSliceView struct {
	Metadata  kube.Meta `json:"metadata"`
	Endpoints []struct {
		Conditions struct {
			Ready *bool `json:"ready"`
		} `json:"conditions"`
	} `json:"endpoints"`
}

type podView struct {
	Metadata kube.Meta `json:"metadata"`
	Status   struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"conditions"`
		InitContainerStatuses []containerStatusView `json:"initContainerStatuses"`
		ContainerStatuses     []containerStatusView `json:"containerStatuses"`
	} `json:"status"`
}

type containerStatusView struct {
	State struct {
		Waiting *struct {
			Reason string `json:"reason"`
		} `json:"waiting"`
	} `json:"state"`
}

// deploymentReady checks that a Deployment is ready: replicas > 0, the controller has observed the
// current generation and enough replicas are ready; a gateway must also be fully rolled out to
// exactly one replica.
func deploymentReady(v deploymentView, gateway bool) bool {
	if v.Spec.Replicas == nil || *v.Spec.Replicas <= 0 || v.Metadata.Terminating() {
		return false
	}
	want := *v.Spec.Replicas
	if v.Status.ObservedGeneration < v.Metadata.Generation || v.Status.ReadyReplicas < want {
		return false
	}
	if v.Spec.Template.Metadata.Labels[labelNetworkProfile] != networkProfile {
		return false
	}
	if gateway {
		return want == 1 && v.Status.Replicas == 1 && v.Status.UpdatedReplicas == 1 && v.Status.ReadyReplicas == 1
	}
	return true
}

// observe reports the readiness of a prepared revision. It never changes anything.
func (d *Compute) observe(ctx context.Context, p *plan) (driver.RevisionReadiness, error) {
	out := driver.RevisionReadiness{NamespaceID: p.rev.NamespaceID, AgentID: p.rev.AgentID, RevisionID: p.rev.ID}
	ready, err := d.workloadsReady(ctx, p)
	if err != nil || ready {
		out.Ready = ready
		return out, err
	}
	out.PendingReason, out.RuntimeFailure, err = d.podTrouble(ctx, p)
	return out, err
}

// current decodes the object of res named name into out: as this pass last listed or applied it,
// or else read now. found is false when it does not exist.
func (d *Compute) current(ctx context.Context, p *plan, res kube.Resource, name string, out any) (bool, error) {
	if raw, ok := p.live[res.Plural+"/"+name]; ok {
		return true, json.Unmarshal(raw, out)
	}
	return d.read(ctx, res, p.ns, name, out)
}

func (d *Compute) workloadsReady(ctx context.Context, p *plan) (bool, error) {
	var gw deploymentView
	found, err := d.current(ctx, p, kube.Deployments, p.gateway, &gw)
	if err != nil || !found {
		return false, err
	}
	if !p.agentOwner.owns(gw.Metadata) {
		return false, ownershipError("Deployment", p.gateway)
	}
	// The gateway is per Agent: it counts only while it carries this revision's template.
	if gw.Metadata.Annotations[annotationAgentRevisionID] != p.rev.ID || gw.Spec.Template.Metadata.Labels[labelRevision] != p.rev.ID {
		return false, nil
	}
	if !deploymentReady(gw, true) {
		return false, nil
	}
	if p.dedicated {
		var h deploymentView
		found, err := d.current(ctx, p, kube.Deployments, p.harness, &h)
		if err != nil || !found {
			return false, err
		}
		if !p.revOwner.owns(h.Metadata) {
			return false, ownershipError("Deployment", p.harness)
		}
		if !deploymentReady(h, false) {
			return false, nil
		}
	}
	return d.serviceHasReadyEndpoint(ctx, p)
}

// serviceHasReadyEndpoint reports whether an EndpointSlice of the gateway Service (labelled with
// its name and owner-referenced to its UID, so a stale slice of a deleted Service never counts)
// lists a ready endpoint.
func (d *Compute) serviceHasReadyEndpoint(ctx context.Context, p *plan) (bool, error) {
	var svc serviceView
	found, err := d.current(ctx, p, kube.Services, p.gateway, &svc)
	if err != nil || !found {
		return false, err
	}
	if !p.agentOwner.owns(svc.Metadata) {
		return false, ownershipError("Service", p.gateway)
	}
	var slices struct {
		Items []endpointSliceView `json:"items"`
	}
	if err := d.client.List(ctx, kube.EndpointSlices.Path(p.ns, ""), kube.Selector(labelServiceName, p.gateway), &slices); err != nil {
		return false, classify(err)
	}
	for _, s := range slices.Items {
		owned := false
		for _, ref := range s.Metadata.OwnerReferences {
			if ref.Kind == "Service" && ref.UID == svc.Metadata.UID {
				owned = true
			}
		}
		if !owned {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				return true, nil
			}
		}
	}
	return false, nil
}

// podTrouble explains an unready revision from its Pods: a Pod the scheduler cannot place gives
// WORKLOAD_UNSCHEDULABLE; a container in CrashLoopBackOff gives RuntimeFailure UNAVAILABLE
// evidence. Only this revision's Pods count (gateway and Harness Pods carry the revision label).
func (d *Compute) podTrouble(ctx context.Context, p *plan) (string, *driver.RuntimeFailure, error) {
	var pods struct {
		Items []podView `json:"items"`
	}
	sel := kube.Selector(labelManagedBy, managedByValue, labelNamespace, p.rev.NamespaceID, labelAgent, p.rev.AgentID, labelRevision, p.rev.ID)
	if err := d.client.List(ctx, kube.Pods.Path(p.ns, ""), sel, &pods); err != nil {
		return "", nil, classify(err)
	}
	var pending string
	var failure *driver.RuntimeFailure
	for _, pod := range pods.Items {
		if pod.Metadata.Terminating() {
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == "PodScheduled" && c.Status == "False" && c.Reason == "Unschedulable" {
				pending = driver.PendingWorkloadUnschedulable
			}
		}
		if failure == nil && crashLooping(pod) {
			component := "gateway"
			if pod.Metadata.Labels[labelWorkloadRole] == roleAgent {
				component = "harness"
			}
			failure = &driver.RuntimeFailure{
				Component: component, Check: "container",
				CheckedAt: time.Now().UTC().Format(time.RFC3339),
				Code:      driver.RuntimeUnavailable,
			}
		}
	}
	return pending, failure, nil
}

func crashLooping(pod podView) bool {
	for _, list := range [][]containerStatusView{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
				return true
			}
		}
	}
	return false
}
