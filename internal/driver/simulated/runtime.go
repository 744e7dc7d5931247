package simulated

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/runtimelog"
)

// The simulated runtime: every revision the world holds as prepared runs one gateway Pod (and an
// agent Pod when dedicated) whose containers, events and output tests script with the methods
// below. A revision this process never prepared (occ dev's API process: the worker prepared it)
// is shown as running since its admission, with a fixed startup log, so demos have something to
// read.

// simContainer is one simulated container: its current and previous output.
type simContainer struct {
	restarts    int
	waiting     string // waiting reason, "" when running
	startedAt   time.Time
	current     []runtimelog.RawLine
	previous    []runtimelog.RawLine
	termination *driver.ContainerTermination
	events      []driver.RuntimeEvent
}

// simRuntime is the scripted runtime of one revision, by source.
type simRuntime struct {
	containers map[string]*simContainer
	known      []string
}

// Retention of the simulated runtime's output.
const simRetention = "The simulated runtime keeps each container's current and previous instance in memory."

// WriteRuntimeLog appends lines to the current output of revision revID's source container,
// stamped with the driver's clock.
func (d *Driver) WriteRuntimeLog(revID, source string, lines ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.simContainerLocked(revID, source)
	now := d.now().UTC()
	for _, l := range lines {
		c.current = append(c.current, runtimelog.RawLine{Time: now, Text: l})
	}
}

// RestartRuntimeContainer ends the current instance of a source container with exitCode and
// reason (its output becomes the previous instance's) and starts a new, empty one.
func (d *Driver) RestartRuntimeContainer(revID, source string, exitCode int, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.simContainerLocked(revID, source)
	now := d.now().UTC()
	started := c.startedAt
	c.termination = &driver.ContainerTermination{Reason: reason, ExitCode: exitCode, StartedAt: &started, FinishedAt: &now}
	c.previous, c.current = c.current, nil
	c.restarts++
	c.startedAt = now
}

// SetRuntimeWaiting holds a source container waiting with reason (CrashLoopBackOff,
// ImagePullBackOff...); "" lets it run again.
func (d *Driver) SetRuntimeWaiting(revID, source, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.simContainerLocked(revID, source).waiting = reason
}

// AddRuntimeEvent records an event about a source's Pod.
func (d *Driver) AddRuntimeEvent(revID, source, typ, reason, message string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.simContainerLocked(revID, source)
	now := d.now().UTC()
	c.events = append(c.events, driver.RuntimeEvent{Type: typ, Reason: reason, Message: message, Container: source, Count: 1, LastObservedAt: &now})
}

// SetRuntimeSecrets gives revision revID's runtime Secret values, as a real driver would read
// them from the Secrets its workload references: they never leave in a log line.
func (d *Driver) SetRuntimeSecrets(revID string, values ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.simRuntimeLocked(revID).known = append([]string(nil), values...)
}

func (d *Driver) simRuntimeLocked(revID string) *simRuntime {
	if d.runtimes == nil {
		d.runtimes = map[string]*simRuntime{}
	}
	rt, ok := d.runtimes[revID]
	if !ok {
		rt = &simRuntime{containers: map[string]*simContainer{}}
		d.runtimes[revID] = rt
	}
	return rt
}

func (d *Driver) simContainerLocked(revID, source string) *simContainer {
	rt := d.simRuntimeLocked(revID)
	c, ok := rt.containers[source]
	if !ok {
		c = &simContainer{startedAt: d.now().UTC()}
		rt.containers[source] = c
	}
	return c
}

// runtimeSources are the sources a revision runs.
func runtimeSources(rev driver.Revision) []string {
	if rev.ExecutionMode == driver.ExecutionDedicated {
		return []string{driver.LogSourceGateway, driver.LogSourceAgent}
	}
	return []string{driver.LogSourceGateway}
}

