package settings

// Process names a server process that reads environment variables.
type Process string

// The server processes.
const (
	ProcessMigrate   Process = "migrate"
	ProcessBootstrap Process = "bootstrap"
	ProcessAPI       Process = "api"
	ProcessWorker    Process = "worker"
)

// Requirement says when a variable must be set.
type Requirement string

// Requirements.
const (
	// Optional variables may be unset; Default (if any) applies.
	Optional Requirement = "optional"
	// Required variables must be set in every mode the variable is read in.
	Required Requirement = "required"
	// RequiredInProduction variables must be set in production; DevelopmentDefault (if any) applies
	// in development.
	RequiredInProduction Requirement = "production"
	// RequiredWithMetrics variables must be set when OCC_METRICS_ENABLED is true and unset otherwise.
	RequiredWithMetrics Requirement = "metrics"
)

// VariableDoc describes one environment variable for generated documentation and checks.
type VariableDoc struct {
	// Name is the variable name.
	Name string
	// Processes lists the processes that read it.
	Processes []Process
	// Modes lists the NODE_ENV modes in which it is read; nil means every mode (migrate has none).
	Modes []Mode
	// Requirement says when it must be set.
	Requirement Requirement
	// Default is the value used when unset, in every mode it is read in; "" when none.
	Default string
	// DevelopmentDefault is the value used when unset in development only; "" when none.
	DevelopmentDefault string
	// Code is the Error.Code reported when the variable fails.
	Code string
	// Rule states the validation in prose.
	Rule string
}

var (
	allServers    = []Process{ProcessBootstrap, ProcessAPI, ProcessWorker}
	apiAndWorker  = []Process{ProcessAPI, ProcessWorker}
	apiAndBoot    = []Process{ProcessBootstrap, ProcessAPI}
	onlyAPI       = []Process{ProcessAPI}
	onlyWorker    = []Process{ProcessWorker}
	onlyBootstrap = []Process{ProcessBootstrap}
	onlyMigrate   = []Process{ProcessMigrate}
	onlyProd      = []Mode{Production}
	onlyDev       = []Mode{Development}
)

const positiveSafeRule = "decimal digits only; an integer from 1 to 2^53-1"
const millisRule = positiveSafeRule + " of milliseconds; at most 9223372036854"

