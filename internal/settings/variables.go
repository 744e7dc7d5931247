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
		Name: "OCC_AUTH_GITHUB_CLIENT_ID", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "GitHub App client id (not the App id), one token without spaces; set with OCC_AUTH_GITHUB_CLIENT_SECRET and OCC_AUTH_GITHUB_RECOVERY_USER_ID, or none of them; it selects the provider instance",
	},
	{
		Name: "OCC_AUTH_GITHUB_CLIENT_SECRET", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "the GitHub App's client secret; set with OCC_AUTH_GITHUB_CLIENT_ID",
	},
	{
		Name: "OCC_AUTH_GITHUB_ALLOWED_ORGS", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "comma-separated GitHub organization logins (lowercased); needs OCC_AUTH_GITHUB_CLIENT_ID; with OCC_AUTH_GITHUB_ALLOWED_TEAMS at most 10 entries; when either is set only active members may sign in with GitHub",
	},
	{
		Name: "OCC_AUTH_GITHUB_ALLOWED_TEAMS", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "comma-separated org/team-slug entries (lowercased); needs OCC_AUTH_GITHUB_CLIENT_ID; at most 10 entries with OCC_AUTH_GITHUB_ALLOWED_ORGS",
	},
	{
		Name: "OCC_AUTH_GITHUB_RECOVERY_USER_ID", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "account id (usr_…) of a local-password Installation administrator; required exactly when GitHub, Google or OIDC sign-in is configured; seeds the recovery account on first start",
	},
	{
		Name: "OCC_AUTH_PASSWORD_SIGN_IN", Processes: onlyAPI, Requirement: Optional, Default: PasswordSignInAll, Code: CodeConfigEnvInvalid,
		Rule: "all or recovery-only (only the recovery account signs in with a password); recovery-only requires GitHub, Google or OIDC sign-in",
	},
	{
		Name: "OCC_AUTH_GOOGLE_CLIENT_ID", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "Google OAuth web client id, one token without spaces; set with OCC_AUTH_GOOGLE_CLIENT_SECRET and OCC_AUTH_GITHUB_RECOVERY_USER_ID, or none of them",
	},
	{
		Name: "OCC_AUTH_GOOGLE_CLIENT_SECRET", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "the Google client's secret; set with OCC_AUTH_GOOGLE_CLIENT_ID",
	},
	{
		Name: "OCC_AUTH_GOOGLE_ALLOWED_DOMAINS", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "comma-separated DNS domain names (lowercased); needs OCC_AUTH_GOOGLE_CLIENT_ID; when set the ID token's hd must be one of them and email_verified true",
	},
	{
		Name: "OCC_AUTH_OIDC_ISSUER", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "the exact iss of the ID tokens: an https URL (http only on a loopback host), no credentials, query or fragment; with the client id, OCC_AUTH_OIDC_CLIENT_SECRET and OCC_AUTH_GITHUB_RECOVERY_USER_ID enables OIDC sign-in",
	},
	{
		Name: "OCC_AUTH_OIDC_AUTHORIZATION_URL", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "the authorization endpoint, with the issuer's scheme, host and port; set the three URLs together, or none to discover them from the issuer",
	},
	{
		Name: "OCC_AUTH_OIDC_TOKEN_URL", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "the token endpoint, with the issuer's scheme, host and port; set with OCC_AUTH_OIDC_AUTHORIZATION_URL",
	},
	{
		Name: "OCC_AUTH_OIDC_JWKS_URL", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "the JWKS URL, with the issuer's scheme, host and port; set with OCC_AUTH_OIDC_AUTHORIZATION_URL",
	},
	{
		Name: "OCC_AUTH_OIDC_CLIENT_ID", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "the OIDC client id, one token without spaces; with the issuer it selects the provider instance",
	},
	{
		Name: "OCC_AUTH_OIDC_CLIENT_SECRET", Processes: onlyAPI, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "the OIDC client's secret; set with OCC_AUTH_OIDC_CLIENT_ID",
	},
	{
		Name: "OCC_AUTH_OIDC_TOKEN_AUTH", Processes: onlyAPI, Requirement: Optional, Default: TokenAuthClientSecretPost, Code: CodeConfigEnvInvalid,
		Rule: "client_secret_post or client_secret_basic; needs OCC_AUTH_OIDC_ISSUER",
	},
	{
		Name: "OCC_AUTH_OIDC_DISPLAY_NAME", Processes: onlyAPI, Requirement: Optional, Default: DefaultOIDCDisplayName, Code: CodeConfigEnvInvalid,
		Rule: "the console button label, 1..40 printable characters; needs OCC_AUTH_OIDC_ISSUER",
	},
	{
		Name: "OCC_AUTH_TRUSTED_PROXY_CIDRS", Processes: onlyAPI, Modes: onlyProd, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "comma-separated IPv4 or IPv6 CIDRs (a bare address is one host; IPv4-mapped IPv6 counts as IPv4), none covering every IPv4 or IPv6 address; peers inside them may report the client address",
	},
	{
		Name: "OCC_AUTH_TRUSTED_PROXY_PRESET", Processes: onlyAPI, Modes: onlyProd, Requirement: Optional, Default: ProxyPresetIngressNginx, Code: CodeConfigEnvInvalid,
		Rule: "ingress-nginx or aws (both read x-forwarded-for) or generic; needs OCC_AUTH_TRUSTED_PROXY_CIDRS",
	},
	{
		Name: "OCC_AUTH_CLIENT_IP_HEADER", Processes: onlyAPI, Modes: onlyProd, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "lowercase header name of at most 64 characters carrying the client address; required by generic, x-forwarded-for only with a named preset; never a credential, cookie, host, origin or forwarded header",
	},
	{
		Name: "OCC_AUTH_CLI_SESSIONS", Processes: onlyAPI, Requirement: Optional, Default: "enabled", Code: CodeConfigEnvInvalid,
		Rule: "enabled or disabled; disabled: occ login answers 404 and existing CLI sessions 401",
	},
	{
		Name: "OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS", Processes: onlyAPI, Requirement: Optional, Default: "28800", Code: CodeConfigEnvInvalid,
		Rule: "decimal 900..28800; caps every new CLI session, which also never outlives its approving browser session",
	},
	{
		Name: "OCC_AGENT_NATIVE_ADMIN_ENABLED", Processes: onlyAPI, Requirement: Optional, Default: "false", Code: CodeConfigEnvInvalid,
		Rule: "exactly true or false; true scopes the session cookie to OCC_AUTH_COOKIE_DOMAIN and, with GitHub, Google or OIDC sign-in, fails with EXTERNAL_SIGN_IN_NATIVE_ADMIN_UNSUPPORTED",
	},
	{
		Name: "OCC_AUTH_COOKIE_DOMAIN", Processes: onlyAPI, Requirement: Optional, Code: CodeAuthBaseURLInvalid,
		Rule: "required with OCC_AGENT_NATIVE_ADMIN_ENABLED=true and unset otherwise: a lowercase DNS name, not a public suffix, equal to or a parent of the OCC_AUTH_BASE_URL host, with an https base URL",
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
		Rule: "absolute path of the JSONL claim/renew/effect/publish event log (verification aid for chaos tests); unset: off; refused in production",
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
		Name: EnvLogsEndpoint, Processes: apiAndWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "absolute http or https URL the log records are also sent to over OTLP/HTTP, used as given (a Collector's http://host:4318/v1/logs); no credentials, query or fragment; unset: no export",
	},
	{
		Name: EnvLogsProtocol, Processes: apiAndWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "http/protobuf (the default; grpc and http/json are refused); must be unset when OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is unset",
	},
	{
		Name: EnvLogsHeaders, Processes: apiAndWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "at most 32 comma-separated key=value pairs, HTTP header names and percent-encoded values without control characters, at most 8192 characters; sent with every export; production needs an https endpoint (or a loopback host) for them; must be unset when OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is unset",
	},
	{
		Name: EnvLogsTimeout, Processes: apiAndWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "decimal 1..600000 milliseconds bounding one export request, 10000 when unset; must be unset when OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is unset",
	},
	{
		Name: EnvServiceName, Processes: apiAndWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "1..128 letters, digits, '.', '_', '-', '/': the exported service.name (default occ-api or occ-worker); checked whenever set",
	},
	{
		Name: EnvResourceAttributes, Processes: apiAndWorker, Requirement: Optional, Code: CodeConfigEnvInvalid,
		Rule: "at most 32 comma-separated key=value pairs (keys of letters, digits, '.', '_', '-', '/'; percent-encoded values of at most 255 printable characters, never credential-looking) added to the exported resource; checked whenever set",
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
		Rule: "Name rule: 1..200 characters, no outer whitespace, no control characters, U+2028, U+2029 or format characters (zero-width, bidi controls, soft hyphen, BOM)",
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
		Rule: "Name rule: 1..200 characters, no outer whitespace, no control characters, U+2028, U+2029 or format characters (zero-width, bidi controls, soft hyphen, BOM)",
	},
}
