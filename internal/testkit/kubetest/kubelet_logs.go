package kubetest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The kubelet simulator's container output. The API server answers GET pods/{name}/log by
// proxying to the Node's kubelet endpoint (/containerLogs/{namespace}/{pod}/{container}); the
// simulator serves that path with TLS (a certificate of the cluster CA for 127.0.0.1), requires the
// API server's kubelet client certificate, and answers from the lines tests wrote, applying the
// query parameters the API server forwards as a kubelet does: tailLines first, then sinceTime or
// sinceSeconds (inclusive), timestamps, previous and limitBytes.

// logLine is one line a container printed, stamped when it was written.
type logLine struct {
	at   time.Time
	text string
}

// containerLog is the output of a container's current instance and, after a restart, of the
// previous one (a kubelet keeps no older instance).
type containerLog struct {
	current, previous []logLine
	hasPrevious       bool
}

func logKey(namespace, pod, container string) string {
	return namespace + "/" + pod + "/" + container
}

func (k *Kubelet) serveLogs() error {
	cert, err := tls.LoadX509KeyPair(k.c.pki.kubeletCert, k.c.pki.kubeletK)
	if err != nil {
		return fmt.Errorf("kubelet certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(k.c.pki.caPEM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	k.logPort = ln.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.containerLogs)
	k.logServer = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
		},
		ErrorLog: log.New(k.logF, "log server: ", log.LstdFlags|log.Lmicroseconds),
	}
	go func() {
		if err := k.logServer.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			k.errorf("kubelet log server: %v", err)
		}
	}()
	return nil
}

// containerLogs answers one log read the API server proxied.
func (k *Kubelet) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, pod, ctr := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	q := r.URL.Query()
	previous := q.Get("previous") == "true"
	k.mu.Lock()
	var lines []logLine
	cl := k.logs[logKey(ns, pod, ctr)]
	switch {
	case previous && (cl == nil || !cl.hasPrevious):
		k.mu.Unlock()
		http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", ctr, pod), http.StatusBadRequest)
		return
	case previous:
		lines = append(lines, cl.previous...)
	case cl != nil:
		lines = append(lines, cl.current...)
	}
	k.mu.Unlock()

	if s := q.Get("tailLines"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "invalid tailLines", http.StatusBadRequest)
			return
		}
		if n < len(lines) {
			lines = lines[len(lines)-n:]
		}
	}
	var since time.Time
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			http.Error(w, "invalid sinceTime", http.StatusBadRequest)
			return
		}
		since = t
	} else if s := q.Get("sinceSeconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			http.Error(w, "invalid sinceSeconds", http.StatusBadRequest)
			return
		}
		since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	limit := -1
	if s := q.Get("limitBytes"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			http.Error(w, "invalid limitBytes", http.StatusBadRequest)
			return
		}
		limit = n
	}
	timestamps := q.Get("timestamps") == "true"
	var b strings.Builder
	for _, l := range lines {
		if !since.IsZero() && l.at.Before(since) {
			continue
		}
		if timestamps {
			b.WriteString(l.at.UTC().Format(time.RFC3339Nano))
			b.WriteByte(' ')
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	out := b.String()
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(out))
}

// WriteLog appends lines to the current output of a container, each stamped with the time of the
// call (lines of one call share it, as lines a container prints in one burst can).
func (k *Kubelet) WriteLog(namespace, pod, container string, lines ...string) {
	k.WriteLogAt(namespace, pod, container, time.Now(), lines...)
}

// WriteLogAt appends lines stamped at. Stamps should not go backwards within a container, as a
// runtime's never do.
func (k *Kubelet) WriteLogAt(namespace, pod, container string, at time.Time, lines ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	key := logKey(namespace, pod, container)
	cl := k.logs[key]
	if cl == nil {
		cl = &containerLog{}
		k.logs[key] = cl
	}
	for _, l := range lines {
		cl.current = append(cl.current, logLine{at: at.UTC(), text: l})
	}
}

