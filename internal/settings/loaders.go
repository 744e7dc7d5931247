package settings

import (
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"time"

	"github.com/openclaw/occ/internal/problem"
)

// Development defaults (upstream values).
const (
	DevelopmentAuthSecret       = "openclaw-development-auth-secret-minimum-32-bytes"
	DevelopmentAuthBaseURL      = "http://127.0.0.1:3000"
	DevelopmentEmail            = "admin@openclaw.local"
	DevelopmentPassword         = "openclaw-development-password"
	DevelopmentInstallationName = "OpenClaw Local Development"
)

// Defaults of the numeric variables.
const (
	DefaultDatabaseAppRole    = "occ_app"
	DefaultDatabasePoolMax    = 10
	DefaultPollInterval       = 250 * time.Millisecond
	DefaultLeaseDuration      = 5000 * time.Millisecond
	DefaultMaxAttempts        = 5
	DefaultConvergenceTimeout = 900000 * time.Millisecond
	DefaultDatabaseTimeout    = 60000 * time.Millisecond
	DefaultWorkerConcurrency  = 4
	MaxWorkerConcurrency      = 256
)

// Bootstrap audit sources (Bootstrap.Source).
const (
	SourceProduction  = "production-installation-job"
	SourceDevelopment = "development-installation-job"
)

// Migration holds the settings of `occ migrate`.
type Migration struct {
	// DatabaseURL is OCC_MIGRATION_DATABASE_URL, the migration owner's connection.
	DatabaseURL string
	// AppRole is OCC_DATABASE_APP_ROLE, the role granted the application privileges.
	AppRole string
}

// LoadMigration reads the settings of `occ migrate`. It does not read NODE_ENV.
func LoadMigration(lookup Lookup) (Migration, error) {
	r := newReader(lookup)
	var m Migration
	m.DatabaseURL = r.databaseURL("OCC_MIGRATION_DATABASE_URL")
	m.AppRole = r.appRole()
	if r.err != nil {
		return Migration{}, r.err
	}
	return m, nil
}

// String redacts the database URL.
func (m Migration) String() string { return m.format(false) }

// GoString redacts the database URL.
func (m Migration) GoString() string { return m.format(true) }

func (m Migration) format(goSyntax bool) string {
	type plain Migration
	c := plain(m)
	c.DatabaseURL = redact(c.DatabaseURL)
	return formatRedacted(goSyntax, c)
}

// Bootstrap holds the settings of `occ bootstrap`.
type Bootstrap struct {
	Mode Mode
	// DatabaseURL is OCC_DATABASE_URL (application role).
	DatabaseURL string
	// AuthSecret is OCC_AUTH_SECRET.
	AuthSecret string
	// AuthBaseURL is the normalized origin of OCC_AUTH_BASE_URL, without a trailing slash.
	AuthBaseURL string
	// ServiceKeyFile is OCC_BOOTSTRAP_SERVICE_KEY_FILE: absolute and clean.
	ServiceKeyFile string
	// PasswordFile is OCC_BOOTSTRAP_PASSWORD_FILE (production only; empty in development):
	// absolute, clean, distinct from ServiceKeyFile and in the same directory.
	PasswordFile string
	// AdminEmail is OCC_BOOTSTRAP_ADMIN_EMAIL (production) or OPENCLAW_DEV_EMAIL (development),
	// trimmed and lowercased.
	AdminEmail string
	// DevPassword is OPENCLAW_DEV_PASSWORD (development only; empty in production, where bootstrap
	// generates the password and writes it to PasswordFile).
	DevPassword string
	// InstallationName is OCC_BOOTSTRAP_INSTALLATION_NAME (production) or
	// OPENCLAW_DEV_INSTALLATION_NAME (development).
	InstallationName string
	// Source is the audit source: SourceProduction or SourceDevelopment.
	Source string
}

