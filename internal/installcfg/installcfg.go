package installcfg

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/preset"
	"github.com/openclaw/occ/internal/problem"
)

// MaxFileSize is the largest accepted startup YAML, in bytes.
const MaxFileSize = 1 << 20

// Capabilities.
const (
	CapabilityCompute       = "compute"
	CapabilityConfiguration = "configuration"
	CapabilitySecret        = "secret"
	CapabilityIAM           = "iam"
)

// Implementations.
const (
	ImplementationKubernetes = "kubernetes"
	ImplementationDocker     = "docker"
	ImplementationSimulated  = "simulated"
	ImplementationFilesystem = "filesystem"
	ImplementationNative     = "native"
)

// Development defaults used when OCC_DEVELOPMENT_CONFIGURATION_ROOT or OCC_DEVELOPMENT_SECRET_ROOT
// is unset. /var/tmp survives a reboot on common systems; the filesystem drivers create the
// directories with mode 0700.
const (
	DefaultDevelopmentConfigurationRoot = "/var/tmp/occ-development/configurations"
	DefaultDevelopmentSecretRoot        = "/var/tmp/occ-development/secrets"
)

// Env is what loading needs from the process settings.
type Env struct {
	// Production is NODE_ENV=production.
	Production bool
	// DevelopmentConfigurationRoot is OCC_DEVELOPMENT_CONFIGURATION_ROOT (absolute or empty).
	DevelopmentConfigurationRoot string
	// DevelopmentSecretRoot is OCC_DEVELOPMENT_SECRET_ROOT (absolute or empty).
	DevelopmentSecretRoot string
}

// Selection is one capability's Driver: the operator's id, the resolved compiled-in
// implementation (defaults applied) and its validated configuration object (never nil; numbers are
// json.Number).
type Selection struct {
	ID             string
	Implementation string
	Configuration  map[string]any
}

// Config is a validated Installation startup configuration.
type Config struct {
	// Cluster is occ.cluster; empty for the development defaults.
	Cluster string
	// LogLevel is logging.level (default info).
	LogLevel slog.Level
	// ObservabilityURL is observability.url, or empty.
	ObservabilityURL string

	Compute       Selection
	Configuration Selection
	Secret        Selection
	IAM           Selection

	// Presets are the Installation's default Presets: the bundled ones when
	// presets.includeDefaults is true, then each of presets.files, read at startup.
	Presets []preset.Definition
}

// ConfigurationValidator checks one selection's configuration object after the document passed the
// credential scan and the closed top-level schema. It returns nothing when the configuration is
// valid. Detail paths are JSON Pointers relative to the configuration object ("" is the object
// itself); Load prefixes them with /drivers/<capability>/configuration. Messages must be fixed
// sentences in the log-safe alphabet and never contain a submitted value; an unsafe message is
// replaced by a generic one, an unsafe path by the configuration's own path.
type ConfigurationValidator func(configuration map[string]any) []problem.Detail

// Option configures Load and Parse.
type Option func(*options)

type options struct {
	validators map[[2]string]ConfigurationValidator
	// baseDir resolves relative presets.files: the startup YAML's directory.
	baseDir string
}

// WithBaseDir resolves relative presets.files against dir (Load passes the startup YAML's
// directory; Parse without it refuses relative paths).
func WithBaseDir(dir string) Option {
	return func(o *options) { o.baseDir = dir }
}

// WithValidator registers the validator of one (capability, implementation) pair. A registration
// for a pair this package validates itself (iam native, configuration and secret filesystem)
// replaces the built-in check. Every other selected implementation without a validator is refused.
func WithValidator(capability, implementation string, v ConfigurationValidator) Option {
	return func(o *options) {
		if o.validators == nil {
			o.validators = map[[2]string]ConfigurationValidator{}
		}
		o.validators[[2]string{capability, implementation}] = v
	}
}

