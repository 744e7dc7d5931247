// Package logexport sends the API's and worker's log records over OTLP/HTTP as well as writing
// them to stdout, when OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is set.
//
// The exporter sits behind the obs handler, not beside it: Tee wraps the handler's writer, writes
// each finished JSON line to stdout unchanged and turns the same line into one OpenTelemetry log
// record. An exported record therefore holds exactly the fields that survived the obs allowlist and
// secret rules, and stdout stays byte-identical with or without export.
//
// A record carries the line's time and severity, the event name as its body and event name, and
// every other field of the line as an attribute under its JSON key ("event", "code", "workId", ...;
// objects and arrays as OTLP maps and arrays). The instrumentation scope is the process's service
// (occ-api, occ-worker); the resource has service.name (OTEL_SERVICE_NAME, default the same
// service), service.version and OTEL_RESOURCE_ATTRIBUTES. Which of the fields leave the machine is
// the Collector's policy (deploy/logging/collector.yaml, docs/observability.md).
//
// Delivery: the SDK's batch processor queues up to 2048 records and exports every second; the
// exporter retries what the SDK's OTLP client treats as transient, and retryExporter adds retries
// for a Collector that refuses connections while it restarts. Export is best effort: a full queue
// drops the oldest records, a batch still failing after a minute is dropped without a report, and
// logging never waits for the network.
package logexport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/openclaw/occ/internal/settings"
)

// Batching: the SDK's defaults for the queue and batch size; a short interval so that records
// reach the Collector within about a second.
const (
	maxQueueSize   = 2048
	exportInterval = time.Second
	maxBatchSize   = 512
	// retryWindow bounds how long one batch is retried (the SDK's own default window).
	retryWindow = time.Minute
)

// ShutdownTimeout bounds the flush at process exit.
const ShutdownTimeout = 5 * time.Second

// Exporter owns the OpenTelemetry logger provider of one process.
type Exporter struct {
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
}

// Options are the process facts the resource describes.
type Options struct {
	// Service is the process's service name (occ-api, occ-worker): the instrumentation scope, and
	// service.name unless OTEL_SERVICE_NAME is set.
	Service string
	// Version is the OCC build version (service.version).
	Version string
	// ExportFailed, when set, is called after every failed export attempt (retried or not); tests
	// use it to know that a record met an unreachable Collector.
	ExportFailed func()
}

// New starts an exporter for cfg, which must be Enabled. It does not contact the endpoint: the
// first export does.
func New(cfg settings.LogExport, opts Options) (*Exporter, error) {
	if !cfg.Enabled {
		return nil, errors.New("logexport: log export is not enabled")
	}
	client, err := otlploghttp.New(context.Background(),
		otlploghttp.WithEndpointURL(cfg.Endpoint),
		otlploghttp.WithHeaders(cfg.HeaderMap()),
		otlploghttp.WithTimeout(cfg.Timeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{
			Enabled: true, InitialInterval: 500 * time.Millisecond, MaxInterval: 5 * time.Second, MaxElapsedTime: retryWindow,
		}),
	)
	if err != nil {
		return nil, err
	}
	// The SDK reports a batch it gives up on through the global error handler, whose default
	// prints free text to stderr; OCC's output stays JSON lines only, so the report is dropped
	// (the Collector's own metrics show what it received).
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	exporter := &retryExporter{next: client, window: retryWindow, failed: opts.ExportFailed}
	provider := sdklog.NewLoggerProvider(
		sdklog.WithResource(newResource(cfg, opts)),
		sdklog.WithProcessor(sdklog.NewBatchProcessor(exporter,
			sdklog.WithMaxQueueSize(maxQueueSize),
			sdklog.WithExportInterval(exportInterval),
			sdklog.WithExportMaxBatchSize(maxBatchSize),
			sdklog.WithExportTimeout(retryWindow+cfg.Timeout),
		)),
	)
	return &Exporter{provider: provider, logger: provider.Logger(opts.Service)}, nil
}

