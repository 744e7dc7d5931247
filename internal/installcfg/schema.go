package installcfg

import (
	"errors"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/problem"
)

// capabilities are the supported Driver capabilities, in reporting order.
var capabilities = []string{CapabilityCompute, CapabilityConfiguration, CapabilityIAM, CapabilitySecret}

// upstreamCapabilities exist upstream but have no implementation here yet.
var upstreamCapabilities = map[string]bool{
	"sandbox": true, "credential_gateway": true, "plugin": true, "service_account": true, "repo": true,
	"channel": true,
}

// implementations lists each capability's compiled-in implementations; the first is the default.
var implementations = map[string][]string{
	CapabilityCompute:       {ImplementationKubernetes, ImplementationDocker, ImplementationSimulated},
	CapabilityConfiguration: {ImplementationKubernetes, ImplementationFilesystem},
	CapabilitySecret:        {ImplementationKubernetes, ImplementationFilesystem},
	CapabilityIAM:           {ImplementationNative},
}

// refusedInProduction are the development-only implementations.
var refusedInProduction = map[[2]string]bool{
	{CapabilityCompute, ImplementationDocker}:    true,
	{CapabilityCompute, ImplementationSimulated}: true,
	{CapabilitySecret, ImplementationFilesystem}: true,
}

var (
	driverID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

	logLevels = map[string]slog.Level{
		"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
	}

	knownDetailCodes = map[string]bool{
		problem.DetailRequired: true, problem.DetailUnknownField: true, problem.DetailInvalidType: true, problem.DetailInvalidFormat: true,
		problem.DetailInvalidValue: true, problem.DetailTooLong: true, problem.DetailTooDeep: true,
	}
)

// validator applies the closed schema and collects details.
type validator struct {
	env  Env
	opts options
	ds   details
}

func (v *validator) document(doc map[string]any) *Config {
	cfg := &Config{LogLevel: slog.LevelInfo}
	_, hasOcc := doc["occ"]
	_, hasDrivers := doc["drivers"]
	_, hasBackend := doc["backend"]
	_, hasPresets := doc["presets"]
	for _, k := range sortedKeys(doc) {
		p, _ := child("", k)
		switch k {
		case "occ":
			cfg.Cluster = v.occ(doc[k], p)
		case "drivers":
			v.drivers(doc[k], p, cfg)
		case "logging":
			cfg.LogLevel = v.logging(doc[k], p)
		case "observability":
			cfg.ObservabilityURL = v.observability(doc[k], p)
		case "backend":
			v.backend(doc[k], p)
		case "presets":
			v.ds.add(p, problem.DetailUnknownField, msgPresets)
		case "runtime":
			v.ds.add(p, problem.DetailUnknownField, msgRuntime)
		case "integrations":
			v.ds.add(p, problem.DetailUnknownField, msgIntegrations)
		default:
			v.ds.add(p, problem.DetailUnknownField, msgUnknownField)
		}
	}
	if !v.env.Production && !hasOcc && !hasDrivers && !hasBackend && !hasPresets {
		// Development with only logging or observability keeps the development drivers.
		d := Default(v.env)
		cfg.Compute, cfg.Configuration, cfg.Secret, cfg.IAM = d.Compute, d.Configuration, d.Secret, d.IAM
		return cfg
	}
	if !hasOcc {
		v.ds.add("/occ", problem.DetailRequired, msgRequired)
	}
	if !hasDrivers {
		v.ds.add("/drivers", problem.DetailRequired, msgRequired)
	}
	return cfg
}

// object returns val as an object, or records INVALID_TYPE.
func (v *validator) object(val any, path string) (map[string]any, bool) {
	m, ok := val.(map[string]any)
	if !ok {
		v.ds.add(path, problem.DetailInvalidType, msgObject)
	}
	return m, ok
}

// closed records UNKNOWN_FIELD for every key of m outside allowed.
func (v *validator) closed(m map[string]any, path string, allowed ...string) {
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			p, _ := child(path, k)
			v.ds.add(p, problem.DetailUnknownField, msgUnknownField)
		}
	}
}

// str returns m[key] as a string; ok is false when it is absent or not a string (recorded).
func (v *validator) str(m map[string]any, path, key string, required bool) (string, bool) {
	p, _ := child(path, key)
	raw, present := m[key]
	if !present {
		if required {
			v.ds.add(p, problem.DetailRequired, msgRequired)
		}
		return "", false
	}
	s, ok := raw.(string)
	if !ok {
		v.ds.add(p, problem.DetailInvalidType, msgString)
	}
	return s, ok
}

