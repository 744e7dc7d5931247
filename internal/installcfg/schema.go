package installcfg

import (
	"errors"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/preset"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/schema"
)

// capabilities are the supported Driver capabilities, in reporting order.
var capabilities = []string{CapabilityCompute, CapabilityConfiguration, CapabilityIAM, CapabilitySecret}

// upstreamCapabilities exist upstream but have no implementation here: each is refused with a
// message naming its feature.
var upstreamCapabilities = map[string]string{
	"sandbox":            "Sandbox Drivers are not available in this OCC.",
	"credential_gateway": "Credential gateway Drivers are not available in this OCC.",
	"plugin":             "Plugin Drivers are not available in this OCC.",
	"service_account":    "ServiceAccount Drivers are not available in this OCC.",
	"repo":               "Repository Drivers are not available in this OCC.",
	"channel":            "Channel Drivers are not available in this OCC.",
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
			cfg.Presets = v.presets(doc[k], p)
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

// check validates val against s, a closed section declared with internal/schema, and records its
// details, each at the pointer the startup YAML may report (see child). It reports whether val
// was accepted.
func (v *validator) check(s *schema.Schema, val any, path string) bool {
	s.Prepare()
	found := &schema.Validation{Explain: true}
	s.Validate(found, val, path)
	for _, d := range found.Details {
		v.ds.add(reported(d.Path), d.Code, d.Message)
	}
	return len(found.Details) == 0
}

// reported is p cut before its first reference token that child would not write into a path.
func reported(p string) string {
	out := ""
	for _, token := range strings.Split(p, "/")[1:] {
		next, ok := child(out, strings.NewReplacer("~1", "/", "~0", "~").Replace(token))
		if !ok {
			return out
		}
		out = next
	}
	return out
}

// section is a closed object of props whose unknown members are refused with msgUnknownField.
func section(props ...schema.Property) *schema.Schema {
	s := schema.Object(props...)
	s.UnknownMessage = msgUnknownField
	return s
}

// ruled is a string that valid must accept, else refused with code and message.
func ruled(code, message string, valid func(string) bool) *schema.Schema {
	return &schema.Schema{Type: schema.TypeString, Rule: func(v any) (string, string) {
		if valid(v.(string)) {
			return "", ""
		}
		return code, message
	}}
}

func (v *validator) occ(val any, path string) string {
	s := section(schema.Required("cluster", ruled(problem.DetailInvalidValue, msgClusterName, validClusterName)))
	if !v.check(s, val, path) {
		return ""
	}
	return val.(map[string]any)["cluster"].(string)
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
	known := func(level string) bool { _, ok := logLevels[level]; return ok }
	if !v.check(section(schema.Optional("level", ruled(problem.DetailInvalidValue, msgLogLevel, known))), val, path) {
		return slog.LevelInfo
	}
	level, present := val.(map[string]any)["level"]
	if !present {
		return slog.LevelInfo
	}
	return logLevels[level.(string)]
}

func (v *validator) observability(val any, path string) string {
	if !v.check(section(schema.Optional("url", ruled(problem.DetailInvalidFormat, msgURL, validConsoleURL))), val, path) {
		return ""
	}
	url, _ := val.(map[string]any)["url"].(string)
	return url
}

// maxPresetFiles bounds presets.files; maxPresetFileSize is a 1 MiB template with its name.
const (
	maxPresetFiles    = 64
	maxPresetFileSize = preset.MaxBytes + 16<<10
)

// presets reads presets.includeDefaults (the bundled Presets) and presets.files (one
// {name, template} JSON object each, relative paths beside the startup YAML). A file that cannot
// be read, does not hold a valid definition or repeats a name is refused at its list item.
func (v *validator) presets(val any, path string) []preset.Definition {
	s := section(
		schema.Optional("includeDefaults", schema.Boolean()),
		schema.Optional("files", schema.ArrayOf(schema.String(1, 4096), 0, maxPresetFiles)),
	)
	if !v.check(s, val, path) {
		return nil
	}
	m := val.(map[string]any)
	var out []preset.Definition
	if include, _ := m["includeDefaults"].(bool); include {
		out = preset.Bundled()
	}
	files, _ := m["files"].([]any)
	for i, f := range files {
		p := path + "/files/" + strconv.Itoa(i)
		name := f.(string)
		if !filepath.IsAbs(name) {
			if v.opts.baseDir == "" {
				v.ds.add(p, problem.DetailInvalidValue, msgPresetRelative)
				continue
			}
			name = filepath.Join(v.opts.baseDir, name)
		}
		data, ok := readPresetFile(name)
		if !ok {
			v.ds.add(p, problem.DetailInvalidValue, msgPresetUnreadable)
			continue
		}
		d, err := preset.ParseDefinition(data, platform.ValidName)
		if err != nil {
			v.ds.add(p, problem.DetailInvalidValue, msgPresetInvalid)
			continue
		}
		if slices.ContainsFunc(out, func(o preset.Definition) bool { return o.Name == d.Name }) {
			v.ds.add(p, problem.DetailInvalidValue, msgPresetDuplicate)
			continue
		}
		out = append(out, d)
	}
	return out
}

// readPresetFile reads a regular file of at most maxPresetFileSize bytes.
func readPresetFile(name string) ([]byte, bool) {
	info, err := os.Stat(name)
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxPresetFileSize {
		return nil, false
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPresetFileSize+1))
	if err != nil || len(data) > maxPresetFileSize {
		return nil, false
	}
	return data, true
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
		if message, upstream := upstreamCapabilities[k]; upstream {
			v.ds.add(p, problem.DetailUnknownField, message)
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

// selectionSchema is the closed shape of one capability's selection; the configuration object is
// the selected implementation's validator's to check.
func (v *validator) selectionSchema(capability string) *schema.Schema {
	s := section(
		schema.Required("id", ruled(problem.DetailInvalidFormat, msgDriverID, driverID.MatchString)),
		schema.Optional("implementation", &schema.Schema{Type: schema.TypeString, Rule: func(val any) (string, string) {
			return v.implementationRefusal(capability, val.(string))
		}}),
		schema.Required("configuration", &schema.Schema{Type: schema.TypeObject, Open: true}),
	)
	s.Refused = map[string]string{"package": msgPackage}
	return s
}

// implementationRefusal is the detail code and message refusing impl for capability, or "".
func (v *validator) implementationRefusal(capability, impl string) (code, message string) {
	switch {
	case !slices.Contains(implementations[capability], impl):
		return problem.DetailInvalidValue, msgUnknownImpl
	case v.env.Production && refusedInProduction[[2]string{capability, impl}]:
		return problem.DetailInvalidValue, msgNotInProduction
	}
	return "", ""
}

func (v *validator) selection(capability string, val any, path string) Selection {
	v.check(v.selectionSchema(capability), val, path)
	m, ok := val.(map[string]any)
	if !ok {
		return Selection{}
	}
	var s Selection
	if id, ok := m["id"].(string); ok && driverID.MatchString(id) {
		s.ID = id
	}
	s.Implementation = implementations[capability][0]
	implOK := true
	if raw, present := m["implementation"]; present {
		impl, isString := raw.(string)
		refusal, _ := v.implementationRefusal(capability, impl)
		implOK = isString && refusal == ""
		if implOK {
			s.Implementation = impl
		}
	}
	cp := path + "/configuration"
	configuration, ok := m["configuration"].(map[string]any)
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
