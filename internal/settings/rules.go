package settings

import (
	"math"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/problem"
)

// maxSafeInteger is 2^53-1, the largest integer upstream accepts as "safe".
const maxSafeInteger = 1<<53 - 1

// maxDurationMillis is the largest millisecond count a time.Duration can hold.
const maxDurationMillis = math.MaxInt64 / int64(time.Millisecond)

// reader reads variables in order and keeps the first failure. Once a failure is recorded every
// further call is a no-op that returns zero values, so loaders read straight through and check err
// once.
type reader struct {
	lookup Lookup
	err    *problem.Error
}

func newReader(lookup Lookup) *reader {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	return &reader{lookup: lookup}
}

func (r *reader) failed() bool { return r.err != nil }

func (r *reader) fail(name, code, detail, message string) {
	if r.err != nil {
		return
	}
	r.err = &problem.Error{
		Code:    code,
		Message: message,
		Details: []problem.Detail{{Path: "/env/" + name, Code: detail}},
	}
}

// get returns the raw value; after a failure it reports every variable as unset.
func (r *reader) get(name string) (string, bool) {
	if r.err != nil {
		return "", false
	}
	return r.lookup(name)
}

// optional returns the value of a variable that may be unset. A set-but-blank value fails as
// REQUIRED with the given code. present is false when unset or after a failure.
func (r *reader) optional(name, code string) (value string, present bool) {
	v, ok := r.get(name)
	if !ok {
		return "", false
	}
	if isBlank(v) {
		r.fail(name, code, problem.DetailRequired, name+" must not be blank when set.")
		return "", false
	}
	return v, true
}

// required returns the value of a variable that must be set and non-blank.
func (r *reader) required(name, code, message string) (string, bool) {
	v, ok := r.get(name)
	if r.failed() {
		return "", false
	}
	if !ok || isBlank(v) {
		r.fail(name, code, problem.DetailRequired, message)
		return "", false
	}
	return v, true
}

func configuredMessage(name string) string {
	return name + " must be explicitly configured."
}

// mode reads NODE_ENV.
func (r *reader) mode() Mode {
	const name = "NODE_ENV"
	const message = "NODE_ENV must be development or production."
	v, ok := r.required(name, CodeConfigEnvInvalid, message)
	if !ok {
		return ""
	}
	switch Mode(v) {
	case Development, Production:
		return Mode(v)
	}
	r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
	return ""
}

// databaseURL reads a required postgres:// or postgresql:// URL. The scheme is returned lowercased
// so that drivers which match the prefix case-sensitively accept it.
func (r *reader) databaseURL(name string) string {
	const code = CodeDatabaseConfigurationInvalid
	v, ok := r.required(name, code, DatabaseURLMessage)
	if !ok {
		return ""
	}
	if v != strings.TrimSpace(v) {
		r.fail(name, code, problem.DetailInvalidFormat, DatabaseURLMessage)
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		r.fail(name, code, problem.DetailInvalidFormat, DatabaseURLMessage)
		return ""
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		r.fail(name, code, problem.DetailInvalidValue, DatabaseURLMessage)
		return ""
	}
	rest := v[len(u.Scheme)+1:]
	if !strings.HasPrefix(rest, "//") {
		r.fail(name, code, problem.DetailInvalidFormat, DatabaseURLMessage)
		return ""
	}
	return u.Scheme + ":" + rest
}

// reservedRoles are role names PostgreSQL refuses to create or treats specially.
var reservedRoles = map[string]bool{
	"public": true, "none": true, "current_user": true, "session_user": true, "current_role": true,
}

// appRole reads OCC_DATABASE_APP_ROLE.
func (r *reader) appRole() string {
	const name = "OCC_DATABASE_APP_ROLE"
	const message = "OCC_DATABASE_APP_ROLE must be a lowercase PostgreSQL role name of at most 63 characters."
	v, ok := r.optional(name, CodeConfigEnvInvalid)
	if r.failed() {
		return ""
	}
	if !ok {
		return "occ_app"
	}
	if !isPlainIdentifier(v) {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	if len(v) > 63 {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailTooLong, message)
		return ""
	}
	if reservedRoles[v] || strings.HasPrefix(v, "pg_") {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue,
			"OCC_DATABASE_APP_ROLE must not name a reserved PostgreSQL role.")
		return ""
	}
	return v
}

