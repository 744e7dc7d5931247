package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/runtimelog"
	"github.com/openclaw/occ/internal/store"
)

// Runtime reads: the route's permissions, then the revision's own Compute Driver, read within
// runtimeReadTimeout. The read runs inside the route's transaction so that a log view's audit
// event commits before any line is answered.

// runtimeReadTimeout bounds one read of the runtime, as upstream.
const runtimeReadTimeout = 10 * time.Second

// runtimeCursorTTL is how long a log cursor resumes its view; an older one restarts at the tail
// with a cursor_expired gap.
const runtimeCursorTTL = time.Hour

// downloadLines is what a download reads.
const downloadLines = 1000

// runtimeTarget is the revision a runtime route reads, resolved and authorized.
type runtimeTarget struct {
	agent    store.AgentRow
	revision store.RevisionRow
	driver   driver.Revision
	compute  driver.Compute
}

// runtimeTarget spends the caller's runtime budget (before authorization, so a caller without
// grants spends only its own), authorizes the Agent with check and, when revisionRead, the
// revision, and resolves the Compute Driver the revision is pinned to. release must be called.
func (s *Server) runtimeTarget(ctx context.Context, c *call, check func(context.Context, store.AgentRow) error, revisionRead bool) (runtimeTarget, func(), error) {
	release, err := s.runtimeGate.enter(c.identity.ID, c.params["agentId"], s.now())
	if err != nil {
		return runtimeTarget{}, nil, err
	}
	t, err := s.resolveRuntimeTarget(ctx, c, check, revisionRead)
	if err != nil {
		release()
		return t, nil, err
	}
	return t, release, nil
}

func (s *Server) resolveRuntimeTarget(ctx context.Context, c *call, check func(context.Context, store.AgentRow) error, revisionRead bool) (t runtimeTarget, err error) {
	a, err := store.GetAgent(ctx, c.db, c.namespace.ID, c.params["agentId"], store.NoLock)
	if errors.Is(err, store.ErrNotFound) {
		return t, platform.NotFound("The Agent does not exist in this Namespace.")
	} else if err != nil {
		return t, platform.Unavailable(err)
	}
	if err := check(ctx, a); err != nil {
		return t, err
	}
	t.agent = a
	if revisionRead {
		t.revision, err = s.pathRevision(ctx, c, "deploymentId")
	} else {
		t.revision, err = store.GetRevision(ctx, c.db, store.GetRevisionParams{NamespaceID: a.NamespaceID, AgentID: a.ID, ID: c.params["deploymentId"]})
		if errors.Is(err, store.ErrNotFound) {
			err = platform.NotFound("The revision does not exist for this Agent.")
		} else if err != nil {
			err = platform.Unavailable(err)
		}
	}
	if err != nil {
		return t, err
	}
	t.driver, t.compute, err = s.revisionCompute(t.revision)
	return t, err
}

// revisionCompute is the driver snapshot of rev and the Compute Driver it is pinned to, which
// must be the one this API runs.
func (s *Server) revisionCompute(rev store.RevisionRow) (driver.Revision, driver.Compute, error) {
	var spec platform.RevisionSpec
	if err := json.Unmarshal(rev.AdmittedSpec, &spec); err != nil {
		return driver.Revision{}, nil, platform.Unavailable(fmt.Errorf("revision %s: unreadable snapshot: %w", rev.ID, err))
	}
	c := s.cfg.Compute
	if c == nil || spec.Compute.ID != c.ID() || spec.Compute.Implementation != c.Implementation() {
		return driver.Revision{}, nil, platform.NewError(platform.CodeDependencyUnavailable, "The revision's Compute Driver is not selected in this Installation.")
	}
	ref := platform.RevisionRef{ID: rev.ID, NamespaceID: rev.NamespaceID, AgentID: rev.AgentID, Number: rev.Number, AdmittedAt: rev.AdmittedAt}
	return spec.DriverRevision(ref), c, nil
}

// authorizeAll checks each action on the Agent.
func authorizeAll(c *call, actions ...string) func(context.Context, store.AgentRow) error {
	return func(ctx context.Context, a store.AgentRow) error {
		for _, action := range actions {
			if err := c.authorize(ctx, action, nsResource(iam.KindAgent, a.ID, a.NamespaceID)); err != nil {
				return err
			}
		}
		return nil
	}
}

