package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/auth"
)

var paramPattern = regexp.MustCompile(`\{([A-Za-z]+)\}`)

// concretePath fills a template with well-formed ids (that need not exist: validation comes
// before any lookup).
func concretePath(template string) string {
	return paramPattern.ReplaceAllStringFunc(template, func(p string) string {
		switch p {
		case "{namespaceId}":
			return "ns_00000000-0000-4000-8000-000000000000"
		case "{configurationId}":
			return "cfg_00000000-0000-4000-8000-000000000000"
		case "{secretId}":
			return "sec_00000000-0000-4000-8000-000000000000"
		case "{serviceAccountId}":
			return "sa_00000000-0000-4000-8000-000000000000"
		case "{agentId}":
			return "agt_00000000-0000-4000-8000-000000000000"
		case "{revisionId}", "{deploymentId}":
			return "rev_00000000-0000-4000-8000-000000000000"
		case "{userId}":
			return "usr_00000000-0000-4000-8000-000000000000"
		case "{methodId}":
			return "mth_00000000-0000-4000-8000-000000000000"
		case "{cliSessionId}":
			return "cls_00000000-0000-4000-8000-000000000000"
		case "{presetId}":
			return "pre_00000000-0000-4000-8000-000000000000"
		default:
			return "some-id"
		}
	})
}

// credentialFor returns a request carrying what the route admits.
func credentialFor(e *env, route *api.Route, human identity) req {
	if route.ExactOrigin && route.Auth == auth.ModeAnonymous {
		return req{origin: testOrigin}
	}
	switch route.Auth {
	case auth.ModeAny:
		return req{key: e.adminKey}
	case auth.ModeSession:
		return human.apply(req{})
	}
	return req{}
}

func wrongTypeValue(typ string) any {
	switch typ {
	case "string":
		return 12345
	case "integer":
		return "12"
	case "boolean":
		return "true"
	case "array":
		return map[string]any{}
	}
	return []any{1}
}

// TestEveryRouteValidatesRequests: an unknown member, a wrong type, an oversized body and a wrong
// media type are refused on every route with the documented status, and 400s name the member.
func TestEveryRouteValidatesRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	human := e.newHuman("validator@example.com")
	for _, route := range api.Routes() {
		name := route.Method + " " + route.Path
		base := credentialFor(e, route, human)
		base.method, base.path = route.Method, concretePath(route.Path)

		big := base
		limit := route.BodyLimit
		if limit == 0 {
			limit = api.DefaultBodyLimit
		}
		big.raw = []byte(`{"x":"` + strings.Repeat("a", int(limit)) + `"}`)
		if r := e.do(big); r.status != http.StatusRequestEntityTooLarge || r.errCode() != "PAYLOAD_TOO_LARGE" {
			t.Errorf("%s oversized: %d %s", name, r.status, r.raw)
		}

		media := base
		media.raw, media.contentType = []byte(`{}`), "text/plain"
		if r := e.do(media); r.status != http.StatusUnsupportedMediaType || r.errCode() != "UNSUPPORTED_MEDIA_TYPE" {
			t.Errorf("%s wrong media type: %d %s", name, r.status, r.raw)
		}

		unknown := base
		unknown.body = map[string]any{"zzUnknown": 1}
		if r := e.do(unknown); r.status != 400 || !r.hasDetail("/zzUnknown", "UNKNOWN_FIELD") {
			t.Errorf("%s unknown member: %d %s", name, r.status, r.raw)
		}

		notObject := base
		notObject.raw = []byte(`[]`)
		if r := e.do(notObject); r.status != 400 || !r.hasDetail("", "INVALID_TYPE") {
			t.Errorf("%s array body: %d %s", name, r.status, r.raw)
		}

		if route.Body != nil && len(route.Body.Properties) > 0 {
			p := route.Body.Properties[0]
			wrong := base
			wrong.body = map[string]any{p.Name: wrongTypeValue(p.Schema.Type)}
			if r := e.do(wrong); r.status != 400 || !r.hasDetail("/"+p.Name, "INVALID_TYPE") {
				t.Errorf("%s wrong type of %s: %d %s", name, p.Name, r.status, r.raw)
			}
		}

		// A provider callback's query belongs to the provider: it is not validated.
		if route.Method == http.MethodGet && !route.OpenQuery {
			q := base
			q.path += "?zzUnknown=1"
			if r := e.do(q); r.status != 400 || !r.hasDetail("/zzUnknown", "UNKNOWN_FIELD") {
				t.Errorf("%s unknown query parameter: %d %s", name, r.status, r.raw)
			}
		}
	}
}