// isPlainIdentifier reports whether v matches ^[a-z_][a-z0-9_]*$ (length is checked separately).
func isPlainIdentifier(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func isDecimal(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// positiveSafeInt applies the upstream rule: ^\d+$, at most 2^53-1, at least 1. Unset takes def.
func (r *reader) positiveSafeInt(name string, def int64) int64 {
	return int64(r.decimalInRange(name, name+" must be a positive safe integer.", uint64(def), 1, maxSafeInteger))
}

// decimalInRange reads a decimal integer in [lo, hi] with the rules every integer variable shares:
// unset takes def; blank is REQUIRED; anything but digits is INVALID_FORMAT; out of range is
// INVALID_VALUE. message is reported for all three.
func (r *reader) decimalInRange(name, message string, def, lo, hi uint64) uint64 {
	v, ok := r.get(name)
	if r.failed() {
		return 0
	}
	if !ok {
		return def
	}
	if isBlank(v) {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailRequired, message)
		return 0
	}
	if !isDecimal(v) {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < lo || n > hi {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
		return 0
	}
	return n
}

// positiveInt is positiveSafeInt narrowed to int.
func (r *reader) positiveInt(name string, def int64) int {
	n := r.positiveSafeInt(name, def)
	if n > math.MaxInt {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" must be a positive safe integer.")
		return 0
	}
	return int(n)
}

// millis reads a positive safe integer of milliseconds as a Duration.
func (r *reader) millis(name string, def int64) time.Duration {
	n := r.positiveSafeInt(name, def)
	if n > maxDurationMillis {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue,
			name+" must be at most "+strconv.FormatInt(maxDurationMillis, 10)+" milliseconds.")
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// boundedInt reads a decimal integer in [lo, hi]; unset takes def.
func (r *reader) boundedInt(name string, def, lo, hi int) int {
	message := name + " must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi) + "."
	return int(r.decimalInRange(name, message, uint64(def), uint64(lo), uint64(hi)))
}

// port parses a decimal port 1..65535 from a value already known to be present and non-blank.
func (r *reader) port(name, v string) int {
	message := name + " must be a decimal port number from 1 to 65535."
	if !isDecimal(v) {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < 1 || n > 65535 {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
		return 0
	}
	return int(n)
}

// requiredPort reads a required port variable.
func (r *reader) requiredPort(name string) int {
	v, ok := r.required(name, CodeConfigEnvInvalid, configuredMessage(name))
	if !ok {
		return 0
	}
	return r.port(name, v)
}

// boolean reads a variable that must be exactly "true" or "false"; unset takes def.
func (r *reader) boolean(name string, def bool) bool {
	message := name + " must be true or false."
	v, ok := r.get(name)
	if r.failed() {
		return false
	}
	if !ok {
		return def
	}
	switch {
	case v == "true":
		return true
	case v == "false":
		return false
	case isBlank(v):
		r.fail(name, CodeConfigEnvInvalid, problem.DetailRequired, message)
	default:
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
	}
	return false
}

// absolutePath reads an absolute path. requiredMessage is "" for an optional variable.
func (r *reader) absolutePath(name, requiredMessage string) string {
	var v string
	var ok bool
	if requiredMessage != "" {
		v, ok = r.required(name, CodeConfigEnvInvalid, requiredMessage)
	} else {
		v, ok = r.optional(name, CodeConfigEnvInvalid)
	}
	if !ok {
		return ""
	}
	if !filepath.IsAbs(v) {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" must be an absolute path.")
		return ""
	}
	return v
}

// cleanFilePath reads a required absolute path that is already clean and names a file below "/".
func (r *reader) cleanFilePath(name string) string {
	v, ok := r.required(name, CodeConfigEnvInvalid, configuredMessage(name))
	if !ok {
		return ""
	}
	if !filepath.IsAbs(v) || filepath.Clean(v) != v || filepath.Dir(v) == v {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, name+" must be an absolute clean file path.")
		return ""
	}
	return v
}

// prefix reads an optional CIDR block and returns it masked; invalid Prefix when unset.
func (r *reader) prefix(name string) netip.Prefix {
	v, ok := r.optional(name, CodeConfigEnvInvalid)
	if !ok {
		return netip.Prefix{}
	}
	p, err := netip.ParsePrefix(v)
	if err != nil {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, name+" must be a valid CIDR block.")
		return netip.Prefix{}
	}
	return p.Masked()
}

