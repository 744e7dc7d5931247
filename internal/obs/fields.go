package obs

import (
	"encoding/json"
	"log/slog"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/problem"
)

// maxSafeInteger is 2^53-1, the largest integer every JSON reader holds exactly.
const maxSafeInteger = 1<<53 - 1

// BootstrapAttempt is the object form of the "attempt" field, used by bootstrap
// diagnostics to say what a failed attempt had already created. Empty fields are
// omitted; file fields must be absolute paths.
type BootstrapAttempt struct {
	AuthAccountID       string
	InstallationID      string
	PasswordFile        string
	PrincipalID         string
	ServiceKeyExpiresAt string
	ServiceKeyFile      string
	ServiceKeyID        string
	ServicePrincipalID  string
}

func (a BootstrapAttempt) fields() map[string]string {
	return map[string]string{
		"authAccountId":       a.AuthAccountID,
		"installationId":      a.InstallationID,
		"passwordFile":        a.PasswordFile,
		"principalId":         a.PrincipalID,
		"serviceKeyExpiresAt": a.ServiceKeyExpiresAt,
		"serviceKeyFile":      a.ServiceKeyFile,
		"serviceKeyId":        a.ServiceKeyID,
		"servicePrincipalId":  a.ServicePrincipalID,
	}
}

// rule says which values a field accepts.
type rule int

const (
	ruleScalar   rule = iota // safe string, boolean or safe integer
	ruleDuration             // durationMs: finite number ≥0, rounded to 3 decimals
	ruleMillis               // other *Ms fields: safe integer ≥0
	ruleAttempt              // integer ≥0 or a BootstrapAttempt-shaped object
	ruleFilePath             // absolute file path
	ruleRoute                // URL path template, or a safe string
	ruleMessage              // safe string, only on messageEvents
	ruleDetails              // []problem.Detail, only on detailEvents
)

// allowedFields is the field allowlist. "event" is on the upstream list but is the
// slog message here, so an "event" attribute is ignored.
var allowedFields = map[string]rule{
	"activationMs":    ruleMillis,
	"agentId":         ruleScalar,
	"attempt":         ruleAttempt,
	"cause":           ruleScalar,
	"code":            ruleScalar,
	"computeDriverId": ruleScalar,
	"deployPasses":    ruleScalar,
	"dependency":      ruleScalar,
	"details":         ruleDetails,
	"durationMs":      ruleDuration,
	"elapsedMs":       ruleMillis,
	"errorClass":      ruleScalar,
	"host":            ruleScalar,
	"keyHash":         ruleScalar,
	"lane":            ruleScalar,
	"message":         ruleMessage,
	"method":          ruleScalar,
	"namespaceId":     ruleScalar,
	"operation":       ruleScalar,
	"outcome":         ruleScalar,
	"path":            ruleFilePath,
	"pending":         ruleScalar,
	"port":            ruleScalar,
	"predecessorStop": ruleScalar,
	"prepareMs":       ruleMillis,
	"provider":        ruleScalar,
	"providerId":      ruleScalar,
	"readinessWaitMs": ruleMillis,
	"reason":          ruleScalar,
	"refusal":         ruleScalar,
	"requestId":       ruleScalar,
	"result":          ruleScalar,
	"revisionId":      ruleScalar,
	"route":           ruleRoute,
	"sandboxDriverId": ruleScalar,
	"signal":          ruleScalar,
	"skippedUserIds":  ruleScalar,
	"stage":           ruleScalar,
	"status":          ruleScalar,
	"step":            ruleScalar,
	"stopYields":      ruleScalar,
	"workId":          ruleScalar,
}

// attemptFileKeys are the attempt-object keys holding file paths; the other allowed
// keys hold safe strings.
var attemptFileKeys = map[string]bool{"passwordFile": true, "serviceKeyFile": true}

var attemptKeys = map[string]bool{
	"authAccountId": true, "installationId": true, "passwordFile": true, "principalId": true,
	"serviceKeyExpiresAt": true, "serviceKeyFile": true, "serviceKeyId": true, "servicePrincipalId": true,
}

var (
	detailCodePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	// detailPathPattern is an RFC 6901 JSON Pointer in printable ASCII: empty, or
	// "/"-separated tokens in which "~" only escapes 0 or 1.
	detailPathPattern = regexp.MustCompile(`^(?:/(?:[ -.0-}]|~[01])*)*$`)
)

