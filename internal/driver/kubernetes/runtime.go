package kubernetes

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/runtimelog"
)

// Runtime visibility through the API server only: the revision's own Pods (found by the labels the
// driver put on their templates), their Events, and pods/log. Every string that came from the
// cluster goes through runtimelog (Build for lines, Clean for the rest) before it leaves.

var (
	_ driver.RuntimeDescriber   = (*Compute)(nil)
	_ driver.RuntimeLogReader   = (*Compute)(nil)
	_ driver.RuntimeDiagnoser   = (*Compute)(nil)
	_ driver.RuntimeImageReader = (*Compute)(nil)
)

// Container names of the log sources (workload.go).
const (
	gatewayContainer = "gateway"
	harnessContainer = "harness"
)

// logRetention is the fixed retention sentence of every Kubernetes log source.
const logRetention = "Kubernetes keeps the output of each container's current instance and of its previous instance " +
	"(after a restart) only; older output is gone."

// Codes of diagnostic checks that did not succeed.
const (
	CodeNoPod                  = driver.SourceUnavailableNoPod
	CodePodPending             = "POD_PENDING"
	CodeContainerStatusUnknown = "CONTAINER_STATUS_UNKNOWN"
	CodeContainersNotReady     = "CONTAINERS_NOT_READY"
	CodeCrashLoop              = "CONTAINER_CRASH_LOOP"
	CodeImagePull              = "IMAGE_PULL_FAILED"
	CodeServiceMissing         = "GATEWAY_SERVICE_MISSING"
	CodeNoReadyEndpoint        = "GATEWAY_NO_READY_ENDPOINT"
)

// Names of the diagnostic checks.
const (
	checkPodsScheduled    = "pods-scheduled"
	checkImagePull        = "image-pull"
	checkNoCrashLoop      = "no-crash-loop"
	checkContainersReady  = "containers-ready"
	checkServiceEndpoints = "gateway-service-endpoints"
)

// Waiting reasons of a container whose image cannot be pulled.
var imagePullReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable"}

