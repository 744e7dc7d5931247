package obs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/testkit/logbuf"
)

func TestLineShapeAndKeyOrder(t *testing.T) {
	out := logLine(t, slog.LevelInfo, "worker.completed",
		slog.String("workId", "namespace:ns_1:ensure"),
		slog.String("outcome", "success"),
		slog.Int("attempt", 2),
		slog.String("code", "NAMESPACE_RECONCILED"),
		slog.String("agentId", "agt_1"),
	)
	if want := `{"time":"2026-11-30T08:40:59.123Z","severity":"INFO","service":"occ-worker","event":"worker.completed",` +
		`"agentId":"agt_1","attempt":2,"code":"NAMESPACE_RECONCILED","outcome":"success","workId":"namespace:ns_1:ensure"}` + "\n"; out != want {
		t.Fatalf("line:\n got %s\nwant %s", out, want)
	}
	keys := topLevelKeys(t, out)
	if !slices.Equal(keys[:4], []string{"time", "severity", "service", "event"}) {
		t.Fatalf("fixed keys out of order: %v", keys)
	}
	if !slices.IsSorted(keys[4:]) {
		t.Fatalf("fields not sorted: %v", keys[4:])
	}
}

func TestTimeIsUTCWithMilliseconds(t *testing.T) {
	var buf bytes.Buffer
	h := NewHandler(&buf, "occ-api", slog.LevelInfo)
	local := time.Date(2026, 11, 30, 10, 40, 59, 5_000_000, time.FixedZone("x", 2*3600))
	r := slog.NewRecord(local, slog.LevelInfo, "listening", 0)
	if err := h.Handle(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if got := decode(t, buf.String())["time"]; got != "2026-11-30T08:40:59.005Z" {
		t.Fatalf("time = %v", got)
	}
}

func TestServiceName(t *testing.T) {
	for service, want := range map[string]string{
		"occ-api": "occ-api", "occ-migrate": "occ-migrate", "occ-bootstrap": "occ-bootstrap",
		"": "occ", "Bad Service": "occ", "sk-proj-abcdefghijklmnop": "occ",
	} {
		var buf bytes.Buffer
		NewLogger(&buf, service, slog.LevelInfo).Info("listening")
		if got := decode(t, buf.String())["service"]; got != want {
			t.Errorf("service %q written as %v, want %q", service, got, want)
		}
	}
}

func TestSeverityBySuffix(t *testing.T) {
	cases := []struct {
		event string
		want  slog.Level
	}{
		{"worker.error", slog.LevelError},
		{"http.unexpected-error", slog.LevelError},
		{"shutdown.failed", slog.LevelError},
		{"installation.bootstrap-failed", slog.LevelError},
		{"migration.failed", slog.LevelError},
		{"startup-error", slog.LevelError},
		{"worker.startup-error", slog.LevelError},
		{"worker.compute-prepare-failed", slog.LevelError},
		{"compute.preflight-warning", slog.LevelWarn},
		{"worker.claim-renewal-warning", slog.LevelWarn},
		{"something.warning", slog.LevelWarn},
		{"authentication.sign-in-limited", slog.LevelWarn},
		{"authentication.sign-in-limited-x", slog.LevelInfo},
		{"http.dependency_unavailable", slog.LevelWarn},
		{"worker.health", slog.LevelDebug},
		{"worker.health.x", slog.LevelInfo},
		{"worker.completed", slog.LevelInfo},
		{"http.unexpected_error", slog.LevelError}, // named: an internal failure must reach ERROR alerts
		{"http.other_error", slog.LevelInfo},       // "_error" is not one of the suffixes
		{"errors", slog.LevelInfo},
		{"worker.failedx", slog.LevelInfo},
		{"Worker.Error", slog.LevelInfo}, // invalid name → occ.event
		{"", slog.LevelInfo},
	}
	for _, c := range cases {
		if got := Severity(c.event); got != c.want {
			t.Errorf("Severity(%q) = %v, want %v", c.event, got, c.want)
		}
		// The slog call level never matters: log every case at ERROR and at DEBUG.
		for _, callLevel := range []slog.Level{slog.LevelError, slog.LevelDebug} {
			var buf bytes.Buffer
			NewLogger(&buf, "occ-api", slog.LevelDebug).Log(t.Context(), callLevel, c.event)
			if got := decode(t, buf.String())["severity"]; got != severityName(c.want) {
				t.Errorf("event %q logged at %v: severity %v, want %v", c.event, callLevel, got, severityName(c.want))
			}
		}
	}
}

func TestInvalidEventName(t *testing.T) {
	for _, name := range []string{"", "Worker.started", "1abc", "with space", "a/b", strings.Repeat("a", 129),
		"sk-proj-abcdefghijklmnop", "ghp_abcdefghijklmnopqrstuvwxyz", "bearer", "héllo"} {
		if got := decode(t, logLine(t, slog.LevelInfo, name))["event"]; got != EventFallback {
			t.Errorf("event %q written as %v", name, got)
		}
	}
	if got := decode(t, logLine(t, slog.LevelInfo, strings.Repeat("a", 128)))["event"]; got != strings.Repeat("a", 128) {
		t.Errorf("128-char name rejected")
	}
}

func TestLevelFiltering(t *testing.T) {
	cases := []struct {
		level   slog.Level
		written []string
	}{
		{slog.LevelDebug, []string{"worker.health", "worker.completed", "compute.preflight-warning", "worker.error"}},
		{slog.LevelInfo, []string{"worker.completed", "compute.preflight-warning", "worker.error"}},
		{slog.LevelWarn, []string{"compute.preflight-warning", "worker.error"}},
		{slog.LevelError, []string{"worker.error"}},
		{slog.LevelError + 1, nil},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		logger := NewLogger(&buf, "occ-worker", c.level)
		// worker.health is logged with Info and worker.error with Debug on purpose:
		// only the event name decides.
		logger.Info("worker.health", "pending", 3, "status", "ready")
		logger.Info("worker.completed")
		logger.Info("compute.preflight-warning")
		logger.Debug("worker.error", "code", "CLAIM_LOST")
		var got []string
		sc := bufio.NewScanner(&buf)
		for sc.Scan() {
			got = append(got, decode(t, sc.Text()+"\n")["event"].(string))
		}
		if !slices.Equal(got, c.written) {
			t.Errorf("level %v: wrote %v, want %v", c.level, got, c.written)
		}
	}
	var lv slog.LevelVar
	lv.Set(slog.LevelWarn)
	var buf bytes.Buffer
	logger := NewLogger(&buf, "occ-api", &lv)
	logger.Info("listening")
	lv.Set(slog.LevelInfo)
	logger.Info("listening")
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("LevelVar change not honoured: %d lines", n)
	}
}