// safeString is the general string rule: the safe alphabet, and no credential.
func safeString(s string) bool {
	return safeAlphabet(s) && !looksLikeCredential(s)
}

// safeAlphabet is ^[A-Za-z0-9][A-Za-z0-9._: /@-]{0,511}$, checked by hand: every log line
// checks several strings, and a regexp costs more than the rest of the line.
func safeAlphabet(s string) bool {
	return len(s) > 0 && len(s) <= 512 && alnum(s[0]) && allIn(s[1:], "._: /@-")
}

// routeAlphabet is ^/[A-Za-z0-9._:/{}@-]{0,511}$: route templates such as
// /v1/namespaces/{namespaceId}, which the general string rule refuses for their leading slash.
func routeAlphabet(s string) bool {
	return len(s) > 0 && len(s) <= 512 && s[0] == '/' && allIn(s[1:], "._:/{}@-")
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// allIn reports whether every byte of s is a letter, a digit or one of punct.
func allIn(s, punct string) bool {
	for i := 0; i < len(s); i++ {
		if !alnum(s[i]) && strings.IndexByte(punct, s[i]) < 0 {
			return false
		}
	}
	return true
}

// safeFilePath is the rule for file paths in migrate and bootstrap diagnostics:
// ^/[ -~]{0,1023}$ (checked by hand: RE2 caps repeat counts at 1000), and no
// credential.
func safeFilePath(s string) bool {
	if len(s) == 0 || len(s) > 1024 || s[0] != '/' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return !looksLikeCredential(s)
}

// encodeField returns the JSON encoding of value for key under event, or false when
// the field must be dropped.
func encodeField(event, key string, value slog.Value) ([]byte, bool) {
	r, allowed := allowedFields[key]
	if !allowed || isError(value) {
		return nil, false
	}
	value = value.Resolve()
	if isError(value) {
		return nil, false
	}
	switch r {
	case ruleScalar:
		if s, ok := stringOf(value); ok {
			return encodeString(s, safeString(s))
		}
		if b, ok := boolOf(value); ok {
			return strconv.AppendBool(nil, b), true
		}
		if n, ok := integerOf(value); ok {
			return strconv.AppendInt(nil, n, 10), true
		}
	case ruleDuration:
		if d, ok := durationOf(value); ok {
			return encodeMillis(float64(d)/float64(time.Millisecond), true)
		}
		if f, ok := floatOf(value); ok {
			return encodeMillis(f, true)
		}
	case ruleMillis:
		if d, ok := durationOf(value); ok {
			return encodeMillis(math.Round(float64(d)/float64(time.Millisecond)), false)
		}
		if n, ok := integerOf(value); ok && n >= 0 {
			return strconv.AppendInt(nil, n, 10), true
		}
	case ruleAttempt:
		if n, ok := integerOf(value); ok && n >= 0 {
			return strconv.AppendInt(nil, n, 10), true
		}
		if value.Kind() == slog.KindAny {
			return encodeAttemptObject(value.Any())
		}
	case ruleFilePath:
		if s, ok := stringOf(value); ok {
			return encodeString(s, safeFilePath(s))
		}
	case ruleRoute:
		if s, ok := stringOf(value); ok {
			return encodeString(s, (routeAlphabet(s) && !looksLikeCredential(s)) || safeString(s))
		}
	case ruleMessage:
		if s, ok := stringOf(value); ok && messageEvents[event] {
			return encodeString(s, safeString(s))
		}
	case ruleDetails:
		if value.Kind() == slog.KindAny && detailEvents[event] {
			if details, ok := value.Any().([]problem.Detail); ok {
				return encodeDetails(details)
			}
		}
	}
	return nil, false
}

func encodeString(s string, ok bool) ([]byte, bool) {
	if !ok {
		return nil, false
	}
	return appendJSONString(make([]byte, 0, len(s)+2), s), true
}

// encodeMillis writes a finite, non-negative millisecond count no larger than 2^53-1,
// with up to 3 decimals when fractional is set, else only when it is a whole number.
func encodeMillis(f float64, fractional bool) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > maxSafeInteger {
		return nil, false
	}
	if fractional {
		f = math.Round(f*1000) / 1000
	} else if f != math.Trunc(f) {
		return nil, false
	}
	if f == 0 {
		f = 0 // no "-0"
	}
	return strconv.AppendFloat(nil, f, 'f', -1, 64), true
}