// simPod names a source's simulated Pod: stable per revision and source.
func simPod(rev driver.Revision, source string) (name, uid string) {
	sum := sha256.Sum256([]byte(rev.ID + "/" + source))
	h := hex.EncodeToString(sum[:])
	return fmt.Sprintf("occ-rev-%d-%s-%s", rev.Number, source, h[:5]), h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// runtimeSnapshot is what the world says about a revision's runtime: whether it runs (and is
// ready), and a copy of its scripted containers.
type runtimeSnapshot struct {
	running, ready bool
	since          time.Time
	containers     map[string]simContainer
	known          []string
}

func (d *Driver) runtimeSnapshot(rev driver.Revision) runtimeSnapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	snap := runtimeSnapshot{containers: map[string]simContainer{}}
	if s, ok := d.revisions[rev.ID]; ok {
		snap.running, snap.ready, snap.since = s.phase == PhasePrepared, s.ready, s.preparedAt
	} else {
		snap.running, snap.ready, snap.since = true, true, rev.CreatedAt
	}
	if rt, ok := d.runtimes[rev.ID]; ok {
		for src, c := range rt.containers {
			cp := *c
			cp.current = append([]runtimelog.RawLine(nil), c.current...)
			cp.previous = append([]runtimelog.RawLine(nil), c.previous...)
			cp.events = append([]driver.RuntimeEvent(nil), c.events...)
			snap.containers[src] = cp
		}
		snap.known = append([]string(nil), rt.known...)
	}
	for _, src := range runtimeSources(rev) {
		if _, ok := snap.containers[src]; !ok {
			snap.containers[src] = simContainer{startedAt: snap.since.UTC(), current: startupLog(rev, src, snap.since.UTC())}
		}
	}
	return snap
}

// startupLog is the output of a container nobody scripted: the wrapper's startup phases and the
// gateway's first record.
func startupLog(rev driver.Revision, source string, at time.Time) []runtimelog.RawLine {
	return []runtimelog.RawLine{
		{Time: at, Text: fmt.Sprintf(`{"event":"runtime.startup_phase","container":%q,"phase":"config","outcome":"ok","ms":3}`, source)},
		{Time: at.Add(time.Millisecond), Text: fmt.Sprintf(`{"level":"info","subsystem":%q,"message":"simulated %s %s started"}`, source, rev.Harness.ID, source)},
	}
}

// DescribeRuntime implements driver.RuntimeDescriber.
func (d *Driver) DescribeRuntime(ctx context.Context, rev driver.Revision) (driver.RuntimeView, error) {
	if _, err := d.enterRevision(ctx, OpDescribeRuntime, rev); err != nil {
		return driver.RuntimeView{}, err
	}
	snap := d.runtimeSnapshot(rev)
	var view driver.RuntimeView
	for _, src := range runtimeSources(rev) {
		name, uid := simPod(rev, src)
		source := driver.RuntimeLogSource{ID: src, Retention: simRetention}
		if !snap.running {
			source.UnavailableCode = driver.SourceUnavailableNoPod
			view.Sources = append(view.Sources, source)
			continue
		}
		c := snap.containers[src]
		source.Available = true
		source.Pods = []driver.RuntimeLogSourcePod{{Name: name, UID: uid, Container: src, RestartCount: c.restarts}}
		view.Sources = append(view.Sources, source)
		created := snap.since.UTC()
		started := c.startedAt
		ctr := driver.RuntimeContainer{Name: src, State: driver.ContainerRunning, Ready: snap.ready, RestartCount: c.restarts,
			StartedAt: &started, LastTermination: c.termination, Image: simImage(rev, src), ImageID: simImageID(rev, src)}
		switch {
		case c.waiting != "":
			ctr.State, ctr.Reason, ctr.Ready, ctr.StartedAt = driver.ContainerWaiting, c.waiting, false, nil
		case !snap.ready:
			ctr.State, ctr.Reason, ctr.StartedAt = driver.ContainerWaiting, "ContainerCreating", nil
		}
		phase := "Running"
		if !snap.ready {
			phase = "Pending"
		}
		events := make([]driver.RuntimeEvent, 0, len(c.events))
		for i := len(c.events) - 1; i >= 0 && len(events) < driver.MaxPodEvents; i-- {
			e := c.events[i]
			e.Message, _ = runtimelog.Clean(e.Message, snap.known, driver.MaxEventMessageBytes)
			events = append(events, e)
		}
		view.Pods = append(view.Pods, driver.RuntimePod{Name: name, UID: uid, Role: src, Phase: phase, Ready: ctr.Ready,
			CreatedAt: &created, Containers: []driver.RuntimeContainer{ctr}, Events: events})
	}
	return view, nil
}

