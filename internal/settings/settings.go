package settings

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Lookup reports the value of one environment variable and whether it is set. Pass os.LookupEnv in
// production and a map-backed function in tests. A nil Lookup behaves like an empty environment.
type Lookup func(name string) (string, bool)

// MapLookup returns a Lookup backed by m. It is meant for tests and for processes that build a
// child environment explicitly.
func MapLookup(m map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// Mode is the value of NODE_ENV.
type Mode string

// The two accepted modes. NODE_ENV must be exactly one of them.
const (
	Development Mode = "development"
	Production  Mode = "production"
)

// Startup error codes (Error.Code).
const (
	// CodeConfigEnvInvalid is the generic code for a variable that fails its rule.
	CodeConfigEnvInvalid = "CONFIG_ENV_INVALID"
	// CodeDatabaseConfigurationInvalid is used for OCC_DATABASE_URL and OCC_MIGRATION_DATABASE_URL.
	CodeDatabaseConfigurationInvalid = "DATABASE_CONFIGURATION_INVALID"
	// CodeAuthSecretInvalid is used for OCC_AUTH_SECRET.
	CodeAuthSecretInvalid = "AUTH_SECRET_INVALID"
	// CodeAuthBaseURLInvalid is used for OCC_AUTH_BASE_URL.
	CodeAuthBaseURLInvalid = "AUTH_BASE_URL_INVALID"
	// CodeInstallationNameInvalid is used for the bootstrap Installation name variables.
	CodeInstallationNameInvalid = "INSTALLATION_NAME_INVALID"
)

// DatabaseURLMessage is the operator-facing message for an invalid or missing database URL.
const DatabaseURLMessage = "A valid PostgreSQL connection URL must be explicitly configured."

// Metrics is the optional private metrics listener of the API and the worker.
type Metrics struct {
	// Enabled is OCC_METRICS_ENABLED.
	Enabled bool
	// Host is the canonical IP literal of OCC_METRICS_HOST; empty when disabled.
	Host string
	// Port is OCC_METRICS_PORT; zero when disabled.
	Port int
}

// ListenAddress is host:port for net.Listen, or "" when metrics are disabled.
func (m Metrics) ListenAddress() string {
	if !m.Enabled {
		return ""
	}
	return net.JoinHostPort(m.Host, strconv.Itoa(m.Port))
}

const redacted = "[redacted]"

func redact(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// formatRedacted renders v with %+v (or %#v) after the caller has replaced its secrets.
func formatRedacted(goSyntax bool, v any) string {
	if goSyntax {
		return fmt.Sprintf("%#v", v)
	}
	return fmt.Sprintf("%+v", v)
}

// isBlank reports whether v is empty or whitespace only.
func isBlank(v string) bool {
	return strings.TrimSpace(v) == ""
}