// Default is the development configuration used without OCC_CONFIG_PATH: Docker Compute, the
// filesystem Configuration and Secret Drivers (roots from env or the Default*Root constants) and
// native IAM, log level info.
func Default(env Env) *Config {
	return &Config{
		LogLevel:      slog.LevelInfo,
		Compute:       Selection{ID: "compute-docker", Implementation: ImplementationDocker, Configuration: map[string]any{}},
		Configuration: Selection{ID: "configuration-filesystem", Implementation: ImplementationFilesystem, Configuration: map[string]any{"root": developmentRoot(CapabilityConfiguration, env)}},
		Secret:        Selection{ID: "secret-filesystem", Implementation: ImplementationFilesystem, Configuration: map[string]any{"root": developmentRoot(CapabilitySecret, env)}},
		IAM:           Selection{ID: "native-iam", Implementation: ImplementationNative, Configuration: map[string]any{}},
	}
}

func developmentRoot(capability string, env Env) string {
	if capability == CapabilitySecret {
		if env.DevelopmentSecretRoot != "" {
			return env.DevelopmentSecretRoot
		}
		return DefaultDevelopmentSecretRoot
	}
	if env.DevelopmentConfigurationRoot != "" {
		return env.DevelopmentConfigurationRoot
	}
	return DefaultDevelopmentConfigurationRoot
}

// Load reads and validates the startup YAML at path (OCC_CONFIG_PATH). An empty path returns
// Default in development and fails in production. Every failure is an *Error.
func Load(path string, env Env, opts ...Option) (*Config, error) {
	if path == "" {
		if env.Production {
			return nil, envError(problem.DetailRequired, "OCC_CONFIG_PATH must be explicitly configured in production.")
		}
		return Default(env), nil
	}
	if !filepath.IsAbs(path) {
		return nil, envError(problem.DetailInvalidValue, "OCC_CONFIG_PATH must be an absolute path.")
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, env, append([]Option{WithBaseDir(filepath.Dir(path))}, opts...)...)
}

func envError(code, message string) *problem.Error {
	return &problem.Error{Code: CodeConfigEnvInvalid, Message: message,
		Details: []problem.Detail{{Path: "/env/OCC_CONFIG_PATH", Code: code, Message: message}}}
}

func unavailable() *problem.Error {
	return &problem.Error{Code: CodeUnavailable, Message: "The configured Installation startup YAML is unavailable."}
}

func tooLarge() *problem.Error {
	return &problem.Error{Code: CodeInvalid, Message: "The Installation startup YAML must not be larger than 1 MiB.",
		Details: []problem.Detail{{Path: "", Code: problem.DetailTooLong, Message: "The document is larger than 1 MiB."}}}
}

// readFile reads a regular file of at most MaxFileSize bytes. The file is checked before it is
// opened (so a FIFO or device is never opened) and again through the open descriptor.
func readFile(path string) ([]byte, error) {
	before, err := os.Stat(path)
	if err != nil || !before.Mode().IsRegular() {
		return nil, unavailable()
	}
	if before.Size() > MaxFileSize {
		return nil, tooLarge()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, unavailable()
	}
	defer f.Close()
	after, err := f.Stat()
	if err != nil || !after.Mode().IsRegular() || !os.SameFile(before, after) {
		return nil, unavailable()
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, unavailable()
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge()
	}
	return data, nil
}

func invalid(message string) *problem.Error {
	return &problem.Error{Code: CodeInvalid, Message: message}
}

// documentMarker is a YAML document start or end marker at the beginning of a line.
var documentMarker = regexp.MustCompile(`^(?:---|\.\.\.)(?:[ \t]|$)`)