// LoadBootstrap reads the settings of `occ bootstrap`.
func LoadBootstrap(lookup Lookup) (Bootstrap, error) {
	r := newReader(lookup)
	var b Bootstrap
	b.Mode = r.mode()
	b.DatabaseURL = r.databaseURL("OCC_DATABASE_URL")
	b.AuthSecret = r.authSecret(b.Mode)
	b.AuthBaseURL = r.authBaseURL(b.Mode, true)
	b.ServiceKeyFile = r.cleanFilePath("OCC_BOOTSTRAP_SERVICE_KEY_FILE")
	if b.Mode == Production {
		b.PasswordFile = r.passwordFile(b.ServiceKeyFile)
		b.AdminEmail = r.email("OCC_BOOTSTRAP_ADMIN_EMAIL", "")
		b.InstallationName = r.name("OCC_BOOTSTRAP_INSTALLATION_NAME", CodeInstallationNameInvalid, "")
		b.Source = SourceProduction
	} else {
		b.AdminEmail = r.email("OPENCLAW_DEV_EMAIL", DevelopmentEmail)
		b.DevPassword = r.devPassword()
		b.InstallationName = r.name("OPENCLAW_DEV_INSTALLATION_NAME", CodeInstallationNameInvalid, DevelopmentInstallationName)
		b.Source = SourceDevelopment
	}
	if r.err != nil {
		return Bootstrap{}, r.err
	}
	return b, nil
}

// passwordFile reads OCC_BOOTSTRAP_PASSWORD_FILE and checks it against the service key file.
func (r *reader) passwordFile(keyFile string) string {
	const name = "OCC_BOOTSTRAP_PASSWORD_FILE"
	p := r.cleanFilePath(name)
	if r.failed() {
		return ""
	}
	if p == keyFile {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_BOOTSTRAP_PASSWORD_FILE must differ from OCC_BOOTSTRAP_SERVICE_KEY_FILE.")
		return ""
	}
	if filepath.Dir(p) != filepath.Dir(keyFile) {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_BOOTSTRAP_PASSWORD_FILE must be in the same directory as OCC_BOOTSTRAP_SERVICE_KEY_FILE.")
		return ""
	}
	return p
}

// String redacts the database URL, the auth secret and the development password.
func (b Bootstrap) String() string { return b.format(false) }

// GoString redacts the database URL, the auth secret and the development password.
func (b Bootstrap) GoString() string { return b.format(true) }

func (b Bootstrap) format(goSyntax bool) string {
	type plain Bootstrap
	c := plain(b)
	c.DatabaseURL = redact(c.DatabaseURL)
	c.AuthSecret = redact(c.AuthSecret)
	c.DevPassword = redact(c.DevPassword)
	return formatRedacted(goSyntax, c)
}

// API holds the settings of `occ api`.
type API struct {
	Mode Mode
	// DevelopmentTrustedBridgeCIDR is OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR, masked; not IsValid when
	// unset. It is read before OCC_HOST because OCC_HOST=0.0.0.0 depends on it.
	DevelopmentTrustedBridgeCIDR netip.Prefix
	// Host is OCC_HOST as a canonical IP literal.
	Host string
	// Port is OCC_PORT.
	Port int
	// DatabaseURL is OCC_DATABASE_URL (application role).
	DatabaseURL string
	// DatabasePoolMax is OCC_DATABASE_POOL_MAX.
	DatabasePoolMax int
	// ConfigPath is OCC_CONFIG_PATH (absolute; empty when unset in development).
	ConfigPath string
	// AuthSecret is OCC_AUTH_SECRET.
	AuthSecret string
	// AuthBaseURL is the normalized origin of OCC_AUTH_BASE_URL, without a trailing slash.
	AuthBaseURL string
	// DevelopmentConfigurationRoot is OCC_DEVELOPMENT_CONFIGURATION_ROOT (absolute or empty).
	DevelopmentConfigurationRoot string
	// DevelopmentSecretRoot is OCC_DEVELOPMENT_SECRET_ROOT (absolute or empty).
	DevelopmentSecretRoot string
	// Metrics is the optional private metrics listener.
	Metrics Metrics
	// SignIn is how people sign in: external providers, recovery, proxies, CLI sessions.
	SignIn SignIn
	// LogExport is the optional OTLP export of the log records (OTEL_* variables).
	LogExport LogExport
}

