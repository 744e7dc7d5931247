package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/runtimelog"
	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// The runtime views run as the "api" identity, as they do in an installation (the API serves
// them); only the chart's tenant API role grants it pods/log and Events.

func rtReader(t *testing.T, c *kubetest.Cluster) *Compute {
	t.Helper()
	return newTestCompute(t, c, withIdentity(t, c, kubetest.API))
}

// rtPodName is the name of the revision's only Pod of role.
func rtPodName(t *testing.T, c *kubetest.Cluster, namespace string, rev driver.Revision, role string) string {
	t.Helper()
	var names []string
	for _, p := range rtRevisionPods(t, c, namespace, rev) {
		if kubetest.Str(p, "metadata", "labels", labelWorkloadRole) == role && kubetest.Str(p, "metadata", "deletionTimestamp") == "" {
			names = append(names, kubetest.Str(p, "metadata", "name"))
		}
	}
	if len(names) != 1 {
		t.Fatalf("%s Pods of revision %d: %v", role, rev.Number, names)
	}
	return names[0]
}

func rtWantRuntimeCode(t *testing.T, err error, code string) {
	t.Helper()
	var re *driver.RuntimeReadError
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("error %v: want RuntimeReadError %s", err, code)
	}
}

// rtMessages are the messages of a page's line records, and its gap reasons as "gap:<reason>".
func rtMessages(page driver.RuntimeLogPage) []string {
	var out []string
	for _, r := range page.Page.Records {
		switch r.Type {
		case runtimelog.TypeLine:
			out = append(out, r.Message)
		case runtimelog.TypeGap:
			out = append(out, "gap:"+r.Reason)
		}
	}
	return out
}

func rtNotIn(t *testing.T, what string, v any, secret string) {
	t.Helper()
	raw, _ := json.Marshal(v)
	if strings.Contains(string(raw), secret) {
		t.Fatalf("%s carries the Secret value: %s", what, raw)
	}
}

func rtRead(t *testing.T, d *Compute, rev driver.Revision, q driver.RuntimeLogQuery) driver.RuntimeLogPage {
	t.Helper()
	page, err := d.ReadRuntimeLogs(context.Background(), rev, q)
	if err != nil {
		t.Fatalf("ReadRuntimeLogs %+v: %v", q, err)
	}
	return page
}

