// Package problem is the one vocabulary of refusals: a stable code, a fixed client-safe message
// and details that locate each problem by JSON Pointer. The API's error bodies, the settings and
// startup YAML diagnostics, the drivers' configuration refusals and the startup failure log line
// all carry these types, so a refusal moves from one layer to the next without being copied.
//
// It imports nothing of ours; every other package may use it.
package problem

import "strings"

// Detail codes: the one vocabulary of Detail.Code.
const (
	DetailRequired      = "REQUIRED"
	DetailUnknownField  = "UNKNOWN_FIELD"
	DetailInvalidType   = "INVALID_TYPE"
	DetailInvalidFormat = "INVALID_FORMAT"
	DetailInvalidValue  = "INVALID_VALUE"
	DetailTooLong       = "TOO_LONG"
	DetailTooDeep       = "TOO_DEEP"
	// DetailPermissionDenied is an authorization denial explained: its Permission names who lacked
	// what on which resource.
	DetailPermissionDenied = "PERMISSION_DENIED"
)

// CodeDriverConfigurationInvalid is every schema or semantic refusal of a Driver configuration,
// whether the startup YAML, the driver registry or a driver itself finds it.
const CodeDriverConfigurationInvalid = "DRIVER_CONFIGURATION_INVALID"

// MaxDetails bounds the details of one Error: the API, the startup failure line and the
// configuration validators keep at most this many.
const MaxDetails = 32

// Detail locates one problem. Submitted values are never part of it.
type Detail struct {
	// Path is an RFC 6901 JSON Pointer into the refused document ("" is the document itself;
	// "/env/NAME" names an environment variable).
	Path string `json:"path"`
	// Code is one of the Detail* constants.
	Code string `json:"code"`
	// Message is an optional fixed sentence for operators. The API's error bodies and the
	// startup failure line carry only Path and Code.
	Message string `json:"-"`
	// Permission, on a PERMISSION_DENIED detail, is the permission that was missing.
	Permission *Permission `json:"permission,omitempty"`
}

// Permission is one authorization request an explained denial refused: Principal may not
// perform Action on Resource.
type Permission struct {
	Principal Ref    `json:"principal"`
	Action    string `json:"action"`
	Resource  Ref    `json:"resource"`
}

// Ref names a principal or a resource.
type Ref struct {
	Kind        string  `json:"kind"`
	ID          string  `json:"id"`
	NamespaceID *string `json:"namespaceId,omitempty"`
}

// String is "{path code}", with the message after the code when there is one.
func (d Detail) String() string {
	if d.Message == "" {
		return "{" + d.Path + " " + d.Code + "}"
	}
	return "{" + d.Path + " " + d.Code + " " + d.Message + "}"
}

// Error is a refusal with a stable code. Message is a fixed sentence that never contains a
// submitted value; Cause, when set, is for the server's own classification and never leaves it.
type Error struct {
	Code    string
	Message string
	Details []Detail
	Cause   error
}

// Problem is Error under the name a wrapper embeds. A struct embedding problem.Error gets a field
// named Error, which hides the Error method; embedding problem.Problem keeps the method promoted,
// and lets the wrapper replace it.
type Problem = Error

// New returns an error with code, message and details (at most MaxDetails are kept).
func New(code, message string, details ...Detail) *Error {
	return &Error{Code: code, Message: message, Details: Limit(details)}
}

// Error is the code, then the message and the cause when there are any. Details are left out:
// they are data for the reader of the error, not text.
func (e *Error) Error() string {
	s := e.Code
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// ErrorCode returns Code.
func (e *Error) ErrorCode() string { return e.Code }

// Limit keeps the first MaxDetails details.
func Limit(details []Detail) []Detail {
	if len(details) > MaxDetails {
		return details[:MaxDetails]
	}
	return details
}

// JSONPointer escapes tokens into an RFC 6901 JSON Pointer ("" for no tokens).
func JSONPointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

// EscapeToken escapes one JSON Pointer reference token ("~" becomes "~0", "/" becomes "~1").
func EscapeToken(token string) string { return pointerEscaper.Replace(token) }

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// Under returns details with prefix, a JSON Pointer, put before each path: a nested document's
// refusal located in the document that holds it.
func Under(prefix string, details []Detail) []Detail {
	out := make([]Detail, len(details))
	for i, d := range details {
		d.Path = prefix + d.Path
		out[i] = d
	}
	return out
}