// authorizeLogs is read_logs, or administer instead, and read. A caller with neither is denied
// read_logs.
func authorizeLogs(c *call) func(context.Context, store.AgentRow) error {
	return func(ctx context.Context, a store.AgentRow) error {
		res := nsResource(iam.KindAgent, a.ID, a.NamespaceID)
		ok, err := c.allowed(ctx, iam.ActionReadLogs, res)
		if err == nil && !ok {
			ok, err = c.allowed(ctx, iam.ActionAdminister, res)
		}
		if err != nil {
			return err
		}
		if !ok {
			return c.authorize(ctx, iam.ActionReadLogs, res)
		}
		return c.authorize(ctx, iam.ActionRead, res)
	}
}

// readRuntime runs one driver read within runtimeReadTimeout and maps its failure.
func readRuntime[T any](ctx context.Context, read func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, runtimeReadTimeout)
	defer cancel()
	v, err := read(ctx)
	if err != nil {
		return v, runtimeError(err)
	}
	return v, nil
}

// runtimeError maps a driver's failure of a runtime read to the API's answer.
func runtimeError(err error) error {
	var re *driver.RuntimeReadError
	switch {
	case errors.As(err, &re):
		code := map[string]string{
			driver.RuntimePodInvalid:        platform.CodeRuntimeLogsPodInvalid,
			driver.RuntimeSourceUnavailable: platform.CodeRuntimeLogsSourceUnavailable,
			driver.RuntimeClusterRBAC:       platform.CodeRuntimeLogsClusterRBAC,
			driver.RuntimeReadTimeout:       platform.CodeRuntimeLogsTimeout,
		}[re.Code]
		if code == "" {
			code = platform.CodeRuntimeLogsUnavailable
		}
		e := platform.NewError(code, re.Message)
		e.Cause = err
		if code == platform.CodeRuntimeLogsPodInvalid {
			e.Details = []problem.Detail{{Path: "/pod", Code: problem.DetailInvalidValue}}
		}
		return e
	case errors.Is(err, context.DeadlineExceeded):
		e := platform.NewError(platform.CodeRuntimeLogsTimeout, "The runtime did not answer in time.")
		e.Cause = err
		return e
	}
	e := platform.NewError(platform.CodeRuntimeLogsUnavailable, "The runtime could not be read.")
	e.Cause = err
	return e
}

func notImplemented(what string) error {
	return platform.NewError(platform.CodeNotImplemented, "The selected Compute Driver does not offer "+what+".")
}

// ---- GET …/deployments/{deploymentId}/runtime ----

type runtimeContainerView struct {
	Name            string           `json:"name"`
	State           string           `json:"state"`
	Reason          *string          `json:"reason"`
	Ready           bool             `json:"ready"`
	RestartCount    int              `json:"restartCount"`
	StartedAt       *string          `json:"startedAt"`
	LastTermination *terminationView `json:"lastTermination"`
	Image           string           `json:"image,omitempty"`
	ImageID         string           `json:"imageId,omitempty"`
}

type terminationView struct {
	Reason     *string `json:"reason"`
	ExitCode   int     `json:"exitCode"`
	Signal     int     `json:"signal,omitempty"`
	StartedAt  *string `json:"startedAt"`
	FinishedAt *string `json:"finishedAt"`
}

type runtimeEventView struct {
	Type           string  `json:"type"`
	Reason         string  `json:"reason"`
	Message        string  `json:"message"`
	Container      *string `json:"container"`
	Count          int     `json:"count"`
	LastObservedAt *string `json:"lastObservedAt"`
}

type runtimePodView struct {
	Name       string                 `json:"name"`
	UID        string                 `json:"uid"`
	Cluster    string                 `json:"cluster"`
	Role       string                 `json:"role"`
	Phase      string                 `json:"phase"`
	Ready      bool                   `json:"ready"`
	CreatedAt  *string                `json:"createdAt"`
	Containers []runtimeContainerView `json:"containers"`
	Events     []runtimeEventView     `json:"events"`
}

type runtimeSourcePodView struct {
	Name         string `json:"name"`
	UID          string `json:"uid"`
	Container    string `json:"container"`
	RestartCount int    `json:"restartCount"`
}

type runtimeSourceView struct {
	ID              string                 `json:"id"`
	Kind            string                 `json:"kind"`
	Available       bool                   `json:"available"`
	UnavailableCode string                 `json:"unavailableCode,omitempty"`
	Pods            []runtimeSourcePodView `json:"pods"`
	Retention       string                 `json:"retention"`
}