// newResource builds the resource from our settings only (never from the environment: settings
// has already read and checked OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES).
func newResource(cfg settings.LogExport, opts Options) *resource.Resource {
	resourceAttrs := cfg.Resource()
	attrs := make([]attribute.KeyValue, 0, len(resourceAttrs)+2)
	for _, a := range resourceAttrs {
		if a.Key != "service.name" {
			attrs = append(attrs, attribute.String(a.Key, a.Value))
		}
	}
	name := opts.Service
	if cfg.ServiceName != "" {
		name = cfg.ServiceName
	} else {
		for _, a := range resourceAttrs {
			if a.Key == "service.name" {
				name = a.Value // the specification: OTEL_SERVICE_NAME wins over this one
			}
		}
	}
	attrs = append(attrs, attribute.String("service.name", name))
	if opts.Version != "" {
		attrs = append(attrs, attribute.String("service.version", opts.Version))
	}
	return resource.NewSchemaless(attrs...)
}

// Shutdown flushes the queued records and stops the exporter, waiting at most until ctx ends.
func (e *Exporter) Shutdown(ctx context.Context) error {
	return e.provider.Shutdown(ctx)
}

// Tee returns a writer that writes to w and exports each complete line. The obs handler writes one
// line per Write call; a Write that is not one JSON object is written to w and not exported.
func (e *Exporter) Tee(w io.Writer) io.Writer {
	return &tee{w: w, e: e}
}

type tee struct {
	w io.Writer
	e *Exporter
}

func (t *tee) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if rec, ok := recordFromLine(p); ok {
		t.e.logger.Emit(context.Background(), rec)
	}
	return n, err
}

// recordFromLine turns one obs JSON line into a log record.
func recordFromLine(line []byte) (otellog.Record, bool) {
	var rec otellog.Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return rec, false
	}
	event, _ := fields["event"].(string)
	if event == "" {
		return rec, false
	}
	if s, ok := fields["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			rec.SetTimestamp(t)
		}
	}
	rec.SetObservedTimestamp(time.Now())
	severity, _ := fields["severity"].(string)
	rec.SetSeverityText(severity)
	rec.SetSeverity(severityNumber(severity))
	rec.SetEventName(event)
	rec.SetBody(attribute.StringValue(event))
	for k, v := range fields {
		switch k {
		case "time", "severity", "service":
			continue // the record's own timestamp and severity, and the scope
		}
		if value, ok := attributeValue(v); ok {
			rec.AddAttributes(attribute.KeyValue{Key: attribute.Key(k), Value: value})
		}
	}
	return rec, true
}

func severityNumber(s string) otellog.Severity {
	switch s {
	case "DEBUG":
		return otellog.SeverityDebug
	case "INFO":
		return otellog.SeverityInfo
	case "WARN":
		return otellog.SeverityWarn
	case "ERROR":
		return otellog.SeverityError
	}
	return otellog.SeverityUndefined
}

// attributeValue converts a decoded JSON value; obs writes only strings, safe integers, numbers
// with three decimals, booleans, and objects or arrays of those.
func attributeValue(v any) (attribute.Value, bool) {
	switch v := v.(type) {
	case string:
		return attribute.StringValue(v), true
	case bool:
		return attribute.BoolValue(v), true
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return attribute.Int64Value(i), true
		}
		if f, err := v.Float64(); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return attribute.Float64Value(f), true
		}
	case []any:
		values := make([]attribute.Value, 0, len(v))
		for _, item := range v {
			if value, ok := attributeValue(item); ok {
				values = append(values, value)
			}
		}
		return attribute.SliceValue(values...), true
	case map[string]any:
		kvs := make([]attribute.KeyValue, 0, len(v))
		for k, item := range v {
			if value, ok := attributeValue(item); ok {
				kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(k), Value: value})
			}
		}
		return attribute.MapValue(kvs...), true
	}
	return attribute.Value{}, false
}

// retryExporter retries a failed export until it succeeds, ctx ends or the window has passed. The
// OTLP client already retries throttling and 5xx answers; a refused connection (a Collector that
// is restarting) it reports as final, and that is what this retries.
type retryExporter struct {
	next   sdklog.Exporter
	window time.Duration
	failed func()
}

func (r *retryExporter) Export(ctx context.Context, records []sdklog.Record) error {
	deadline := time.Now().Add(r.window)
	delay := 200 * time.Millisecond
	for {
		err := r.next.Export(ctx, records)
		if err != nil && r.failed != nil {
			r.failed()
		}
		if err == nil || ctx.Err() != nil || time.Now().Add(delay).After(deadline) {
			return err
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func (r *retryExporter) Shutdown(ctx context.Context) error   { return r.next.Shutdown(ctx) }
func (r *retryExporter) ForceFlush(ctx context.Context) error { return r.next.ForceFlush(ctx) }