func TestRuntimeEmbeddedViewsLogsAndEvents(t *testing.T) {
	c := kubetest.Shared(t)
	k := c.Kubelet()
	d := newTestCompute(t, c, nil)
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns)
	secretValue := "occ-secret-" + uuid.NewString()
	ref := revTestSecret(t, c, k8s, secretValue)
	rc := driver.RevisionContext{
		HarnessAuth:       rtModelKey(t, c, k8s).HarnessAuth,
		SecretEnvironment: []driver.SecretEnvironmentRef{{Name: "TOOL_CREDENTIAL", SecretID: "sec_1", Ref: ref}},
	}
	rev := revTestRevision(ns.ID, rtAgentID(), 1, false, "")
	rtPrepareReady(t, d, rev, rc)
	other := revTestRevision(ns.ID, rtAgentID(), 1, false, "")
	rtPrepareReady(t, d, other, rtModelKey(t, c, k8s))
	pod := rtPodName(t, c, k8s, rev, roleGateway)
	otherPod := rtPodName(t, c, k8s, other, roleGateway)
	r := rtReader(t, c)
	ctx := context.Background()

	// Runtime view of a running revision: its one gateway Pod, nothing of the other Agent.
	view, err := r.DescribeRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Pods) != 1 {
		t.Fatalf("pods: %+v", view.Pods)
	}
	vp := view.Pods[0]
	if vp.Name != pod || vp.UID == "" || vp.Role != driver.LogSourceGateway || vp.Phase != "Running" || !vp.Ready || vp.CreatedAt == nil {
		t.Fatalf("pod: %+v", vp)
	}
	if len(vp.Containers) != 1 {
		t.Fatalf("containers: %+v", vp.Containers)
	}
	ct := vp.Containers[0]
	if ct.Name != gatewayContainer || ct.State != driver.ContainerRunning || !ct.Ready || ct.RestartCount != 0 || ct.StartedAt == nil ||
		ct.Image != d.cfg.GatewayImage || !strings.HasPrefix(ct.ImageID, "kubetest://") || ct.LastTermination != nil {
		t.Fatalf("container: %+v", ct)
	}
	if len(view.Sources) != 1 || view.Sources[0].ID != driver.LogSourceGateway || !view.Sources[0].Available || view.Sources[0].Retention == "" ||
		len(view.Sources[0].Pods) != 1 || view.Sources[0].Pods[0] != (driver.RuntimeLogSourcePod{Name: pod, UID: vp.UID, Container: gatewayContainer}) {
		t.Fatalf("sources: %+v", view.Sources)
	}

	// Events: newest first, messages redacted (the Secret value never comes back), the container
	// taken from the field path.
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if _, err := c.Admin().Create(kubetest.CorePath(k8s, "events", ""), kubetest.Object{
		"apiVersion": "v1", "kind": "Event", "metadata": kubetest.Object{"generateName": pod + "."},
		"involvedObject": kubetest.Object{"kind": "Pod", "apiVersion": "v1", "namespace": k8s, "name": pod, "uid": vp.UID},
		"type":           "Normal", "reason": "Scheduled", "message": "Successfully assigned " + k8s + "/" + pod,
		"firstTimestamp": old, "lastTimestamp": old, "count": 1, "source": kubetest.Object{"component": "scheduler"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := k.EmitEvent(k8s, pod, gatewayContainer, "Warning", "BackOff", "Back-off restarting: token="+secretValue+" value "+secretValue, 4); err != nil {
		t.Fatal(err)
	}
	if err := k.EmitEvent(k8s, otherPod, gatewayContainer, "Warning", "BackOff", "the other Agent's event", 1); err != nil {
		t.Fatal(err)
	}
	view, err = r.DescribeRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	events := view.Pods[0].Events
	if len(events) != 2 {
		t.Fatalf("events: %+v", events)
	}
	if e := events[0]; e.Type != "Warning" || e.Reason != "BackOff" || e.Container != gatewayContainer || e.Count != 4 || e.LastObservedAt == nil ||
		!strings.Contains(e.Message, "[redacted:") {
		t.Fatalf("newest event: %+v", e)
	}
	if e := events[1]; e.Reason != "Scheduled" || e.Container != "" || e.Count != 1 {
		t.Fatalf("older event: %+v", e)
	}
	rtNotIn(t, "the runtime view", view, secretValue)

	// Logs: a Secret value the container printed never comes back.
	k.WriteLog(k8s, pod, gatewayContainer, "gateway starting", "credential is "+secretValue, `{"level":"info","subsystem":"gateway","message":"listening"}`)
	first := rtRead(t, r, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 100})
	if first.Stream != (runtimelog.Stream{Source: driver.LogSourceGateway, Pod: pod, PodUID: vp.UID, Container: gatewayContainer}) {
		t.Fatalf("stream: %+v", first.Stream)
	}
	if got := rtMessages(first); len(got) != 3 || got[0] != "gateway starting" || got[1] != "credential is [redacted:secret]" || got[2] != "listening" {
		t.Fatalf("first page: %q", got)
	}
	rtNotIn(t, "a log page", first, secretValue)
	// The tail asked for bounds the read.
	if got := rtMessages(rtRead(t, r, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, Pod: pod, TailLines: 1})); len(got) != 1 || got[0] != "listening" {
		t.Fatalf("tail 1: %q", got)
	}

	// Follow: the next page holds only the new lines.
	k.WriteLog(k8s, pod, gatewayContainer, "second burst a", "second burst b")
	second := rtRead(t, r, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 100, After: &first.Page.Next})
	if got := rtMessages(second); len(got) != 2 || got[0] != "second burst a" || got[1] != "second burst b" {
		t.Fatalf("second page: %q", got)
	}
	if again := rtRead(t, r, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 100, After: &second.Page.Next}); len(rtMessages(again)) != 0 {
		t.Fatalf("a page with nothing new: %q", rtMessages(again))
	}

	// Previous before any restart: there is no previous instance.
	_, err = r.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, Previous: true, TailLines: 10})
	rtWantRuntimeCode(t, err, driver.RuntimeSourceUnavailable)

	// A restart: the follow reports the replaced stream and reads the new instance; previous=true
	// reads the instance that exited.
	if err := k.RestartContainer(k8s, pod, gatewayContainer, 1, "Error"); err != nil {
		t.Fatal(err)
	}
	k.WriteLog(k8s, pod, gatewayContainer, "after restart")
	third := rtRead(t, r, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 100, After: &second.Page.Next})
	if got := rtMessages(third); len(got) != 2 || got[0] != "gap:"+runtimelog.GapStreamReplaced || got[1] != "after restart" {
		t.Fatalf("page after the restart: %q", got)
	}
	if third.Stream.RestartCount != 1 {
		t.Fatalf("stream after the restart: %+v", third.Stream)
	}
	prev := rtRead(t, r, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, Previous: true, TailLines: 100})
	if got := rtMessages(prev); len(got) != 5 || got[0] != "gateway starting" || got[4] != "second burst b" || prev.Stream.RestartCount != 0 {
		t.Fatalf("previous instance: %q %+v", got, prev.Stream)
	}
	rtNotIn(t, "the previous instance's page", prev, secretValue)
	view, err = r.DescribeRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	ct = view.Pods[0].Containers[0]
	if ct.RestartCount != 1 || ct.LastTermination == nil || ct.LastTermination.Reason != "Error" || ct.LastTermination.ExitCode != 1 ||
		ct.LastTermination.FinishedAt == nil || view.Sources[0].Pods[0].RestartCount != 1 {
		t.Fatalf("container after the restart: %+v (last %+v)", ct, ct.LastTermination)
	}

	// A Pod of another revision, or a source the revision does not have, is refused.
	_, err = r.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, Pod: otherPod, TailLines: 10})
	rtWantRuntimeCode(t, err, driver.RuntimePodInvalid)
	_, err = r.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceAgent, TailLines: 10})
	rtWantRuntimeCode(t, err, driver.RuntimePodInvalid)

	// Diagnostics of a healthy revision, and its images.
	checks, err := r.DiagnoseRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{checkPodsScheduled: true, checkImagePull: true, checkNoCrashLoop: true, checkContainersReady: true, checkServiceEndpoints: true}
	for _, ch := range checks {
		if ch.Component != "gateway" || ch.State != driver.CheckSucceeded || ch.Code != "" || ch.CheckedAt == nil || !want[ch.Check] {
			t.Fatalf("healthy check: %+v", ch)
		}
		delete(want, ch.Check)
	}
	if len(want) != 0 {
		t.Fatalf("checks missing: %v", want)
	}
	images, err := r.RuntimeImages(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 1 || images[0].Workload != gatewayName(rev.AgentID) || images[0].Container != gatewayContainer ||
		images[0].Image != d.cfg.GatewayImage || images[0].ImageID != "kubetest://"+d.cfg.GatewayImage {
		t.Fatalf("images: %+v", images)
	}

	// An identity without pods/log and Events (the worker's tenant role alone) is refused with the
	// RBAC code.
	c.GrantClusterRole(t, kubetest.Nobody, kubetest.NamespaceObserverRole)
	c.GrantClusterRoleInNamespace(t, kubetest.Nobody, kubetest.TenantWorkerRole, k8s)
	nobody := newTestCompute(t, c, withIdentity(t, c, kubetest.Nobody))
	_, err = nobody.DescribeRuntime(ctx, rev)
	rtWantRuntimeCode(t, err, driver.RuntimeClusterRBAC)
	_, err = nobody.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 10})
	rtWantRuntimeCode(t, err, driver.RuntimeClusterRBAC)
}

