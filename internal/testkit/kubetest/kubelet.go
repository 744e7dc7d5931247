package kubetest

import (
	"context"
	"fmt"
	"log"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// NodeName is the name of the simulated Node every Pod is bound to.
const NodeName = "kubetest-node"

// UnschedulableMessage is the PodScheduled=False message the simulator sets on Pods matched by
// SetUnschedulable.
const UnschedulableMessage = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: " +
	"1 No preemption victims found for incoming pod."

// Kubelet simulates the scheduler and the kubelet of one Node. Every 100 ms (and at once after a
// control call) it lists the Pods of the cluster, as admin, and:
//
//   - binds Pods without spec.nodeName to NodeName (POST pods/{name}/binding), unless an
//     unschedulable rule matches them: then it sets PodScheduled=False, reason Unschedulable;
//   - reports bound Pods Running with a unique podIP in 10.244.0.0/16, hostIP 127.0.0.1 and every
//     container ready and running, or, when a failing rule matches, not Ready with containers
//     waiting in CrashLoopBackOff (restartCount > 0); rule changes apply to running Pods too;
//   - deletes Pods that have a deletionTimestamp (gracePeriodSeconds 0, uid precondition), as a
//     kubelet does once the containers stopped;
//   - serves the API server's pods/log proxy from its own HTTPS endpoint (the Node's
//     daemonEndpoints.kubeletEndpoint), with the output tests script (WriteLog, RestartContainer;
//     see kubelet_logs.go), and emits Events on demand (EmitEvent).
//
// Rules are matched in the order set; the last rule of a kind that matches a Pod decides. An empty
// namespace matches every namespace and an empty selector every Pod.
type Kubelet struct {
	c      *Cluster
	admin  *Client
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}
	logf   func(format string, args ...any)
	logF   *os.File

	logServer *http.Server
	logPort   int

	mu      sync.Mutex
	logs    map[string]*containerLog // namespace/pod/container -> output
	rules   []podRule
	paused  bool
	ips     map[string]string // pod uid -> IP
	nextIP  int
	lastErr string
}

type ruleKind int

const (
	ruleFailing ruleKind = iota
	ruleUnschedulable
	ruleHeld
)

type podRule struct {
	kind      ruleKind
	namespace string
	selector  map[string]string
	on        bool
}

