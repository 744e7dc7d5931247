package obs

import (
	"context"
	"io"
	"log/slog"
)

// WriteStartupFailure writes exactly one sanitized line for a startup failure
// (startup-error, worker.startup-error, installation.bootstrap-failed,
// migration.failed) to w, normally stderr, whatever the configured log level: the
// process is about to exit and the level may be what failed to load. code, message
// and details pass the same rules as any other line; message and details survive
// only on the events allowed to carry them, and details keep at most 32 entries.
// A write error is ignored: there is nowhere left to report it.
func WriteStartupFailure(w io.Writer, service, event, code, message string, details []Detail) {
	h := NewHandler(w, service, slog.LevelDebug)
	attrs := []slog.Attr{slog.String("code", code)}
	if message != "" {
		attrs = append(attrs, slog.String("message", message))
	}
	if len(details) > 0 {
		attrs = append(attrs, slog.Any("details", details))
	}
	slog.New(h).LogAttrs(context.Background(), Severity(event), event, attrs...)
}