// Variables documents every environment variable this package reads, in no particular order beyond
// grouping. Keep it in step with the loaders; the tests check names, processes, modes and codes.
var Variables = []VariableDoc{
	{
		Name: "NODE_ENV", Processes: allServers, Requirement: Required, Code: CodeConfigEnvInvalid,
		Rule: "exactly development or production",
	},
	{
		Name: "OCC_MIGRATION_DATABASE_URL", Processes: onlyMigrate, Requirement: Required,
		Code: CodeDatabaseConfigurationInvalid,
		Rule: "postgres:// or postgresql:// URL of the migration owner role; never given to api or worker",
	},
	{
		Name: "OCC_DATABASE_APP_ROLE", Processes: onlyMigrate, Requirement: Optional, Default: DefaultDatabaseAppRole,
		Code: CodeConfigEnvInvalid,
		Rule: "plain PostgreSQL identifier ^[a-z_][a-z0-9_]{0,62}$, not a reserved role (public, none, current_user, session_user, current_role, pg_*)",
	},
	{
		Name: "OCC_DATABASE_URL", Processes: allServers, Requirement: Required, Code: CodeDatabaseConfigurationInvalid,
		Rule: "postgres:// or postgresql:// URL of the application role",
	},
	{
		Name: "OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "CIDR block (stored masked); admits the Compose bridge as local traffic and allows OCC_HOST=0.0.0.0 in development",
	},
	{
		Name: "OCC_HOST", Processes: onlyAPI, Requirement: Required, Code: CodeConfigEnvInvalid,
		Rule: "production: one IP literal, not loopback, unspecified or multicast, no zone; development: 127.0.0.1, ::1, or 0.0.0.0 when OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR is set",
	},
	{
		Name: "OCC_PORT", Processes: onlyAPI, Requirement: Required, Code: CodeConfigEnvInvalid,
		Rule: "decimal 1..65535",
	},
	{
		Name: "OCC_DATABASE_POOL_MAX", Processes: onlyAPI, Requirement: Optional, Default: "10",
		Code: CodeConfigEnvInvalid, Rule: positiveSafeRule,
	},
	{
		Name: "OCC_CONFIG_PATH", Processes: apiAndWorker, Requirement: RequiredInProduction, Code: CodeConfigEnvInvalid,
		Rule: "absolute path of the trusted Installation startup YAML",
	},
	{
		Name: "OCC_AUTH_SECRET", Processes: apiAndBoot, Requirement: RequiredInProduction,
		DevelopmentDefault: DevelopmentAuthSecret, Code: CodeAuthSecretInvalid,
		Rule: "non-blank, at least 32 characters",
	},
	{
		Name: "OCC_AUTH_BASE_URL", Processes: apiAndBoot, Requirement: RequiredInProduction,
		DevelopmentDefault: DevelopmentAuthBaseURL, Code: CodeAuthBaseURLInvalid,
		Rule: "absolute http or https origin: no userinfo, path empty or /, no query or fragment; normalized (lowercase host, default port dropped, trailing / stripped); " +
			"development host 127.0.0.1 or [::1] (bootstrap also localhost); production https unless the host is 127.0.0.1, localhost or [::1]; " +
			"api normalizes IPv4 spellings such as 127.1, bootstrap refuses them",
	},
	{
		Name: "OCC_DEVELOPMENT_CONFIGURATION_ROOT", Processes: apiAndWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "absolute path of the filesystem Configuration root",
	},
	{
		Name: "OCC_DEVELOPMENT_SECRET_ROOT", Processes: apiAndWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "absolute path of the filesystem Secret root",
	},
	{
		Name: "OCC_WORKER_POLL_INTERVAL_MS", Processes: onlyWorker, Requirement: Optional, Default: "250",
		Code: CodeConfigEnvInvalid, Rule: millisRule,
	},
	{
		Name: "OCC_WORKER_LEASE_DURATION_MS", Processes: onlyWorker, Requirement: Optional, Default: "5000",
		Code: CodeConfigEnvInvalid, Rule: millisRule,
	},
	{
		Name: "OCC_WORKER_MAX_ATTEMPTS", Processes: onlyWorker, Requirement: Optional, Default: "5",
		Code: CodeConfigEnvInvalid, Rule: positiveSafeRule,
	},
	{
		Name: "OCC_WORKER_CONVERGENCE_TIMEOUT_MS", Processes: onlyWorker, Requirement: Optional, Default: "900000",
		Code: CodeConfigEnvInvalid, Rule: millisRule,
	},
	{
		Name: "OCC_WORKER_DATABASE_TIMEOUT_MS", Processes: onlyWorker, Requirement: Optional, Default: "60000",
		Code: CodeConfigEnvInvalid, Rule: millisRule,
	},
	{
		Name: "OCC_WORKER_CONCURRENCY", Processes: onlyWorker, Requirement: Optional, Default: "4",
		Code: CodeConfigEnvInvalid, Rule: "decimal 1..256; passes run in parallel inside one worker",
	},
	{
		Name: "OCC_WORKER_READINESS_PATH", Processes: onlyWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "absolute path of the readiness marker file",
	},
	{
		Name: "OCC_WORKER_LIVENESS_PATH", Processes: onlyWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "absolute path of the liveness marker file; differs from OCC_WORKER_READINESS_PATH",
	},
	{
		Name: "OCC_WORKER_EVENT_LOG", Processes: onlyWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "absolute path of the JSONL claim/renew/effect/publish event log (verification aid for chaos tests, not for production); unset: off",
	},
	{
		Name: "OCC_METRICS_ENABLED", Processes: apiAndWorker, Requirement: Optional, Default: "false",
		Code: CodeConfigEnvInvalid, Rule: "exactly true or false",
	},
	{
		Name: "OCC_METRICS_HOST", Processes: apiAndWorker, Requirement: RequiredWithMetrics, Code: CodeConfigEnvInvalid,
		Rule: "IP literal; development 127.0.0.1 or ::1; production not unspecified or multicast, no zone; must be unset when metrics are disabled",
	},
	{
		Name: "OCC_METRICS_PORT", Processes: apiAndWorker, Requirement: RequiredWithMetrics, Code: CodeConfigEnvInvalid,
		Rule: "decimal 1..65535, different from OCC_PORT (api); must be unset when metrics are disabled",
	},
	{
		Name: "OCC_BOOTSTRAP_SERVICE_KEY_FILE", Processes: onlyBootstrap, Requirement: Required, Code: CodeConfigEnvInvalid,
		Rule: "absolute, clean path of the new service key file",
	},
	{
		Name: "OCC_BOOTSTRAP_PASSWORD_FILE", Processes: onlyBootstrap, Modes: onlyProd, Requirement: Required,
		Code: CodeConfigEnvInvalid,
		Rule: "absolute, clean path of the new password file; differs from OCC_BOOTSTRAP_SERVICE_KEY_FILE and is in the same directory",
	},
	{
		Name: "OCC_BOOTSTRAP_ADMIN_EMAIL", Processes: onlyBootstrap, Modes: onlyProd, Requirement: Required,
		Code: CodeConfigEnvInvalid,
		Rule: "email, trimmed and lowercased, 3..320 characters, local@domain.tld without whitespace",
	},
	{
		Name: "OCC_BOOTSTRAP_INSTALLATION_NAME", Processes: onlyBootstrap, Modes: onlyProd, Requirement: Required,
		Code: CodeInstallationNameInvalid,
		Rule: "Name rule: 1..200 characters, no outer whitespace, no control characters, U+2028 or U+2029",
	},
	{
		Name: "OPENCLAW_DEV_EMAIL", Processes: onlyBootstrap, Modes: onlyDev, Requirement: Optional,
		Default: DevelopmentEmail, Code: CodeConfigEnvInvalid,
		Rule: "email, trimmed and lowercased, 3..320 characters, local@domain.tld without whitespace",
	},
	{
		Name: "OPENCLAW_DEV_PASSWORD", Processes: onlyBootstrap, Modes: onlyDev, Requirement: Optional,
		Default: DevelopmentPassword, Code: CodeConfigEnvInvalid,
		Rule: "12..128 characters",
	},
	{
		Name: "OPENCLAW_DEV_INSTALLATION_NAME", Processes: onlyBootstrap, Modes: onlyDev, Requirement: Optional,
		Default: DevelopmentInstallationName, Code: CodeInstallationNameInvalid,
		Rule: "Name rule: 1..200 characters, no outer whitespace, no control characters, U+2028 or U+2029",
	},
}
