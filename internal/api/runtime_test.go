package api_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/simulated"
	"github.com/openclaw/occ/internal/iam"
)

// runtimeEnv is an Installation whose simulated Compute Driver the test scripts, with one
// deployed revision and a caller holding exactly the log permissions.
type runtimeEnv struct {
	*env
	sim      *simulated.Driver
	f        resourceFixtures
	ns, base string
	reader   identity
}

func newRuntimeEnv(t *testing.T, opts ...envOption) runtimeEnv {
	t.Helper()
	var sim *simulated.Driver
	capture := func(_ *env, cfg *api.Config) {
		if s, ok := cfg.Compute.(*simulated.Driver); ok {
			sim = s
		}
	}
	e := newEnv(t, append([]envOption{capture}, opts...)...)
	ns := e.createNamespace("rt")
	f := newResourceFixtures(t, e, ns)
	r := runtimeEnv{env: e, sim: sim, f: f, ns: ns}
	r.base = "/namespaces/" + ns + "/agents/" + f.agent + "/deployments/" + f.revision
	r.reader = e.newServicePrincipal("")
	e.grant(r.reader.id, ns, iam.KindAgent, f.agent, perm(iam.ActionReadLogs, iam.KindAgent), perm(iam.ActionRead, iam.KindAgent))
	return r
}

func (r runtimeEnv) logs(query string) resp {
	return r.do(r.reader.apply(req{method: "GET", path: r.base + "/runtime/logs?" + query}))
}

func messagesOf(res resp) []string {
	var out []string
	for _, rec := range res.data()["records"].([]any) {
		m := rec.(map[string]any)
		switch m["type"] {
		case "line":
			out = append(out, m["message"].(string))
		default:
			out = append(out, m["type"].(string)+":"+m["reason"].(string))
		}
	}
	return out
}