type runtimeView struct {
	RevisionID string              `json:"revisionId"`
	ObservedAt string              `json:"observedAt"`
	Pods       []runtimePodView    `json:"pods"`
	Sources    []runtimeSourceView `json:"sources"`
}

func (s *Server) getRuntime(ctx context.Context, c *call) error {
	t, release, err := s.runtimeTarget(ctx, c, authorizeAll(c, iam.ActionOperate, iam.ActionRead), true)
	if err != nil {
		return err
	}
	defer release()
	describer, ok := t.compute.(driver.RuntimeDescriber)
	if !ok {
		return notImplemented("runtime status")
	}
	v, err := readRuntime(ctx, func(ctx context.Context) (driver.RuntimeView, error) { return describer.DescribeRuntime(ctx, t.driver) })
	if err != nil {
		return err
	}
	c.respond(0, projectRuntime(t.revision.ID, s.now(), v))
	return nil
}

// projectRuntime is the API view of a driver's runtime view, bounded and cleaned once more: the
// driver already did both, and the API does not take a driver's word for it.
func projectRuntime(revisionID string, now time.Time, v driver.RuntimeView) runtimeView {
	out := runtimeView{RevisionID: revisionID, ObservedAt: platform.FormatTime(now), Pods: []runtimePodView{}, Sources: []runtimeSourceView{}}
	for _, p := range head(v.Pods, driver.MaxRuntimePods) {
		pv := runtimePodView{Name: p.Name, UID: p.UID, Cluster: "control", Role: p.Role, Phase: plain(p.Phase, 64), Ready: p.Ready,
			CreatedAt: timeView(p.CreatedAt), Containers: []runtimeContainerView{}, Events: []runtimeEventView{}}
		for _, ctr := range head(p.Containers, driver.MaxRuntimeContainers) {
			cv := runtimeContainerView{Name: ctr.Name, State: ctr.State, Reason: optionalText(ctr.Reason, 128), Ready: ctr.Ready,
				RestartCount: ctr.RestartCount, StartedAt: timeView(ctr.StartedAt), Image: plain(ctr.Image, 512), ImageID: plain(ctr.ImageID, 512)}
			if lt := ctr.LastTermination; lt != nil {
				cv.LastTermination = &terminationView{Reason: optionalText(lt.Reason, 128), ExitCode: lt.ExitCode, Signal: lt.Signal,
					StartedAt: timeView(lt.StartedAt), FinishedAt: timeView(lt.FinishedAt)}
			}
			pv.Containers = append(pv.Containers, cv)
		}
		for _, e := range head(p.Events, driver.MaxPodEvents) {
			pv.Events = append(pv.Events, runtimeEventView{Type: e.Type, Reason: clean(e.Reason, driver.MaxEventReasonBytes),
				Message: clean(e.Message, driver.MaxEventMessageBytes), Container: optionalText(e.Container, 253),
				Count: max(e.Count, 1), LastObservedAt: timeView(e.LastObservedAt)})
		}
		out.Pods = append(out.Pods, pv)
	}
	for _, src := range head(v.Sources, 4) {
		sv := runtimeSourceView{ID: src.ID, Kind: "container", Available: src.Available, UnavailableCode: src.UnavailableCode,
			Pods: []runtimeSourcePodView{}, Retention: clean(src.Retention, 512)}
		for _, p := range head(src.Pods, driver.MaxRuntimePods) {
			sv.Pods = append(sv.Pods, runtimeSourcePodView{Name: p.Name, UID: p.UID, Container: p.Container, RestartCount: p.RestartCount})
		}
		out.Sources = append(out.Sources, sv)
	}
	return out
}

