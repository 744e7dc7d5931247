package runtimelog

import (
	"encoding/json"
	"strings"
	"time"
)

// Limits of what one line may carry.
const (
	MaxInputLineBytes = 32 << 10 // a longer line is withheld, never cut
	MaxTextLineBytes  = 4 << 10  // a longer plain line is withheld
	MaxMessageBytes   = 8 << 10
	MaxFieldBytes     = 512
	maxJSONDepth      = 8
)

// Record types.
const (
	TypeLine     = "line"
	TypeWithheld = "withheld"
	TypeGap      = "gap"
)

// Kinds of a line.
const (
	KindWrapper  = "wrapper"
	KindOpenClaw = "openclaw"
	KindCodex    = "codex"
	KindText     = "text"
)

// Levels of a line; LevelUnknown lines pass every level floor.
const (
	LevelError   = "error"
	LevelWarn    = "warn"
	LevelInfo    = "info"
	LevelDebug   = "debug"
	LevelUnknown = "unknown"
)

// Withheld reasons.
const (
	WithheldOversized  = "oversized"
	WithheldMalformed  = "malformed"
	WithheldStructured = "unrecognised_structured"
	WithheldReplyText  = "reply_text"
)

// Gap reasons and the fixed remedy each shows.
const (
	GapStreamReplaced = "stream_replaced"
	GapWindowExceeded = "window_exceeded"
	GapCursorExpired  = "cursor_expired"
	GapTruncated      = "truncated"
)

var gapRemedies = map[string]string{
	GapStreamReplaced: "The container restarted or the Pod changed; showing the new instance.",
	GapWindowExceeded: "Lines between the previous page and this one were not read. Refresh to read the current tail.",
	GapCursorExpired:  "The previous view expired; reading resumed at the current tail.",
	GapTruncated:      "The page reached its byte limit; later lines were not read. Ask for fewer lines to read them.",
}

// Stream names the container instance a page was read from.
type Stream struct {
	Source       string `json:"source"`
	Pod          string `json:"pod,omitempty"`
	PodUID       string `json:"podUid,omitempty"`
	Container    string `json:"container,omitempty"`
	RestartCount int    `json:"restartCount"`
}

// Record is one row of a page: a line, a count of withheld lines, or a labelled gap. Only this
// package builds records (Build, Gap), so the API can tell a sanitized record from anything else.
type Record struct {
	Type         string         `json:"type"`
	Time         *time.Time     `json:"time"`
	Stream       Stream         `json:"stream"`
	ContentClass string         `json:"contentClass,omitempty"`
	Kind         string         `json:"kind,omitempty"`
	Level        string         `json:"level,omitempty"`
	Message      string         `json:"message,omitempty"`
	Subsystem    string         `json:"subsystem,omitempty"`
	Fields       map[string]any `json:"fields,omitempty"`
	Truncated    bool           `json:"truncated,omitempty"`
	Count        int            `json:"count,omitempty"`
	Reason       string         `json:"reason,omitempty"`
	Remedy       string         `json:"remedy,omitempty"`

	sanitized bool
}

// Sanitized reports whether r was built by this package.
func (r Record) Sanitized() bool { return r.sanitized }

// Gap returns the labelled gap of reason at t (nil: unknown time).
func Gap(reason string, stream Stream, t *time.Time) Record {
	return Record{Type: TypeGap, Time: t, Stream: stream, Reason: reason, Remedy: gapRemedies[reason], sanitized: true}
}

// wrapperFields are the fields kept of each runtime-wrapper event.
var wrapperFields = map[string][]string{
	"runtime.startup_phase":  {"container", "phase", "outcome", "ms", "sinceStartMs"},
	"runtime.workspace_node": {"container", "outcome", "code"},
	"openclaw.model_probe":   {"elapsedMs", "capMs", "cpuWaitMs", "code"},
	"codex.model_probe":      {"attempt", "elapsedMs", "exitCode", "signal", "code"},
}

