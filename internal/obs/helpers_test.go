package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var fixedTime = time.Date(2026, 11, 30, 8, 40, 59, 123456789, time.UTC)

// logLine sends one record with a fixed time through a fresh handler and returns the
// output (possibly empty when the record is filtered).
func logLine(t *testing.T, level slog.Level, event string, attrs ...slog.Attr) string {
	t.Helper()
	var buf bytes.Buffer
	logTo(t, &buf, level, event, attrs...)
	return buf.String()
}

func logTo(t *testing.T, w io.Writer, level slog.Level, event string, attrs ...slog.Attr) {
	t.Helper()
	h := NewHandler(w, "occ-worker", level)
	r := slog.NewRecord(fixedTime, slog.LevelInfo, event, 0)
	r.AddAttrs(attrs...)
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatalf("Handle: %v", err)
	}
}

// decode parses exactly one JSON line, numbers kept as json.Number.
func decode(t *testing.T, out string) map[string]any {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("want exactly one line, got %q", out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("invalid JSON %q: %v", out, err)
	}
	return m
}

// topLevelKeys returns the keys of one JSON object in the order they were written.
func topLevelKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %q", line)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("token: %v", err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("value: %v", err)
		}
	}
	return keys
}

// fields returns the decoded line without the four fixed keys.
func fields(t *testing.T, out string) map[string]any {
	t.Helper()
	m := decode(t, out)
	for _, k := range []string{"time", "severity", "service", "event"} {
		delete(m, k)
	}
	return m
}

func jsonNumber(s string) json.Number { return json.Number(s) }
