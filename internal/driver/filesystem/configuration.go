package filesystem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/problem"
)

// MaxConfigurationBytes bounds a stored document (the Kubernetes ConfigMap limit).
const MaxConfigurationBytes = 1 << 20

// DefaultConfigurationID is the selection id development uses without a startup YAML.
const DefaultConfigurationID = "configuration-filesystem"

// Configurations is the filesystem Configuration Driver:
// <root>/<namespaceId>/<configurationId>.json holds the whole Configuration object as JSON.
type Configurations struct {
	id   string
	root string
}

var _ driver.Configuration = (*Configurations)(nil)

// ConfigurationSchema is the closed schema of the driver's configuration: {root}.
func ConfigurationSchema() driver.ObjectSchema {
	return configurationSchema("The filesystem Configuration Driver.")
}

// NewConfigurations builds the driver selected as id from its validated configuration {root}.
// The root is created on first write.
func NewConfigurations(id string, configuration map[string]any) (*Configurations, error) {
	if err := ConfigurationSchema().Validate(configuration); err != nil {
		return nil, err
	}
	root, err := rootOf(configuration)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, errors.New("filesystem: empty configuration driver id")
	}
	return &Configurations{id: id, root: root}, nil
}

// ID implements driver.Configuration.
func (c *Configurations) ID() string { return c.id }

// Implementation implements driver.Configuration.
func (c *Configurations) Implementation() string { return Name }

func (c *Configurations) location(ref driver.ConfigurationRef) (dir, name string, err error) {
	if err := checkID("ns", ref.NamespaceID); err != nil {
		return "", "", err
	}
	if err := checkID("cfg", ref.ID); err != nil {
		return "", "", err
	}
	return filepath.Join(c.root, ref.NamespaceID), ref.ID + ".json", nil
}

// Validate implements driver.Configuration: values must be a JSON object and the stored document
// must stay under 1 MiB.
func (c *Configurations) Validate(_ context.Context, doc driver.ConfigurationDocument) error {
	trimmed := bytes.TrimSpace(doc.Values)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return &driver.ConfigurationValueError{Detail: problem.Detail{Path: "", Code: problem.DetailInvalidType, Message: "The values must be a JSON object."}}
	}
	data, err := encode(doc)
	if err != nil {
		return &driver.ConfigurationValueError{Detail: problem.Detail{Path: "", Code: problem.DetailInvalidValue, Message: "The values cannot be stored."}}
	}
	if len(data) > MaxConfigurationBytes {
		return &driver.ConfigurationValueError{Detail: problem.Detail{Path: "", Code: problem.DetailTooLong, Message: "The Configuration is larger than 1 MiB."}}
	}
	return nil
}

func encode(doc driver.ConfigurationDocument) ([]byte, error) {
	doc.CreatedAt = doc.CreatedAt.UTC()
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func (c *Configurations) write(ctx context.Context, doc driver.ConfigurationDocument) (driver.ConfigurationDocument, error) {
	if err := ctx.Err(); err != nil {
		return driver.ConfigurationDocument{}, err
	}
	if doc.Kind != driver.ConfigurationKindAgent || doc.Generation < 1 {
		return driver.ConfigurationDocument{}, errors.New("filesystem: invalid configuration metadata")
	}
	if err := c.Validate(ctx, doc); err != nil {
		return driver.ConfigurationDocument{}, err
	}
	dir, name, err := c.location(doc.Ref())
	if err != nil {
		return driver.ConfigurationDocument{}, err
	}
	data, err := encode(doc)
	if err != nil {
		return driver.ConfigurationDocument{}, err
	}
	if err := writeAtomic(dir, name, data); err != nil {
		return driver.ConfigurationDocument{}, err
	}
	return doc, nil
}

// Create implements driver.Configuration.
func (c *Configurations) Create(ctx context.Context, doc driver.ConfigurationDocument) (driver.ConfigurationDocument, error) {
	return c.write(ctx, doc)
}

// Read implements driver.Configuration; the stored id and Namespace must equal the reference.
func (c *Configurations) Read(ctx context.Context, ref driver.ConfigurationRef) (driver.ConfigurationDocument, error) {
	if err := ctx.Err(); err != nil {
		return driver.ConfigurationDocument{}, err
	}
	dir, name, err := c.location(ref)
	if err != nil {
		return driver.ConfigurationDocument{}, err
	}
	data, err := readFile(filepath.Join(dir, name), driver.ErrConfigurationNotFound)
	if err != nil {
		return driver.ConfigurationDocument{}, err
	}
	var doc driver.ConfigurationDocument
	if err := json.Unmarshal(data, &doc); err != nil {
		return driver.ConfigurationDocument{}, fmt.Errorf("filesystem: stored configuration unreadable")
	}
	if doc.ID != ref.ID || doc.NamespaceID != ref.NamespaceID {
		return driver.ConfigurationDocument{}, driver.ErrConfigurationNotFound
	}
	return doc, nil
}

// Update implements driver.Configuration: read, check identity, kind, creation time and the
// generation step, then replace.
func (c *Configurations) Update(ctx context.Context, doc driver.ConfigurationDocument) (driver.ConfigurationDocument, error) {
	old, err := c.Read(ctx, doc.Ref())
	if err != nil {
		return driver.ConfigurationDocument{}, err
	}
	step := doc.Generation - old.Generation
	if old.Kind != doc.Kind || !old.CreatedAt.Equal(doc.CreatedAt) || (step != 1 && step != -1) {
		return driver.ConfigurationDocument{}, errors.New("filesystem: configuration update changes immutable metadata")
	}
	return c.write(ctx, doc)
}

// Delete implements driver.Configuration: read (ownership), then remove.
func (c *Configurations) Delete(ctx context.Context, ref driver.ConfigurationRef) error {
	if _, err := c.Read(ctx, ref); errors.Is(err, driver.ErrConfigurationNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	dir, name, err := c.location(ref)
	if err != nil {
		return err
	}
	return removeFile(filepath.Join(dir, name))
}