func TestAllowlistDropsUnknownFields(t *testing.T) {
	out := logLine(t, slog.LevelInfo, "http.completed",
		slog.String("requestId", "req_1"),
		slog.String("method", "GET"),
		slog.String("route", "/v1/namespaces/{namespaceId}"),
		slog.Int("status", 200),
		slog.Float64("durationMs", 12.34567),
		slog.String("password", "hunter2"),
		slog.String("authorization", "x"),
		slog.String("body", "x"),
		slog.String("url", "/v1/namespaces/ns_1"),
		slog.String("Status", "x"),
		slog.String("time", "x"),
		slog.String("severity", "x"),
		slog.String("service", "x"),
		slog.String("event", "other.event"),
		slog.Int("skippedUserCount", 1),
	)
	want := map[string]any{
		"requestId": "req_1", "method": "GET", "route": "/v1/namespaces/{namespaceId}",
		"status": jsonNumber("200"), "durationMs": jsonNumber("12.346"),
	}
	if got := fields(t, out); !reflect.DeepEqual(got, want) {
		t.Fatalf("fields = %v, want %v", got, want)
	}
	m := decode(t, out)
	if m["event"] != "http.completed" || m["service"] != "occ-worker" || m["severity"] != "INFO" {
		t.Fatalf("fixed keys overridden: %v", m)
	}
}

