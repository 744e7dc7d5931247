package docker

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/schema"
)

// Name is the implementation name of this driver.
const Name = "docker"

// DefaultID is the selection id development uses when no startup YAML selects a Compute Driver.
const DefaultID = "compute-docker-development"

// DefaultSocket is the Docker Engine socket used when neither configuration nor DOCKER_HOST name
// one.
const DefaultSocket = "/var/run/docker.sock"

// DefaultRequestTimeout bounds every Engine request (upstream: 10 s).
const DefaultRequestTimeout = 10 * time.Second

// maxSocketPath is the longest Unix socket path the kernel accepts (sun_path holds 108 bytes
// including the terminating NUL).
const maxSocketPath = 107

// Config is the typed configuration of the docker driver.
type Config struct {
	// Socket is the absolute path of the Engine's Unix socket; "" means DefaultSocket.
	Socket string
	// RequestTimeout bounds each Engine request; 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// ExtraLabels are added to the networks the driver creates (Go only, not configurable): tests
	// tag their networks for cleanup. They cannot replace an ownership label and are not verified.
	ExtraLabels map[string]string
}

// Schema is the closed configuration schema of the docker driver.
func Schema() driver.ObjectSchema {
	return driver.NewObjectSchema(&schema.Schema{
		Type:        schema.TypeObject,
		Description: "Development Compute Driver: one labelled Docker network per Namespace; refused in production.",
		Properties: []schema.Property{
			schema.Optional("socket", &schema.Schema{
				Type: schema.TypeString, MaxBytes: maxSocketPath, Pattern: `^/`,
				Description: "Absolute path of the Docker Engine Unix socket. Default: DOCKER_HOST when it is unix://, else " + DefaultSocket + ".",
				Rule:        checkSocketPath,
			}),
			schema.Optional("requestTimeoutMs", schema.Defaulted(schema.SafeInteger(100, 120_000),
				int64(DefaultRequestTimeout/time.Millisecond), "Timeout of each Docker Engine request in milliseconds.")),
		},
	})
}

func checkSocketPath(v any) (string, string) {
	s, _ := v.(string)
	if strings.ContainsRune(s, 0) || filepath.Clean(s) != s {
		return problem.DetailInvalidFormat, "Must be a clean absolute path."
	}
	return "", ""
}

// ParseConfig validates configuration against Schema and resolves the socket: the configured
// socket, else DOCKER_HOST from env when it is a unix:// URL, else DefaultSocket. A DOCKER_HOST
// with another scheme is refused rather than silently ignored.
func ParseConfig(configuration map[string]any, env driver.Environment) (Config, error) {
	if err := Schema().Validate(configuration); err != nil {
		return Config{}, err
	}
	var cfg Config
	if s, ok := configuration["socket"].(string); ok {
		cfg.Socket = s
	} else if host, ok := env.Getenv("DOCKER_HOST"); ok && strings.TrimSpace(host) != "" {
		path, ok := strings.CutPrefix(host, "unix://")
		if !ok || !filepath.IsAbs(path) || len(path) > maxSocketPath || filepath.Clean(path) != path {
			return Config{}, driver.NewConfigurationError([]problem.Detail{{
				Path: "/socket", Code: problem.DetailInvalidValue,
				Message: "DOCKER_HOST is not a unix:// URL with an absolute socket path; configure socket explicitly.",
			}}...)
		}
		cfg.Socket = path
	}
	if n, ok := schema.IntegerValue(configuration["requestTimeoutMs"]); ok {
		cfg.RequestTimeout = time.Duration(n) * time.Millisecond
	}
	return cfg, nil
}

// Factory is the driver.ComputeFactory of the docker driver. It refuses production.
func Factory(id string, configuration map[string]any, env driver.Environment) (driver.Compute, error) {
	if env.Production {
		return nil, &driver.ImplementationUnavailableError{Implementation: Name, Code: driver.CodeDriverUnavailableInProduction}
	}
	cfg, err := ParseConfig(configuration, env)
	if err != nil {
		return nil, err
	}
	return New(id, cfg)
}

// Implementation describes the docker driver for a driver.ComputeRegistry.
func Implementation() driver.ComputeImplementation {
	return driver.ComputeImplementation{Name: Name, Schema: Schema(), Production: false, New: Factory}
}
