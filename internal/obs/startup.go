package obs

import (
	"context"
	"io"
	"log/slog"

	"github.com/openclaw/occ/internal/problem"
)

// WriteStartupFailure writes exactly one sanitized line for a startup failure
// (startup-error, worker.startup-error, installation.bootstrap-failed,
// migration.failed) to w, normally stderr, whatever the configured log level: the
// process is about to exit and the level may be what failed to load. The problem's
// code, message and details (path and code of each; their messages and the cause are
// not logged) pass the same rules as any other line; message and details survive only
// on the events allowed to carry them, and details keep at most problem.MaxDetails
// entries. A write error is ignored: there is nowhere left to report it.
func WriteStartupFailure(w io.Writer, service, event string, p *problem.Error) {
	h := NewHandler(w, service, slog.LevelDebug)
	attrs := []slog.Attr{slog.String("code", p.Code)}
	if p.Message != "" {
		attrs = append(attrs, slog.String("message", p.Message))
	}
	if len(p.Details) > 0 {
		attrs = append(attrs, slog.Any("details", p.Details))
	}
	slog.New(h).LogAttrs(context.Background(), Severity(event), event, attrs...)
}