func TestMessageOnlyOnListedEvents(t *testing.T) {
	allowed := []string{"compute.preflight-warning", "worker.compute-prepare-failed", "startup-error",
		"worker.startup-error", "installation.bootstrap-failed", "migration.failed", "migration.checked"}
	for _, event := range allowed {
		got := fields(t, logLine(t, slog.LevelDebug, event, slog.String("message", "Kubernetes API did not answer.")))
		if got["message"] != "Kubernetes API did not answer." {
			t.Errorf("%s: message dropped: %v", event, got)
		}
	}
	for _, event := range []string{"worker.completed", "worker.error", "http.unexpected_error", "listening",
		"migration.applied", "occ.event", "shutdown.failed"} {
		if got := fields(t, logLine(t, slog.LevelDebug, event, slog.String("message", "hello"))); len(got) != 0 {
			t.Errorf("%s: message kept: %v", event, got)
		}
	}
	// Even on a listed event, a message outside the safe alphabet is dropped.
	got := fields(t, logLine(t, slog.LevelDebug, "startup-error", slog.String("message", "bad\nline"), slog.String("code", "X")))
	if _, ok := got["message"]; ok {
		t.Errorf("unsafe message kept: %v", got)
	}
}

func TestDetails(t *testing.T) {
	details := []problem.Detail{
		{Path: "/drivers/compute/configuration/storageClassName", Code: "INVALID_STORAGE_CLASS"},
		{Path: "", Code: "SCHEMA_MISMATCH"},
		{Path: "/a~1b/c~0d", Code: "X"},
		{Path: "no-leading-slash", Code: "X"},             // dropped: not a pointer
		{Path: "/bad~2escape", Code: "X"},                 // dropped
		{Path: "/ok", Code: "lower"},                      // dropped: code not UPPER_SNAKE
		{Path: "/" + strings.Repeat("a", 512), Code: "X"}, // dropped: 513 chars
		{Path: "/tab\there", Code: "X"},                   // dropped: control character
	}
	got := fields(t, logLine(t, slog.LevelInfo, "startup-error", slog.String("code", "DRIVER_CONFIGURATION_INVALID"), slog.Any("details", details)))
	want := []any{
		map[string]any{"path": "/drivers/compute/configuration/storageClassName", "code": "INVALID_STORAGE_CLASS"},
		map[string]any{"path": "", "code": "SCHEMA_MISMATCH"},
		map[string]any{"path": "/a~1b/c~0d", "code": "X"},
	}
	if !reflect.DeepEqual(got["details"], want) {
		t.Fatalf("details = %#v", got["details"])
	}

	many := make([]problem.Detail, 40)
	for i := range many {
		many[i] = problem.Detail{Path: fmt.Sprintf("/items/%d", i), Code: "INVALID"}
	}
	got = fields(t, logLine(t, slog.LevelInfo, "migration.failed", slog.Any("details", many)))
	if n := len(got["details"].([]any)); n != 32 {
		t.Fatalf("kept %d details, want 32", n)
	}

	// Not on other events, and only as []problem.Detail.
	for _, c := range []struct {
		event string
		value any
	}{
		{"worker.completed", details[:1]},
		{"migration.checked", details[:1]},
		{"compute.preflight-warning", details[:1]},
		{"startup-error", []map[string]string{{"path": "/a", "code": "X"}}},
		{"startup-error", map[string]any{"path": "/a", "code": "X"}},
		{"startup-error", "details"},
		{"startup-error", []problem.Detail{}},
		{"startup-error", []problem.Detail{{Path: "/x", Code: "bad code"}}},
	} {
		if got := fields(t, logLine(t, slog.LevelInfo, c.event, slog.Any("details", c.value))); len(got) != 0 {
			t.Errorf("%s %T: kept %v", c.event, c.value, got)
		}
	}
}