func TestRequestDetails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	post := func(body string) resp {
		return e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, raw: []byte(body)})
	}
	for _, tc := range []struct {
		body, path, code string
	}{
		{`{}`, "/name", "REQUIRED"},
		{`{"name":""}`, "/name", "INVALID_VALUE"},
		{`{"name":" padded"}`, "/name", "INVALID_FORMAT"},
		{`{"name":"` + strings.Repeat("x", 201) + `"}`, "/name", "TOO_LONG"},
		{`{"name":"ok","existingNamespace":"Not_A_Label"}`, "/existingNamespace", "INVALID_FORMAT"},
		{`{"name":"a","name":"b"}`, "/name", "INVALID_FORMAT"},
		{`{"name":"ok","a/b~c":1}`, "/a~1b~0c", "UNKNOWN_FIELD"},
		{`{"name":"\ud800"}`, "", "INVALID_FORMAT"},
		{`{"name":`, "", "INVALID_FORMAT"},
		{`{"name":"ok"} {}`, "", "INVALID_FORMAT"},
		{strings.Repeat(`{"a":`, 30) + `1` + strings.Repeat(`}`, 30), strings.Repeat("/a", 24), "TOO_DEEP"},
	} {
		r := post(tc.body)
		if r.status != 400 || r.errCode() != "INVALID_REQUEST" || !r.hasDetail(tc.path, tc.code) {
			t.Errorf("%.40s: %d %s", tc.body, r.status, r.raw)
		}
	}
	if r := e.do(req{method: "GET", path: "/namespaces?limit=0", key: e.adminKey}); !r.hasDetail("/limit", "INVALID_VALUE") {
		t.Errorf("limit=0: %s", r.raw)
	}
	if r := e.do(req{method: "GET", path: "/namespaces?limit=1e2", key: e.adminKey}); !r.hasDetail("/limit", "INVALID_TYPE") {
		t.Errorf("limit=1e2: %s", r.raw)
	}
	if r := e.do(req{method: "GET", path: "/namespaces?limit=1&limit=2", key: e.adminKey}); r.status != 400 {
		t.Errorf("repeated limit: %s", r.raw)
	}
	if r := e.do(req{method: "GET", path: "/namespaces?cursor=AAAA", key: e.adminKey}); !r.hasDetail("/cursor", "INVALID_FORMAT") {
		t.Errorf("foreign cursor: %s", r.raw)
	}
	// Content type with charset is JSON; a body without Content-Length still has its type checked.
	if r := e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, raw: []byte(`{"name":"charset"}`), contentType: "application/json; charset=UTF-8"}); r.status != 201 {
		t.Errorf("charset: %d %s", r.status, r.raw)
	}
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if r := e.do(req{method: "GET", path: "/nope", key: e.adminKey}); r.status != 404 || r.errCode() != "NOT_FOUND" {
		t.Errorf("unknown path: %d %s", r.status, r.raw)
	}
	r := e.do(req{method: "PUT", path: "/namespaces", key: e.adminKey})
	if r.status != 405 || r.errCode() != "METHOD_NOT_ALLOWED" || r.header.Get("Allow") != "GET, POST" {
		t.Errorf("wrong method: %d %s %q", r.status, r.raw, r.header.Get("Allow"))
	}
	if r := e.do(req{method: "GET", path: "/namespaces/not-an-id", key: e.adminKey}); r.status != 404 {
		t.Errorf("malformed id: %d %s", r.status, r.raw)
	}
	if r := e.do(req{method: "GET", path: "/namespaces/", key: e.adminKey}); r.status != 404 {
		t.Errorf("trailing slash: %d %s", r.status, r.raw)
	}
	if r := e.do(req{method: "HEAD", path: "/healthz"}); r.status != 200 {
		t.Errorf("HEAD: %d", r.status)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		r := e.expect(e.do(req{method: "GET", path: p}), 200)
		if r.data()["status"] != "ok" {
			t.Errorf("%s: %s", p, r.raw)
		}
	}
	// Health endpoints are not metered; other routes are, by template.
	e.expect(e.do(req{method: "GET", path: "/namespaces/" + e.defaultNS, key: e.adminKey}), 200)
	e.do(req{method: "GET", path: "/nope"})
	got := strings.Join(e.metrics.routes(), ",")
	if strings.Contains(got, "healthz") || strings.Contains(got, "readyz") ||
		!strings.Contains(got, "GET /namespaces/{namespaceId}") || !strings.Contains(got, "GET unmatched") {
		t.Fatalf("metered %s", got)
	}
	e.app.Close()
	e.appRead.Close()
	if r := e.do(req{method: "GET", path: "/readyz"}); r.status != 503 || r.errCode() != "DEPENDENCY_UNAVAILABLE" {
		t.Fatalf("readyz without the database: %d %s", r.status, r.raw)
	}
	if r := e.do(req{method: "GET", path: "/healthz"}); r.status != 200 {
		t.Fatalf("healthz without the database: %d", r.status)
	}
	if r := e.do(req{method: "GET", path: "/installation", key: e.adminKey}); r.status != 503 || strings.Contains(string(r.raw), "closed") {
		t.Fatalf("a route without the database: %d %s", r.status, r.raw)
	}
}

func TestCompletionLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(e.do(req{method: "POST", path: "/namespaces", key: e.adminKey, body: map[string]any{"name": "logged"}}), 201)
	e.do(req{method: "GET", path: "/nope"})
	var completed []map[string]any
	for _, ev := range e.logEvents() {
		if ev["event"] == "http.completed" {
			completed = append(completed, ev)
		}
	}
	if len(completed) != 2 {
		t.Fatalf("completed lines: %v", completed)
	}
	first := completed[0]
	if first["route"] != "/namespaces" || first["method"] != "POST" || first["status"] != float64(201) ||
		!strings.HasPrefix(first["requestId"].(string), "req_") || first["severity"] != "INFO" || first["service"] != "occ-api" {
		t.Errorf("completed %v", first)
	}
	if _, ok := first["durationMs"].(float64); !ok {
		t.Errorf("no durationMs: %v", first)
	}
	if completed[1]["route"] != "unmatched" || completed[1]["status"] != float64(404) {
		t.Errorf("unmatched %v", completed[1])
	}
	if strings.Contains(e.logs.String(), e.adminKey) || strings.Contains(e.logs.String(), "logged") {
		t.Fatal("a credential or a body reached the log")
	}
}
