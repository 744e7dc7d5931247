package installcfg

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/obs"
)

// Top-level error codes.
const (
	// CodeDriverConfigurationInvalid is every schema or semantic refusal of the document.
	CodeDriverConfigurationInvalid = "DRIVER_CONFIGURATION_INVALID"
	// CodeUnavailable: the file is missing, unreadable or not a regular file.
	CodeUnavailable = "STARTUP_CONFIGURATION_UNAVAILABLE"
	// CodeInvalid: the file is not one YAML document holding a mapping of JSON values, or too large.
	CodeInvalid = "STARTUP_CONFIGURATION_INVALID"
	// CodeConfigEnvInvalid: OCC_CONFIG_PATH itself is unusable (unset in production, relative).
	CodeConfigEnvInvalid = "CONFIG_ENV_INVALID"
)

// Detail codes (the public API error-detail vocabulary, from obs).
const (
	DetailRequired      = obs.DetailRequired
	DetailUnknownField  = obs.DetailUnknownField
	DetailInvalidType   = obs.DetailInvalidType
	DetailInvalidFormat = obs.DetailInvalidFormat
	DetailInvalidValue  = obs.DetailInvalidValue
	DetailTooLong       = obs.DetailTooLong
	DetailTooDeep       = obs.DetailTooDeep
)

// MaxDetails bounds the details of one Error.
const MaxDetails = 32

const maxPathLength = 512

// Error is a refused startup configuration. It never contains a submitted value.
type Error struct {
	Code    string
	Message string
	Details []Detail
}

// Detail locates one refusal: Path is a JSON Pointer from the document root ("" is the root, or
// "/env/OCC_CONFIG_PATH" for the variable), Code a Detail* constant, Message a fixed sentence.
type Detail struct {
	Path    string
	Code    string
	Message string
}

// Error implements error: the code, the message and each detail's path and code.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Code)
	b.WriteString(": ")
	b.WriteString(e.Message)
	for i, d := range e.Details {
		if i == 0 {
			b.WriteString(" [")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(d.Path))
		b.WriteString(" ")
		b.WriteString(d.Code)
	}
	if len(e.Details) > 0 {
		b.WriteString("]")
	}
	return b.String()
}

// ObsDetails returns the details in the form obs.WriteStartupFailure logs.
func (e *Error) ObsDetails() []obs.Detail {
	out := make([]obs.Detail, 0, len(e.Details))
	for _, d := range e.Details {
		out = append(out, obs.Detail{Path: d.Path, Code: d.Code})
	}
	return out
}

var (
	// safeMessage is the log sanitizer's string alphabet; messages outside it would be dropped.
	safeMessage = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._: /@-]{0,511}$`)
	detailCode  = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	// pointerPattern: an RFC 6901 pointer in printable ASCII.
	pointerPattern = regexp.MustCompile(`^(?:/(?:[ -.0-}]|~[01])*)*$`)
)

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// child returns the pointer to key below parent, or false when the key must not be written into
// a path (not printable ASCII, longer than 128 bytes, credential-looking, or the result would be
// longer than 512 characters).
func child(parent, key string) (string, bool) {
	if len(key) > 128 || credentialLike(key) {
		return parent, false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return parent, false
		}
	}
	p := parent + "/" + pointerEscaper.Replace(key)
	if len(p) > maxPathLength {
		return parent, false
	}
	return p, true
}

func index(parent string, i int) string {
	p := parent + "/" + strconv.Itoa(i)
	if len(p) > maxPathLength {
		return parent
	}
	return p
}

// credentialLike is the conservative test for text that is written into a path: everything
// obs.LooksLikeSecret matches, every span obs.ScrubSecrets would replace (short "sk-…" forms,
// Slack tokens, …), and the words "bearer" and "private key".
func credentialLike(s string) bool {
	if obs.LooksLikeSecret(s) || obs.ScrubSecrets(s) != s {
		return true
	}
	lower := strings.ToLower(s)
	return strings.Contains(lower, "bearer") || strings.Contains(lower, "private key")
}

// safePath reports whether p may be written into a detail.
func safePath(p string) bool {
	return len(p) <= maxPathLength && pointerPattern.MatchString(p) && !credentialLike(p)
}

// details collects at most MaxDetails distinct details in the order they were found.
type details struct {
	list []Detail
	seen map[Detail]bool
}

func (ds *details) add(path, code, message string) {
	d := Detail{Path: path, Code: code, Message: message}
	if ds.seen[d] || len(ds.list) >= MaxDetails {
		return
	}
	if ds.seen == nil {
		ds.seen = map[Detail]bool{}
	}
	ds.seen[d] = true
	ds.list = append(ds.list, d)
}

func (ds *details) full() bool { return len(ds.list) >= MaxDetails }

func (ds *details) empty() bool { return len(ds.list) == 0 }

// Fixed detail messages.
const (
	msgUnknownField      = "Unsupported option."
	msgRequired          = "This option is required."
	msgObject            = "Must be an object."
	msgString            = "Must be a string."
	msgList              = "Must be a list."
	msgPlaintext         = "Must not contain a plaintext credential."
	msgUnsafeInteger     = "Must be a safe integer."
	msgSingleton         = "The Installation is a singleton and cannot be named here."
	msgUnsafeKey         = "Unsafe configuration key."
	msgSecretRef         = "Installation-scoped secret references cannot be resolved safely."
	msgTooDeep           = "Nested too deeply."
	msgUnsupportedCap    = "This Driver capability is not supported yet."
	msgPackage           = "Installed Driver packages are not supported. Select a compiled-in implementation."
	msgPresets           = "Presets are not supported yet."
	msgRuntime           = "The runtime section is not supported yet."
	msgIntegrations      = "integrations is retired."
	msgBackends          = "Backends are not supported yet. Only an empty list is accepted."
	msgDriverID          = "Must be 1 to 128 characters of letters digits dot underscore or hyphen starting with a letter or digit."
	msgUnknownImpl       = "Unknown implementation for this capability."
	msgNotInProduction   = "This implementation is not available in production."
	msgNoValidator       = "This implementation is not available in this build."
	msgLogLevel          = "Must be one of debug info warn error."
	msgURL               = "Must be an absolute http or https URL with a host and without userinfo or fragment."
	msgAbsolutePath      = "Must be an absolute clean path."
	msgRootRequired      = "A root is required: set it here or set the development root variable."
	msgClusterName       = "Must be 1 to 253 characters without control characters or surrounding whitespace."
	msgValidatorFailed   = "The configuration does not match its Driver configuration schema."
	msgNativeIAMNotEmpty = "Native IAM accepts only an empty configuration."
)
