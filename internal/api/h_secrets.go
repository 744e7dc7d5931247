package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// Secrets. Only metadata is ever returned; the value goes to the Secret
// Driver and never appears in a response, an audit event, a revision or a log line.

type secretMetadata struct {
	ID          string         `json:"id"`
	NamespaceID string         `json:"namespaceId"`
	Name        string         `json:"name"`
	Ref         platform.Ref   `json:"ref"`
	Consumers   []consumerView `json:"consumers,omitempty"`
}

type consumerView struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

func secretToView(row store.SecretRow) secretMetadata {
	return secretMetadata{ID: row.ID, NamespaceID: row.NamespaceID, Name: row.Name,
		Ref: platform.Ref{Kind: platform.RefKindSecret, NamespaceID: row.NamespaceID, ID: row.ID}}
}

func storedSecret(row store.SecretRow) driver.StoredSecret {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return driver.StoredSecret{
		SecretIdentity: driver.SecretIdentity{ID: row.ID, NamespaceID: row.NamespaceID, Name: row.Name},
		Ref: driver.SecretRef{NamespaceName: deref(row.BackendNamespaceName), Name: deref(row.BackendName),
			Key: deref(row.BackendKey), UID: deref(row.BackendUID)},
	}
}

func (s *Server) secrets() (driver.Secret, error) {
	if s.cfg.Secrets == nil {
		return nil, platform.Unavailable(errors.New("api: no Secret Driver is available"))
	}
	return s.cfg.Secrets, nil
}

// checkSecretValue applies the value rules beyond the schema: at most 65,536 UTF-8 bytes, no NUL.
func checkSecretValue(v string) error {
	switch {
	case len(v) > driver.MaxSecretValueBytes:
		return platform.Invalid("The Secret value is longer than 65,536 bytes.", "/value", problem.DetailTooLong)
	case v == "" || strings.ContainsRune(v, 0) || !utf8.ValidString(v):
		return platform.Invalid("The Secret value must be non-empty text without NUL.", "/value", problem.DetailInvalidValue)
	}
	return nil
}

func (s *Server) listSecrets(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	ns := c.namespace.ID
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.SecretRow, error) {
			rows, err := store.ListSecrets(ctx, c.db, ns, keyCursor(after), n)
			if err != nil {
				return nil, platform.Unavailable(err)
			}
			return rows, nil
		},
		keepRead(ctx, c, func(row store.SecretRow) iam.Resource { return nsResource(iam.KindSecret, row.ID, ns) }),
		func(row store.SecretRow) cursorDoc { return keyDoc(row.CreatedAt, row.ID) },
		after)
	if err != nil {
		return err
	}
	views := make([]secretMetadata, len(items))
	for i, row := range items {
		views[i] = secretToView(row)
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

type secretInput struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (s *Server) createSecret(ctx context.Context, c *call) error {
	var b secretInput
	if err := c.decode(&b); err != nil {
		return err
	}
	if err := checkSecretValue(b.Value); err != nil {
		return err
	}
	if err := requireReadyNamespace(c); err != nil {
		return err
	}
	secrets, err := s.secrets()
	if err != nil {
		return err
	}
	identity := driver.SecretIdentity{ID: platform.NewID(platform.PrefixSecret), NamespaceID: c.namespace.ID, Name: b.Name}
	ref, err := secrets.Create(ctx, identity, []byte(b.Value))
	if err != nil {
		return platform.Unavailable(err)
	}
	stored := driver.StoredSecret{SecretIdentity: identity, Ref: ref}
	c.onRollback(func(ctx context.Context) { _ = secrets.Delete(ctx, stored) })
	row, err := store.InsertSecret(ctx, c.db, store.SecretRow{ID: identity.ID, NamespaceID: identity.NamespaceID, Name: b.Name,
		DriverID: secrets.ID(), BackendNamespaceName: &ref.NamespaceName, BackendName: &ref.Name, BackendKey: &ref.Key, BackendUID: &ref.UID})
	if err != nil {
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindSecret, row.ID, row.NamespaceID), map[string]any{"name": row.Name})); err != nil {
		return err
	}
	c.respond(http.StatusCreated, secretToView(row))
	return nil
}

