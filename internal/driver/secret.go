package driver

import (
	"context"
	"errors"
)

// MaxSecretValueBytes bounds a Secret value (UTF-8 bytes).
const MaxSecretValueBytes = 65536

// ErrSecretNotFound: the backend object of a Secret is missing, or no longer provably owned by it.
var ErrSecretNotFound = errors.New("driver: secret backend object not found")

// SecretIdentity is the OCC identity of a Secret: its id, Namespace and name.
type SecretIdentity struct {
	ID          string
	NamespaceID string
	Name        string
}

// StoredSecret is a Secret with the backend reference its driver returned at creation.
type StoredSecret struct {
	SecretIdentity
	Ref SecretRef
}

// Secret is the Secret Driver contract. Values go in and
// never come back out, except through the optional ValueReader for transient server-side use.
// Errors other than ErrSecretNotFound are dependency failures (the API answers 503). A driver never
// logs, wraps or returns a value.
type Secret interface {
	// ID is the operator's selection id (recorded in Secrets and revisions).
	ID() string
	// Implementation is the compiled-in implementation name ("filesystem", ...).
	Implementation() string
	// Create writes the value for a new Secret and returns a safe backend reference.
	Create(ctx context.Context, identity SecretIdentity, value []byte) (SecretRef, error)
	// Update replaces the value at the stored, owned object (success = stored, not delivered).
	Update(ctx context.Context, secret StoredSecret, value []byte) error
	// Delete removes only the owned object; an absent object is success.
	Delete(ctx context.Context, secret StoredSecret) error
	// Resolve re-verifies live ownership and returns the reference, never the value.
	Resolve(ctx context.Context, secret StoredSecret) (SecretRef, error)
}

// ValueReader is the optional transient use of a value after the ownership check: fn sees the
// value and must not keep it.
type ValueReader interface {
	WithValue(ctx context.Context, secret StoredSecret, fn func(value []byte) error) error
}