func head[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// clean strips controls from, redacts and bounds free text from the runtime (event messages).
func clean(s string, limit int) string {
	out, _ := runtimelog.Clean(s, nil, limit)
	return out
}

// plain strips controls from and bounds an identifier from the runtime (image references,
// digests, phases): redaction would mask a digest as a hex credential.
func plain(s string, limit int) string { return runtimelog.Bound(s, limit) }

// optionalText is clean(s) as a JSON string, nil (null) when s is empty.
func optionalText(s string, limit int) *string { return nonEmpty(s, limit, clean) }

// optionalPlain is plain(s) as a JSON string, nil (null) when s is empty.
func optionalPlain(s string, limit int) *string { return nonEmpty(s, limit, plain) }

func nonEmpty(s string, limit int, f func(string, int) string) *string {
	if s == "" {
		return nil
	}
	out := f(s, limit)
	return &out
}

func timeView(t *time.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := platform.FormatTime(*t)
	return &s
}

// ---- GET …/deployments/{deploymentId}/runtime/logs ----

// logCursor is the signed state of a log view between its pages.
type logCursor struct {
	Revision string              `json:"v"`
	Source   string              `json:"s"`
	Pod      string              `json:"p,omitempty"`
	Previous bool                `json:"x,omitempty"`
	MinLevel string              `json:"l"`
	At       runtimelog.Position `json:"a"`
	PEMOpen  bool                `json:"m,omitempty"`
	Issued   int64               `json:"i"`
}

const cursorPurpose = "runtime-logs-cursor"

func (s *Server) encodeLogCursor(lc logCursor) string {
	raw, _ := json.Marshal(lc)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return "v1." + payload + "." + auth.Keyed([]byte(s.cfg.AuthSecret), cursorPurpose, payload)
}

var errLogCursor = platform.NewError(platform.CodeRuntimeLogsCursorInvalid, "The cursor does not belong to this log view.",
	problem.Detail{Path: "/cursor", Code: problem.DetailInvalidValue})

// decodeLogCursor checks the cursor's signature and that it continues the requested view.
func (s *Server) decodeLogCursor(raw string, view logCursor) (logCursor, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 || parts[0] != "v1" || auth.Keyed([]byte(s.cfg.AuthSecret), cursorPurpose, parts[1]) != parts[2] {
		return logCursor{}, errLogCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return logCursor{}, errLogCursor
	}
	var lc logCursor
	if json.Unmarshal(b, &lc) != nil || lc.Revision != view.Revision || lc.Source != view.Source ||
		(view.Pod != "" && lc.Pod != view.Pod) || lc.Previous != view.Previous || lc.MinLevel != view.MinLevel {
		return logCursor{}, errLogCursor
	}
	return lc, nil
}

type runtimeLogsView struct {
	RevisionID string              `json:"revisionId"`
	Source     string              `json:"source"`
	ObservedAt string              `json:"observedAt"`
	Stream     *runtimelog.Stream  `json:"stream"`
	Records    []runtimelog.Record `json:"records"`
	Truncated  bool                `json:"truncated"`
	Withheld   int                 `json:"withheld"`
	Cursor     *string             `json:"cursor"`
}

func (s *Server) getRuntimeLogs(ctx context.Context, c *call) error {
	q, view, err := s.logQuery(c)
	if err != nil {
		return err
	}
	t, release, err := s.runtimeTarget(ctx, c, authorizeLogs(c), false)
	if err != nil {
		return err
	}
	defer release()
	reader, ok := t.compute.(driver.RuntimeLogReader)
	if !ok {
		return notImplemented("runtime logs")
	}
	var expired bool
	if raw, ok := c.query["cursor"]; ok {
		lc, err := s.decodeLogCursor(raw, view)
		if err != nil {
			return err
		}
		if s.now().Sub(time.Unix(lc.Issued, 0)) > runtimeCursorTTL {
			expired = true
		} else {
			q.After, q.PEMOpen, q.Pod = &lc.At, lc.PEMOpen, lc.Pod
		}
	}
	page, err := readRuntime(ctx, func(ctx context.Context) (driver.RuntimeLogPage, error) {
		return reader.ReadRuntimeLogs(ctx, t.driver, q)
	})
	if err != nil {
		return err
	}
	records := page.Page.Records
	if expired {
		records = append([]runtimelog.Record{runtimelog.Gap(runtimelog.GapCursorExpired, page.Stream, nil)}, records...)
	}
	for _, r := range records {
		if !r.Sanitized() {
			return platform.NewError(platform.CodeRuntimeLogsUnavailable, "The runtime answered records that were not sanitized.")
		}
	}
	download := c.query["download"] == "true"
	if download || c.query["cursor"] == "" || expired {
		action := ActionRuntimeLogsView
		if download {
			action = ActionRuntimeLogsFetch
		}
		details := map[string]any{"revisionId": t.revision.ID, "source": q.Source, "previous": q.Previous}
		if page.Stream.Pod != "" {
			details["pod"] = page.Stream.Pod
		}
		ev := auditEvent(nsResource(iam.KindAgent, t.agent.ID, t.agent.NamespaceID), details)
		ev.Kind, ev.Action = audit.KindAccess, action
		if err := c.audit(ctx, ev); err != nil {
			return platform.NewError(platform.CodeRuntimeLogsUnavailable, "The log read could not be audited, so nothing is shown.")
		}
	}
	if download {
		c.raw = downloadText(t, page, records)
		c.rawType = "text/plain; charset=utf-8"
		c.rawDisposition = fmt.Sprintf(`attachment; filename="%s-%s-%s-%s.log"`, t.agent.ID, t.revision.ID, q.Source, page.Stream.Pod)
		return nil
	}
	view.At, view.PEMOpen, view.Pod, view.Issued = page.Page.Next, page.Page.PEMOpen, page.Stream.Pod, s.now().Unix()
	cursor := s.encodeLogCursor(view)
	stream := page.Stream
	c.respond(0, runtimeLogsView{RevisionID: t.revision.ID, Source: q.Source, ObservedAt: platform.FormatTime(s.now()),
		Stream: &stream, Records: nonNil(records), Truncated: page.Page.Truncated, Withheld: page.Page.Withheld, Cursor: &cursor})
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// logQuery reads the query of a log read into the driver's query and the view its cursor names.
func (s *Server) logQuery(c *call) (driver.RuntimeLogQuery, logCursor, error) {
	q := driver.RuntimeLogQuery{Source: c.query["source"], Pod: c.query["pod"], Previous: c.query["previous"] == "true",
		TailLines: runtimelog.DefaultTailLines, MinLevel: runtimelog.LevelInfo}
	switch q.Source {
	case "":
		return q, logCursor{}, platform.Invalid("The log source is required.", "/source", problem.DetailRequired)
	case "sandbox":
		return q, logCursor{}, platform.NewError(platform.CodeRuntimeLogsSourceUnavailable, "No Compute Driver of this OCC runs a sandbox.")
	}
	if v, ok := c.query["tailLines"]; ok {
		q.TailLines, _ = strconv.Atoi(v)
	}
	if v, ok := c.query["sinceSeconds"]; ok {
		n, _ := strconv.Atoi(v)
		q.Since = time.Duration(n) * time.Second
	}
	if v, ok := c.query["minLevel"]; ok {
		q.MinLevel = v
	}
	if c.query["download"] == "true" {
		if _, ok := c.query["cursor"]; ok {
			return q, logCursor{}, platform.Invalid("A download reads the last lines; it cannot continue a cursor.", "/download", problem.DetailInvalidValue)
		}
		q.TailLines = downloadLines
	}
	view := logCursor{Revision: c.params["deploymentId"], Source: q.Source, Pod: q.Pod, Previous: q.Previous, MinLevel: q.MinLevel}
	return q, view, nil
}

// downloadText is a download's body: a header naming what it holds, then one record per line.
func downloadText(t runtimeTarget, page driver.RuntimeLogPage, records []runtimelog.Record) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# agent=%s revision=%s source=%s pod=%s container=%s restartCount=%d\n",
		t.agent.ID, t.revision.ID, page.Stream.Source, page.Stream.Pod, page.Stream.Container, page.Stream.RestartCount)
	b.WriteString("# Redaction is best-effort: handle this file as sensitive.\n")
	for _, r := range records {
		when := "-"
		if r.Time != nil {
			when = platform.FormatTime(*r.Time)
		}
		switch r.Type {
		case runtimelog.TypeGap:
			fmt.Fprintf(&b, "%s GAP %s: %s\n", when, r.Reason, r.Remedy)
		case runtimelog.TypeWithheld:
			fmt.Fprintf(&b, "%s WITHHELD %d lines (%s)\n", when, r.Count, r.Reason)
		default:
			sub := ""
			if r.Subsystem != "" {
				sub = " [" + r.Subsystem + "]"
			}
			fmt.Fprintf(&b, "%s %s %s%s %s%s\n", when, strings.ToUpper(r.Level), r.Kind, sub, r.Message, fieldText(r.Fields))
		}
	}
	return []byte(b.String())
}

