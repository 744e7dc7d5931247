package kubernetes

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
	"github.com/openclaw/occ/internal/runtimelog"
)

// ReadRuntimeLogs implements driver.RuntimeLogReader: one page of a source container's output,
// read with pods/log (timestamps on, the runtime's own tail, since and byte limit), with every
// value of the Secrets the Pod refers to masked.
func (d *Compute) ReadRuntimeLogs(ctx context.Context, rev driver.Revision, q driver.RuntimeLogQuery) (driver.RuntimeLogPage, error) {
	var page driver.RuntimeLogPage
	if q.Source != driver.LogSourceGateway && (q.Source != driver.LogSourceAgent || rev.ExecutionMode != driver.ExecutionDedicated) {
		return page, &driver.RuntimeReadError{Code: driver.RuntimePodInvalid, Message: "The revision has no such log source."}
	}
	ns, pods, err := d.revisionPods(ctx, rev)
	if err != nil {
		return page, err
	}
	pod, err := pickPod(pods, q)
	if err != nil {
		return page, err
	}
	_, container := sourceOf(pod)
	restarts := 0
	if cs := pod.containerStatus(container); cs != nil {
		restarts = cs.RestartCount
	}
	if q.Previous && restarts == 0 {
		return page, &driver.RuntimeReadError{Code: driver.RuntimeSourceUnavailable, Message: "The container has not restarted: it has no previous instance."}
	}
	stream := runtimelog.Stream{Source: q.Source, Pod: pod.Metadata.Name, PodUID: pod.Metadata.UID, Container: container, RestartCount: restarts}
	if q.Previous {
		stream.RestartCount = restarts - 1 // the instance read is the one before the current
	}
	known, err := newSecretValues(d, ns).of(ctx, pod)
	if err != nil {
		return page, err
	}
	tail := q.TailLines
	if tail <= 0 {
		tail = runtimelog.DefaultTailLines
	}
	tail = min(tail, runtimelog.MaxTailLines)
	params := url.Values{
		"container": {container}, "timestamps": {"true"}, "tailLines": {strconv.Itoa(tail)},
		"limitBytes": {strconv.Itoa(runtimelog.MaxReadBytes)},
	}
	if q.Previous {
		params.Set("previous", "true")
	}
	switch after := q.After; {
	case after != nil && !after.Time.IsZero() && after.PodUID == stream.PodUID && after.Container == stream.Container &&
		after.RestartCount == stream.RestartCount:
		// The runtime filters by whole seconds: read from the second of the stop, Build skips
		// what the previous page showed.
		params.Set("sinceTime", after.Time.UTC().Truncate(time.Second).Format(time.RFC3339))
	case q.Since > 0:
		params.Set("sinceSeconds", strconv.FormatInt(int64((q.Since+time.Second-1)/time.Second), 10))
	}
	var body []byte
	err = d.client.Query(ctx, kube.Pods.Path(ns, pod.Metadata.Name)+"/log", params, &body)
	switch {
	case kube.StatusOf(err) == http.StatusNotFound:
		return page, &driver.RuntimeReadError{Code: driver.RuntimeSourceUnavailable, Err: classify(err), Message: "The Pod is gone."}
	case kube.StatusOf(err) == http.StatusBadRequest:
		// The kubelet has no output for this instance (not started yet, or the previous one was
		// removed): an empty page, not a failure.
		body, err = nil, nil
	case err != nil:
		return page, runtimeError(err)
	}
	lines := parseLogLines(body)
	page.Stream = stream
	page.Page = runtimelog.Build(runtimelog.Input{
		Stream: stream, Lines: lines,
		ReadLimited: len(body) >= runtimelog.MaxReadBytes, WindowFull: len(lines) >= tail,
		After: q.After, MinLevel: q.MinLevel, Known: known, PEMOpen: q.PEMOpen,
	})
	return page, nil
}

// pickPod is the Pod a query reads: the one it names, which must be a Pod of the revision holding
// the source, or the source's newest live Pod.
func pickPod(pods []runtimePodView, q driver.RuntimeLogQuery) (*runtimePodView, error) {
	var first *runtimePodView
	for i := range pods {
		if s, _ := sourceOf(&pods[i]); s != q.Source {
			continue
		}
		if q.Pod != "" && pods[i].Metadata.Name == q.Pod {
			return &pods[i], nil
		}
		if first == nil {
			first = &pods[i] // revisionPods puts live Pods first, newest first
		}
	}
	if q.Pod != "" {
		return nil, &driver.RuntimeReadError{Code: driver.RuntimePodInvalid, Message: "The Pod is not one of the revision's Pods of this source."}
	}
	if first == nil {
		return nil, &driver.RuntimeReadError{Code: driver.RuntimeSourceUnavailable, Message: "No Pod of the revision runs this source now."}
	}
	return first, nil
}

// parseLogLines splits a timestamps=true body into lines with their RFC 3339 stamps; a line
// without a readable stamp keeps its whole text and no time.
func parseLogLines(body []byte) []runtimelog.RawLine {
	if len(body) == 0 {
		return nil
	}
	body = bytes.TrimSuffix(body, []byte("\n"))
	parts := strings.Split(string(body), "\n")
	out := make([]runtimelog.RawLine, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSuffix(p, "\r")
		stamp, text, ok := strings.Cut(p, " ")
		if t, err := time.Parse(time.RFC3339Nano, stamp); ok && err == nil {
			out = append(out, runtimelog.RawLine{Time: t.UTC(), Text: text})
			continue
		}
		out = append(out, runtimelog.RawLine{Text: p})
	}
	return out
}

// secretValues reads, once per name, the values of the Secrets a Pod's containers refer to
// (environment variables, envFrom and Secret volumes), so that Build and Clean can mask them.
type secretValues struct {
	d      *Compute
	ns     string
	values map[string][]string
}

func newSecretValues(d *Compute, ns string) *secretValues {
	return &secretValues{d: d, ns: ns, values: map[string][]string{}}
}

type secretDataView struct {
	Data map[string][]byte `json:"data"`
}

// of returns the values of the Secrets pod refers to. A Secret that is gone is passed over (its
// values cannot be in a running container); any other failure refuses the read, since output
// could not be masked.
func (s *secretValues) of(ctx context.Context, pod *runtimePodView) ([]string, error) {
	var known []string
	for _, name := range referencedSecrets(pod) {
		vals, ok := s.values[name]
		if !ok {
			var v secretDataView
			found, err := s.d.read(ctx, kube.Secrets, s.ns, name, &v)
			if err != nil {
				return nil, runtimeError(err)
			}
			if found {
				for _, b := range v.Data {
					vals = append(vals, string(b))
					if t := strings.TrimSpace(string(b)); t != string(b) {
						vals = append(vals, t)
					}
				}
			}
			s.values[name] = vals
		}
		known = append(known, vals...)
	}
	return known, nil
}

func referencedSecrets(pod *runtimePodView) []string {
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			add(v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name)
				}
			}
		}
	}
	return names
}
