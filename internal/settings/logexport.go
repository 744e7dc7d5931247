package settings

import (
	"github.com/openclaw/occ/internal/problem"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/obs"
)

// The log export variables: the OpenTelemetry names for the OTLP logs exporter and the resource.
const (
	EnvLogsEndpoint       = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
	EnvLogsProtocol       = "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"
	EnvLogsHeaders        = "OTEL_EXPORTER_OTLP_LOGS_HEADERS"
	EnvLogsTimeout        = "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT"
	EnvServiceName        = "OTEL_SERVICE_NAME"
	EnvResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
)

// Log export defaults and bounds.
const (
	// ProtocolHTTPProtobuf is the one OTLP transport the exporter speaks.
	ProtocolHTTPProtobuf   = "http/protobuf"
	DefaultLogsTimeout     = 10 * time.Second
	maxLogsTimeoutMillis   = 600000
	maxExportHeaders       = 32
	maxExportHeadersLength = 8192
	maxResourceAttributes  = 32
	maxResourceValueLength = 255
)

// LogExport is the optional OTLP export of the API's and worker's log records.
type LogExport struct {
	// Enabled is true when OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is set.
	Enabled bool
	// Endpoint is OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: the full URL records are POSTed to, used as given
	// (for a Collector normally http(s)://host:4318/v1/logs).
	Endpoint string
	// Protocol is OTEL_EXPORTER_OTLP_LOGS_PROTOCOL; always ProtocolHTTPProtobuf when enabled.
	Protocol string
	// Headers is OTEL_EXPORTER_OTLP_LOGS_HEADERS as given (checked); HeaderMap decodes it. Kept
	// as text so that the settings structs stay comparable.
	Headers string
	// Timeout is OTEL_EXPORTER_OTLP_LOGS_TIMEOUT: the bound of one export request.
	Timeout time.Duration
	// ServiceName is OTEL_SERVICE_NAME; empty means the process's own name (occ-api, occ-worker).
	ServiceName string
	// ResourceAttributes is OTEL_RESOURCE_ATTRIBUTES as given (checked); Resource decodes it.
	ResourceAttributes string
}

// HeaderMap returns the decoded export headers (nil when none).
func (l LogExport) HeaderMap() map[string]string {
	if l.Headers == "" {
		return nil
	}
	pairs, _ := parsePairs(l.Headers, maxExportHeaders, func(string) bool { return true })
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		m[p.Key] = p.Value
	}
	return m
}

// Resource returns the decoded resource attributes, in the order given.
func (l LogExport) Resource() []ResourceAttribute {
	if l.ResourceAttributes == "" {
		return nil
	}
	pairs, _ := parsePairs(l.ResourceAttributes, maxResourceAttributes, func(string) bool { return true })
	return pairs
}

// ResourceAttribute is one key=value pair of OTEL_RESOURCE_ATTRIBUTES.
type ResourceAttribute struct{ Key, Value string }

// redacted replaces the header values (they usually hold a backend's credentials).
func (l LogExport) redacted() LogExport {
	c := l
	c.Headers = redact(c.Headers)
	return c
}

var (
	headerKeyPattern   = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
	resourceKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)
	// serviceNamePattern admits the names OpenTelemetry examples use (letters, digits, . _ - /).
	serviceNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)
)

// logExport reads the six log export variables. The exporter variables need the endpoint (set
// while it is unset they are refused, as the metrics variables are); the resource variables are
// checked whenever set, since platforms often set them for every process.
func (r *reader) logExport(mode Mode) LogExport {
	var l LogExport
	endpoint, enabled := r.optional(EnvLogsEndpoint, CodeConfigEnvInvalid)
	if r.failed() {
		return LogExport{}
	}
	if !enabled {
		for _, n := range []string{EnvLogsProtocol, EnvLogsHeaders, EnvLogsTimeout} {
			if _, set := r.get(n); set {
				r.fail(n, CodeConfigEnvInvalid, problem.DetailInvalidValue, n+" must be unset when "+EnvLogsEndpoint+" is unset.")
			}
		}
	} else {
		l.Enabled = true
		l.Endpoint = r.logsEndpoint(endpoint)
		l.Protocol = r.logsProtocol()
		l.Headers = r.exportHeaders()
		if !r.failed() && l.Headers != "" && mode == Production && !strings.HasPrefix(l.Endpoint, "https:") && !isLoopbackURL(l.Endpoint) {
			// Headers usually carry a backend's credentials: never in clear text over the network.
			r.fail(EnvLogsHeaders, CodeConfigEnvInvalid, problem.DetailInvalidValue,
				EnvLogsHeaders+" needs an https OTEL_EXPORTER_OTLP_LOGS_ENDPOINT in production unless its host is loopback.")
		}
		l.Timeout = time.Duration(r.decimalInRange(EnvLogsTimeout,
			EnvLogsTimeout+" must be an integer from 1 to 600000 (milliseconds).",
			uint64(DefaultLogsTimeout.Milliseconds()), 1, maxLogsTimeoutMillis)) * time.Millisecond
	}
	if v, ok := r.optional(EnvServiceName, CodeConfigEnvInvalid); ok {
		if !serviceNamePattern.MatchString(v) || obs.LooksLikeSecret(v) {
			r.fail(EnvServiceName, CodeConfigEnvInvalid, problem.DetailInvalidFormat,
				EnvServiceName+" must be 1 to 128 letters, digits, '.', '_', '-' or '/'.")
		}
		l.ServiceName = v
	}
	l.ResourceAttributes = r.resourceAttributes()
	if r.failed() {
		return LogExport{}
	}
	return l
}