// ReadRuntimeLogs implements driver.RuntimeLogReader.
func (d *Driver) ReadRuntimeLogs(ctx context.Context, rev driver.Revision, q driver.RuntimeLogQuery) (driver.RuntimeLogPage, error) {
	if _, err := d.enterRevision(ctx, OpReadRuntimeLogs, rev); err != nil {
		return driver.RuntimeLogPage{}, err
	}
	if !slices.Contains(runtimeSources(rev), q.Source) {
		return driver.RuntimeLogPage{}, &driver.RuntimeReadError{Code: driver.RuntimeSourceUnavailable, Message: "This revision has no such log source."}
	}
	snap := d.runtimeSnapshot(rev)
	name, uid := simPod(rev, q.Source)
	if !snap.running {
		return driver.RuntimeLogPage{}, &driver.RuntimeReadError{Code: driver.RuntimeSourceUnavailable, Message: "No Pod of this revision runs the source's container."}
	}
	if q.Pod != "" && q.Pod != name {
		return driver.RuntimeLogPage{}, &driver.RuntimeReadError{Code: driver.RuntimePodInvalid, Message: "The Pod is not one of this revision's Pods for the source."}
	}
	c := snap.containers[q.Source]
	stream := runtimelog.Stream{Source: q.Source, Pod: name, PodUID: uid, Container: q.Source, RestartCount: c.restarts}
	all := c.current
	if q.Previous {
		all, stream.RestartCount = c.previous, max(c.restarts-1, 0)
	}
	// The runtime's own filters, as a kubelet applies them: since, the resume time, the tail.
	var lines []runtimelog.RawLine
	now := d.now()
	for _, l := range all {
		if q.Since > 0 && l.Time.Before(now.Add(-q.Since)) {
			continue
		}
		if q.After != nil && l.Time.Before(q.After.Time.Truncate(time.Second)) {
			continue
		}
		lines = append(lines, l)
	}
	tail := q.TailLines
	if tail <= 0 || tail > runtimelog.MaxTailLines {
		tail = runtimelog.DefaultTailLines
	}
	full := len(lines) >= tail
	if full {
		lines = lines[len(lines)-tail:]
	}
	page := runtimelog.Build(runtimelog.Input{Stream: stream, Lines: lines, WindowFull: full, After: q.After,
		MinLevel: q.MinLevel, Known: snap.known, PEMOpen: q.PEMOpen})
	return driver.RuntimeLogPage{Stream: stream, Page: page}, nil
}

// DiagnoseRuntime implements driver.RuntimeDiagnoser.
func (d *Driver) DiagnoseRuntime(ctx context.Context, rev driver.Revision) ([]driver.DiagnosticCheck, error) {
	if _, err := d.enterRevision(ctx, OpDiagnoseRuntime, rev); err != nil {
		return nil, err
	}
	snap := d.runtimeSnapshot(rev)
	now := d.now().UTC()
	check := func(component, name string, ok bool, code string) driver.DiagnosticCheck {
		c := driver.DiagnosticCheck{Component: component, Check: name, State: driver.CheckSucceeded, CheckedAt: &now}
		if !ok {
			c.State, c.Code = driver.CheckFailed, code
		}
		return c
	}
	checks := []driver.DiagnosticCheck{check("compute", "workload-present", snap.running, "NO_WORKLOAD")}
	for _, src := range runtimeSources(rev) {
		c := snap.containers[src]
		checks = append(checks,
			check(src, "container-ready", snap.running && snap.ready && c.waiting == "", "CONTAINER_NOT_READY"),
			check(src, "no-restarts", c.restarts == 0 && c.waiting != "CrashLoopBackOff", "CONTAINER_RESTARTING"))
	}
	return checks, nil
}

// RuntimeImages implements driver.RuntimeImageReader.
func (d *Driver) RuntimeImages(ctx context.Context, rev driver.Revision) ([]driver.RuntimeImage, error) {
	if _, err := d.enterRevision(ctx, OpRuntimeImages, rev); err != nil {
		return nil, err
	}
	var out []driver.RuntimeImage
	for _, src := range runtimeSources(rev) {
		out = append(out, driver.RuntimeImage{Workload: src, Container: src, Image: simImage(rev, src), ImageID: simImageID(rev, src)})
	}
	return out, nil
}

func simImage(rev driver.Revision, source string) string {
	return fmt.Sprintf("occ.local/simulated/%s-%s:%s", rev.Harness.ID, source, rev.Harness.Version)
}

func simImageID(rev driver.Revision, source string) string {
	sum := sha256.Sum256([]byte(simImage(rev, source)))
	return "sha256:" + hex.EncodeToString(sum[:])
}
