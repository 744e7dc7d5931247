package obs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/problem"
)

// leakEvents cover every gate: message and details events, plain events, and one that
// falls back to occ.event.
var leakEvents = []string{
	EventStartupError, EventWorkerStartupError, EventInstallationBootstrapFailed, EventMigrationFailed,
	EventMigrationChecked, EventComputePreflightWarning, EventWorkerComputePrepareFailed,
	"worker.completed", "http.completed", "worker.error",
}

// logEverywhere puts value in every allowed field of each event (as a string, a
// named string, inside attempt objects and details), uses it as an event name and a
// service name, and writes a startup failure with it.
func logEverywhere(t testing.TB, w *bytes.Buffer, value string, events ...string) {
	upper := strings.ToUpper(value)
	attempt := map[string]any{}
	for k := range attemptKeys {
		attempt[k] = value
	}
	fileAttempt := map[string]string{"passwordFile": "/run/" + value, "serviceKeyFile": "/" + value}
	structAttempt := BootstrapAttempt{
		AuthAccountID: value, InstallationID: value, PasswordFile: "/" + value, PrincipalID: value,
		ServiceKeyExpiresAt: value, ServiceKeyFile: "/k/" + value, ServiceKeyID: value, ServicePrincipalID: value,
	}
	details := []problem.Detail{{Path: "/" + value, Code: "X"}, {Path: "/x", Code: upper}, {Path: "/drivers/" + value, Code: value}}

	for _, service := range []string{"occ-worker", value} {
		logger := NewLogger(w, service, slog.LevelDebug)
		for _, event := range append(slices.Clone(events), value, "x."+strings.ToLower(value)) {
			var attrs []any
			for key := range allowedFields {
				attrs = append(attrs,
					slog.String(key, value), slog.String(key, "/"+value), slog.Any(key, workID(value)))
			}
			// The last value of a key wins, so log the object forms on separate lines.
			logger.Info(event, attrs...)
			logger.Info(event, "attempt", attempt)
			logger.Info(event, "attempt", fileAttempt)
			logger.Info(event, "attempt", structAttempt)
			logger.Info(event, "attempt", &structAttempt)
			logger.Info(event, "details", details)
			logger.Info(event, "message", value, "code", upper, "reason", value)
			logger.With("code", value, "cause", upper).WithGroup("g").Info(event, "message", value)
		}
		WriteStartupFailure(w, service, EventStartupError, problem.New(value, value, details...))
		WriteStartupFailure(w, service, EventWorkerStartupError, problem.New(upper, value, details...))
		WriteStartupFailure(w, service, value, problem.New(value, value, details...))
	}
}

// assertNoLeak fails when a secret appears, in any letter case, anywhere in out, or
// when out is not one JSON object per line.
func assertNoLeak(t testing.TB, out []byte, secrets ...string) {
	lower := strings.ToLower(string(out))
	for _, s := range secrets {
		if i := strings.Index(lower, strings.ToLower(s)); i >= 0 {
			lineStart := strings.LastIndexByte(lower[:i], '\n') + 1
			lineEnd := strings.IndexByte(lower[i:], '\n') + i
			t.Fatalf("secret %q leaked: %s", s, out[lineStart:lineEnd])
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("invalid JSON line: %s", sc.Bytes())
		}
	}
}

func TestNoSecretReachesTheLog(t *testing.T) {
	secrets := leakSamples()
	for _, secret := range secrets {
		var buf bytes.Buffer
		for _, value := range []string{
			secret, "x " + secret, "x" + secret, secret + " y", "a:" + secret + "@b", "/" + secret,
			"/etc/occ/" + secret + ".yaml", "ID " + secret,
		} {
			logEverywhere(t, &buf, value, leakEvents...)
		}
		if buf.Len() == 0 {
			t.Fatal("nothing was logged")
		}
		assertNoLeak(t, buf.Bytes(), secrets...)
	}

	// Control: the same calls with a harmless value keep it in many fields, so the
	// test above does not pass merely because everything is dropped.
	var buf bytes.Buffer
	logEverywhere(t, &buf, "benign-value", leakEvents...)
	if n := strings.Count(buf.String(), `"benign-value"`); n < 100 {
		t.Fatalf("benign value kept only %d times", n)
	}
	for _, want := range []string{`"message":"benign-value"`, `"path":"/benign-value"`, `"installationId":"benign-value"`,
		`"serviceKeyFile":"/benign-value"`, `{"path":"/benign-value","code":"X"}`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("control output lacks %s", want)
		}
	}
}

func TestShortCredentialPrefixesAreDropped(t *testing.T) {
	for _, v := range []string{"Bearer", "bearer x", "Bearerabc", "sk-a", "sk-", "ghp_x", "gho_1", "github_pat_",
		"AKIA1", "akiaz", "xoxb-1", "x sk-a", "key:ghp_x"} {
		got := fields(t, logLine(t, slog.LevelInfo, "worker.completed", slog.String("code", v), slog.String("cause", "ok")))
		if _, kept := got["code"]; kept || got["cause"] != "ok" {
			t.Errorf("%q: fields %v", v, got)
		}
	}
}

func FuzzHandlerNeverLeaks(f *testing.F) {
	f.Add("", "", uint8(0))
	f.Add("x", "y", uint8(1))
	f.Add("/etc/", ".yaml", uint8(2))
	f.Add("a ", " b", uint8(3))
	f.Add("A", "", uint8(6))
	f.Add("ID:", "@x", uint8(13))
	secrets := leakSamples()
	f.Fuzz(func(t *testing.T, prefix, suffix string, which uint8) {
		if len(prefix)+len(suffix) > 2048 {
			return
		}
		secret := secrets[int(which)%len(secrets)]
		var buf bytes.Buffer
		logEverywhere(t, &buf, prefix+secret+suffix, EventStartupError, EventComputePreflightWarning, "worker.completed")
		assertNoLeak(t, buf.Bytes(), secret)
	})
}