// authSecret reads OCC_AUTH_SECRET: required in production, local default in development, at least
// 32 characters.
func (r *reader) authSecret(mode Mode) string {
	const name = "OCC_AUTH_SECRET"
	const code = CodeAuthSecretInvalid
	v, ok := r.get(name)
	if r.failed() {
		return ""
	}
	switch {
	case !ok && mode == Development:
		return DevelopmentAuthSecret
	case !ok || isBlank(v):
		r.fail(name, code, problem.DetailRequired, configuredMessage(name))
		return ""
	case utf8.RuneCountInString(v) < 32:
		r.fail(name, code, problem.DetailInvalidValue, "OCC_AUTH_SECRET must contain at least 32 characters.")
		return ""
	}
	return v
}

// email reads an email address: trimmed, lowercased, 3..320 characters, local@domain.tld shape.
// def is used when the variable is unset; "" makes it required.
func (r *reader) email(name, def string) string {
	message := name + " must be a valid email address."
	v, ok := r.get(name)
	if r.failed() {
		return ""
	}
	if !ok {
		if def == "" {
			r.fail(name, CodeConfigEnvInvalid, problem.DetailRequired, configuredMessage(name))
			return ""
		}
		v = def
	}
	v = strings.TrimSpace(v)
	if v == "" {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailRequired, configuredMessage(name))
		return ""
	}
	if !utf8.ValidString(v) {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	v = strings.ToLower(v)
	if utf8.RuneCountInString(v) > 320 {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailTooLong, name+" must be at most 320 characters.")
		return ""
	}
	if utf8.RuneCountInString(v) < 3 || !isEmailShape(v) {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	return v
}

// isEmailShape mirrors ^[^@\s]+@[^@\s]+\.[^@\s]+$ with JavaScript's notion of \s, and also refuses
// control characters.
func isEmailShape(v string) bool {
	at := strings.IndexByte(v, '@')
	if at <= 0 {
		return false
	}
	local, domain := v[:at], v[at+1:]
	for _, c := range v {
		if isJSSpace(c) || unicode.IsControl(c) {
			return false
		}
	}
	if strings.ContainsRune(domain, '@') || local == "" {
		return false
	}
	for i := 1; i < len(domain)-1; i++ {
		if domain[i] == '.' {
			return true
		}
	}
	return false
}

// isJSSpace matches JavaScript's \s class.
func isJSSpace(c rune) bool {
	return unicode.IsSpace(c) || c == '\uFEFF'
}

// name applies the Name rule (1..200 code points, no outer whitespace, no C0, DEL, C1, U+2028 or
// U+2029, valid UTF-8). def is used when unset; "" makes it required.
func (r *reader) name(name, code, def string) string {
	message := name + " must be 1 to 200 characters without outer whitespace or control characters."
	v, ok := r.get(name)
	if r.failed() {
		return ""
	}
	if !ok {
		if def == "" {
			r.fail(name, code, problem.DetailRequired, configuredMessage(name))
			return ""
		}
		v = def
	}
	if isBlank(v) {
		r.fail(name, code, problem.DetailRequired, configuredMessage(name))
		return ""
	}
	if !utf8.ValidString(v) {
		r.fail(name, code, problem.DetailInvalidFormat, message)
		return ""
	}
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	if isJSSpace(first) || isJSSpace(last) {
		r.fail(name, code, problem.DetailInvalidFormat, message)
		return ""
	}
	for _, c := range v {
		if c <= 0x1f || (c >= 0x7f && c <= 0x9f) || c == '\u2028' || c == '\u2029' {
			r.fail(name, code, problem.DetailInvalidFormat, message)
			return ""
		}
	}
	if utf8.RuneCountInString(v) > 200 {
		r.fail(name, code, problem.DetailTooLong, name+" must be at most 200 characters.")
		return ""
	}
	return v
}

