// Package installcfg loads the trusted Installation startup YAML named by OCC_CONFIG_PATH
// into a typed Config: the cluster name, the log level and one
// Driver selection per capability (compute, configuration, secret, iam).
//
// The API and the worker call Load with the same file; bootstrap and migrate call LoadLogLevel,
// which reads the same file under the same rules but validates only the logging section. Loading
// never contacts a driver: it validates the document, applies the defaults and hands each
// selection's configuration to the validator registered for its implementation.
//
// # Loading
//
//  1. The path must be absolute (a relative or blank one is CONFIG_ENV_INVALID at
//     /env/OCC_CONFIG_PATH, like the settings loaders). Production without a path is
//     CONFIG_ENV_INVALID (REQUIRED); development without a path gets Default.
//  2. The file must exist, be a regular file (symbolic links are followed, as Kubernetes Secret
//     volumes need) and be readable: otherwise STARTUP_CONFIGURATION_UNAVAILABLE.
//  3. At most 1 MiB, one YAML document, no duplicate keys, only JSON-compatible values, a mapping
//     at the root: otherwise STARTUP_CONFIGURATION_INVALID. YAML is read by sigs.k8s.io/yaml, so
//     YAML 1.1 scalars apply (an unquoted yes/no/on/off is a boolean).
//  4. The whole document is scanned before anything else: integers outside ±(2^53-1),
//     strings that obs.LooksLikeSecret matches, credential-named keys (password, apiKey, token,
//     secret, credentials, …) holding strings, keys that themselves look like credentials, the keys
//     installationId/installation_id, __proto__/constructor/prototype and secretRef, and nesting
//     deeper than 32 levels. Any hit ends loading with DRIVER_CONFIGURATION_INVALID.
//  5. The closed schema, then each selection's implementation and configuration (below). Every
//     refusal is DRIVER_CONFIGURATION_INVALID with details.
//
// # Schema
//
//	occ:            {cluster: <non-empty string>}                required when drivers is present
//	drivers:        {compute, configuration, secret, iam}       all four required
//	  <capability>: {id, implementation?, configuration: {…}}
//	logging:        {level: debug|info|warn|error}              optional, default info
//	observability:  {url: <absolute http(s) URL>}               optional (console link; accepted, closed)
//	backend:        []                                          optional; only the empty list (Backends come later)
//	presets:        {includeDefaults?: bool, files?: [path]}     optional; the Installation's default Presets
//
// presets.includeDefaults adds the bundled Presets (internal/preset); each presets.files entry is
// one {name, template} JSON file, a relative path resolved beside the startup YAML. A file that is
// missing, malformed, invalid or repeats a name refuses the document.
//
// Every object is closed. The other upstream top-level sections (runtime, integrations)
// and the other upstream capabilities (sandbox, credential_gateway, plugin, service_account, repo,
// channel) are refused as UNKNOWN_FIELD, with a message naming the feature as not available in
// this OCC, until their features exist: ignoring them would silently drop an operator's intent.
// The upstream selection key package is refused the same way; `implementation`
// replaces it.
//
// A selection's id is the operator's name for the driver (recorded in revisions, work and logs), so
// it must be 1..128 characters of [A-Za-z0-9._-] starting with a letter or digit. Implementations:
//
//	compute:       kubernetes (default), docker, simulated
//	configuration: kubernetes (default), filesystem
//	secret:        kubernetes (default), filesystem
//	iam:           native (default)
//
// In production, compute docker and simulated and secret filesystem are refused ("unavailable
// implementations fail closed"); the filesystem Configuration Driver is allowed, because neither
// the SPEC nor the reference restricts it.
//
// In development a document without occ, drivers, backend and presets (only logging or
// observability) keeps the development default drivers, as upstream does.
//
// # Configuration validation
//
// Configurations are decoded with json.Number for numbers. The package validates native iam (only
// {}, through iam.ValidateNativeConfiguration) and filesystem configuration and secret ({root} with
// an absolute clean path; root defaults to OCC_DEVELOPMENT_CONFIGURATION_ROOT or
// OCC_DEVELOPMENT_SECRET_ROOT and is filled into the returned configuration). Every other
// implementation needs a ConfigurationValidator given with WithValidator; an implementation
// without one is refused (fail closed), so a forgotten registration can never let an unchecked
// configuration through.
//
// # Errors
//
// Every failure is an *Error with a stable Code, a fixed Message and at most 32 Details. Detail
// paths are RFC 6901 JSON Pointers from the document root; a key that is not printable ASCII, is
// longer than 128 bytes or looks like a credential is never written into a path: the detail is
// reported at its parent instead. Messages are fixed sentences in the log-safe alphabet. Submitted
// values never appear anywhere in an Error.
package installcfg
