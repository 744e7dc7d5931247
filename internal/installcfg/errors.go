package installcfg

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/obs"
	"github.com/openclaw/occ/internal/problem"
)

// Top-level error codes. Every refusal is a *problem.Error with one of them; its details locate
// each problem by a JSON Pointer from the document root ("" is the root, "/env/OCC_CONFIG_PATH"
// the variable) with a fixed message, and never contain a submitted value.
const (
	// CodeDriverConfigurationInvalid is every schema or semantic refusal of the document.
	CodeDriverConfigurationInvalid = problem.CodeDriverConfigurationInvalid
	// CodeUnavailable: the file is missing, unreadable or not a regular file.
	CodeUnavailable = "STARTUP_CONFIGURATION_UNAVAILABLE"
	// CodeInvalid: the file is not one YAML document holding a mapping of JSON values, or too
	// large.
	CodeInvalid = "STARTUP_CONFIGURATION_INVALID"
	// CodeConfigEnvInvalid: OCC_CONFIG_PATH itself is unusable (unset in production, relative).
	CodeConfigEnvInvalid = "CONFIG_ENV_INVALID"
)

const maxPathLength = 512

var (
	// safeMessage is the log sanitizer's string alphabet; messages outside it would be dropped.
	safeMessage = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._: /@-]{0,511}$`)
	detailCode  = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	// pointerPattern: an RFC 6901 pointer in printable ASCII.
	pointerPattern = regexp.MustCompile(`^(?:/(?:[ -.0-}]|~[01])*)*$`)
)

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
	p := parent + problem.JSONPointer(key)
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
	list []problem.Detail
	seen map[problem.Detail]bool
}

func (ds *details) add(path, code, message string) {
	d := problem.Detail{Path: path, Code: code, Message: message}
	if ds.seen[d] || len(ds.list) >= problem.MaxDetails {
		return
	}
	if ds.seen == nil {
		ds.seen = map[problem.Detail]bool{}
	}
	ds.seen[d] = true
	ds.list = append(ds.list, d)
}

func (ds *details) full() bool { return len(ds.list) >= problem.MaxDetails }

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
	msgPackage           = "Installed Driver packages are not supported. Select a compiled-in implementation."
	msgPresetRelative    = "A relative Preset file needs the startup YAML path: give an absolute path."
	msgPresetUnreadable  = "The Preset file is missing or unreadable or not a regular file or larger than 1 MiB."
	msgPresetInvalid     = "The Preset file must hold one object with a valid name and template."
	msgPresetDuplicate   = "Another Preset definition already has this name."
	msgRuntime           = "Native worker support runtime.nativeWorkerSupport is not available in this OCC."
	msgIntegrations      = "integrations is retired."
	msgBackends          = "Backends are not available in this OCC. Only an empty list is accepted."
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
