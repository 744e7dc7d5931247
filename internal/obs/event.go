package obs

import (
	"errors"
	"log/slog"
	"regexp"
	"strings"
)

// Event names this package gives special treatment: the fallback for an invalid name,
// and the events that may carry a message or configuration details.
const (
	EventFallback                    = "occ.event"
	EventStartupError                = "startup-error"
	EventWorkerStartupError          = "worker.startup-error"
	EventInstallationBootstrapFailed = "installation.bootstrap-failed"
	EventMigrationFailed             = "migration.failed"
	EventMigrationChecked            = "migration.checked"
	EventComputePreflightWarning     = "compute.preflight-warning"
	EventWorkerComputePrepareFailed  = "worker.compute-prepare-failed"
	EventWorkerHealth                = "worker.health"
	EventSignInLimited               = "authentication.sign-in-limited"
	EventHTTPDependencyUnavailable   = "http.dependency_unavailable"
	EventHTTPUnexpectedError         = "http.unexpected_error"
)

var eventPattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,127}$`)

// eventName returns name when it is a valid event name, else EventFallback. A name that
// looks like a credential is invalid too: the event is written verbatim.
func eventName(name string) string {
	if !eventPattern.MatchString(name) || looksLikeCredential(name) {
		return EventFallback
	}
	return name
}

// messageEvents may carry a "message" field.
var messageEvents = map[string]bool{
	EventComputePreflightWarning:     true,
	EventWorkerComputePrepareFailed:  true,
	EventStartupError:                true,
	EventWorkerStartupError:          true,
	EventInstallationBootstrapFailed: true,
	EventMigrationFailed:             true,
	EventMigrationChecked:            true,
}

// detailEvents may carry a "details" field: the startup failures only.
var detailEvents = map[string]bool{
	EventStartupError:                true,
	EventWorkerStartupError:          true,
	EventInstallationBootstrapFailed: true,
	EventMigrationFailed:             true,
}

// Severity is the level an event is written at, derived from its name alone: names
// ending ".error", "-error", ".failed" or "-failed", and "http.unexpected_error" (an internal
// failure, which operators alert on), are ERROR; names ending ".warning"
// or "-warning", "authentication.sign-in-limited" and "http.dependency_unavailable" (upstream's
// levels) are WARN; "worker.health" is DEBUG; everything else (including an invalid name,
// written as "occ.event") is INFO.
func Severity(event string) slog.Level {
	event = eventName(event)
	switch {
	case hasAnySuffix(event, ".error", "-error", ".failed", "-failed"), event == EventHTTPUnexpectedError:
		return slog.LevelError
	case hasAnySuffix(event, ".warning", "-warning"), event == EventSignInLimited, event == EventHTTPDependencyUnavailable:
		return slog.LevelWarn
	case event == EventWorkerHealth:
		return slog.LevelDebug
	default:
		return slog.LevelInfo
	}
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, suffix := range suffixes {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}

// severityName maps a level to the four names a log line may carry; levels between
// them round down (slog.LevelInfo+2 is INFO).
func severityName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARN"
	case l >= slog.LevelInfo:
		return "INFO"
	default:
		return "DEBUG"
	}
}

// ErrInvalidLevel is returned by ParseLevel for anything but debug, info, warn, error.
var ErrInvalidLevel = errors.New("obs: log level must be one of debug, info, warn, error")

// ParseLevel parses the YAML logging.level value: exactly "debug", "info", "warn" or
// "error". The rejected value is not echoed in the error.
func ParseLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, ErrInvalidLevel
}
