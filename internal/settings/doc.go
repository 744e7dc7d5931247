// Package settings turns the process environment into typed, validated settings for each server
// process (migrate, bootstrap, api, worker). It is the only package that interprets environment
// variables: every loader takes a Lookup (os.LookupEnv in production, a map in tests), so nothing
// past startup reads the environment.
//
// Variable names, defaults and rules follow upstream; Variables documents
// each one, and docs/settings.md lists them.
//
// A loader validates variables in the declaration order of the fields of the struct it returns and
// stops at the first failure, returned as *Error with a stable Code, a fixed operator-facing
// Message that never contains the submitted value, and exactly one Detail whose Path is
// "/env/<NAME>". A variable that another one depends on is declared first, so the reported variable
// is the cause.
//
// Detail codes:
//   - REQUIRED: a required variable is unset, or any variable is set but blank (empty or only
//     whitespace). A set-but-blank variable is never replaced by its default.
//   - INVALID_FORMAT: the value cannot be parsed: not decimal digits, not a URL, not an IP address,
//     not a CIDR, an IPv4 host spelled in a non-canonical way, forbidden characters in a name.
//   - INVALID_VALUE: the value parses but is not allowed: zero or out of range, an unknown enum word, a
//     relative path, a scheme, host, path, query, userinfo or fragment the rule refuses, a
//     production-only or development-only restriction, a variable set while its feature is off.
//   - TOO_LONG: longer than the rule allows (email 320, name 200, password 128, role name 63).
//
// Mode-specific variables of bootstrap (OCC_BOOTSTRAP_ADMIN_EMAIL, OCC_BOOTSTRAP_PASSWORD_FILE,
// OCC_BOOTSTRAP_INSTALLATION_NAME in production; OPENCLAW_DEV_* in development) are not read in the
// other mode. Every other variable a loader knows is validated whenever it is set.
package settings