func (r runtimeEnv) accessEvents(action string) int {
	return r.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'access' AND action = $1 AND actor_id = $2`, action, r.reader.id)
}

func TestRuntimeLogsFollowAuditAndRedaction(t *testing.T) {
	t.Parallel()
	r := newRuntimeEnv(t)
	secretValue := "sk-proj-runtime-secret-value-0001"
	r.sim.SetRuntimeSecrets(r.f.revision, secretValue)
	r.sim.WriteRuntimeLog(r.f.revision, driver.LogSourceGateway,
		`{"level":"info","subsystem":"gateway","message":"ready"}`, "token in a line: "+secretValue)

	first := r.expect(r.logs("source=gateway&tailLines=50"), 200)
	got := strings.Join(messagesOf(first), "|")
	if strings.Contains(string(first.raw), secretValue) || !strings.Contains(got, "ready") || !strings.Contains(got, "[redacted:") {
		t.Fatalf("first page: %s", first.raw)
	}
	if n := r.accessEvents(api.ActionRuntimeLogsView); n != 1 {
		t.Fatalf("a new view is audited once: %d events", n)
	}
	cursor := first.data()["cursor"].(string)

	time.Sleep(2 * time.Millisecond) // the simulated runtime stamps lines with the real clock
	r.sim.WriteRuntimeLog(r.f.revision, driver.LogSourceGateway, "later line")
	next := r.expect(r.logs("source=gateway&tailLines=50&cursor="+url.QueryEscape(cursor)), 200)
	if got := strings.Join(messagesOf(next), "|"); got != "later line" {
		t.Fatalf("a follow poll shows only newer lines: %q", got)
	}
	if n := r.accessEvents(api.ActionRuntimeLogsView); n != 1 {
		t.Fatalf("a follow poll is not a new view: %d events", n)
	}

	// A cursor continues only its own view, and only as signed.
	for name, q := range map[string]string{
		"another source":  "source=agent&cursor=" + url.QueryEscape(cursor),
		"another floor":   "source=gateway&minLevel=debug&cursor=" + url.QueryEscape(cursor),
		"tampered":        "source=gateway&cursor=" + url.QueryEscape(cursor[:len(cursor)-2]+"AA"),
		"previous":        "source=gateway&previous=true&cursor=" + url.QueryEscape(cursor),
		"download cursor": "source=gateway&download=true&cursor=" + url.QueryEscape(cursor),
	} {
		res := r.logs(q)
		want := "RUNTIME_LOGS_CURSOR_INVALID"
		if name == "download cursor" {
			want = "INVALID_REQUEST"
		}
		if res.status != 400 || res.errCode() != want {
			t.Errorf("%s: %d %s, want 400 %s", name, res.status, res.raw, want)
		}
	}

	// An expired cursor restarts at the tail and says so.
	r.clock.Advance(2 * time.Hour)
	expired := r.expect(r.logs("source=gateway&tailLines=50&cursor="+url.QueryEscape(next.data()["cursor"].(string))), 200)
	if msgs := messagesOf(expired); msgs[0] != "gap:cursor_expired" || len(msgs) < 3 {
		t.Fatalf("after the cursor expired: %q", msgs)
	}

	dl := r.logs("source=gateway&download=true")
	if dl.status != 200 || !strings.HasPrefix(dl.header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(dl.header.Get("Content-Disposition"), "attachment; filename=\""+r.f.agent+"-"+r.f.revision+"-gateway-") {
		t.Fatalf("download: %d %v", dl.status, dl.header)
	}
	if body := string(dl.raw); strings.Contains(body, secretValue) || !strings.Contains(body, "INFO openclaw [gateway] ready") || !strings.HasPrefix(body, "# agent="+r.f.agent) {
		t.Fatalf("download body:\n%s", body)
	}
	if n := r.accessEvents(api.ActionRuntimeLogsFetch); n != 1 {
		t.Fatalf("each download is audited: %d events", n)
	}
}

func TestRuntimeLogsRefusals(t *testing.T) {
	t.Parallel()
	r := newRuntimeEnv(t)
	cases := map[string]struct {
		query, code string
		status      int
	}{
		"no source":        {"tailLines=10", "INVALID_REQUEST", 400},
		"unknown source":   {"source=harness", "INVALID_REQUEST", 400},
		"sandbox":          {"source=sandbox", "RUNTIME_LOGS_SOURCE_UNAVAILABLE", 404},
		"embedded agent":   {"source=agent", "RUNTIME_LOGS_SOURCE_UNAVAILABLE", 404},
		"another pod":      {"source=gateway&pod=someone-else", "RUNTIME_LOGS_POD_INVALID", 400},
		"tail too long":    {"source=gateway&tailLines=1001", "INVALID_REQUEST", 400},
		"since too long":   {"source=gateway&sinceSeconds=86401", "INVALID_REQUEST", 400},
		"bad level":        {"source=gateway&minLevel=trace", "INVALID_REQUEST", 400},
		"malformed cursor": {"source=gateway&cursor=v1.abc.def", "INVALID_REQUEST", 400},
	}
	for name, tc := range cases {
		res := r.logs(tc.query)
		if res.status != tc.status || res.errCode() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", name, res.status, res.raw, tc.status, tc.code)
		}
	}
	// administer instead of read_logs admits the read; neither is a denial naming read_logs.
	admin := r.newServicePrincipal("")
	r.grant(admin.id, r.ns, iam.KindAgent, r.f.agent, perm(iam.ActionAdminister, iam.KindAgent), perm(iam.ActionRead, iam.KindAgent))
	r.expect(r.do(admin.apply(req{method: "GET", path: r.base + "/runtime/logs?source=gateway"})), 200)
	reader := r.newServicePrincipal("")
	r.grant(reader.id, r.ns, iam.KindAgent, r.f.agent, perm(iam.ActionRead, iam.KindAgent))
	if res := r.do(reader.apply(req{method: "GET", path: r.base + "/runtime/logs?source=gateway"})); res.status != 403 {
		t.Fatalf("read alone: %d %s", res.status, res.raw)
	}
	if n := r.count(`SELECT count(*) FROM occ.audit_events WHERE kind = 'authorization_denial' AND actor_id = $1 AND details::text LIKE '%read_logs%'`, reader.id); n != 1 {
		t.Fatalf("the denial of read_logs is audited: %d events", n)
	}
}

func TestRuntimeViewDiagnosticsImagesAndBudget(t *testing.T) {
	t.Parallel()
	r := newRuntimeEnv(t)
	op := r.newServicePrincipal("")
	r.grant(op.id, r.ns, iam.KindAgent, r.f.agent, perm(iam.ActionOperate, iam.KindAgent), perm(iam.ActionRead, iam.KindAgent))
	r.grant(op.id, r.ns, iam.KindAgentRevision, r.f.revision, perm(iam.ActionRead, iam.KindAgentRevision))

	r.sim.RestartRuntimeContainer(r.f.revision, driver.LogSourceGateway, 1, "Error")
	r.sim.AddRuntimeEvent(r.f.revision, driver.LogSourceGateway, "Warning", "BackOff", "Back-off restarting failed container with password=hunter22")
	view := r.expect(r.do(op.apply(req{method: "GET", path: r.base + "/runtime"})), 200)
	pods := view.data()["pods"].([]any)
	pod := pods[0].(map[string]any)
	ctr := pod["containers"].([]any)[0].(map[string]any)
	if pod["role"] != "gateway" || ctr["restartCount"].(float64) != 1 || ctr["lastTermination"].(map[string]any)["reason"] != "Error" {
		t.Fatalf("runtime view: %s", view.raw)
	}
	if strings.Contains(string(view.raw), "hunter22") {
		t.Fatalf("an event message leaks a credential: %s", view.raw)
	}

	diag := r.expect(r.do(op.apply(req{method: "POST", path: r.base + "/diagnostics"})), 200)
	if !strings.Contains(string(diag.raw), `"code":"CONTAINER_RESTARTING"`) {
		t.Fatalf("diagnostics: %s", diag.raw)
	}
	images := r.expect(r.do(op.apply(req{method: "GET", path: "/namespaces/" + r.ns + "/agents/" + r.f.agent + "/runtime-images"})), 200)
	if images.data()["status"] != "undeployed" {
		t.Fatalf("runtime images of an Agent without an active revision: %s", images.raw)
	}
	inst := r.expect(r.do(req{method: "GET", path: "/installation", key: r.adminKey}), 200)
	if caps := inst.data()["capabilities"].(map[string]any)["runtime"].(map[string]any); caps["logs"] != true || caps["status"] != true {
		t.Fatalf("capabilities: %s", inst.raw)
	}

	// The budget: a burst of 10 per principal and Agent, then 429 with Retry-After; it refills.
	budgeted := r.newServicePrincipal("")
	r.grant(budgeted.id, r.ns, iam.KindAgent, r.f.agent, perm(iam.ActionOperate, iam.KindAgent), perm(iam.ActionRead, iam.KindAgent))
	r.grant(budgeted.id, r.ns, iam.KindAgentRevision, r.f.revision, perm(iam.ActionRead, iam.KindAgentRevision))
	for range 10 {
		r.expect(r.do(budgeted.apply(req{method: "GET", path: r.base + "/runtime"})), 200)
	}
	limited := r.do(budgeted.apply(req{method: "GET", path: r.base + "/runtime"}))
	if limited.status != 429 || limited.errCode() != "RUNTIME_LOGS_RATE_LIMITED" || limited.header.Get("Retry-After") == "" {
		t.Fatalf("the 11th read: %d %s %v", limited.status, limited.raw, limited.header)
	}
	r.clock.Advance(time.Second)
	r.expect(r.do(budgeted.apply(req{method: "GET", path: r.base + "/runtime"})), 200)
}

// hiddenRuntime is a Compute Driver without runtime views (it keeps admission).
type hiddenRuntime struct{ driver.Compute }

func (h hiddenRuntime) SupportsHarnessAuth(method string) bool {
	return driver.SupportsHarnessAuth(h.Compute, method)
}

func TestRuntimeViewsOfADriverWithoutThem(t *testing.T) {
	t.Parallel()
	r := newRuntimeEnv(t, func(_ *env, cfg *api.Config) { cfg.Compute = hiddenRuntime{cfg.Compute} })
	if res := r.do(req{method: "GET", path: r.base + "/runtime", key: r.adminKey}); res.status != 501 || res.errCode() != "NOT_IMPLEMENTED" {
		t.Fatalf("runtime: %d %s", res.status, res.raw)
	}
	if res := r.do(req{method: "GET", path: r.base + "/runtime/logs?source=gateway", key: r.adminKey}); res.status != 501 {
		t.Fatalf("logs: %d %s", res.status, res.raw)
	}
	if res := r.do(req{method: "POST", path: r.base + "/diagnostics", key: r.adminKey}); res.status != 409 || res.errCode() != "RUNTIME_DIAGNOSTICS_UNSUPPORTED" {
		t.Fatalf("diagnostics: %d %s", res.status, res.raw)
	}
	inst := r.expect(r.do(req{method: "GET", path: "/installation", key: r.adminKey}), 200)
	if caps := inst.data()["capabilities"].(map[string]any)["runtime"].(map[string]any); caps["logs"] != false {
		t.Fatalf("capabilities: %s", inst.raw)
	}
}