// operationalFields are the fields kept of a structured runtime record; payload keys (prompts,
// messages, arguments, headers, environment) never leave OCC.
var operationalFields = []string{"agent_id", "session_id", "run_id", "channel", "traceId", "spanId",
	"code", "status", "durationMs", "elapsedMs", "method", "url"}

var levels = map[string]string{
	"fatal": LevelError, "error": LevelError, "err": LevelError,
	"warn": LevelWarn, "warning": LevelWarn,
	"info":  LevelInfo,
	"debug": LevelDebug, "trace": LevelDebug,
}

// levelRank orders levels for a floor; unknown has no rank.
var levelRank = map[string]int{LevelDebug: 0, LevelInfo: 1, LevelWarn: 2, LevelError: 3}

// ValidLevel reports whether s is a level floor a reader may ask for.
func ValidLevel(s string) bool { _, ok := levelRank[s]; return ok }

// classified is a line before redaction: kept (a line) or withheld with a reason.
type classified struct {
	withheld  string
	kind      string
	level     string
	message   string
	subsystem string
	fields    map[string]any
}

func classify(raw string) classified {
	if len(raw) > MaxInputLineBytes {
		return classified{withheld: WithheldOversized}
	}
	text := StripControls(raw)
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		return classifyJSON(trimmed)
	}
	if len(text) > MaxTextLineBytes {
		return classified{withheld: WithheldOversized}
	}
	return classified{kind: KindText, level: LevelUnknown, message: text}
}

func classifyJSON(s string) classified {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() || !withinDepth(v, 0) {
		return classified{withheld: WithheldMalformed}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return classified{withheld: WithheldStructured}
	}
	if event, ok := obj["event"].(string); ok {
		if keep, ok := wrapperFields[event]; ok {
			lvl := LevelInfo
			if code, _ := obj["code"].(string); obj["outcome"] == "failed" ||
				(strings.HasSuffix(event, "model_probe") && code != "" && code != "READY") {
				lvl = LevelError
			}
			return classified{kind: KindWrapper, level: lvl, message: event, fields: pick(obj, keep)}
		}
	}
	level, _ := obj["level"].(string)
	message, hasMessage := obj["message"].(string)
	target, hasTarget := obj["target"].(string)
	if nested, ok := obj["fields"].(map[string]any); ok && hasTarget && !hasMessage {
		// Codex tracing: {timestamp, level, target, fields: {message, ...}}.
		if m, ok := nested["message"].(string); ok {
			return classified{kind: KindCodex, level: levelOf(level), message: m, subsystem: target, fields: pick(nested, operationalFields)}
		}
	}
	if level == "" || !hasMessage {
		return classified{withheld: WithheldStructured}
	}
	if hasTarget {
		return classified{kind: KindCodex, level: levelOf(level), message: message, subsystem: target, fields: pick(obj, operationalFields)}
	}
	c := classified{kind: KindOpenClaw, level: levelOf(level), message: message, fields: pick(obj, operationalFields)}
	c.subsystem, _ = obj["subsystem"].(string)
	// A gateway record with no subsystem at info or below carries reply text (the chat endpoint's
	// output): withheld. Errors and warnings without one are startup failures, kept.
	if c.subsystem == "" && (c.level == LevelInfo || c.level == LevelDebug) {
		return classified{withheld: WithheldReplyText}
	}
	return c
}

func levelOf(s string) string {
	if l, ok := levels[strings.ToLower(s)]; ok {
		return l
	}
	return LevelUnknown
}

func withinDepth(v any, depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	switch t := v.(type) {
	case map[string]any:
		for _, c := range t {
			if !withinDepth(c, depth+1) {
				return false
			}
		}
	case []any:
		for _, c := range t {
			if !withinDepth(c, depth+1) {
				return false
			}
		}
	}
	return true
}

// pick keeps the scalar values of the allowed keys (strings are cleaned later).
func pick(obj map[string]any, allowed []string) map[string]any {
	var out map[string]any
	for _, k := range allowed {
		v, ok := obj[k]
		if !ok {
			continue
		}
		switch t := v.(type) {
		case string, bool:
		case json.Number:
			if f, err := t.Float64(); err == nil {
				v = f
			} else {
				continue
			}
		default:
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}
