package kubetest_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/testkit/kubetest"
	"github.com/openclaw/occ/internal/testkit/wait"
)

// TestKubeletServesLogsAndEvents reads a Pod's output through the API server's pods/log proxy
// (which dials the simulator's TLS endpoint with its kubelet client certificate), with the query
// parameters a client sends, across a container restart; and lists the Events the simulator emits.
func TestKubeletServesLogsAndEvents(t *testing.T) {
	t.Parallel()
	c := kubetest.Shared(t)
	admin := c.Admin()
	k := c.Kubelet()
	ns := newNamespace(t, c, kubetest.Admin, "kt-logs", nil)
	wait.Until(t, wait.Medium, "default service account", func() (bool, error) {
		_, err := admin.Get(kubetest.CorePath(ns, "serviceaccounts", "default"))
		return err == nil, nil
	})
	if _, err := admin.Create(kubetest.CorePath(ns, "pods", ""), obj{
		"apiVersion": "v1", "kind": "Pod", "metadata": obj{"name": "talker"}, "spec": restrictedPodSpec("default"),
	}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, wait.Medium, "talker running", func() (bool, error) {
		p, err := admin.Get(kubetest.CorePath(ns, "pods", "talker"))
		return err == nil && kubetest.Str(p, "status", "phase") == "Running", err
	})
	read := func(q url.Values) (string, error) {
		t.Helper()
		b, err := admin.Raw(kubetest.CorePath(ns, "pods", "talker/log") + "?" + q.Encode())
		return string(b), err
	}

	// A running container that printed nothing yet has empty output.
	if out, err := read(url.Values{"container": {"web"}}); err != nil || out != "" {
		t.Fatalf("empty log: %q, %v", out, err)
	}
	early := time.Now().Add(-time.Hour).Truncate(time.Second)
	k.WriteLogAt(ns, "talker", "web", early, "old line")
	k.WriteLog(ns, "talker", "web", "one", "two", "three")

	out, err := read(url.Values{"container": {"web"}})
	if err != nil || out != "old line\none\ntwo\nthree\n" {
		t.Fatalf("whole log: %q, %v", out, err)
	}
	out, err = read(url.Values{"container": {"web"}, "tailLines": {"2"}, "timestamps": {"true"}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " two") || !strings.HasSuffix(lines[1], " three") {
		t.Fatalf("tail 2 with timestamps: %q", out)
	}
	stamp, _, _ := strings.Cut(lines[0], " ")
	if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil {
		t.Fatalf("timestamp %q: %v", stamp, err)
	}
	if out, err = read(url.Values{"container": {"web"}, "sinceSeconds": {"600"}}); err != nil || out != "one\ntwo\nthree\n" {
		t.Fatalf("sinceSeconds: %q, %v", out, err)
	}
	// sinceTime is inclusive; the API server forwards it with second precision.
	if out, err = read(url.Values{"container": {"web"}, "sinceTime": {early.Format(time.RFC3339)}}); err != nil || !strings.HasPrefix(out, "old line\n") {
		t.Fatalf("sinceTime: %q, %v", out, err)
	}
	if out, err = read(url.Values{"container": {"web"}, "limitBytes": {"5"}}); err != nil || out != "old l" {
		t.Fatalf("limitBytes: %q, %v", out, err)
	}
	// No previous instance yet: the kubelet answers 400, which the API server passes on.
	if _, err := read(url.Values{"container": {"web"}, "previous": {"true"}}); kubetest.StatusCode(err) != 400 {
		t.Fatalf("previous before a restart: want 400, got %v", err)
	}

	// A restart: the output so far becomes the previous instance's, the status says so.
	if err := k.RestartContainer(ns, "talker", "web", 137, "OOMKilled"); err != nil {
		t.Fatal(err)
	}
	k.WriteLog(ns, "talker", "web", "after restart")
	if out, err = read(url.Values{"container": {"web"}}); err != nil || out != "after restart\n" {
		t.Fatalf("current after restart: %q, %v", out, err)
	}
	if out, err = read(url.Values{"container": {"web"}, "previous": {"true"}}); err != nil || out != "old line\none\ntwo\nthree\n" {
		t.Fatalf("previous after restart: %q, %v", out, err)
	}
	p, err := admin.Get(kubetest.CorePath(ns, "pods", "talker"))
	if err != nil {
		t.Fatal(err)
	}
	cs := kubetest.Slice(p, "status", "containerStatuses")
	if len(cs) != 1 || cs[0]["restartCount"] != float64(1) || kubetest.Field(cs[0], "lastState", "terminated", "exitCode") != float64(137) ||
		kubetest.Str(cs[0], "lastState", "terminated", "reason") != "OOMKilled" || kubetest.Str(cs[0], "state", "running", "startedAt") == "" {
		t.Fatalf("status after restart: %v", cs)
	}
	// Events about the Pod, one about its container.
	if err := k.EmitEvent(ns, "talker", "web", "Warning", "BackOff", "Back-off restarting failed container web", 3); err != nil {
		t.Fatal(err)
	}
	if err := k.EmitEvent(ns, "talker", "", "Normal", "Scheduled", "Successfully assigned", 1); err != nil {
		t.Fatal(err)
	}
	events, err := admin.List(kubetest.CorePath(ns, "events", ""), url.Values{
		"fieldSelector": {"involvedObject.uid=" + kubetest.Str(p, "metadata", "uid")}})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, e := range events {
		reasons[kubetest.Str(e, "reason")] = kubetest.Str(e, "involvedObject", "fieldPath")
	}
	if len(events) != 2 || reasons["BackOff"] != "spec.containers{web}" || reasons["Scheduled"] != "" {
		t.Fatalf("events: %v", events)
	}
}