// RestartContainer reports that a container of a running Pod exited with exitCode and reason (for
// example 1, "Error", or 137, "OOMKilled") and was started again: restartCount + 1,
// lastState.terminated with the previous instance's start and end, a new running state. The
// output written so far becomes the previous instance's (previous=true) and the new instance starts
// with none.
func (k *Kubelet) RestartContainer(namespace, pod, container string, exitCode int, reason string) error {
	podPath := CorePath(namespace, "pods", pod)
	obj, err := k.admin.Get(podPath)
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", namespace, pod, err)
	}
	statuses := Slice(obj, "status", "containerStatuses")
	found := false
	finished := time.Now().UTC()
	for _, cs := range statuses {
		if Str(cs, "name") != container {
			continue
		}
		found = true
		started := Str(cs, "state", "running", "startedAt")
		if started == "" {
			started = Str(obj, "status", "startTime")
		}
		restarts, _ := cs["restartCount"].(float64)
		cs["restartCount"] = int64(restarts) + 1
		cs["lastState"] = Object{"terminated": Object{"exitCode": exitCode, "reason": reason,
			"startedAt": started, "finishedAt": finished.Format(time.RFC3339), "containerID": cs["containerID"]}}
		cs["state"] = Object{"running": Object{"startedAt": finished.Format(time.RFC3339)}}
	}
	if !found {
		return fmt.Errorf("pod %s/%s has no status of container %q (not started yet?)", namespace, pod, container)
	}
	k.mu.Lock()
	key := logKey(namespace, pod, container)
	cl := k.logs[key]
	if cl == nil {
		cl = &containerLog{}
		k.logs[key] = cl
	}
	cl.previous, cl.current, cl.hasPrevious = cl.current, nil, true
	k.mu.Unlock()
	list := make([]any, len(statuses))
	for i, cs := range statuses {
		list[i] = cs
	}
	if _, err := k.admin.Patch(podPath+"/status", MergePatch, Object{"status": Object{"containerStatuses": list}}); err != nil {
		return fmt.Errorf("report the restart of %s/%s %s: %w", namespace, pod, container, err)
	}
	k.logf("pod %s/%s container %s restarted (exit %d, %s)", namespace, pod, container, exitCode, reason)
	return nil
}

// EmitEvent creates a core/v1 Event about a Pod, as the kubelet reports one: type "Normal" or
// "Warning", a reason such as BackOff, and the container it concerns ("" for the Pod itself, else
// involvedObject.fieldPath spec.containers{name}). count > 1 reports a repeated event.
func (k *Kubelet) EmitEvent(namespace, pod, container, eventType, reason, message string, count int) error {
	obj, err := k.admin.Get(CorePath(namespace, "pods", pod))
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", namespace, pod, err)
	}
	involved := Object{"kind": "Pod", "apiVersion": "v1", "namespace": namespace, "name": pod,
		"uid": Str(obj, "metadata", "uid"), "resourceVersion": Str(obj, "metadata", "resourceVersion")}
	if container != "" {
		involved["fieldPath"] = "spec.containers{" + container + "}"
	}
	if count < 1 {
		count = 1
	}
	ts := now()
	_, err = k.admin.Create(CorePath(namespace, "events", ""), Object{
		"apiVersion": "v1", "kind": "Event",
		"metadata":       Object{"generateName": pod + ".", "namespace": namespace},
		"involvedObject": involved,
		"type":           eventType, "reason": reason, "message": message, "count": count,
		"firstTimestamp": ts, "lastTimestamp": ts,
		"source":             Object{"component": "kubelet", "host": NodeName},
		"reportingComponent": "kubelet", "reportingInstance": NodeName,
	})
	if err != nil {
		return fmt.Errorf("create event for %s/%s: %w", namespace, pod, err)
	}
	return nil
}