// LoadAPI reads the settings of `occ api`.
func LoadAPI(lookup Lookup) (API, error) {
	r := newReader(lookup)
	var a API
	a.Mode = r.mode()
	a.DevelopmentTrustedBridgeCIDR = r.prefix("OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR")
	a.Host = r.apiHost(a.Mode, a.DevelopmentTrustedBridgeCIDR)
	a.Port = r.requiredPort("OCC_PORT")
	a.DatabaseURL = r.databaseURL("OCC_DATABASE_URL")
	a.DatabasePoolMax = r.positiveInt("OCC_DATABASE_POOL_MAX", DefaultDatabasePoolMax)
	a.ConfigPath = r.configPath(a.Mode)
	a.AuthSecret = r.authSecret(a.Mode)
	a.AuthBaseURL = r.authBaseURL(a.Mode, false)
	a.DevelopmentConfigurationRoot = r.absolutePath("OCC_DEVELOPMENT_CONFIGURATION_ROOT", "")
	a.DevelopmentSecretRoot = r.absolutePath("OCC_DEVELOPMENT_SECRET_ROOT", "")
	a.Metrics = r.metrics(a.Mode, a.Port)
	a.SignIn = r.signIn(a.Mode, a.AuthBaseURL)
	a.LogExport = r.logExport(a.Mode)
	if r.err != nil {
		return API{}, r.err
	}
	return a, nil
}

// ListenAddress is OCC_HOST:OCC_PORT for net.Listen.
func (a API) ListenAddress() string {
	return net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
}

// String redacts the database URL and the auth secret.
func (a API) String() string { return a.format(false) }

// GoString redacts the database URL and the auth secret.
func (a API) GoString() string { return a.format(true) }

func (a API) format(goSyntax bool) string {
	type plain API
	c := plain(a)
	c.DatabaseURL = redact(c.DatabaseURL)
	c.AuthSecret = redact(c.AuthSecret)
	c.SignIn = c.SignIn.redacted()
	c.LogExport = c.LogExport.redacted()
	return formatRedacted(goSyntax, c)
}

// configPath reads OCC_CONFIG_PATH: absolute, required in production.
func (r *reader) configPath(mode Mode) string {
	const name = "OCC_CONFIG_PATH"
	if mode == Production {
		return r.absolutePath(name, "OCC_CONFIG_PATH must be explicitly configured in production.")
	}
	return r.absolutePath(name, "")
}

// Worker holds the settings of `occ worker`.
type Worker struct {
	Mode Mode
	// DatabaseURL is OCC_DATABASE_URL (application role).
	DatabaseURL string
	// ConfigPath is OCC_CONFIG_PATH (absolute; empty when unset in development).
	ConfigPath string
	// PollInterval is OCC_WORKER_POLL_INTERVAL_MS.
	PollInterval time.Duration
	// LeaseDuration is OCC_WORKER_LEASE_DURATION_MS.
	LeaseDuration time.Duration
	// MaxAttempts is OCC_WORKER_MAX_ATTEMPTS.
	MaxAttempts int
	// ConvergenceTimeout is OCC_WORKER_CONVERGENCE_TIMEOUT_MS.
	ConvergenceTimeout time.Duration
	// DatabaseTimeout is OCC_WORKER_DATABASE_TIMEOUT_MS.
	DatabaseTimeout time.Duration
	// Concurrency is OCC_WORKER_CONCURRENCY (1..MaxWorkerConcurrency).
	Concurrency int
	// ReadinessPath is OCC_WORKER_READINESS_PATH (starts with "/", or empty).
	ReadinessPath string
	// LivenessPath is OCC_WORKER_LIVENESS_PATH (starts with "/", or empty; differs from
	// ReadinessPath).
	LivenessPath string
	// EventLogPath is OCC_WORKER_EVENT_LOG (starts with "/", or empty: no event log). A
	// verification aid for chaos tests, refused in production.
	EventLogPath string
	// DevelopmentConfigurationRoot is OCC_DEVELOPMENT_CONFIGURATION_ROOT (absolute or empty).
	DevelopmentConfigurationRoot string
	// DevelopmentSecretRoot is OCC_DEVELOPMENT_SECRET_ROOT (absolute or empty).
	DevelopmentSecretRoot string
	// Metrics is the optional private metrics listener.
	Metrics Metrics
	// LogExport is the optional OTLP export of the log records (OTEL_* variables).
	LogExport LogExport
}