type workID string

type retryCount int

type codeError string

func (e codeError) Error() string { return string(e) }

type stringer struct{}

func (stringer) String() string { return "safe" }

type valuer struct{ v slog.Value }

func (v valuer) LogValue() slog.Value { return v.v }

func TestValueRules(t *testing.T) {
	cases := []struct {
		name  string
		attr  slog.Attr
		event string
		want  any // nil: dropped
	}{
		{"string", slog.String("code", "CLAIM_LOST"), "", "CLAIM_LOST"},
		{"string with allowed punctuation", slog.String("workId", "agent:agt_1:reconcile:stopped/x@y z-1.2"), "", "agent:agt_1:reconcile:stopped/x@y z-1.2"},
		{"string 512", slog.String("reason", strings.Repeat("a", 512)), "", strings.Repeat("a", 512)},
		{"string 513", slog.String("reason", strings.Repeat("a", 513)), "", nil},
		{"empty string", slog.String("code", ""), "", nil},
		{"leading punctuation", slog.String("code", "-x"), "", nil},
		{"comma", slog.String("reason", "a,b"), "", nil},
		{"quote", slog.String("reason", `a"b`), "", nil},
		{"newline", slog.String("reason", "a\nb"), "", nil},
		{"unicode", slog.String("reason", "café"), "", nil},
		{"named string", slog.Any("workId", workID("namespace:ns_1:ensure")), "", "namespace:ns_1:ensure"},
		{"stringer", slog.Any("code", stringer{}), "", nil},
		{"bool", slog.Bool("pending", true), "", true},
		{"int", slog.Int("port", 6443), "", jsonNumber("6443")},
		{"negative int", slog.Int("status", -1), "", jsonNumber("-1")},
		{"max safe", slog.Int64("pending", 1<<53-1), "", jsonNumber("9007199254740991")},
		{"min safe", slog.Int64("pending", -(1<<53 - 1)), "", jsonNumber("-9007199254740991")},
		{"unsafe int", slog.Int64("pending", 1<<53), "", nil},
		{"unsafe negative int", slog.Int64("pending", -(1 << 53)), "", nil},
		{"unsafe uint", slog.Uint64("pending", math.MaxUint64), "", nil},
		{"uint", slog.Uint64("pending", 7), "", jsonNumber("7")},
		{"whole float", slog.Float64("status", 403), "", jsonNumber("403")},
		{"fractional float", slog.Float64("status", 403.5), "", nil},
		{"NaN", slog.Float64("pending", math.NaN()), "", nil},
		{"+Inf", slog.Float64("pending", math.Inf(1)), "", nil},
		{"named int", slog.Any("deployPasses", retryCount(3)), "", jsonNumber("3")},
		{"durationMs rounded", slog.Float64("durationMs", 1.23456), "", jsonNumber("1.235")},
		{"durationMs int", slog.Int("durationMs", 5), "", jsonNumber("5")},
		{"durationMs zero", slog.Float64("durationMs", 0), "", jsonNumber("0")},
		{"durationMs negative zero", slog.Float64("durationMs", math.Copysign(0, -1)), "", jsonNumber("0")},
		{"durationMs tiny negative rounds to 0 but is negative", slog.Float64("durationMs", -0.0001), "", nil},
		{"durationMs negative", slog.Float64("durationMs", -1), "", nil},
		{"durationMs NaN", slog.Float64("durationMs", math.NaN()), "", nil},
		{"durationMs Inf", slog.Float64("durationMs", math.Inf(1)), "", nil},
		{"durationMs too big", slog.Float64("durationMs", 1e16), "", nil},
		{"durationMs string", slog.String("durationMs", "5"), "", nil},
		{"durationMs Duration", slog.Duration("durationMs", 1500*time.Microsecond+400), "", jsonNumber("1.5")},
		{"prepareMs int", slog.Int("prepareMs", 120), "", jsonNumber("120")},
		{"prepareMs whole float", slog.Float64("prepareMs", 120), "", jsonNumber("120")},
		{"prepareMs fractional", slog.Float64("prepareMs", 120.5), "", nil},
		{"prepareMs negative", slog.Int("elapsedMs", -1), "", nil},
		{"readinessWaitMs Duration", slog.Duration("readinessWaitMs", 2600*time.Microsecond), "", jsonNumber("3")},
		{"activationMs Duration negative", slog.Duration("activationMs", -time.Millisecond), "", nil},
		{"Duration elsewhere", slog.Duration("pending", time.Second), "", nil},
		{"time", slog.Time("status", fixedTime), "", nil},
		{"attempt int", slog.Int("attempt", 0), "", jsonNumber("0")},
		{"attempt negative", slog.Int("attempt", -1), "", nil},
		{"attempt string", slog.String("attempt", "2"), "", nil},
		{"attempt bool", slog.Bool("attempt", true), "", nil},
		{"error", slog.Any("code", errors.New("CLAIM_LOST")), "", nil},
		{"error with string kind", slog.Any("code", codeError("CLAIM_LOST")), "", nil},
		{"error as errorClass", slog.Any("errorClass", errors.New("x")), "", nil},
		{"struct", slog.Any("status", struct{ A int }{1}), "", nil},
		{"map", slog.Any("status", map[string]any{"a": 1}), "", nil},
		{"slice", slog.Any("status", []string{"a"}), "", nil},
		{"pointer", slog.Any("code", new(string)), "", nil},
		{"nil", slog.Any("code", nil), "", nil},
		{"log valuer", slog.Any("code", valuer{slog.StringValue("FROM_VALUER")}), "", "FROM_VALUER"},
		{"log valuer to error", slog.Any("code", valuer{slog.AnyValue(errors.New("x"))}), "", nil},
		{"path", slog.String("path", "/etc/occ/config with space.yaml"), "", "/etc/occ/config with space.yaml"},
		{"path relative", slog.String("path", "etc/occ"), "", nil},
		{"path 1024", slog.String("path", "/"+strings.Repeat("a", 1023)), "", "/" + strings.Repeat("a", 1023)},
		{"path 1025", slog.String("path", "/"+strings.Repeat("a", 1024)), "", nil},
		{"path control", slog.String("path", "/a\x00b"), "", nil},
		{"path int", slog.Int("path", 1), "", nil},
		{"route template", slog.String("route", "/v1/namespaces/{namespaceId}/agents"), "", "/v1/namespaces/{namespaceId}/agents"},
		{"route with query", slog.String("route", "/v1/x?a=b"), "", nil},
		{"route plain", slog.String("route", "not_found"), "", "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			event := c.event
			if event == "" {
				event = "worker.completed"
			}
			got := fields(t, logLine(t, slog.LevelInfo, event, c.attr))
			v, kept := got[c.attr.Key]
			if c.want == nil {
				if kept {
					t.Fatalf("%s kept as %#v", c.attr.Key, v)
				}
				return
			}
			if !reflect.DeepEqual(v, c.want) {
				t.Fatalf("%s = %#v, want %#v", c.attr.Key, v, c.want)
			}
		})
	}
}