type runtimePodView struct {
	Metadata struct {
		kube.Meta
		CreationTimestamp *time.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName   string          `json:"nodeName"`
		Containers []containerSpec `json:"containers"`
		Volumes    []struct {
			Secret *struct {
				SecretName string `json:"secretName"`
			} `json:"secret"`
			Projected *struct {
				Sources []struct {
					Secret *struct {
						Name string `json:"name"`
					} `json:"secret"`
				} `json:"sources"`
			} `json:"projected"`
		} `json:"volumes"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"conditions"`
		ContainerStatuses []runtimeContainerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type containerSpec struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	Env   []struct {
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `json:"name"`
			} `json:"secretKeyRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	EnvFrom []struct {
		SecretRef *struct {
			Name string `json:"name"`
		} `json:"secretRef"`
	} `json:"envFrom"`
}

type runtimeContainerStatus struct {
	Name         string             `json:"name"`
	Ready        bool               `json:"ready"`
	RestartCount int                `json:"restartCount"`
	Image        string             `json:"image"`
	ImageID      string             `json:"imageID"`
	State        containerStateView `json:"state"`
	LastState    containerStateView `json:"lastState"`
}

type containerStateView struct {
	Waiting *struct {
		Reason string `json:"reason"`
	} `json:"waiting"`
	Running *struct {
		StartedAt *time.Time `json:"startedAt"`
	} `json:"running"`
	Terminated *struct {
		ExitCode   int        `json:"exitCode"`
		Signal     int        `json:"signal"`
		Reason     string     `json:"reason"`
		StartedAt  *time.Time `json:"startedAt"`
		FinishedAt *time.Time `json:"finishedAt"`
	} `json:"terminated"`
}

func (p *runtimePodView) condition(typ string) (status, reason string) {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

func (p *runtimePodView) containerStatus(name string) *runtimeContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// revisionPods are the revision's Pods in its tenant namespace, gateway first, newest first within
// a role, at most driver.MaxRuntimePods. A Pod counts only when every label and annotation the
// driver put on the revision's Pod templates is there; ns is "" when the tenant namespace is gone.
func (d *Compute) revisionPods(ctx context.Context, rev driver.Revision) (ns string, pods []runtimePodView, err error) {
	if !d.pinned(rev) {
		return "", nil, mismatchError()
	}
	tn, err := findTenantNamespace(ctx, d.client, rev.NamespaceID)
	if err != nil || tn == nil {
		return "", nil, runtimeError(err)
	}
	p := newPlan(rev, tn.Name)
	var list struct {
		Items []runtimePodView `json:"items"`
	}
	sel := kube.Selector(labelManagedBy, managedByValue, labelNamespace, rev.NamespaceID, labelAgent, rev.AgentID, labelRevision, rev.ID)
	if err := d.client.List(ctx, kube.Pods.Path(p.ns, ""), sel, &list); err != nil {
		return "", nil, runtimeError(err)
	}
	for _, pod := range list.Items {
		if p.ownsPod(pod.Metadata.Meta) {
			pods = append(pods, pod)
		}
	}
	slices.SortStableFunc(pods, func(a, b runtimePodView) int {
		if ra, rb := a.Metadata.Labels[labelWorkloadRole], b.Metadata.Labels[labelWorkloadRole]; ra != rb {
			if ra == roleGateway {
				return -1
			}
			return 1
		}
		if ta, tb := a.Metadata.Terminating(), b.Metadata.Terminating(); ta != tb {
			if tb {
				return -1
			}
			return 1
		}
		if c := newest(a.Metadata.CreationTimestamp, b.Metadata.CreationTimestamp); c != 0 {
			return c
		}
		return strings.Compare(a.Metadata.Name, b.Metadata.Name)
	})
	if len(pods) > driver.MaxRuntimePods {
		pods = pods[:driver.MaxRuntimePods]
	}
	return p.ns, pods, nil
}

// newest orders a before b when a is the later time (nil last).
func newest(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	case a.After(*b):
		return -1
	case b.After(*a):
		return 1
	}
	return 0
}

// ownsPod reports whether m is a Pod of one of the revision's workloads: the gateway Pod carrying
// this revision's template, or (dedicated) this revision's Harness Pod.
func (p *plan) ownsPod(m kube.Meta) bool {
	for k, v := range p.agentOwner.labels() {
		if m.Labels[k] != v {
			return false
		}
	}
	if m.Labels[labelRevision] != p.rev.ID || m.Annotations[annotationAgentRevisionID] != p.rev.ID ||
		m.Labels[labelNetworkProfile] != networkProfile {
		return false
	}
	switch m.Labels[labelWorkloadRole] {
	case roleGateway:
		return m.Labels[labelName] == p.gateway
	case roleAgent:
		return p.dedicated && m.Labels[labelName] == p.harness
	}
	return false
}

// sourceOf is the log source of a revision Pod and the container that holds its output.
func sourceOf(pod *runtimePodView) (source, container string) {
	if pod.Metadata.Labels[labelWorkloadRole] == roleAgent {
		return driver.LogSourceAgent, harnessContainer
	}
	return driver.LogSourceGateway, gatewayContainer
}

// DescribeRuntime implements driver.RuntimeDescriber.
func (d *Compute) DescribeRuntime(ctx context.Context, rev driver.Revision) (driver.RuntimeView, error) {
	ns, pods, err := d.revisionPods(ctx, rev)
	if err != nil {
		return driver.RuntimeView{}, err
	}
	secrets := newSecretValues(d, ns)
	view := driver.RuntimeView{Pods: []driver.RuntimePod{}}
	for i := range pods {
		pod := &pods[i]
		known, err := secrets.of(ctx, pod)
		if err != nil {
			return driver.RuntimeView{}, err
		}
		events, err := d.podEvents(ctx, ns, pod, known)
		if err != nil {
			return driver.RuntimeView{}, err
		}
		view.Pods = append(view.Pods, describePod(pod, events, known))
	}
	view.Sources = sources(rev, pods)
	return view, nil
}

func describePod(pod *runtimePodView, events []driver.RuntimeEvent, known []string) driver.RuntimePod {
	source, _ := sourceOf(pod)
	ready, _ := pod.condition("Ready")
	out := driver.RuntimePod{
		Name: pod.Metadata.Name, UID: pod.Metadata.UID, Role: source,
		Phase: clean(pod.Status.Phase, known, driver.MaxEventReasonBytes), Ready: ready == "True",
		CreatedAt: utc(pod.Metadata.CreationTimestamp), Events: events,
		Containers: []driver.RuntimeContainer{},
	}
	for _, spec := range pod.Spec.Containers {
		if len(out.Containers) == driver.MaxRuntimeContainers {
			break
		}
		c := driver.RuntimeContainer{Name: spec.Name, State: driver.ContainerUnknown, Image: imageRef(spec.Image)}
		if cs := pod.containerStatus(spec.Name); cs != nil {
			c.Ready, c.RestartCount = cs.Ready, cs.RestartCount
			if cs.Image != "" {
				c.Image = imageRef(cs.Image)
			}
			c.ImageID = imageRef(cs.ImageID)
			switch st := cs.State; {
			case st.Waiting != nil:
				c.State, c.Reason = driver.ContainerWaiting, clean(st.Waiting.Reason, known, driver.MaxEventReasonBytes)
			case st.Running != nil:
				c.State, c.StartedAt = driver.ContainerRunning, utc(st.Running.StartedAt)
			case st.Terminated != nil:
				c.State, c.Reason = driver.ContainerTerminated, clean(st.Terminated.Reason, known, driver.MaxEventReasonBytes)
				c.StartedAt = utc(st.Terminated.StartedAt)
			}
			if t := cs.LastState.Terminated; t != nil {
				c.LastTermination = &driver.ContainerTermination{
					Reason: clean(t.Reason, known, driver.MaxEventReasonBytes), ExitCode: t.ExitCode, Signal: t.Signal,
					StartedAt: utc(t.StartedAt), FinishedAt: utc(t.FinishedAt),
				}
			}
		}
		out.Containers = append(out.Containers, c)
	}
	return out
}

// sources says where each of the revision's log sources can be read.
func sources(rev driver.Revision, pods []runtimePodView) []driver.RuntimeLogSource {
	ids := []string{driver.LogSourceGateway}
	if rev.ExecutionMode == driver.ExecutionDedicated {
		ids = append(ids, driver.LogSourceAgent)
	}
	var out []driver.RuntimeLogSource
	for _, id := range ids {
		s := driver.RuntimeLogSource{ID: id, Retention: logRetention, Pods: []driver.RuntimeLogSourcePod{}}
		for i := range pods {
			source, container := sourceOf(&pods[i])
			if source != id {
				continue
			}
			sp := driver.RuntimeLogSourcePod{Name: pods[i].Metadata.Name, UID: pods[i].Metadata.UID, Container: container}
			if cs := pods[i].containerStatus(container); cs != nil {
				sp.RestartCount = cs.RestartCount
			}
			s.Pods = append(s.Pods, sp)
		}
		s.Available = len(s.Pods) > 0
		if !s.Available {
			s.UnavailableCode = driver.SourceUnavailableNoPod
		}
		out = append(out, s)
	}
	return out
}

type eventView struct {
	Metadata struct {
		CreationTimestamp *time.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	InvolvedObject struct {
		FieldPath string `json:"fieldPath"`
	} `json:"involvedObject"`
	Type           string     `json:"type"`
	Reason         string     `json:"reason"`
	Message        string     `json:"message"`
	Count          int        `json:"count"`
	FirstTimestamp *time.Time `json:"firstTimestamp"`
	LastTimestamp  *time.Time `json:"lastTimestamp"`
	EventTime      *time.Time `json:"eventTime"`
	Series         *struct {
		Count            int        `json:"count"`
		LastObservedTime *time.Time `json:"lastObservedTime"`
	} `json:"series"`
}

// lastObserved is when the event was last seen, from the newest field a reporter fills.
func (e *eventView) lastObserved() *time.Time {
	for _, t := range []*time.Time{seriesTime(e), e.LastTimestamp, e.EventTime, e.FirstTimestamp, e.Metadata.CreationTimestamp} {
		if t != nil && !t.IsZero() {
			return t
		}
	}
	return nil
}

func seriesTime(e *eventView) *time.Time {
	if e.Series == nil {
		return nil
	}
	return e.Series.LastObservedTime
}

// containerFieldPath matches an Event's involvedObject.fieldPath naming a container.
var containerFieldPath = regexp.MustCompile(`^spec\.(?:initContainers|containers|ephemeralContainers)\{([^{}]+)\}$`)

// podEvents lists the Events about one Pod (by its UID), newest first, at most
// driver.MaxPodEvents, with reasons and messages cleaned.
func (d *Compute) podEvents(ctx context.Context, ns string, pod *runtimePodView, known []string) ([]driver.RuntimeEvent, error) {
	var list struct {
		Items []eventView `json:"items"`
	}
	q := url.Values{"fieldSelector": {"involvedObject.uid=" + pod.Metadata.UID}}
	if err := d.client.Query(ctx, kube.Events.Path(ns, ""), q, &list); err != nil {
		return nil, runtimeError(err)
	}
	slices.SortStableFunc(list.Items, func(a, b eventView) int { return newest(a.lastObserved(), b.lastObserved()) })
	if len(list.Items) > driver.MaxPodEvents {
		list.Items = list.Items[:driver.MaxPodEvents]
	}
	out := make([]driver.RuntimeEvent, 0, len(list.Items))
	for i := range list.Items {
		e := &list.Items[i]
		ev := driver.RuntimeEvent{
			Type: clean(e.Type, known, driver.MaxEventReasonBytes), Reason: clean(e.Reason, known, driver.MaxEventReasonBytes),
			Message: clean(e.Message, known, driver.MaxEventMessageBytes), Count: max(e.Count, 1),
			LastObservedAt: utc(e.lastObserved()),
		}
		if e.Series != nil && e.Series.Count > ev.Count {
			ev.Count = e.Series.Count
		}
		if m := containerFieldPath.FindStringSubmatch(e.InvolvedObject.FieldPath); m != nil {
			ev.Container = clean(m[1], known, driver.MaxEventReasonBytes)
		}
		out = append(out, ev)
	}
	return out, nil
}

// RuntimeImages implements driver.RuntimeImageReader: the images the revision's containers run, as
// their statuses report them. Source commits are image labels, which the API server does not show.
func (d *Compute) RuntimeImages(ctx context.Context, rev driver.Revision) ([]driver.RuntimeImage, error) {
	_, pods, err := d.revisionPods(ctx, rev)
	if err != nil {
		return nil, err
	}
	out := []driver.RuntimeImage{}
	seen := map[driver.RuntimeImage]bool{}
	for i := range pods {
		pod := &pods[i]
		for _, spec := range pod.Spec.Containers {
			img := driver.RuntimeImage{Workload: pod.Metadata.Labels[labelName], Container: spec.Name, Image: spec.Image}
			if cs := pod.containerStatus(spec.Name); cs != nil {
				if cs.Image != "" {
					img.Image = cs.Image
				}
				img.ImageID = cs.ImageID
			}
			img.Image, img.ImageID = imageRef(img.Image), imageRef(img.ImageID)
			if seen[img] || len(out) == driver.MaxRuntimePods*driver.MaxRuntimeContainers {
				continue
			}
			seen[img] = true
			out = append(out, img)
		}
	}
	return out, nil
}

// DiagnoseRuntime implements driver.RuntimeDiagnoser: for the gateway (and the dedicated Harness),
// whether its Pods are scheduled, its images pulled, its containers ready and not crash-looping,
// and whether the gateway Service has a ready endpoint. Checks name codes, never runtime output.
func (d *Compute) DiagnoseRuntime(ctx context.Context, rev driver.Revision) ([]driver.DiagnosticCheck, error) {
	ns, pods, err := d.revisionPods(ctx, rev)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	var out []driver.DiagnosticCheck
	add := func(component, check, state, code string) {
		if len(out) < driver.MaxDiagnosticChecks {
			out = append(out, driver.DiagnosticCheck{Component: component, Check: check, State: state, Code: code, CheckedAt: &now})
		}
	}
	components := []struct{ name, source, container string }{{"gateway", driver.LogSourceGateway, gatewayContainer}}
	if rev.ExecutionMode == driver.ExecutionDedicated {
		components = append(components, struct{ name, source, container string }{"harness", driver.LogSourceAgent, harnessContainer})
	}
	for _, comp := range components {
		var mine []*runtimePodView
		for i := range pods {
			if s, _ := sourceOf(&pods[i]); s == comp.source && !pods[i].Metadata.Terminating() {
				mine = append(mine, &pods[i])
			}
		}
		for _, c := range podChecks(mine, comp.container) {
			add(comp.name, c.check, c.state, c.code)
		}
		if comp.source == driver.LogSourceGateway {
			state, code, err := d.gatewayEndpoints(ctx, ns, rev)
			if err != nil {
				return nil, err
			}
			add(comp.name, checkServiceEndpoints, state, code)
		}
	}
	return out, nil
}

type checkResult struct{ check, state, code string }

// podChecks judges the live Pods of one component.
func podChecks(pods []*runtimePodView, container string) []checkResult {
	if len(pods) == 0 {
		return []checkResult{
			{checkPodsScheduled, driver.CheckUnknown, CodeNoPod}, {checkImagePull, driver.CheckUnknown, CodeNoPod},
			{checkNoCrashLoop, driver.CheckUnknown, CodeNoPod}, {checkContainersReady, driver.CheckUnknown, CodeNoPod},
		}
	}
	scheduled := checkResult{checkPodsScheduled, driver.CheckSucceeded, ""}
	for _, p := range pods {
		status, reason := p.condition("PodScheduled")
		switch {
		case status == "False" && reason == "Unschedulable":
			scheduled.state, scheduled.code = driver.CheckFailed, driver.PendingWorkloadUnschedulable
		case p.Spec.NodeName == "" && scheduled.state == driver.CheckSucceeded:
			scheduled.state, scheduled.code = driver.CheckUnknown, CodePodPending
		}
	}
	pull := checkResult{checkImagePull, driver.CheckSucceeded, ""}
	crash := checkResult{checkNoCrashLoop, driver.CheckSucceeded, ""}
	ready := checkResult{checkContainersReady, driver.CheckSucceeded, ""}
	for _, p := range pods {
		cs := p.containerStatus(container)
		if cs == nil {
			for _, r := range []*checkResult{&pull, &crash} {
				if r.state == driver.CheckSucceeded {
					r.state, r.code = driver.CheckUnknown, CodeContainerStatusUnknown
				}
			}
			ready.state, ready.code = driver.CheckFailed, CodeContainersNotReady
			continue
		}
		if w := cs.State.Waiting; w != nil && slices.Contains(imagePullReasons, w.Reason) {
			pull.state, pull.code = driver.CheckFailed, CodeImagePull
		}
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			crash.state, crash.code = driver.CheckFailed, CodeCrashLoop
		}
		if !cs.Ready {
			ready.state, ready.code = driver.CheckFailed, CodeContainersNotReady
		}
	}
	return []checkResult{scheduled, pull, crash, ready}
}

// gatewayEndpoints checks that the Agent's gateway Service exists and that an EndpointSlice it owns
// lists a ready endpoint. An identity that may not read them makes the check unknown.
func (d *Compute) gatewayEndpoints(ctx context.Context, ns string, rev driver.Revision) (state, code string, err error) {
	if ns == "" {
		return driver.CheckUnknown, CodeNoPod, nil
	}
	p := newPlan(rev, ns)
	ready, err := d.serviceHasReadyEndpoint(ctx, p)
	found := true
	if err == nil && !ready {
		found, err = d.read(ctx, kube.Services, p.ns, p.gateway, &serviceView{})
	}
	var pe *driver.PermanentError
	var re *driver.RetryableError
	switch {
	case err == nil && ready:
		return driver.CheckSucceeded, "", nil
	case err == nil && !found:
		return driver.CheckFailed, CodeServiceMissing, nil
	case err == nil:
		return driver.CheckFailed, CodeNoReadyEndpoint, nil
	case errors.As(err, &pe) && pe.Code == CodeOwnershipConflict:
		return driver.CheckFailed, CodeOwnershipConflict, nil
	case errors.As(err, &re) && re.Status == http.StatusForbidden:
		return driver.CheckUnknown, driver.RuntimeClusterRBAC, nil
	}
	return "", "", runtimeError(err)
}

// runtimeError turns a client error (or one classify returned) into the *driver.RuntimeReadError
// of a runtime read, wrapping the classified error so the dependency code stays in the chain.
func runtimeError(err error) error {
	if err == nil {
		return nil
	}
	var rre *driver.RuntimeReadError
	if errors.As(err, &rre) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if kube.IsForbidden(err) {
		return &driver.RuntimeReadError{Code: driver.RuntimeClusterRBAC, Err: classify(err),
			Message: "The Compute Driver's Kubernetes identity may not read the revision's runtime (RBAC)."}
	}
	var re *driver.RetryableError
	if errors.As(err, &re) && re.Status == http.StatusForbidden {
		return &driver.RuntimeReadError{Code: driver.RuntimeClusterRBAC, Err: err,
			Message: "The Compute Driver's Kubernetes identity may not read the revision's runtime (RBAC)."}
	}
	c := classify(err)
	var te *driver.TransientDependencyError
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(c, &te) && te.Code == CodeAPITimeout) {
		return &driver.RuntimeReadError{Code: driver.RuntimeReadTimeout, Err: c,
			Message: "The Kubernetes API server did not answer in time."}
	}
	var pe *driver.PermanentError
	if errors.As(c, &pe) {
		return c // ownership and configuration errors keep their codes
	}
	return &driver.RuntimeReadError{Code: driver.RuntimeReadUnavailable, Err: c,
		Message: "The Kubernetes API server did not answer the runtime read."}
}

func clean(s string, known []string, limit int) string {
	out, _ := runtimelog.Clean(s, known, limit)
	return out
}

// imageRef bounds an image reference or ID. It is not redacted: a digest is long hex by design and
// no secret, and the reference is the driver's own configuration.
func imageRef(s string) string { return runtimelog.Bound(s, runtimelog.MaxFieldBytes) }

func utc(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
