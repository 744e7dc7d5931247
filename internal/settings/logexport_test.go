package settings

import (
	"errors"
	"fmt"
	"github.com/openclaw/occ/internal/problem"
	"strings"
	"testing"
	"time"
)

func TestLogExportSettings(t *testing.T) {
	t.Parallel()
	off, err := LoadWorker(MapLookup(workerProd()))
	if err != nil {
		t.Fatal(err)
	}
	if off.LogExport.Enabled || off.LogExport.Endpoint != "" {
		t.Errorf("export on without an endpoint: %+v", off.LogExport)
	}

	a, err := LoadAPI(MapLookup(apiProd().with(env{
		EnvLogsEndpoint:       "https://otel.example:4318/v1/logs",
		EnvLogsHeaders:        "authorization=Bearer%20header-sentinel, x-scope = team%2Da",
		EnvLogsTimeout:        "2500",
		EnvServiceName:        "occ-api-eu",
		EnvResourceAttributes: "service.instance.id=api-1,deployment.environment.name=prod%20eu",
	})))
	if err != nil {
		t.Fatal(err)
	}
	l := a.LogExport
	if !l.Enabled || l.Endpoint != "https://otel.example:4318/v1/logs" || l.Protocol != ProtocolHTTPProtobuf || l.Timeout != 2500*time.Millisecond ||
		l.ServiceName != "occ-api-eu" || fmt.Sprint(l.HeaderMap()) != "map[authorization:Bearer header-sentinel x-scope:team-a]" ||
		fmt.Sprint(l.Resource()) != "[{service.instance.id api-1} {deployment.environment.name prod eu}]" {
		t.Errorf("log export %+v", l)
	}
	for _, f := range []string{"%v", "%+v", "%#v"} {
		if out := fmt.Sprintf(f, a); strings.Contains(out, "header-sentinel") {
			t.Errorf("%s shows an export header: %s", f, out)
		}
	}

	// The defaults; plain http is fine without headers, in production too (an in-cluster Collector).
	w, err := LoadWorker(MapLookup(workerProd().with(env{EnvLogsEndpoint: "http://occ-collector:4318/v1/logs"})))
	if err != nil {
		t.Fatal(err)
	}
	if w.LogExport.Timeout != DefaultLogsTimeout || w.LogExport.Protocol != ProtocolHTTPProtobuf || w.LogExport.ServiceName != "" {
		t.Errorf("defaults %+v", w.LogExport)
	}

	for _, tc := range []struct {
		name     string
		set      env
		variable string
		detail   string
	}{
		{"blank endpoint", env{EnvLogsEndpoint: " "}, EnvLogsEndpoint, problem.DetailRequired},
		{"relative endpoint", env{EnvLogsEndpoint: "/v1/logs"}, EnvLogsEndpoint, problem.DetailInvalidFormat},
		{"grpc scheme", env{EnvLogsEndpoint: "grpc://otel:4317"}, EnvLogsEndpoint, problem.DetailInvalidValue},
		{"query", env{EnvLogsEndpoint: "https://otel/v1/logs?token=x"}, EnvLogsEndpoint, problem.DetailInvalidValue},
		{"port 0", env{EnvLogsEndpoint: "https://otel:0/v1/logs"}, EnvLogsEndpoint, problem.DetailInvalidValue},
		{"http/json", env{EnvLogsEndpoint: "https://otel/v1/logs", EnvLogsProtocol: "http/json"}, EnvLogsProtocol, problem.DetailInvalidValue},
		{"timeout without endpoint", env{EnvLogsTimeout: "100"}, EnvLogsTimeout, problem.DetailInvalidValue},
		{"timeout 0", env{EnvLogsEndpoint: "https://otel/v1/logs", EnvLogsTimeout: "0"}, EnvLogsTimeout, problem.DetailInvalidValue},
		{"timeout word", env{EnvLogsEndpoint: "https://otel/v1/logs", EnvLogsTimeout: "10s"}, EnvLogsTimeout, problem.DetailInvalidFormat},
		{"duplicate header", env{EnvLogsEndpoint: "https://otel/v1/logs", EnvLogsHeaders: "a=1,a=2"}, EnvLogsHeaders, problem.DetailInvalidFormat},
		{"header newline", env{EnvLogsEndpoint: "https://otel/v1/logs", EnvLogsHeaders: "a=1%0Ab"}, EnvLogsHeaders, problem.DetailInvalidFormat},
		{"service name with space", env{EnvServiceName: "occ api"}, EnvServiceName, problem.DetailInvalidFormat},
		{"secret resource value", env{EnvResourceAttributes: "token=ghp_0123456789abcdefghijABCDEFGHIJ012345"}, EnvResourceAttributes, problem.DetailInvalidFormat},
		{"resource without value", env{EnvResourceAttributes: "team"}, EnvResourceAttributes, problem.DetailInvalidFormat},
	} {
		_, err := LoadWorker(MapLookup(workerProd().with(tc.set)))
		var se *problem.Error
		if !errors.As(err, &se) || se.Code != CodeConfigEnvInvalid || len(se.Details) != 1 ||
			se.Details[0].Path != "/env/"+tc.variable || se.Details[0].Code != tc.detail {
			t.Errorf("%s: %v %+v", tc.name, err, se)
		}
	}
}