func TestAttemptObject(t *testing.T) {
	full := BootstrapAttempt{
		AuthAccountID: "acc_1", InstallationID: "ins_1", PasswordFile: "/run/secrets/admin password",
		PrincipalID: "prn_1", ServiceKeyExpiresAt: "2027-01-01T00:00:00.000Z", ServiceKeyFile: "/run/occ/key",
		ServiceKeyID: "key_1", ServicePrincipalID: "spn_1",
	}
	want := map[string]any{
		"authAccountId": "acc_1", "installationId": "ins_1", "passwordFile": "/run/secrets/admin password",
		"principalId": "prn_1", "serviceKeyExpiresAt": "2027-01-01T00:00:00.000Z", "serviceKeyFile": "/run/occ/key",
		"serviceKeyId": "key_1", "servicePrincipalId": "spn_1",
	}
	for _, v := range []any{full, &full, want} {
		got := fields(t, logLine(t, slog.LevelInfo, "installation.bootstrap-failed", slog.Any("attempt", v)))
		if !reflect.DeepEqual(got["attempt"], want) {
			t.Errorf("%T: attempt = %#v", v, got["attempt"])
		}
	}
	out := logLine(t, slog.LevelInfo, "installation.bootstrap-failed", slog.Any("attempt", BootstrapAttempt{ServiceKeyID: "k", InstallationID: "i"}))
	if !strings.Contains(out, `"attempt":{"installationId":"i","serviceKeyId":"k"}`) {
		t.Errorf("attempt keys not sorted or empty fields kept: %s", out)
	}

	got := fields(t, logLine(t, slog.LevelInfo, "installation.bootstrap-failed", slog.Any("attempt", map[string]any{
		"installationId": "ins_1",
		"passwordFile":   "relative/path", // not absolute
		"serviceKeyFile": "/ok",
		"principalId":    42,                   // not a string
		"secret":         "x",                  // not an attempt key
		"serviceKeyId":   "has,comma",          // unsafe string
		"authAccountId":  "/looks/like/a/path", // not a file key: general rule (leading /)
	})))
	if want := map[string]any{"installationId": "ins_1", "serviceKeyFile": "/ok"}; !reflect.DeepEqual(got["attempt"], want) {
		t.Errorf("filtered attempt = %#v", got["attempt"])
	}
	for _, v := range []any{map[string]any{"x": "y"}, map[string]any{}, (*BootstrapAttempt)(nil), BootstrapAttempt{}, map[string]int{"installationId": 1}} {
		if got := fields(t, logLine(t, slog.LevelInfo, "installation.bootstrap-failed", slog.Any("attempt", v))); len(got) != 0 {
			t.Errorf("%#v: kept %v", v, got)
		}
	}
}