// logsEndpoint checks the OTLP/HTTP logs URL: http or https with a host, no credentials (they go
// in the headers), query or fragment. Plain http stays allowed in production: the usual target is
// a Collector inside the cluster, and the records carry no credentials (see exportHeaders).
func (r *reader) logsEndpoint(v string) string {
	const message = EnvLogsEndpoint + " must be an absolute http or https URL without credentials, query or fragment."
	u, err := url.Parse(v)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		r.fail(EnvLogsEndpoint, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || strings.Contains(v, "#") || obs.LooksLikeSecret(v) {
		r.fail(EnvLogsEndpoint, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
		return ""
	}
	if p := u.Port(); p != "" {
		r.port(EnvLogsEndpoint, p)
		if r.failed() {
			r.err.Message = message
			return ""
		}
	}
	return u.String()
}

func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// logsProtocol accepts only http/protobuf: grpc and http/json are standard names the exporter does
// not speak, refused rather than silently replaced.
func (r *reader) logsProtocol() string {
	v, ok := r.optional(EnvLogsProtocol, CodeConfigEnvInvalid)
	if r.failed() {
		return ""
	}
	if !ok {
		return ProtocolHTTPProtobuf
	}
	if v != ProtocolHTTPProtobuf {
		r.fail(EnvLogsProtocol, CodeConfigEnvInvalid, problem.DetailInvalidValue,
			EnvLogsProtocol+" must be http/protobuf (grpc and http/json are not supported).")
		return ""
	}
	return v
}

// exportHeaders parses key=value pairs separated by commas, values percent-decoded, as the
// OpenTelemetry specification defines the headers variable.
func (r *reader) exportHeaders() string {
	const message = EnvLogsHeaders + " must be comma-separated key=value pairs (HTTP header names, percent-encoded values without control characters)."
	v, ok := r.optional(EnvLogsHeaders, CodeConfigEnvInvalid)
	if !ok {
		return ""
	}
	if len(v) > maxExportHeadersLength {
		r.fail(EnvLogsHeaders, CodeConfigEnvInvalid, problem.DetailTooLong, EnvLogsHeaders+" must be at most 8192 characters.")
		return ""
	}
	if _, ok := parsePairs(v, maxExportHeaders, func(k string) bool { return headerKeyPattern.MatchString(k) }); !ok {
		r.fail(EnvLogsHeaders, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	return v
}

// resourceAttributes parses OTEL_RESOURCE_ATTRIBUTES. Values are bounded and must not look like
// a credential: resource attributes leave the machine on every record.
func (r *reader) resourceAttributes() string {
	const message = EnvResourceAttributes + " must be at most 32 comma-separated key=value pairs (keys of letters, digits, '.', '_', '-', '/'; percent-encoded values of at most 255 printable characters that do not look like a credential)."
	v, ok := r.optional(EnvResourceAttributes, CodeConfigEnvInvalid)
	if !ok {
		return ""
	}
	pairs, ok := parsePairs(v, maxResourceAttributes, func(k string) bool { return resourceKeyPattern.MatchString(k) })
	if ok {
		for _, p := range pairs {
			if len(p.Value) > maxResourceValueLength || !isPrintableASCII(p.Value) || obs.LooksLikeSecret(p.Value) {
				ok = false
			}
		}
	}
	if !ok {
		r.fail(EnvResourceAttributes, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	return v
}

// parsePairs splits "k1=v1,k2=v2" (blanks around keys and values are trimmed, values
// percent-decoded). It fails on an empty item, a missing "=", a key validKey refuses, a duplicate
// key, a value with a control character, or more than max pairs.
func parsePairs(v string, max int, validKey func(string) bool) ([]ResourceAttribute, bool) {
	items := strings.Split(v, ",")
	if len(items) > max {
		return nil, false
	}
	var pairs []ResourceAttribute
	for _, item := range items {
		k, val, found := strings.Cut(item, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !found || !validKey(k) || slices.ContainsFunc(pairs, func(p ResourceAttribute) bool { return p.Key == k }) {
			return nil, false
		}
		decoded, err := url.PathUnescape(val)
		if err != nil || strings.ContainsFunc(decoded, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return nil, false
		}
		pairs = append(pairs, ResourceAttribute{Key: k, Value: decoded})
	}
	return pairs, true
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