// LoadWorker reads the settings of `occ worker`.
func LoadWorker(lookup Lookup) (Worker, error) {
	r := newReader(lookup)
	var w Worker
	w.Mode = r.mode()
	w.DatabaseURL = r.databaseURL("OCC_DATABASE_URL")
	w.ConfigPath = r.configPath(w.Mode)
	w.PollInterval = r.millis("OCC_WORKER_POLL_INTERVAL_MS", DefaultPollInterval.Milliseconds())
	w.LeaseDuration = r.millis("OCC_WORKER_LEASE_DURATION_MS", DefaultLeaseDuration.Milliseconds())
	w.MaxAttempts = r.positiveInt("OCC_WORKER_MAX_ATTEMPTS", DefaultMaxAttempts)
	w.ConvergenceTimeout = r.millis("OCC_WORKER_CONVERGENCE_TIMEOUT_MS", DefaultConvergenceTimeout.Milliseconds())
	w.DatabaseTimeout = r.millis("OCC_WORKER_DATABASE_TIMEOUT_MS", DefaultDatabaseTimeout.Milliseconds())
	w.Concurrency = r.boundedInt("OCC_WORKER_CONCURRENCY", DefaultWorkerConcurrency, 1, MaxWorkerConcurrency)
	w.ReadinessPath = r.absolutePath("OCC_WORKER_READINESS_PATH", "")
	w.LivenessPath = r.absolutePath("OCC_WORKER_LIVENESS_PATH", "")
	w.EventLogPath = r.absolutePath("OCC_WORKER_EVENT_LOG", "")
	if w.Mode == Production && w.EventLogPath != "" {
		// The event log grows without bound and is never rotated: a verification aid only.
		r.fail("OCC_WORKER_EVENT_LOG", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_WORKER_EVENT_LOG is a verification aid and must be unset in production.")
	}
	if !r.failed() && w.LivenessPath != "" && w.LivenessPath == w.ReadinessPath {
		r.fail("OCC_WORKER_LIVENESS_PATH", CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_WORKER_LIVENESS_PATH must differ from OCC_WORKER_READINESS_PATH.")
	}
	w.DevelopmentConfigurationRoot = r.absolutePath("OCC_DEVELOPMENT_CONFIGURATION_ROOT", "")
	w.DevelopmentSecretRoot = r.absolutePath("OCC_DEVELOPMENT_SECRET_ROOT", "")
	w.Metrics = r.metrics(w.Mode, 0)
	w.LogExport = r.logExport(w.Mode)
	if r.err != nil {
		return Worker{}, r.err
	}
	return w, nil
}

// String redacts the database URL.
func (w Worker) String() string { return w.format(false) }

// GoString redacts the database URL.
func (w Worker) GoString() string { return w.format(true) }

func (w Worker) format(goSyntax bool) string {
	type plain Worker
	c := plain(w)
	c.DatabaseURL = redact(c.DatabaseURL)
	c.LogExport = c.LogExport.redacted()
	return formatRedacted(goSyntax, c)
}