func TestWithAttrsAndGroups(t *testing.T) {
	var buf bytes.Buffer
	base := NewLogger(&buf, "occ-worker", slog.LevelInfo)
	logger := base.With("workId", "w1", "password", "x", "operation", "namespace.ensure")
	logger.Info("worker.completed", "workId", "w2", "outcome", "success")
	logger.Info("worker.completed", "operation", "has,comma") // invalid later value drops the field
	base.Info("worker.completed")                             // the parent is unchanged
	logger.WithGroup("g").Info("worker.completed", "code", "X")
	logger.WithGroup("").Info("worker.completed", "code", "Y")
	logger.WithGroup("g").With("code", "Z").Info("worker.completed")
	logger.Info("worker.completed", slog.Group("", slog.String("code", "INLINE")), slog.Group("g", slog.String("cause", "NAMED")))
	logger.With(slog.Group("", slog.String("cause", "C"))).Info("worker.completed", "", "empty key")

	want := []map[string]any{
		{"workId": "w2", "operation": "namespace.ensure", "outcome": "success"},
		{"workId": "w1"},
		{},
		{"workId": "w1", "operation": "namespace.ensure"},
		{"workId": "w1", "operation": "namespace.ensure", "code": "Y"},
		{"workId": "w1", "operation": "namespace.ensure"},
		{"workId": "w1", "operation": "namespace.ensure", "code": "INLINE"},
		{"workId": "w1", "operation": "namespace.ensure", "cause": "C"},
	}
	lines := strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, line := range lines {
		if !strings.HasSuffix(line, "\n") {
			line += "\n"
		}
		if got := fields(t, line); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("line %d = %v, want %v", i, got, want[i])
		}
	}
}

