package driver

import (
	"errors"
	"fmt"
	"sort"

	"github.com/openclaw/occ/internal/schema"
)

// Environment is what a factory may know about the process it runs in. It is read once, at
// construction; drivers never read the process environment themselves.
type Environment struct {
	// Production is NODE_ENV=production. Development-only implementations refuse it.
	Production bool
	// LookupEnv reports one process environment variable (os.LookupEnv in production, a map in
	// tests). Nil behaves like an empty environment. Only documented variables are read (for
	// example DOCKER_HOST by the docker implementation).
	LookupEnv func(name string) (string, bool)
}

// Getenv returns the named variable through LookupEnv.
func (e Environment) Getenv(name string) (string, bool) {
	if e.LookupEnv == nil {
		return "", false
	}
	return e.LookupEnv(name)
}

// ComputeFactory builds a Compute Driver from an already schema-validated configuration. It runs
// its semantic validation and returns *ConfigurationError for a refused configuration.
type ComputeFactory func(id string, configuration map[string]any, env Environment) (Compute, error)

// ComputeImplementation is one compiled-in Compute implementation.
type ComputeImplementation struct {
	// Name is the `implementation` of a selection and the driver's Implementation().
	Name string
	// Schema is the closed schema of the selection's `configuration` object.
	Schema ConfigurationSchema
	// Production reports whether the implementation may be selected in production.
	Production bool
	// New builds the driver.
	New ComputeFactory
}

// ComputeRegistry holds the compiled-in Compute implementations by name.
type ComputeRegistry struct {
	byName map[string]ComputeImplementation
}

// NewComputeRegistry checks and indexes impls: names must be unique and non-empty, factories and
// schemas present, and every schema closed at its root.
func NewComputeRegistry(impls ...ComputeImplementation) (*ComputeRegistry, error) {
	r := &ComputeRegistry{byName: make(map[string]ComputeImplementation, len(impls))}
	for _, impl := range impls {
		switch {
		case impl.Name == "":
			return nil, errors.New("driver: compute implementation without a name")
		case impl.New == nil || impl.Schema == nil:
			return nil, fmt.Errorf("driver: compute implementation %q lacks a factory or a schema", impl.Name)
		case impl.Schema.JSONSchema()["additionalProperties"] != false:
			return nil, fmt.Errorf("driver: compute implementation %q must expose a closed configuration schema", impl.Name)
		}
		if _, dup := r.byName[impl.Name]; dup {
			return nil, fmt.Errorf("driver: compute implementation %q registered twice", impl.Name)
		}
		r.byName[impl.Name] = impl
	}
	return r, nil
}

// Implementations returns the implementations sorted by name.
func (r *ComputeRegistry) Implementations() []ComputeImplementation {
	out := make([]ComputeImplementation, 0, len(r.byName))
	for _, impl := range r.byName {
		out = append(out, impl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the implementation called name.
func (r *ComputeRegistry) Lookup(name string) (ComputeImplementation, bool) {
	impl, ok := r.byName[name]
	return impl, ok
}

// NewCompute selects implementation impl under id: it refuses an unknown implementation or a
// development-only one in production (*ImplementationUnavailableError), validates configuration
// against the closed schema (*ConfigurationError, nil configuration means {}), builds the driver
// and checks that it reports the selected identity.
func (r *ComputeRegistry) NewCompute(impl, id string, configuration map[string]any, env Environment) (Compute, error) {
	ci, ok := r.byName[impl]
	if !ok {
		return nil, &ImplementationUnavailableError{Implementation: impl, Code: CodeDriverImplementationUnknown}
	}
	if env.Production && !ci.Production {
		return nil, &ImplementationUnavailableError{Implementation: impl, Code: CodeDriverUnavailableInProduction}
	}
	if id == "" {
		return nil, errors.New("driver: empty compute driver id")
	}
	if err := ci.Schema.Validate(configuration); err != nil {
		return nil, err
	}
	c, err := ci.New(id, configuration, env)
	if err != nil {
		return nil, err
	}
	if c.ID() != id || c.Implementation() != impl {
		return nil, fmt.Errorf("driver: compute implementation %q reported another identity", impl)
	}
	return c, nil
}

// ConfigurationSchema is the closed schema of one implementation's configuration object.
type ConfigurationSchema interface {
	// JSONSchema returns the schema as a JSON Schema document whose root (and every nested
	// object) has "additionalProperties": false.
	JSONSchema() map[string]any
	// Validate checks configuration (nil means {}) and returns nil or a *ConfigurationError.
	Validate(configuration map[string]any) error
}

// ObjectSchema is a ConfigurationSchema declared with internal/schema: a closed object whose
// Rule, KeyRule and ObjectRule functions are the implementation's semantic validation. Every
// refusal carries a fixed sentence.
type ObjectSchema struct{ object *schema.Schema }

// NewObjectSchema prepares object, a closed object schema, as a configuration schema.
func NewObjectSchema(object *schema.Schema) ObjectSchema {
	object.Prepare()
	return ObjectSchema{object: object}
}

// JSONSchema implements ConfigurationSchema.
func (s ObjectSchema) JSONSchema() map[string]any {
	doc := s.object.JSONSchema()
	doc["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	return doc
}

// Validate implements ConfigurationSchema.
func (s ObjectSchema) Validate(configuration map[string]any) error {
	if configuration == nil {
		configuration = map[string]any{}
	}
	v := &schema.Validation{Explain: true}
	s.object.Validate(v, configuration, "")
	if len(v.Details) == 0 {
		return nil
	}
	return NewConfigurationError(v.Details...)
}
