package cli_test

import (
	"fmt"
	"strings"
	"testing"
)

// A bad log export setting stops `occ api` and `occ worker` before they connect to anything: one
// coded startup line naming the variable, exit status 1, and the submitted value never echoed.
func TestLogExportSettingsRefusedAtStartup(t *testing.T) {
	t.Parallel()
	base := map[string]map[string]string{
		"api":    {"NODE_ENV": "production", "OCC_HOST": "10.1.2.3", "OCC_PORT": "3000"},
		"worker": {"NODE_ENV": "production"},
	}
	startupEvent := map[string]string{"api": "startup-error", "worker": "worker.startup-error"}
	for _, tc := range []struct {
		name, variable, detail string
		env                    map[string]string
	}{
		{"not a URL", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "INVALID_FORMAT",
			map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "collector-sentinel:4318"}},
		{"credentials in the URL", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "INVALID_VALUE",
			map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://user:pw-sentinel@otel.example/v1/logs"}},
		{"headers over plain http in production", "OTEL_EXPORTER_OTLP_LOGS_HEADERS", "INVALID_VALUE",
			map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://otel.example:4318/v1/logs", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "authorization=Bearer%20sentinel"}},
		{"grpc", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "INVALID_VALUE",
			map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://otel.example/v1/logs", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc"}},
		{"protocol without endpoint", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "INVALID_VALUE",
			map[string]string{"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf"}},
		{"malformed headers", "OTEL_EXPORTER_OTLP_LOGS_HEADERS", "INVALID_FORMAT",
			map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://otel.example/v1/logs", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "authorization Bearer-sentinel"}},
	} {
		for _, process := range []string{"api", "worker"} {
			env := map[string]string{"OCC_DATABASE_URL": "postgres://u:db-sentinel@127.0.0.1:1/db", "OCC_CONFIG_PATH": "/etc/occ/occ.yaml",
				"OCC_AUTH_SECRET": strings.Repeat("s", 40), "OCC_AUTH_BASE_URL": "https://occ.example"}
			for k, v := range base[process] {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			r := run(env, process)
			label := fmt.Sprintf("%s/%s", process, tc.name)
			if r.code != 1 || r.stdout != "" {
				t.Errorf("%s: %+v", label, r)
				continue
			}
			ev := events(t, r.stderr)
			if len(ev) != 1 || ev[0]["event"] != startupEvent[process] || ev[0]["code"] != "CONFIG_ENV_INVALID" {
				t.Errorf("%s: %v", label, ev)
				continue
			}
			if got, want := fmt.Sprint(ev[0]["details"]), fmt.Sprintf("[map[code:%s path:/env/%s]]", tc.detail, tc.variable); got != want {
				t.Errorf("%s: details %s, want %s", label, got, want)
			}
			if strings.Contains(r.stderr, "sentinel") {
				t.Errorf("%s: the submitted value reached stderr: %s", label, r.stderr)
			}
		}
	}
}