func fieldText(fields map[string]any) string {
	if len(fields) == 0 {
		return ""
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		fmt.Fprintf(&b, " %s=%v", k, fields[k])
	}
	return b.String()
}

// ---- POST …/deployments/{deploymentId}/diagnostics ----

type diagnosticCheckView struct {
	Component string  `json:"component"`
	Check     string  `json:"check"`
	State     string  `json:"state"`
	Code      string  `json:"code,omitempty"`
	CheckedAt *string `json:"checkedAt"`
}

type diagnosticsView struct {
	RevisionID string                `json:"revisionId"`
	ObservedAt string                `json:"observedAt"`
	Checks     []diagnosticCheckView `json:"checks"`
}

func (s *Server) diagnoseRuntime(ctx context.Context, c *call) error {
	t, release, err := s.runtimeTarget(ctx, c, authorizeAll(c, iam.ActionOperate, iam.ActionRead), true)
	if err != nil {
		return err
	}
	defer release()
	d, ok := t.compute.(driver.RuntimeDiagnoser)
	if !ok {
		return platform.NewError(platform.CodeRuntimeDiagnosticsUnsupported, "The selected Compute Driver does not run diagnostics.")
	}
	checks, err := readRuntime(ctx, func(ctx context.Context) ([]driver.DiagnosticCheck, error) { return d.DiagnoseRuntime(ctx, t.driver) })
	if err != nil {
		return err
	}
	out := diagnosticsView{RevisionID: t.revision.ID, ObservedAt: platform.FormatTime(s.now()), Checks: []diagnosticCheckView{}}
	for _, ch := range head(checks, driver.MaxDiagnosticChecks) {
		out.Checks = append(out.Checks, diagnosticCheckView{Component: ch.Component, Check: ch.Check, State: ch.State, Code: ch.Code,
			CheckedAt: timeView(ch.CheckedAt)})
	}
	c.respond(0, out)
	return nil
}