func TestWriteStartupFailure(t *testing.T) {
	var buf bytes.Buffer
	WriteStartupFailure(&buf, "occ-api", "startup-error", problem.New("DRIVER_CONFIGURATION_INVALID",
		"Driver configuration does not match its schema.",
		problem.Detail{Path: "/drivers/compute/configuration", Code: "ADDITIONAL_PROPERTY"}))
	m := decode(t, buf.String())
	if m["severity"] != "ERROR" || m["event"] != "startup-error" || m["service"] != "occ-api" ||
		m["code"] != "DRIVER_CONFIGURATION_INVALID" || m["message"] != "Driver configuration does not match its schema." {
		t.Fatalf("line = %v", m)
	}
	if d := m["details"].([]any); len(d) != 1 {
		t.Fatalf("details = %v", d)
	}

	buf.Reset()
	WriteStartupFailure(&buf, "occ-migrate", "migration.failed", problem.New("PERSISTENCE_UNAVAILABLE", ""))
	if got := fields(t, buf.String()); !reflect.DeepEqual(got, map[string]any{"code": "PERSISTENCE_UNAVAILABLE"}) {
		t.Fatalf("fields = %v", got)
	}

	// Not a listed event: one line, message and details dropped.
	buf.Reset()
	WriteStartupFailure(&buf, "occ-api", "listening", problem.New("X", "msg", problem.Detail{Path: "/a", Code: "B"}))
	if got := fields(t, buf.String()); !reflect.DeepEqual(got, map[string]any{"code": "X"}) {
		t.Fatalf("fields = %v", got)
	}
}

func TestParseLevel(t *testing.T) {
	for s, want := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got, err := ParseLevel(s); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "INFO", "warning", "trace", " info", "sk-proj-abcdefghijklmnop"} {
		_, err := ParseLevel(s)
		if !errors.Is(err, ErrInvalidLevel) {
			t.Errorf("ParseLevel(%q) err = %v", s, err)
		}
		if strings.HasPrefix(s, "sk-") && err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("error echoes the value: %v", err)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestHandleReturnsWriteError(t *testing.T) {
	h := NewHandler(failingWriter{}, "occ-api", slog.LevelInfo)
	if err := h.Handle(t.Context(), slog.NewRecord(fixedTime, slog.LevelInfo, "listening", 0)); err == nil {
		t.Fatal("write error swallowed")
	}
}

// countingWriter records every Write call separately, so a line split over two calls
// or two lines in one call would show.
type countingWriter struct {
	mu     sync.Mutex
	writes [][]byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestConcurrentWholeLines(t *testing.T) {
	var buf logbuf.Buffer
	cw := &countingWriter{}
	for _, w := range []interface {
		Write([]byte) (int, error)
	}{&buf, cw} {
		base := NewLogger(w, "occ-worker", slog.LevelDebug)
		var wg sync.WaitGroup
		const goroutines, perGoroutine = 32, 200
		for g := range goroutines {
			logger := base.With("lane", fmt.Sprintf("lane-%d", g)) // derived handlers share the lock
			wg.Go(func() {
				for i := range perGoroutine {
					logger.Info("worker.completed", "workId", fmt.Sprintf("w-%d-%d", g, i),
						"attempt", i, "reason", strings.Repeat("x", 400))
				}
			})
		}
		wg.Wait()
		if w == cw {
			for _, p := range cw.writes {
				if bytes.Count(p, []byte("\n")) != 1 || p[len(p)-1] != '\n' {
					t.Fatalf("write is not exactly one line: %q", p)
				}
			}
			if len(cw.writes) != goroutines*perGoroutine {
				t.Fatalf("%d writes", len(cw.writes))
			}
			continue
		}
		seen := map[string]bool{}
		sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			m := decode(t, sc.Text()+"\n")
			seen[m["workId"].(string)] = true
		}
		if len(seen) != goroutines*perGoroutine {
			t.Fatalf("%d distinct lines, want %d", len(seen), goroutines*perGoroutine)
		}
	}
}