// multipleDocuments reports whether data holds more than one YAML document. A marker cannot appear
// at the start of a line inside a scalar, so lines are enough: a leading "---" opens the only
// document; any later "---", or content after a "..." end marker, starts another one.
func multipleDocuments(data []byte) bool {
	content, ended := false, false
	for line := range bytes.Lines(data) {
		trimmed := bytes.TrimRight(line, "\r\n")
		blank := len(bytes.TrimLeft(trimmed, " \t")) == 0 || bytes.HasPrefix(bytes.TrimLeft(trimmed, " \t"), []byte("#"))
		switch {
		case documentMarker.Match(trimmed) && bytes.HasPrefix(trimmed, []byte("---")):
			if content || ended {
				return true
			}
			content = true // "--- {a: 1}" carries content on the marker line
		case documentMarker.Match(trimmed):
			ended = true
		case blank, !content && !ended && bytes.HasPrefix(trimmed, []byte("%")):
			// comments, blank lines, directives before the document
		default:
			if ended {
				return true
			}
			content = true
		}
	}
	return false
}

// LoadLogLevel reads only logging.level, for the processes that select no Drivers (bootstrap and
// migrate, as upstream). The file, parsing and credential-scan rules are Load's; the other sections
// are not validated. An empty path is info.
func LoadLogLevel(path string) (slog.Level, error) {
	if path == "" {
		return slog.LevelInfo, nil
	}
	if !filepath.IsAbs(path) {
		return slog.LevelInfo, envError(problem.DetailInvalidValue, "OCC_CONFIG_PATH must be an absolute path.")
	}
	data, err := readFile(path)
	if err != nil {
		return slog.LevelInfo, err
	}
	doc, err := scanned(data)
	if err != nil {
		return slog.LevelInfo, err
	}
	v := validator{}
	level := slog.LevelInfo
	if raw, present := doc["logging"]; present {
		level = v.logging(raw, "/logging")
	}
	if !v.ds.empty() {
		return slog.LevelInfo, refused(v.ds.list)
	}
	return level, nil
}

// scanned parses one document and runs the credential scan.
func scanned(data []byte) (map[string]any, error) {
	if len(data) > MaxFileSize {
		return nil, tooLarge()
	}
	if multipleDocuments(data) {
		return nil, invalid("The Installation startup YAML must contain exactly one YAML document.")
	}
	doc, err := decode(data)
	if err != nil {
		return nil, err
	}
	var ds details
	scan(doc, "", 1, &ds)
	if !ds.empty() {
		return nil, refused(ds.list)
	}
	return doc, nil
}

// Parse validates a startup YAML document held in memory (what Load does after reading the file).
func Parse(data []byte, env Env, opts ...Option) (*Config, error) {
	doc, err := scanned(data)
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	v := validator{env: env, opts: o}
	cfg := v.document(doc)
	if !v.ds.empty() {
		return nil, refused(v.ds.list)
	}
	return cfg, nil
}

// decode turns YAML into a JSON object with exact numbers.
func decode(data []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, invalid("The Installation startup YAML must contain valid YAML without duplicate keys or values JSON cannot hold.")
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, invalid("The Installation startup YAML must contain valid YAML without duplicate keys or values JSON cannot hold.")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalid("The Installation startup YAML must contain one mapping at its root.")
	}
	return m, nil
}

func refused(list []problem.Detail) *problem.Error {
	message := "The Installation startup YAML does not match its schema."
	if capability := commonCapability(list); capability != "" {
		message = "drivers." + capability + ".configuration does not match its Driver configuration schema."
	}
	return &problem.Error{Code: CodeDriverConfigurationInvalid, Message: message, Details: list}
}

// commonCapability returns the capability when every detail lies inside one selection's
// configuration object.
func commonCapability(list []problem.Detail) string {
	found := ""
	for _, d := range list {
		c := ""
		for _, capability := range capabilities {
			prefix := "/drivers/" + capability + "/configuration"
			if d.Path == prefix || len(d.Path) > len(prefix) && d.Path[:len(prefix)+1] == prefix+"/" {
				c = capability
			}
		}
		if c == "" || (found != "" && c != found) {
			return ""
		}
		found = c
	}
	return found
}
