package simulated_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/runtimelog"
)

func preparedRevision(t *testing.T, d *simulated.Driver, mode string) driver.Revision {
	t.Helper()
	rev := driver.Revision{ID: "rev_1", NamespaceID: "ns_1", AgentID: "agt_1", Number: 1, ExecutionMode: mode,
		Harness: driver.Harness{ID: "openclaw", Version: "1.0.0", Mode: mode},
		Compute: driver.ComputeRef{ID: "compute-simulated", Implementation: simulated.Name}}
	if _, err := d.PrepareRevision(context.Background(), rev, driver.RevisionContext{}); err != nil {
		t.Fatal(err)
	}
	return rev
}

func lineMessages(p driver.RuntimeLogPage) []string {
	var out []string
	for _, r := range p.Page.Records {
		if r.Type == runtimelog.TypeLine {
			out = append(out, r.Message)
		} else {
			out = append(out, r.Type+":"+r.Reason)
		}
	}
	return out
}

func TestSimulatedRuntimeViewLogsAndRestarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, clk := newDriver(t, simulated.Config{})
	rev := preparedRevision(t, d, driver.ExecutionDedicated)

	view, err := d.DescribeRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Pods) != 2 || view.Pods[0].Role != driver.LogSourceGateway || view.Pods[1].Role != driver.LogSourceAgent ||
		!view.Pods[0].Ready || view.Pods[0].Containers[0].State != driver.ContainerRunning {
		t.Fatalf("view of a ready dedicated revision: %+v", view.Pods)
	}
	if len(view.Sources) != 2 || !view.Sources[0].Available || view.Sources[0].Pods[0].Name != view.Pods[0].Name {
		t.Fatalf("sources: %+v", view.Sources)
	}

	d.SetRuntimeSecrets(rev.ID, "sk-model-key-value-1234")
	d.WriteRuntimeLog(rev.ID, driver.LogSourceGateway, "first", "printed sk-model-key-value-1234 by mistake")
	page, err := d.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lineMessages(page), "|"); got != "first|printed [redacted:secret] by mistake" {
		t.Fatalf("first page: %q", got)
	}

	clk.Advance(time.Second)
	d.WriteRuntimeLog(rev.ID, driver.LogSourceGateway, "second")
	next, err := d.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 100, After: &page.Page.Next})
	if err != nil || strings.Join(lineMessages(next), "|") != "second" {
		t.Fatalf("follow page: %q %v", lineMessages(next), err)
	}

	d.RestartRuntimeContainer(rev.ID, driver.LogSourceGateway, 137, "OOMKilled")
	d.AddRuntimeEvent(rev.ID, driver.LogSourceGateway, "Warning", "BackOff", "Back-off restarting failed container, token=abcdef123")
	d.WriteRuntimeLog(rev.ID, driver.LogSourceGateway, "after restart")
	restarted, err := d.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 100, After: &next.Page.Next})
	if err != nil || strings.Join(lineMessages(restarted), "|") != "gap:stream_replaced|after restart" || restarted.Stream.RestartCount != 1 {
		t.Fatalf("page after a restart: %q (stream %+v) %v", lineMessages(restarted), restarted.Stream, err)
	}
	prev, err := d.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 2, Previous: true})
	if err != nil || strings.Join(lineMessages(prev), "|") != "printed [redacted:secret] by mistake|second" || prev.Stream.RestartCount != 0 {
		t.Fatalf("previous instance: %q %v", lineMessages(prev), err)
	}

	view, _ = d.DescribeRuntime(ctx, rev)
	gw := view.Pods[0]
	c := gw.Containers[0]
	if c.RestartCount != 1 || c.LastTermination == nil || c.LastTermination.Reason != "OOMKilled" || c.LastTermination.ExitCode != 137 {
		t.Fatalf("container after a restart: %+v", c)
	}
	if len(gw.Events) != 1 || strings.Contains(gw.Events[0].Message, "abcdef123") {
		t.Fatalf("events: %+v", gw.Events)
	}
	checks, err := d.DiagnoseRuntime(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	for _, ch := range checks {
		if ch.State == driver.CheckFailed {
			failed[ch.Component+"/"+ch.Check] = ch.Code
		}
	}
	if len(failed) != 1 || failed["gateway/no-restarts"] != "CONTAINER_RESTARTING" {
		t.Fatalf("diagnostics after a restart: %+v", checks)
	}
}

func TestSimulatedRuntimeRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := newDriver(t, simulated.Config{})
	rev := preparedRevision(t, d, driver.ExecutionEmbedded)
	var re *driver.RuntimeReadError
	if _, err := d.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceAgent}); !errors.As(err, &re) || re.Code != driver.RuntimeSourceUnavailable {
		t.Fatalf("agent source of an embedded revision: %v", err)
	}
	if _, err := d.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, Pod: "someone-else"}); !errors.As(err, &re) || re.Code != driver.RuntimePodInvalid {
		t.Fatalf("a Pod of another revision: %v", err)
	}
	if err := d.RetireRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	view, err := d.DescribeRuntime(ctx, rev)
	if err != nil || len(view.Pods) != 0 || view.Sources[0].Available || view.Sources[0].UnavailableCode != driver.SourceUnavailableNoPod {
		t.Fatalf("view of a retired revision: %+v %v", view, err)
	}
	if _, err := d.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway}); !errors.As(err, &re) || re.Code != driver.RuntimeSourceUnavailable {
		t.Fatalf("logs of a retired revision: %v", err)
	}
}

// TestSimulatedRuntimeOfAnUnknownRevision: the API process of occ dev never prepared the
// revision (the worker did); it still shows a running workload with a startup log.
func TestSimulatedRuntimeOfAnUnknownRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := newDriver(t, simulated.Config{})
	rev := driver.Revision{ID: "rev_9", NamespaceID: "ns_1", AgentID: "agt_1", Number: 3, ExecutionMode: driver.ExecutionEmbedded,
		Harness: driver.Harness{ID: "openclaw", Version: "1.0.0"}, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Compute: driver.ComputeRef{ID: "compute-simulated", Implementation: simulated.Name}}
	page, err := d.ReadRuntimeLogs(ctx, rev, driver.RuntimeLogQuery{Source: driver.LogSourceGateway, TailLines: 10})
	if err != nil || strings.Join(lineMessages(page), "|") != "runtime.startup_phase|simulated openclaw gateway started" {
		t.Fatalf("startup log: %q %v", lineMessages(page), err)
	}
	images, err := d.RuntimeImages(ctx, rev)
	if err != nil || len(images) != 1 || !strings.HasPrefix(images[0].ImageID, "sha256:") {
		t.Fatalf("images: %+v %v", images, err)
	}
	if caps := driver.RuntimeCapabilitiesOf(d); !caps.Status || !caps.Logs || !caps.Diagnostics || !caps.Images {
		t.Fatalf("capabilities: %+v", caps)
	}
}