// pathSecret reads the path's Secret (404) and checks action on it (403).
func (s *Server) pathSecret(ctx context.Context, c *call, action string, lock store.RowLock) (store.SecretRow, error) {
	row, err := store.GetSecret(ctx, c.db, c.namespace.ID, c.params["secretId"], lock)
	if errors.Is(err, store.ErrNotFound) {
		return row, platform.NotFound("The Secret does not exist in this Namespace.")
	} else if err != nil {
		return row, platform.Unavailable(err)
	}
	if err := c.authorize(ctx, action, nsResource(iam.KindSecret, row.ID, row.NamespaceID)); err != nil {
		return row, err
	}
	return row, nil
}

// getSecret reports the metadata and the consumers the caller may read; it never calls the driver.
func (s *Server) getSecret(ctx context.Context, c *call) error {
	row, err := s.pathSecret(ctx, c, iam.ActionRead, store.NoLock)
	if err != nil {
		return err
	}
	consumers, err := store.SecretConsumers(ctx, c.db, row.NamespaceID, row.ID)
	if err != nil {
		return platform.Unavailable(err)
	}
	view := secretToView(row)
	view.Consumers = []consumerView{}
	for _, cons := range consumers {
		ok, err := c.allowed(ctx, iam.ActionRead, nsResource(cons.Kind, cons.ID, row.NamespaceID))
		if err != nil {
			return err
		}
		if ok {
			view.Consumers = append(view.Consumers, consumerView{Kind: cons.Kind, ID: cons.ID})
		}
	}
	c.respond(0, view)
	return nil
}

func (s *Server) patchSecret(ctx context.Context, c *call) error {
	var b secretInput
	if err := c.decode(&b); err != nil {
		return err
	}
	row, err := s.pathSecret(ctx, c, iam.ActionUpdate, store.LockUpdate)
	if err != nil {
		return err
	}
	if err := checkSecretValue(b.Value); err != nil {
		return err
	}
	if err := requireReadyNamespace(c); err != nil {
		return err
	}
	secrets, err := s.secrets()
	if err != nil {
		return err
	}
	if row.DriverID != secrets.ID() {
		return platform.Conflict("The Secret belongs to another Secret Driver.")
	}
	if err := store.TouchSecret(ctx, c.db, row.NamespaceID, row.ID); err != nil {
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindSecret, row.ID, row.NamespaceID), map[string]any{"name": row.Name})); err != nil {
		return err
	}
	if err := secrets.Update(ctx, storedSecret(row), []byte(b.Value)); err != nil {
		return platform.Unavailable(err)
	}
	c.respond(0, secretToView(row))
	return nil
}

func (s *Server) deleteSecret(ctx context.Context, c *call) error {
	row, err := s.pathSecret(ctx, c, iam.ActionDelete, store.LockUpdate)
	if err != nil {
		return err
	}
	refs, err := store.SecretReferences(ctx, c.db, row.NamespaceID, row.ID)
	if err != nil {
		return platform.Unavailable(err)
	}
	if len(refs) > 0 {
		return referencedMessage("Secret", refs)
	}
	secrets, err := s.secrets()
	if err != nil {
		return err
	}
	removed, err := store.RemoveTargetBindings(ctx, c.db, store.NamespaceResource{NamespaceID: row.NamespaceID, Kind: iam.KindSecret, ID: row.ID})
	if err != nil {
		return platform.Unavailable(err)
	}
	if _, err := store.DeleteSecret(ctx, c.db, row.NamespaceID, row.ID); err != nil {
		if errors.Is(err, store.ErrForeignKey) {
			return platform.Conflict("The Secret is still referenced by Agents.")
		}
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindSecret, row.ID, row.NamespaceID),
		map[string]any{"name": row.Name, "removedAccessBindings": removed})); err != nil {
		return err
	}
	stored := storedSecret(row)
	c.onCommit(func(ctx context.Context) {
		if row.DriverID != secrets.ID() {
			return
		}
		if err := secrets.Delete(ctx, stored); err != nil {
			s.log.Warn("http.dependency_unavailable", "requestId", c.requestID, "code", platform.CodeDependencyUnavailable,
				"dependency", "secret-driver", "operation", "secret.delete", "namespaceId", row.NamespaceID)
		}
	})
	c.respond(http.StatusNoContent, nil)
	return nil
}
