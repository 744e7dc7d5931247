package cli

import (
	"context"
	"io"

	"github.com/openclaw/occ/internal/logexport"
	"github.com/openclaw/occ/internal/settings"
)

// logOutput is where the API's or worker's log lines go: stdout, and with OTEL_EXPORTER_OTLP_LOGS_ENDPOINT
// also the OTLP exporter. stop flushes the exporter (bounded by logexport.ShutdownTimeout); call it
// after the last line is logged.
func logOutput(env Env, cfg settings.LogExport, service string) (out io.Writer, stop func(), err error) {
	if !cfg.Enabled {
		return env.Stdout, func() {}, nil
	}
	e, err := logexport.New(cfg, logexport.Options{Service: service, Version: env.Version})
	if err != nil {
		return nil, nil, err
	}
	return e.Tee(env.Stdout), func() {
		ctx, cancel := context.WithTimeout(context.Background(), logexport.ShutdownTimeout)
		defer cancel()
		_ = e.Shutdown(ctx) // a record that cannot be delivered by now is lost; stdout has it
	}, nil
}