func TestRuntimeDedicatedCrashLoop(t *testing.T) {
	c := kubetest.Shared(t)
	k := c.Kubelet()
	d := newTestCompute(t, c, nil)
	ns := revTestNamespace()
	k8s := ensureTestNamespace(t, d, ns)
	modelKey := "model-key-" + uuid.NewString()
	ref := revTestSecret(t, c, k8s, modelKey)
	rev := revTestRevision(ns.ID, rtAgentID(), 1, true, driver.HarnessAuthAPIKey)
	rtPrepareReady(t, d, rev, driver.RevisionContext{HarnessAuth: &driver.HarnessAuthRef{Method: driver.HarnessAuthAPIKey, SecretID: "sec_1", Ref: &ref}})
	harness := rtPodName(t, c, k8s, rev, roleAgent)
	r := rtReader(t, c)
	ctx := context.Background()

	view, err := r.DescribeRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Pods) != 2 || view.Pods[0].Role != driver.LogSourceGateway || view.Pods[1].Role != driver.LogSourceAgent || view.Pods[1].Name != harness {
		t.Fatalf("pods: %+v", view.Pods)
	}
	if len(view.Sources) != 2 || view.Sources[1].ID != driver.LogSourceAgent || !view.Sources[1].Available ||
		view.Sources[1].Pods[0].Container != harnessContainer {
		t.Fatalf("sources: %+v", view.Sources)
	}

	// The model credential the Harness was given never comes back from its output.
	k.WriteLog(k8s, harness, harnessContainer, "probe with "+modelKey)
	page := rtRead(t, r, rev, driver.RuntimeLogQuery{Source: driver.LogSourceAgent, TailLines: 10})
	if got := rtMessages(page); len(got) != 1 || got[0] != "probe with [redacted:secret]" || page.Stream.Container != harnessContainer {
		t.Fatalf("harness page: %q %+v", got, page.Stream)
	}

	// A crash-looping Harness: its checks fail with codes, the gateway's still succeed.
	k.SetFailing(k8s, map[string]string{labelWorkloadRole: roleAgent}, true)
	t.Cleanup(func() { k.SetFailing(k8s, map[string]string{labelWorkloadRole: roleAgent}, false) })
	var checks []driver.DiagnosticCheck
	wait.Until(t, wait.Medium, "crash loop diagnosed", func() (bool, error) {
		checks, err = r.DiagnoseRuntime(ctx, rev)
		if err != nil {
			return false, err
		}
		for _, ch := range checks {
			if ch.Component == "harness" && ch.Check == checkNoCrashLoop {
				return ch.State == driver.CheckFailed, nil
			}
		}
		return false, nil
	})
	got := map[string]driver.DiagnosticCheck{}
	for _, ch := range checks {
		got[ch.Component+"/"+ch.Check] = ch
	}
	for key, want := range map[string][2]string{
		"harness/" + checkNoCrashLoop:      {driver.CheckFailed, CodeCrashLoop},
		"harness/" + checkContainersReady:  {driver.CheckFailed, CodeContainersNotReady},
		"harness/" + checkPodsScheduled:    {driver.CheckSucceeded, ""},
		"harness/" + checkImagePull:        {driver.CheckSucceeded, ""},
		"gateway/" + checkNoCrashLoop:      {driver.CheckSucceeded, ""},
		"gateway/" + checkContainersReady:  {driver.CheckSucceeded, ""},
		"gateway/" + checkServiceEndpoints: {driver.CheckSucceeded, ""},
	} {
		if ch, ok := got[key]; !ok || ch.State != want[0] || ch.Code != want[1] {
			t.Errorf("%s: %+v, want %v", key, ch, want)
		}
	}
	if len(checks) != 9 {
		t.Errorf("checks: %+v", checks)
	}
	view, err = r.DescribeRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if h := view.Pods[1]; h.Ready || h.Containers[0].State != driver.ContainerWaiting || h.Containers[0].Reason != "CrashLoopBackOff" ||
		h.Containers[0].RestartCount < 1 || h.Containers[0].LastTermination == nil {
		t.Fatalf("crash-looping Harness: %+v", h)
	}
}

