package obs

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"
)

// timeLayout is RFC 3339 in UTC with exactly millisecond precision.
const timeLayout = "2006-01-02T15:04:05.000Z"

// serviceFallback names the process when the given service name is unusable.
const serviceFallback = "occ"

var servicePattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)

// handler is the slog.Handler behind NewHandler. Handlers derived with WithAttrs and
// WithGroup share the writer's mutex, so every line reaches w in one Write call and
// lines never interleave.
type handler struct {
	mu      *sync.Mutex
	w       io.Writer
	service string
	level   slog.Leveler
	attrs   []slog.Attr // from WithAttrs, checked per event (message/details depend on it)
	grouped bool        // a named group is open: later attributes are dropped
	now     func() time.Time
}

// NewHandler returns a handler writing one sanitized JSON object per line to w.
// service names the process (occ-api, occ-worker, occ-migrate, occ-bootstrap); a name
// outside ^[a-z][a-z0-9_.-]{0,63}$ is written as "occ". level filters on the severity
// derived from the event name (nil means info).
func NewHandler(w io.Writer, service string, level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	if !servicePattern.MatchString(service) || looksLikeCredential(service) {
		service = serviceFallback
	}
	return &handler{mu: new(sync.Mutex), w: w, service: service, level: level, now: time.Now}
}

// NewLogger returns a slog.Logger over NewHandler.
func NewLogger(w io.Writer, service string, level slog.Leveler) *slog.Logger {
	return slog.New(NewHandler(w, service, level))
}

// Enabled reports true for every call level: the severity that the level filter
// applies to comes from the event name, which is only known in Handle. Only a
// threshold above ERROR disables the handler outright.
func (h *handler) Enabled(context.Context, slog.Level) bool {
	return h.level.Level() <= slog.LevelError
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if h.grouped || len(attrs) == 0 {
		return h
	}
	c := *h
	c.attrs = slices.Concat(h.attrs, attrs)
	return &c
}

// WithGroup drops every attribute added afterwards (see the package documentation).
func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.grouped = true
	return &c
}

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	event := eventName(r.Message)
	severity := Severity(event)
	if severity < h.level.Level() {
		return nil
	}
	fields := make(map[string][]byte, len(h.attrs)+r.NumAttrs())
	for _, a := range h.attrs {
		addField(fields, event, a)
	}
	if !h.grouped {
		r.Attrs(func(a slog.Attr) bool {
			addField(fields, event, a)
			return true
		})
	}

	t := r.Time
	if t.IsZero() {
		t = h.now()
	}
	line := make([]byte, 0, 256)
	line = append(line, `{"time":"`...)
	line = t.UTC().AppendFormat(line, timeLayout)
	line = append(line, `","severity":"`...)
	line = append(line, severityName(severity)...)
	line = append(line, `","service":`...)
	line = appendJSONString(line, h.service)
	line = append(line, `,"event":`...)
	line = appendJSONString(line, event)
	keys := make([]string, 0, len(fields))
	for k, v := range fields {
		if v != nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		line = append(line, ',')
		line = appendJSONString(line, k)
		line = append(line, ':')
		line = append(line, fields[k]...)
	}
	line = append(line, '}', '\n')

	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(line)
	return err
}

// addField records a's encoding, or nil when it must be dropped (a later invalid value
// removes an earlier valid one). Groups with an empty key are inlined; named groups
// and attributes with an empty key are ignored.
func addField(fields map[string][]byte, event string, a slog.Attr) {
	if a.Value.Kind() == slog.KindGroup {
		if a.Key == "" {
			for _, inner := range a.Value.Group() {
				addField(fields, event, inner)
			}
		}
		return
	}
	if a.Key == "" {
		return
	}
	if _, allowed := allowedFields[a.Key]; !allowed {
		return
	}
	encoded, ok := encodeField(event, a.Key, a.Value)
	if !ok {
		encoded = nil
	}
	fields[a.Key] = encoded
}

func appendJSONString(dst []byte, s string) []byte {
	// Letters, digits and this punctuation are their own JSON encoding (json.Marshal's, which
	// also escapes <, > and &).
	if allIn(s, "._: /@{}-") {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, err := json.Marshal(s)
	if err != nil { // cannot happen for a string
		return append(dst, `""`...)
	}
	return append(dst, b...)
}