func encodeAttemptObject(v any) ([]byte, bool) {
	var values map[string]string
	switch a := v.(type) {
	case BootstrapAttempt:
		values = a.fields()
	case *BootstrapAttempt:
		if a == nil {
			return nil, false
		}
		values = a.fields()
	case map[string]string:
		values = a
	case map[string]any:
		values = make(map[string]string, len(a))
		for k, item := range a {
			if s, ok := item.(string); ok {
				values[k] = s
			}
		}
	default:
		return nil, false
	}
	keys := make([]string, 0, len(values))
	for k, s := range values {
		if !attemptKeys[k] || s == "" {
			continue
		}
		valid := safeString(s)
		if attemptFileKeys[k] {
			valid = safeFilePath(s)
		}
		if !valid {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, false
	}
	sort.Strings(keys)
	out := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, k) // keys are plain ASCII identifiers
		out = append(out, ':')
		s, err := json.Marshal(values[k])
		if err != nil {
			return nil, false
		}
		out = append(out, s...)
	}
	return append(out, '}'), true
}

// encodeDetails keeps at most 32 well-formed diagnostics; malformed ones are dropped
// one by one, and the field disappears when none is left.
func encodeDetails(details []problem.Detail) ([]byte, bool) {
	kept := make([]problem.Detail, 0, min(len(details), problem.MaxDetails))
	for _, d := range details {
		if len(kept) == problem.MaxDetails {
			break
		}
		if len(d.Path) > 512 || !detailPathPattern.MatchString(d.Path) || looksLikeCredential(d.Path) {
			continue
		}
		if !detailCodePattern.MatchString(d.Code) || looksLikeCredential(d.Code) {
			continue
		}
		kept = append(kept, d)
	}
	if len(kept) == 0 {
		return nil, false
	}
	b, err := json.Marshal(kept)
	return b, err == nil
}

func isError(v slog.Value) bool {
	if v.Kind() != slog.KindAny && v.Kind() != slog.KindLogValuer {
		return false
	}
	_, isErr := v.Any().(error)
	return isErr
}

// stringOf accepts strings and named string types (type Code string).
func stringOf(v slog.Value) (string, bool) {
	switch v.Kind() {
	case slog.KindString:
		return v.String(), true
	case slog.KindAny:
		rv := reflect.ValueOf(v.Any())
		if rv.IsValid() && rv.Kind() == reflect.String {
			return rv.String(), true
		}
	}
	return "", false
}

func boolOf(v slog.Value) (bool, bool) {
	switch v.Kind() {
	case slog.KindBool:
		return v.Bool(), true
	case slog.KindAny:
		rv := reflect.ValueOf(v.Any())
		if rv.IsValid() && rv.Kind() == reflect.Bool {
			return rv.Bool(), true
		}
	}
	return false, false
}

func durationOf(v slog.Value) (time.Duration, bool) {
	if v.Kind() == slog.KindDuration {
		return v.Duration(), true
	}
	return 0, false
}

// floatOf accepts every finite number, including named numeric types.
func floatOf(v slog.Value) (float64, bool) {
	var f float64
	switch v.Kind() {
	case slog.KindInt64:
		f = float64(v.Int64())
	case slog.KindUint64:
		f = float64(v.Uint64())
	case slog.KindFloat64:
		f = v.Float64()
	case slog.KindAny:
		rv := reflect.ValueOf(v.Any())
		if !rv.IsValid() {
			return 0, false
		}
		switch {
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		case rv.CanFloat():
			f = rv.Float()
		default:
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// integerOf accepts safe integers (|n| ≤ 2^53-1), including whole floats and named
// integer types.
func integerOf(v slog.Value) (int64, bool) {
	switch v.Kind() {
	case slog.KindInt64:
		return safeInt(v.Int64())
	case slog.KindUint64:
		if v.Uint64() > maxSafeInteger {
			return 0, false
		}
		return int64(v.Uint64()), true
	case slog.KindFloat64:
		return wholeFloat(v.Float64())
	case slog.KindAny:
		rv := reflect.ValueOf(v.Any())
		if !rv.IsValid() {
			return 0, false
		}
		switch {
		case rv.CanInt():
			return safeInt(rv.Int())
		case rv.CanUint():
			if rv.Uint() > maxSafeInteger {
				return 0, false
			}
			return int64(rv.Uint()), true
		case rv.CanFloat():
			return wholeFloat(rv.Float())
		}
	}
	return 0, false
}

func safeInt(n int64) (int64, bool) {
	if n > maxSafeInteger || n < -maxSafeInteger {
		return 0, false
	}
	return n, true
}

func wholeFloat(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}