func TestRuntimeNoPodAndParsing(t *testing.T) {
	c := kubetest.Shared(t)
	d := newTestCompute(t, c, nil)
	ns := revTestNamespace()
	ensureTestNamespace(t, d, ns)
	rev := revTestRevision(ns.ID, rtAgentID(), 1, true, driver.HarnessAuthAPIKey)
	r := rtReader(t, c)
	ctx := context.Background()

	// A revision not deployed yet: no Pods, sources unavailable, checks unknown.
	view, err := r.DescribeRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Pods) != 0 || len(view.Sources) != 2 || view.Sources[0].Available || view.Sources[0].UnavailableCode != driver.SourceUnavailableNoPod {
		t.Fatalf("view: %+v", view)
	}
	_, err = r.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 10})
	rtWantRuntimeCode(t, err, driver.RuntimeSourceUnavailable)
	checks, err := r.DiagnoseRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range checks {
		if ch.State == driver.CheckSucceeded {
			t.Fatalf("check of a revision without Pods: %+v", ch)
		}
	}

	lines := parseLogLines([]byte("2026-12-02T04:11:33.123456789Z hello world\nno stamp here\n2026-12-02T04:11:34Z \n"))
	if len(lines) != 3 || lines[0].Text != "hello world" || lines[0].Time.Nanosecond() != 123456789 ||
		!lines[1].Time.IsZero() || lines[1].Text != "no stamp here" || lines[2].Text != "" || lines[2].Time.IsZero() {
		t.Fatalf("parsed: %+v", lines)
	}
}