func startKubelet(c *Cluster) (*Kubelet, error) {
	f, err := os.OpenFile(filepath.Join(c.Dir, "kubelet.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	lg := log.New(f, "", log.LstdFlags|log.Lmicroseconds)
	k := &Kubelet{
		c: c, admin: c.Admin(), done: make(chan struct{}), kick: make(chan struct{}, 1),
		logf: lg.Printf, logF: f, ips: map[string]string{}, logs: map[string]*containerLog{},
	}
	if err := k.serveLogs(); err != nil {
		f.Close()
		return nil, err
	}
	if err := k.registerNode(); err != nil {
		_ = k.logServer.Close()
		f.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go k.run(ctx)
	return k, nil
}

func (k *Kubelet) registerNode() error {
	_, err := k.admin.Create(CorePath("", "nodes", ""), Object{
		"apiVersion": "v1", "kind": "Node",
		"metadata": Object{"name": NodeName, "labels": Object{
			"kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
	})
	if err != nil && !IsAlreadyExists(err) {
		return fmt.Errorf("create node: %w", err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	resources := Object{"cpu": "16", "memory": "64Gi", "pods": "250", "ephemeral-storage": "100Gi"}
	cond := func(typ, status, reason, msg string) Object {
		return Object{"type": typ, "status": status, "reason": reason, "message": msg,
			"lastHeartbeatTime": now, "lastTransitionTime": now}
	}
	_, err = k.admin.Patch(CorePath("", "nodes", NodeName+"/status"), MergePatch, Object{"status": Object{
		"capacity": resources, "allocatable": resources,
		"conditions": []any{
			cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond("Ready", "True", "KubeletReady", "kubelet is posting ready status (kubetest simulator)"),
		},
		"addresses": []any{Object{"type": "InternalIP", "address": "127.0.0.1"},
			Object{"type": "Hostname", "address": NodeName}},
		"daemonEndpoints": Object{"kubeletEndpoint": Object{"Port": k.logPort}},
		"nodeInfo": Object{"kubeletVersion": KubeVersion, "kubeProxyVersion": "", "operatingSystem": "linux",
			"architecture": "amd64", "containerRuntimeVersion": "kubetest://1", "osImage": "kubetest",
			"kernelVersion": "", "machineID": "", "systemUUID": "", "bootID": ""},
	}})
	if err != nil {
		return fmt.Errorf("node status: %w", err)
	}
	// The TaintNodesByCondition admission plugin gave the new Node the not-ready taint; the node
	// lifecycle controller (not running) would drop it once the Node is Ready.
	if _, err := k.admin.Patch(CorePath("", "nodes", NodeName), MergePatch, Object{"spec": Object{"taints": nil}}); err != nil {
		return fmt.Errorf("node taints: %w", err)
	}
	return nil
}

func (k *Kubelet) stop() {
	if k.cancel == nil {
		return
	}
	k.cancel()
	<-k.done
	k.cancel = nil
	_ = k.logServer.Close()
	k.logF.Close()
}

func (k *Kubelet) run(ctx context.Context) {
	defer close(k.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		k.mu.Lock()
		paused := k.paused
		k.mu.Unlock()
		if !paused {
			k.sync(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-k.kick:
		}
	}
}

func (k *Kubelet) poke() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// SetFailing makes Pods matching namespace and labelSelector fail (failing=true: not Ready,
// CrashLoopBackOff) or run healthy again (false). It applies to existing and future Pods.
func (k *Kubelet) SetFailing(namespace string, labelSelector map[string]string, failing bool) {
	k.setRule(ruleFailing, namespace, labelSelector, failing)
}

// SetUnschedulable keeps matching unbound Pods Pending with PodScheduled=False, reason
// Unschedulable (true), or lets them be bound again (false). Bound Pods are not affected.
func (k *Kubelet) SetUnschedulable(namespace string, labelSelector map[string]string, unschedulable bool) {
	k.setRule(ruleUnschedulable, namespace, labelSelector, unschedulable)
}

// SetHeld makes the simulator leave matching Pods alone until released (false): unbound ones stay
// Pending without a condition and bound ones are not started (Pods already Running keep their status
// and deletions still complete). It is the per-namespace form of Pause for tests sharing a cluster.
func (k *Kubelet) SetHeld(namespace string, labelSelector map[string]string, held bool) {
	k.setRule(ruleHeld, namespace, labelSelector, held)
}

func (k *Kubelet) setRule(kind ruleKind, namespace string, sel map[string]string, on bool) {
	k.mu.Lock()
	r := podRule{kind: kind, namespace: namespace, selector: maps.Clone(sel), on: on}
	kept := k.rules[:0]
	for _, e := range k.rules {
		if !(e.kind == kind && e.namespace == namespace && maps.Equal(e.selector, r.selector)) {
			kept = append(kept, e)
		}
	}
	k.rules = append(kept, r)
	k.mu.Unlock()
	k.poke()
}

// Pause stops the simulator from acting on any Pod (no binding, status or deletion) until Resume.
// It affects every test sharing the cluster; SetHeld is the per-namespace variant.
func (k *Kubelet) Pause() {
	k.mu.Lock()
	k.paused = true
	k.mu.Unlock()
}

// Resume undoes Pause.
func (k *Kubelet) Resume() {
	k.mu.Lock()
	k.paused = false
	k.mu.Unlock()
	k.poke()
}

func (k *Kubelet) match(kind ruleKind, namespace string, labels map[string]any) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	on := false
	for _, r := range k.rules {
		if r.kind != kind || (r.namespace != "" && r.namespace != namespace) {
			continue
		}
		ok := true
		for key, v := range r.selector {
			if lv, present := labels[key].(string); !present || lv != v {
				ok = false
				break
			}
		}
		if ok {
			on = r.on
		}
	}
	return on
}

func (k *Kubelet) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	k.mu.Lock()
	dup := msg == k.lastErr
	k.lastErr = msg
	k.mu.Unlock()
	if !dup {
		k.logf("error: %s", msg)
	}
}

func (k *Kubelet) sync(ctx context.Context) {
	var list struct {
		Items []Object `json:"items"`
	}
	if err := k.admin.Do(ctx, "GET", CorePath("", "pods", ""), "", nil, &list); err != nil {
		if ctx.Err() == nil {
			k.errorf("list pods: %v", err)
		}
		return
	}
	k.mu.Lock()
	k.lastErr = ""
	k.mu.Unlock()
	seen := map[string]bool{}
	for _, pod := range list.Items {
		if ctx.Err() != nil {
			return
		}
		uid := Str(pod, "metadata", "uid")
		seen[uid] = true
		k.syncPod(ctx, pod)
	}
	k.mu.Lock()
	for uid := range k.ips {
		if !seen[uid] {
			delete(k.ips, uid)
		}
	}
	k.mu.Unlock()
}

func (k *Kubelet) syncPod(ctx context.Context, pod Object) {
	ns, name, uid := Str(pod, "metadata", "namespace"), Str(pod, "metadata", "name"), Str(pod, "metadata", "uid")
	labels, _ := Field(pod, "metadata", "labels").(map[string]any)
	node := Str(pod, "spec", "nodeName")
	podPath := CorePath(ns, "pods", name)

	if Str(pod, "metadata", "deletionTimestamp") != "" {
		if node == "" {
			return // the API server deletes unbound Pods at once; a finalizer holds this one
		}
		err := k.admin.Do(ctx, "DELETE", podPath, "application/json", Object{
			"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
			"preconditions": Object{"uid": uid}}, nil)
		if err != nil && !IsNotFound(err) && StatusCode(err) != 409 {
			k.errorf("delete pod %s/%s: %v", ns, name, err)
		} else if err == nil {
			k.logf("deleted pod %s/%s", ns, name)
		}
		return
	}
	held := k.match(ruleHeld, ns, labels)
	phase := Str(pod, "status", "phase")
	if node == "" {
		if held {
			return
		}
		if k.match(ruleUnschedulable, ns, labels) {
			if c := condition(pod, "PodScheduled"); c != nil && Str(c, "status") == "False" && Str(c, "reason") == "Unschedulable" {
				return
			}
			_, err := k.admin.Patch(podPath+"/status", MergePatch, Object{"status": Object{
				"phase": "Pending",
				"conditions": []any{Object{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
					"message": UnschedulableMessage, "lastTransitionTime": now()}},
			}})
			if err != nil && !IsNotFound(err) {
				k.errorf("mark pod %s/%s unschedulable: %v", ns, name, err)
			} else if err == nil {
				k.logf("pod %s/%s unschedulable", ns, name)
			}
			return
		}
		err := k.admin.Do(ctx, "POST", podPath+"/binding", "application/json", Object{
			"apiVersion": "v1", "kind": "Binding",
			"metadata": Object{"name": name, "namespace": ns, "uid": uid},
			"target":   Object{"apiVersion": "v1", "kind": "Node", "name": NodeName},
		}, nil)
		if err != nil && !IsNotFound(err) && StatusCode(err) != 409 {
			k.errorf("bind pod %s/%s: %v", ns, name, err)
			return
		}
		if err != nil {
			return
		}
		k.logf("bound pod %s/%s", ns, name)
		// Start it in the same pass (the pod object is stale, but only spec fields are read).
		pod = withNode(pod)
	} else if node != NodeName {
		return
	}
	if phase == "Succeeded" || phase == "Failed" {
		return
	}
	if held && phase != "Running" {
		return
	}
	failing := k.match(ruleFailing, ns, labels)
	if podUpToDate(pod, failing) {
		return
	}
	status := k.runningStatus(pod, failing)
	if _, err := k.admin.Patch(podPath+"/status", MergePatch, Object{"status": status}); err != nil {
		if !IsNotFound(err) {
			k.errorf("update status of pod %s/%s: %v", ns, name, err)
		}
		return
	}
	k.logf("pod %s/%s running (failing=%v, ip %s)", ns, name, failing, status["podIP"])
}

func withNode(pod Object) Object {
	spec, _ := pod["spec"].(map[string]any)
	spec = maps.Clone(spec)
	if spec == nil {
		spec = Object{}
	}
	spec["nodeName"] = NodeName
	out := maps.Clone(pod)
	out["spec"] = spec
	return out
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

func condition(pod Object, typ string) Object {
	for _, c := range Slice(pod, "status", "conditions") {
		if Str(c, "type") == typ {
			return c
		}
	}
	return nil
}

// podUpToDate reports whether the Pod's status already is what the simulator would set.
func podUpToDate(pod Object, failing bool) bool {
	if Str(pod, "status", "phase") != "Running" || Str(pod, "status", "podIP") == "" {
		return false
	}
	want := "True"
	if failing {
		want = "False"
	}
	for _, typ := range []string{"Ready", "ContainersReady"} {
		c := condition(pod, typ)
		if c == nil || Str(c, "status") != want {
			return false
		}
	}
	return len(Slice(pod, "status", "containerStatuses")) == len(Slice(pod, "spec", "containers"))
}

func (k *Kubelet) podIP(pod Object) string {
	uid := Str(pod, "metadata", "uid")
	k.mu.Lock()
	defer k.mu.Unlock()
	if ip := Str(pod, "status", "podIP"); ip != "" {
		k.ips[uid] = ip
		return ip
	}
	if ip, ok := k.ips[uid]; ok {
		return ip
	}
	n := k.nextIP
	k.nextIP++
	ip := fmt.Sprintf("10.244.%d.%d", n/250, n%250+2)
	k.ips[uid] = ip
	return ip
}

// runningStatus builds the status of a started Pod.
func (k *Kubelet) runningStatus(pod Object, failing bool) Object {
	ts := now()
	ip := k.podIP(pod)
	startTime := Str(pod, "status", "startTime")
	if startTime == "" {
		startTime = ts
	}
	ready, readyStr := !failing, "True"
	if failing {
		readyStr = "False"
	}
	prev := map[string]Object{}
	for _, cs := range Slice(pod, "status", "containerStatuses") {
		prev[Str(cs, "name")] = cs
	}
	var statuses []any
	var names []string
	uid := Str(pod, "metadata", "uid")
	for _, ctr := range Slice(pod, "spec", "containers") {
		cname := Str(ctr, "name")
		names = append(names, cname)
		restarts := int64(0)
		if p := prev[cname]; p != nil {
			if f, ok := p["restartCount"].(float64); ok {
				restarts = int64(f)
			}
		}
		cs := Object{
			"name": cname, "image": Str(ctr, "image"), "imageID": "kubetest://" + Str(ctr, "image"),
			"containerID": fmt.Sprintf("kubetest://%s-%s", short(uid), cname),
			"ready":       ready, "started": ready,
		}
		if failing {
			if restarts == 0 || Field(prev[cname], "state", "waiting") == nil {
				restarts++
			}
			cs["state"] = Object{"waiting": Object{"reason": "CrashLoopBackOff",
				"message": fmt.Sprintf("back-off 10s restarting failed container=%s pod=%s", cname, Str(pod, "metadata", "name"))}}
			cs["lastState"] = Object{"terminated": Object{"exitCode": 1, "reason": "Error",
				"startedAt": startTime, "finishedAt": ts, "containerID": cs["containerID"]}}
		} else {
			started := ts
			if s := Str(prev[cname], "state", "running", "startedAt"); s != "" {
				started = s
			}
			cs["state"] = Object{"running": Object{"startedAt": started}}
			if last := Field(prev[cname], "lastState"); last != nil {
				cs["lastState"] = last // a restart RestartContainer reported
			}
		}
		cs["restartCount"] = restarts
		statuses = append(statuses, cs)
	}
	var initStatuses []any
	for _, ctr := range Slice(pod, "spec", "initContainers") {
		cname := Str(ctr, "name")
		initStatuses = append(initStatuses, Object{
			"name": cname, "image": Str(ctr, "image"), "imageID": "kubetest://" + Str(ctr, "image"),
			"containerID": fmt.Sprintf("kubetest://%s-%s", short(uid), cname),
			"ready":       true, "restartCount": 0,
			"state": Object{"terminated": Object{"exitCode": 0, "reason": "Completed",
				"startedAt": startTime, "finishedAt": startTime, "containerID": fmt.Sprintf("kubetest://%s-%s", short(uid), cname)}},
		})
	}
	cond := func(typ, status string) Object {
		c := Object{"type": typ, "status": status, "lastTransitionTime": ts}
		if old := condition(pod, typ); old != nil && Str(old, "status") == status && Str(old, "lastTransitionTime") != "" {
			c["lastTransitionTime"] = Str(old, "lastTransitionTime")
		}
		if status == "False" {
			c["reason"] = "ContainersNotReady"
			c["message"] = fmt.Sprintf("containers with unready status: %v", names)
		}
		return c
	}
	status := Object{
		"phase":  "Running",
		"hostIP": "127.0.0.1", "hostIPs": []any{Object{"ip": "127.0.0.1"}},
		"podIP": ip, "podIPs": []any{Object{"ip": ip}},
		"startTime": startTime,
		"conditions": []any{
			cond("PodReadyToStartContainers", "True"),
			cond("Initialized", "True"),
			cond("Ready", readyStr),
			cond("ContainersReady", readyStr),
			cond("PodScheduled", "True"),
		},
		"containerStatuses": statuses,
	}
	if len(initStatuses) > 0 {
		status["initContainerStatuses"] = initStatuses
	}
	return status
}

func short(uid string) string {
	if len(uid) > 8 {
		return uid[:8]
	}
	return uid
}
