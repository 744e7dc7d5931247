package driver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/openclaw/occ/internal/problem"
)

// ConfigurationKindAgent is the only Configuration kind.
const ConfigurationKindAgent = "agent"

// ErrConfigurationNotFound: the backend holds no Configuration with that identity in that
// Namespace (or the stored object belongs to another one, which is never substituted).
var ErrConfigurationNotFound = errors.New("driver: configuration not found")

// ConfigurationRef names one Configuration of one Namespace.
type ConfigurationRef struct {
	NamespaceID string
	ID          string
}

// ConfigurationDocument is the Configuration a Configuration Driver stores. OCC owns the identity,
// kind, generation and bindings; the driver stores them with the native document and returns them
// unchanged.
type ConfigurationDocument struct {
	ID          string `json:"id"`
	NamespaceID string `json:"namespaceId"`
	Kind        string `json:"kind"`
	// Generation starts at 1 and changes by exactly one per update (−1 when OCC restores the
	// previous document after a rolled-back transaction).
	Generation int64 `json:"generation"`
	// Values is the native OpenClaw document (a JSON object).
	Values json.RawMessage `json:"values"`
	// SecretBindings is the JSON object of bindings (references only), or nil.
	SecretBindings json.RawMessage `json:"secretBindings,omitempty"`
	CreatedAt      time.Time       `json:"createdAt"`
}

// Ref is the document's identity.
func (d ConfigurationDocument) Ref() ConfigurationRef {
	return ConfigurationRef{NamespaceID: d.NamespaceID, ID: d.ID}
}

// Configuration is the Configuration Driver contract. It
// stores native Agent Configuration per Namespace; OCC owns ids, generations, authorization and
// revision snapshots. Errors other than ErrConfigurationNotFound and *ConfigurationValueError are
// dependency failures (the API answers 503).
type Configuration interface {
	// ID is the operator's selection id.
	ID() string
	// Implementation is the compiled-in implementation name ("filesystem", ...).
	Implementation() string
	// Validate rejects what the backend cannot represent, side-effect free
	// (*ConfigurationValueError naming the member inside values).
	Validate(ctx context.Context, doc ConfigurationDocument) error
	// Create stores a new Configuration and returns it with identical identity and metadata.
	Create(ctx context.Context, doc ConfigurationDocument) (ConfigurationDocument, error)
	// Read returns only that Configuration of that Namespace.
	Read(ctx context.Context, ref ConfigurationRef) (ConfigurationDocument, error)
	// Update replaces the stored Configuration without changing its identity, kind or creation
	// time; the generation must differ from the stored one by exactly one.
	Update(ctx context.Context, doc ConfigurationDocument) (ConfigurationDocument, error)
	// Delete removes only that object; an absent object is success.
	Delete(ctx context.Context, ref ConfigurationRef) error
}

// ConfigurationValueError is a Configuration the backend cannot represent: one detail whose Path
// is a JSON Pointer inside values and whose Message is a fixed sentence without the value.
type ConfigurationValueError struct {
	problem.Detail
}

func (e *ConfigurationValueError) Error() string {
	return "driver: configuration value refused at " + pointerOrRoot(e.Path) + ": " + e.Message
}