// devPassword reads OPENCLAW_DEV_PASSWORD: 12..128 characters.
func (r *reader) devPassword() string {
	const name = "OPENCLAW_DEV_PASSWORD"
	const message = "OPENCLAW_DEV_PASSWORD must contain 12 to 128 characters."
	v, ok := r.get(name)
	if r.failed() {
		return ""
	}
	if !ok {
		return DevelopmentPassword
	}
	n := utf8.RuneCountInString(v)
	switch {
	case isBlank(v):
		r.fail(name, CodeConfigEnvInvalid, problem.DetailRequired, message)
	case n > 128:
		r.fail(name, CodeConfigEnvInvalid, problem.DetailTooLong, message)
	case n < 12:
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
	default:
		return v
	}
	return ""
}

// apiHost reads OCC_HOST. Production: one explicit IP that is not loopback, unspecified or
// multicast. Development: 127.0.0.1, ::1, or 0.0.0.0 when a bridge CIDR is configured.
func (r *reader) apiHost(mode Mode, bridge netip.Prefix) string {
	const name = "OCC_HOST"
	v, ok := r.required(name, CodeConfigEnvInvalid, configuredMessage(name))
	if !ok {
		return ""
	}
	if mode == Development {
		message := "OCC_HOST must be 127.0.0.1 or ::1 in development or 0.0.0.0 with OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR."
		switch {
		case v == "127.0.0.1" || v == "::1":
			return v
		case v == "0.0.0.0" && bridge.IsValid():
			return v
		}
		if _, err := netip.ParseAddr(v); err != nil {
			r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		} else {
			r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
		}
		return ""
	}
	message := "OCC_HOST must be one explicit non-loopback IP address in production."
	addr, err := netip.ParseAddr(v)
	if err != nil {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	u := addr.Unmap()
	if addr.Zone() != "" || u.IsLoopback() || u.IsUnspecified() || u.IsMulticast() {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
		return ""
	}
	return addr.String()
}

// metrics reads OCC_METRICS_ENABLED, OCC_METRICS_HOST and OCC_METRICS_PORT. apiPort is OCC_PORT for
// the API and 0 for the worker.
func (r *reader) metrics(mode Mode, apiPort int) Metrics {
	const (
		enabledName = "OCC_METRICS_ENABLED"
		hostName    = "OCC_METRICS_HOST"
		portName    = "OCC_METRICS_PORT"
	)
	enabled := r.boolean(enabledName, false)
	if r.failed() {
		return Metrics{}
	}
	if !enabled {
		for _, n := range []string{hostName, portName} {
			if _, set := r.get(n); set {
				r.fail(n, CodeConfigEnvInvalid, problem.DetailInvalidValue, n+" must be unset when metrics are disabled.")
			}
		}
		return Metrics{}
	}
	m := Metrics{Enabled: true}
	if v, ok := r.required(hostName, CodeConfigEnvInvalid, hostName+" must be explicitly configured when metrics are enabled."); ok {
		m.Host = r.metricsHost(mode, v)
	}
	if v, ok := r.required(portName, CodeConfigEnvInvalid, portName+" must be explicitly configured when metrics are enabled."); ok {
		m.Port = r.port(portName, v)
		if !r.failed() && m.Port == apiPort {
			r.fail(portName, CodeConfigEnvInvalid, problem.DetailInvalidValue, "OCC_METRICS_PORT must differ from OCC_PORT.")
		}
	}
	if r.failed() {
		return Metrics{}
	}
	return m
}

func (r *reader) metricsHost(mode Mode, v string) string {
	const name = "OCC_METRICS_HOST"
	if mode == Development {
		if v == "127.0.0.1" || v == "::1" {
			return v
		}
		message := "OCC_METRICS_HOST must be 127.0.0.1 or ::1 in development."
		if _, err := netip.ParseAddr(v); err != nil {
			r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		} else {
			r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
		}
		return ""
	}
	message := "OCC_METRICS_HOST must be one explicit IP address."
	addr, err := netip.ParseAddr(v)
	if err != nil {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidFormat, message)
		return ""
	}
	u := addr.Unmap()
	if addr.Zone() != "" || u.IsUnspecified() || u.IsMulticast() {
		r.fail(name, CodeConfigEnvInvalid, problem.DetailInvalidValue, message)
		return ""
	}
	return addr.String()
}