func (v *validator) occ(val any, path string) string {
	m, ok := v.object(val, path)
	if !ok {
		return ""
	}
	v.closed(m, path, "cluster")
	cluster, ok := v.str(m, path, "cluster", true)
	if !ok {
		return ""
	}
	if !validClusterName(cluster) {
		v.ds.add(path+"/cluster", problem.DetailInvalidValue, msgClusterName)
		return ""
	}
	return cluster
}

func validClusterName(s string) bool {
	n := utf8.RuneCountInString(s)
	if n == 0 || n > 253 || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

func (v *validator) logging(val any, path string) slog.Level {
	m, ok := v.object(val, path)
	if !ok {
		return slog.LevelInfo
	}
	v.closed(m, path, "level")
	level, ok := v.str(m, path, "level", false)
	if !ok {
		return slog.LevelInfo
	}
	l, known := logLevels[level]
	if !known {
		v.ds.add(path+"/level", problem.DetailInvalidValue, msgLogLevel)
		return slog.LevelInfo
	}
	return l
}

func (v *validator) observability(val any, path string) string {
	m, ok := v.object(val, path)
	if !ok {
		return ""
	}
	v.closed(m, path, "url")
	raw, ok := v.str(m, path, "url", false)
	if !ok {
		return ""
	}
	if !validConsoleURL(raw) {
		v.ds.add(path+"/url", problem.DetailInvalidFormat, msgURL)
		return ""
	}
	return raw
}

func validConsoleURL(raw string) bool {
	if len(raw) > 2048 || strings.ContainsAny(raw, "# \t\r\n") {
		return false
	}
	for _, r := range raw {
		if unicode.IsControl(r) {
			return false
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	return (scheme == "http" || scheme == "https") && u.Host != "" && u.Hostname() != "" &&
		u.User == nil && u.Opaque == ""
}

func (v *validator) backend(val any, path string) {
	list, ok := val.([]any)
	if !ok {
		v.ds.add(path, problem.DetailInvalidType, msgList)
		return
	}
	if len(list) > 0 {
		v.ds.add(path, problem.DetailInvalidValue, msgBackends)
	}
}

func (v *validator) drivers(val any, path string, cfg *Config) {
	m, ok := v.object(val, path)
	if !ok {
		return
	}
	for _, k := range sortedKeys(m) {
		if slices.Contains(capabilities, k) {
			continue
		}
		p, _ := child(path, k)
		if upstreamCapabilities[k] {
			v.ds.add(p, problem.DetailUnknownField, msgUnsupportedCap)
		} else {
			v.ds.add(p, problem.DetailUnknownField, msgUnknownField)
		}
	}
	for _, capability := range capabilities {
		p := path + "/" + capability
		raw, present := m[capability]
		if !present {
			v.ds.add(p, problem.DetailRequired, msgRequired)
			continue
		}
		s := v.selection(capability, raw, p)
		switch capability {
		case CapabilityCompute:
			cfg.Compute = s
		case CapabilityConfiguration:
			cfg.Configuration = s
		case CapabilitySecret:
			cfg.Secret = s
		case CapabilityIAM:
			cfg.IAM = s
		}
	}
}

func (v *validator) selection(capability string, val any, path string) Selection {
	m, ok := v.object(val, path)
	if !ok {
		return Selection{}
	}
	for _, k := range sortedKeys(m) {
		switch k {
		case "id", "implementation", "configuration":
		case "package":
			v.ds.add(path+"/package", problem.DetailUnknownField, msgPackage)
		default:
			p, _ := child(path, k)
			v.ds.add(p, problem.DetailUnknownField, msgUnknownField)
		}
	}
	var s Selection
	if id, ok := v.str(m, path, "id", true); ok {
		if driverID.MatchString(id) {
			s.ID = id
		} else {
			v.ds.add(path+"/id", problem.DetailInvalidFormat, msgDriverID)
		}
	}
	implOK := true
	s.Implementation = implementations[capability][0]
	if _, present := m["implementation"]; present {
		impl, isString := v.str(m, path, "implementation", false)
		switch {
		case !isString:
			implOK = false
		case !slices.Contains(implementations[capability], impl):
			v.ds.add(path+"/implementation", problem.DetailInvalidValue, msgUnknownImpl)
			implOK = false
		default:
			s.Implementation = impl
		}
	}
	if implOK && v.env.Production && refusedInProduction[[2]string{capability, s.Implementation}] {
		v.ds.add(path+"/implementation", problem.DetailInvalidValue, msgNotInProduction)
		implOK = false
	}
	cp := path + "/configuration"
	raw, present := m["configuration"]
	if !present {
		v.ds.add(cp, problem.DetailRequired, msgRequired)
		return s
	}
	configuration, ok := v.object(raw, cp)
	if !ok || !implOK {
		return s
	}
	if s.Implementation == ImplementationFilesystem {
		configuration = v.withDefaultRoot(capability, configuration)
	}
	s.Configuration = configuration
	check := v.opts.validators[[2]string{capability, s.Implementation}]
	if check == nil {
		check = v.builtin(capability, s.Implementation)
	}
	if check == nil {
		v.ds.add(path+"/implementation", problem.DetailInvalidValue, msgNoValidator)
		return s
	}
	v.adopt(cp, runValidator(check, configuration))
	return s
}

// withDefaultRoot fills a missing filesystem root from the development root variable.
func (v *validator) withDefaultRoot(capability string, configuration map[string]any) map[string]any {
	if _, present := configuration["root"]; present {
		return configuration
	}
	root := v.env.DevelopmentConfigurationRoot
	if capability == CapabilitySecret {
		root = v.env.DevelopmentSecretRoot
	}
	if root == "" {
		return configuration
	}
	out := make(map[string]any, len(configuration)+1)
	for k, val := range configuration {
		out[k] = val
	}
	out["root"] = root
	return out
}

func (v *validator) builtin(capability, implementation string) ConfigurationValidator {
	switch {
	case capability == CapabilityIAM && implementation == ImplementationNative:
		return validateNativeIAM
	case implementation == ImplementationFilesystem &&
		(capability == CapabilityConfiguration || capability == CapabilitySecret):
		return validateFilesystem
	}
	return nil
}

// runValidator calls a validator and turns a panic into a refusal.
func runValidator(check ConfigurationValidator, configuration map[string]any) (out []problem.Detail) {
	defer func() {
		if recover() != nil {
			out = []problem.Detail{{Path: "", Code: problem.DetailInvalidValue, Message: msgValidatorFailed}}
		}
	}()
	return check(configuration)
}

// adopt records a validator's details below base, replacing anything unsafe.
func (v *validator) adopt(base string, out []problem.Detail) {
	for _, d := range out {
		p := base + d.Path
		if (d.Path != "" && d.Path[0] != '/') || !safePath(p) {
			p = base
		}
		code := d.Code
		if !knownDetailCodes[code] {
			code = problem.DetailInvalidValue
		}
		message := d.Message
		if !safeMessage.MatchString(message) || credentialLike(message) {
			message = msgValidatorFailed
		}
		v.ds.add(p, code, message)
	}
}

func validateNativeIAM(configuration map[string]any) []problem.Detail {
	err := iam.ValidateNativeConfiguration(configuration)
	if err == nil {
		return nil
	}
	var cerr *iam.ConfigurationError
	if !errors.As(err, &cerr) || len(cerr.Details) == 0 {
		return []problem.Detail{{Path: "", Code: problem.DetailInvalidValue, Message: msgNativeIAMNotEmpty}}
	}
	return cerr.Details
}

// validateFilesystem checks {root: <absolute clean path>} (closed).
func validateFilesystem(configuration map[string]any) []problem.Detail {
	var out []problem.Detail
	for _, k := range sortedKeys(configuration) {
		if k != "root" {
			p, _ := child("", k)
			out = append(out, problem.Detail{Path: p, Code: problem.DetailUnknownField, Message: msgUnknownField})
		}
	}
	raw, present := configuration["root"]
	root, isString := raw.(string)
	switch {
	case !present:
		out = append(out, problem.Detail{Path: "/root", Code: problem.DetailRequired, Message: msgRootRequired})
	case !isString:
		out = append(out, problem.Detail{Path: "/root", Code: problem.DetailInvalidType, Message: msgString})
	case len(root) > 4096 || !filepath.IsAbs(root) || filepath.Clean(root) != root || strings.ContainsRune(root, 0):
		out = append(out, problem.Detail{Path: "/root", Code: problem.DetailInvalidValue, Message: msgAbsolutePath})
	}
	return out
}