// ---- GET …/agents/{agentId}/runtime-images ----

type runtimeImageView struct {
	Workload       string  `json:"workload"`
	Container      string  `json:"container"`
	Image          string  `json:"image"`
	ImageID        *string `json:"imageId"`
	Commit         *string `json:"commit"`
	OpenClawCommit *string `json:"openclawCommit"`
}

type runtimeImagesView struct {
	Status string             `json:"status"`
	Images []runtimeImageView `json:"images"`
}

func (s *Server) getRuntimeImages(ctx context.Context, c *call) error {
	a, err := s.pathAgent(ctx, c, iam.ActionRead, store.NoLock)
	if err != nil {
		return err
	}
	out := runtimeImagesView{Status: runtimeImagesUndeployed, Images: []runtimeImageView{}}
	if a.ActiveRevisionID == nil {
		c.respond(0, out)
		return nil
	}
	out, err = s.activeRevisionImages(ctx, c, a.NamespaceID, a.ID, *a.ActiveRevisionID, func() (func(), error) {
		return s.runtimeGate.enter(c.identity.ID, a.ID, s.now())
	})
	if err != nil {
		return err
	}
	c.respond(0, out)
	return nil
}

// activeRevisionImages asks the revision's Compute Driver which images its runtime runs: status
// unsupported when the driver cannot tell. enter, when set, is called just before the driver is
// asked and returns what releases it (the runtime views' budgets).
func (s *Server) activeRevisionImages(ctx context.Context, c *call, namespaceID, agentID, revisionID string,
	enter func() (func(), error)) (runtimeImagesView, error) {
	out := runtimeImagesView{Status: runtimeImagesUnsupported, Images: []runtimeImageView{}}
	rev, err := store.GetRevision(ctx, c.db, store.GetRevisionParams{NamespaceID: namespaceID, AgentID: agentID, ID: revisionID})
	if err != nil {
		return out, platform.Unavailable(err)
	}
	dr, compute, err := s.revisionCompute(rev)
	if err != nil {
		return out, err
	}
	reader, ok := compute.(driver.RuntimeImageReader)
	if !ok {
		return out, nil
	}
	if enter != nil {
		release, err := enter()
		if err != nil {
			return out, err
		}
		defer release()
	}
	images, err := readRuntime(ctx, func(ctx context.Context) ([]driver.RuntimeImage, error) { return reader.RuntimeImages(ctx, dr) })
	if err != nil {
		return out, platform.NewError(platform.CodeDependencyUnavailable, "Runtime image metadata is unavailable.")
	}
	out.Status = runtimeImagesObserved
	for _, im := range head(images, driver.MaxRuntimePods*driver.MaxRuntimeContainers) {
		out.Images = append(out.Images, runtimeImageView{Workload: plain(im.Workload, 253), Container: plain(im.Container, 253),
			Image: plain(im.Image, 512), ImageID: optionalPlain(im.ImageID, 512), Commit: optionalPlain(im.Commit, 64),
			OpenClawCommit: optionalPlain(im.OpenClawCommit, 64)})
	}
	return out, nil
}
