package filesystem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
)

// DefaultSecretID is the selection id development uses without a startup YAML.
const DefaultSecretID = "secret-filesystem"

// secretKey is the key of every reference this driver returns.
const secretKey = "value"

// Secrets is the development-only filesystem Secret Driver: <root>/<namespaceId>/<secretId>.json
// holds the Secret's identity, the owner token (uid) and the value.
type Secrets struct {
	id   string
	root string
}

var (
	_ driver.Secret      = (*Secrets)(nil)
	_ driver.ValueReader = (*Secrets)(nil)
)

// SecretSchema is the closed schema of the driver's configuration: {root}.
func SecretSchema() driver.ObjectSchema {
	return configurationSchema("The development-only filesystem Secret Driver.")
}

// NewSecrets builds the driver selected as id. It refuses production (the values lie in plain
// files).
func NewSecrets(id string, configuration map[string]any, env driver.Environment) (*Secrets, error) {
	if env.Production {
		return nil, &driver.ImplementationUnavailableError{Implementation: Name, Code: driver.CodeDriverUnavailableInProduction}
	}
	if err := SecretSchema().Validate(configuration); err != nil {
		return nil, err
	}
	root, err := rootOf(configuration)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, errors.New("filesystem: empty secret driver id")
	}
	return &Secrets{id: id, root: root}, nil
}

// ID implements driver.Secret.
func (s *Secrets) ID() string { return s.id }

// Implementation implements driver.Secret.
func (s *Secrets) Implementation() string { return Name }

type storedSecret struct {
	ID          string `json:"id"`
	NamespaceID string `json:"namespaceId"`
	Name        string `json:"name"`
	DriverID    string `json:"driverId"`
	UID         string `json:"uid"`
	Value       []byte `json:"value"`
}

func (s *Secrets) location(identity driver.SecretIdentity) (dir, name string, err error) {
	if err := checkID("ns", identity.NamespaceID); err != nil {
		return "", "", err
	}
	if err := checkID("sec", identity.ID); err != nil {
		return "", "", err
	}
	return filepath.Join(s.root, identity.NamespaceID), identity.ID + ".json", nil
}

func (s *Secrets) write(dir, name string, rec storedSecret) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return errors.New("filesystem: secret not encodable")
	}
	return writeAtomic(dir, name, append(data, '\n'))
}

// Create implements driver.Secret.
func (s *Secrets) Create(ctx context.Context, identity driver.SecretIdentity, value []byte) (driver.SecretRef, error) {
	if err := ctx.Err(); err != nil {
		return driver.SecretRef{}, err
	}
	dir, name, err := s.location(identity)
	if err != nil {
		return driver.SecretRef{}, err
	}
	rec := storedSecret{ID: identity.ID, NamespaceID: identity.NamespaceID, Name: identity.Name, DriverID: s.id,
		UID: uuid.NewString(), Value: value}
	if err := s.write(dir, name, rec); err != nil {
		return driver.SecretRef{}, errors.New("filesystem: secret not written")
	}
	return driver.SecretRef{NamespaceName: identity.NamespaceID, Name: name, Key: secretKey, UID: rec.UID}, nil
}

// owned reads the stored record and proves it belongs to secret: identity, driver, location and
// owner token must all match.
func (s *Secrets) owned(ctx context.Context, secret driver.StoredSecret) (storedSecret, string, string, error) {
	if err := ctx.Err(); err != nil {
		return storedSecret{}, "", "", err
	}
	dir, name, err := s.location(secret.SecretIdentity)
	if err != nil {
		return storedSecret{}, "", "", err
	}
	data, err := readFile(filepath.Join(dir, name), driver.ErrSecretNotFound)
	if err != nil {
		return storedSecret{}, "", "", err
	}
	var rec storedSecret
	if json.Unmarshal(data, &rec) != nil {
		return storedSecret{}, "", "", fmt.Errorf("filesystem: stored secret unreadable")
	}
	ref := secret.Ref
	if rec.ID != secret.ID || rec.NamespaceID != secret.NamespaceID || rec.DriverID != s.id || rec.UID != ref.UID ||
		ref.NamespaceName != secret.NamespaceID || ref.Name != name || ref.Key != secretKey {
		return storedSecret{}, "", "", driver.ErrSecretNotFound
	}
	return rec, dir, name, nil
}

// Update implements driver.Secret.
func (s *Secrets) Update(ctx context.Context, secret driver.StoredSecret, value []byte) error {
	rec, dir, name, err := s.owned(ctx, secret)
	if err != nil {
		return err
	}
	rec.Value = value
	if err := s.write(dir, name, rec); err != nil {
		return errors.New("filesystem: secret not written")
	}
	return nil
}

// Delete implements driver.Secret.
func (s *Secrets) Delete(ctx context.Context, secret driver.StoredSecret) error {
	_, dir, name, err := s.owned(ctx, secret)
	if errors.Is(err, driver.ErrSecretNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	return removeFile(filepath.Join(dir, name))
}

// Resolve implements driver.Secret.
func (s *Secrets) Resolve(ctx context.Context, secret driver.StoredSecret) (driver.SecretRef, error) {
	if _, _, _, err := s.owned(ctx, secret); err != nil {
		return driver.SecretRef{}, err
	}
	return secret.Ref, nil
}

// WithValue implements driver.ValueReader.
func (s *Secrets) WithValue(ctx context.Context, secret driver.StoredSecret, fn func([]byte) error) error {
	rec, _, _, err := s.owned(ctx, secret)
	if err != nil {
		return err
	}
	return fn(rec.Value)
}
