package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
)

// ServiceAccounts: OCC-owned upstream-credential holders, not IAM identities.
// Only native credentials exist here: a reference to a Kubernetes Secret key in the Namespace's
// backing namespace, set with PATCH …/credential.

type serviceAccountCredential struct {
	Kind      string `json:"kind"`
	SecretRef *struct {
		Name string `json:"name"`
		Key  string `json:"key"`
	} `json:"secretRef,omitempty"`
}

type serviceAccountView struct {
	ID          string                    `json:"id"`
	NamespaceID string                    `json:"namespaceId"`
	Name        string                    `json:"name"`
	Credential  *serviceAccountCredential `json:"credential,omitempty"`
	CreatedAt   string                    `json:"createdAt"`
}

func serviceAccountToView(row store.ServiceAccountRow) serviceAccountView {
	v := serviceAccountView{ID: row.ID, NamespaceID: row.NamespaceID, Name: row.Name, CreatedAt: platform.FormatTime(row.CreatedAt)}
	if len(row.Credential) > 0 {
		var cred serviceAccountCredential
		if json.Unmarshal(row.Credential, &cred) == nil {
			v.Credential = &cred
		}
	}
	return v
}

func (s *Server) listServiceAccounts(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	ns := c.namespace.ID
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.ServiceAccountRow, error) {
			rows, err := store.ListServiceAccounts(ctx, c.db, ns, keyCursor(after), n)
			if err != nil {
				return nil, platform.Unavailable(err)
			}
			return rows, nil
		},
		keepRead(ctx, c, func(row store.ServiceAccountRow) iam.Resource {
			return nsResource(iam.KindServiceAccount, row.ID, ns)
		}),
		func(row store.ServiceAccountRow) cursorDoc { return keyDoc(row.CreatedAt, row.ID) },
		after)
	if err != nil {
		return err
	}
	views := make([]serviceAccountView, len(items))
	for i, row := range items {
		views[i] = serviceAccountToView(row)
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

func (s *Server) createServiceAccount(ctx context.Context, c *call) error {
	var b struct {
		Name string `json:"name"`
	}
	if err := c.decode(&b); err != nil {
		return err
	}
	if st := c.namespace.Status; st != platform.NamespaceProvisioning && st != platform.NamespaceReady {
		return platform.Conflict("The Namespace does not accept new ServiceAccounts.")
	}
	row, err := store.InsertServiceAccount(ctx, c.db, store.InsertServiceAccountParams{
		NamespaceID: c.namespace.ID, ID: platform.NewID(platform.PrefixServiceAccount), Name: b.Name})
	if errors.Is(err, store.ErrDuplicate) {
		return platform.Conflict("A ServiceAccount with this name exists in the Namespace.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindServiceAccount, row.ID, row.NamespaceID), map[string]any{"name": row.Name})); err != nil {
		return err
	}
	c.respond(http.StatusCreated, serviceAccountToView(row))
	return nil
}

func (s *Server) pathServiceAccount(ctx context.Context, c *call, action string, lock store.RowLock) (store.ServiceAccountRow, error) {
	row, err := store.GetServiceAccount(ctx, c.db, c.namespace.ID, c.params["serviceAccountId"], lock)
	if errors.Is(err, store.ErrNotFound) {
		return row, platform.NotFound("The ServiceAccount does not exist in this Namespace.")
	} else if err != nil {
		return row, platform.Unavailable(err)
	}
	if err := c.authorize(ctx, action, nsResource(iam.KindServiceAccount, row.ID, row.NamespaceID)); err != nil {
		return row, err
	}
	return row, nil
}

func (s *Server) getServiceAccount(ctx context.Context, c *call) error {
	row, err := s.pathServiceAccount(ctx, c, iam.ActionRead, store.NoLock)
	if err != nil {
		return err
	}
	c.respond(0, serviceAccountToView(row))
	return nil
}

func (s *Server) setServiceAccountCredential(ctx context.Context, c *call) error {
	var b serviceAccountCredential
	if err := c.decode(&b); err != nil {
		return err
	}
	row, err := s.pathServiceAccount(ctx, c, iam.ActionUpdate, store.LockUpdate)
	if err != nil {
		return err
	}
	if err := refuseDeletingNamespace(c); err != nil {
		return err
	}
	updated, err := store.SetServiceAccountCredential(ctx, c.db, row.NamespaceID, row.ID, rawObject(b))
	if err != nil {
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindServiceAccount, row.ID, row.NamespaceID),
		map[string]any{"credentialKind": b.Kind, "secretRefName": b.SecretRef.Name})); err != nil {
		return err
	}
	c.respond(0, serviceAccountToView(updated))
	return nil
}

func (s *Server) deleteServiceAccount(ctx context.Context, c *call) error {
	row, err := s.pathServiceAccount(ctx, c, iam.ActionDelete, store.LockUpdate)
	if err != nil {
		return err
	}
	refs, err := store.ServiceAccountReferences(ctx, c.db, row.NamespaceID, row.ID)
	if err != nil {
		return platform.Unavailable(err)
	}
	if len(refs) > 0 {
		return referencedMessage("ServiceAccount", refs)
	}
	removed, err := store.RemoveTargetBindings(ctx, c.db, store.NamespaceResource{NamespaceID: row.NamespaceID, Kind: iam.KindServiceAccount, ID: row.ID})
	if err != nil {
		return platform.Unavailable(err)
	}
	if _, err := store.DeleteServiceAccount(ctx, c.db, row.NamespaceID, row.ID); err != nil {
		if errors.Is(err, store.ErrForeignKey) {
			return platform.Conflict("The ServiceAccount is still referenced by Agents.")
		}
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindServiceAccount, row.ID, row.NamespaceID),
		map[string]any{"name": row.Name, "removedAccessBindings": removed})); err != nil {
		return err
	}
	c.respond(http.StatusNoContent, nil)
	return nil
}
