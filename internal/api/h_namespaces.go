package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

func namespaceView(n store.Namespace) platform.Namespace {
	return platform.Namespace{ID: n.ID, Name: n.Name, ExistingNamespace: n.ExistingNamespace, Status: n.Status,
		CreatedAt: platform.FormatTime(n.CreatedAt)}
}

// enqueueNamespaceWork queues the Namespace's lifecycle work toward target inside the caller's
// transaction (the worker is notified on commit). An existing row with the same key and owner is
// left as it is (enqueue never revives work); one with another owner is a conflict.
func enqueueNamespaceWork(ctx context.Context, db store.DBTX, namespaceID, actorID, target string) (string, error) {
	key := platform.NamespaceWorkKey(namespaceID, target)
	_, err := queue.Enqueue(ctx, db, queue.EnqueueWork{Key: key, NamespaceID: namespaceID, ActorID: actorID, NamespaceTarget: &target})
	if errors.Is(err, queue.ErrConflict) {
		return "", platform.Conflict("Conflicting work is already queued for this Namespace.")
	}
	return key, err
}

func (s *Server) listNamespaces(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	scope := c.cred.NamespaceScope()
	item, ok := c.route.itemPermission()
	if !ok || item.Kind != iam.KindNamespace {
		return &platform.Error{Problem: problem.Problem{Code: platform.CodeInternalError, Message: platform.MessageInternalError}}
	}
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.Namespace, error) {
			name := ""
			if after != nil {
				name = after.Name
			}
			return store.ListNamespaces(ctx, c.db, name, n)
		},
		// Per item: every Namespace is its own scope, so a batch decision would read once per item
		// anyway.
		keepEach(func(n store.Namespace) (bool, error) {
			if scope != nil && *scope != n.ID {
				return false, nil
			}
			return c.allowed(ctx, item.Action, namespaceResource(n.ID))
		}),
		func(n store.Namespace) cursorDoc { return cursorDoc{Name: n.Name} },
		after)
	if err != nil {
		return err
	}
	views := make([]platform.Namespace, len(items))
	for i, n := range items {
		views[i] = namespaceView(n)
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

type createNamespaceBody struct {
	Name              string  `json:"name"`
	ExistingNamespace *string `json:"existingNamespace"`
}

func (s *Server) createNamespace(ctx context.Context, c *call) error {
	var b createNamespaceBody
	if err := c.decode(&b); err != nil {
		return err
	}
	if b.ExistingNamespace != nil && !s.cfg.AdoptsExistingNamespaces {
		return platform.Conflict("The selected Compute Driver cannot adopt an existing namespace.")
	}
	// The Namespace travels with its work; when its insert fails, PostgreSQL skips the work's.
	id := platform.NewID(platform.PrefixNamespace)
	inserted := store.InsertNamespaceAhead(c.pipe, id, b.Name, b.ExistingNamespace)
	workID, enqueueErr := enqueueNamespaceWork(ctx, c.db, id, c.actorID(), platform.NamespaceTargetReady)
	ns, err := inserted.Result(ctx)
	if err != nil {
		if errors.Is(err, store.ErrDuplicate) {
			if store.RefusedBy(err, store.ConstraintExistingNamespaceLive) {
				return platform.Conflict("The existing namespace is already adopted by another Namespace.")
			}
			return platform.Conflict("The Namespace name is in use or reserved.")
		}
		return platform.Unavailable(err)
	}
	if enqueueErr != nil {
		return enqueueErr
	}
	presetIDs, err := s.seedNewNamespace(ctx, c, id)
	if err != nil {
		return err
	}
	details := map[string]any{"name": b.Name, "workId": workID}
	if len(presetIDs) > 0 {
		details["presetIds"] = presetIDs
	}
	if b.ExistingNamespace != nil {
		details["existingNamespace"] = *b.ExistingNamespace
	}
	res := namespaceResource(id)
	if err := c.audit(ctx, auditEvent(res, details)); err != nil {
		return err
	}
	c.respond(http.StatusCreated, namespaceView(ns))
	return nil
}

func (s *Server) getNamespace(_ context.Context, c *call) error {
	c.respond(0, namespaceView(*c.namespace))
	return nil
}

// deleteNamespace admits the deletion of an empty Namespace: status deleting and the teardown work,
// in one transaction with the audit event. While deleting it is repeat-safe; after a failed
// teardown the initiator's repeat requeues the work, and another permitted caller takes it over
// only when the initiator has lost namespace:delete.
func (s *Server) deleteNamespace(ctx context.Context, c *call) error {
	ns := *c.namespace // locked FOR UPDATE
	res := namespaceResource(ns.ID)
	if ns.Status == platform.NamespaceDeleting {
		return s.repeatNamespaceDeletion(ctx, c, ns)
	}
	// Unchanged default Presets go with the Namespace; a refusal below rolls their removal back.
	removedPresets, err := s.removeUnchangedDefaults(ctx, c, ns.ID)
	if err != nil {
		return err
	}
	contents, err := store.NamespaceContents(ctx, c.db, ns.ID, 8)
	if err != nil {
		return platform.Unavailable(err)
	}
	if len(contents) > 0 {
		refs := make([]platform.ResourceRef, len(contents))
		for i, r := range contents {
			refs[i] = platform.ResourceRef{Kind: r.Kind, ID: r.ID}
		}
		return platform.NewError(platform.CodeNamespaceNotEmpty, platform.NamespaceRemainsMessage(refs))
	}
	if _, err := store.MarkNamespaceDeleting(ctx, c.db, ns.ID); err != nil {
		return platform.Unavailable(err)
	}
	workID, err := enqueueNamespaceWork(ctx, c.db, ns.ID, c.actorID(), platform.NamespaceTargetDeleted)
	if err != nil {
		return err
	}
	details := map[string]any{"workId": workID}
	if len(removedPresets) > 0 {
		details["removedPresetIds"] = removedPresets
	}
	if err := c.audit(ctx, auditEvent(res, details)); err != nil {
		return err
	}
	ns.Status = platform.NamespaceDeleting
	c.respond(http.StatusAccepted, namespaceView(ns))
	return nil
}

func (s *Server) repeatNamespaceDeletion(ctx context.Context, c *call, ns store.Namespace) error {
	res := namespaceResource(ns.ID)
	key := platform.NamespaceWorkKey(ns.ID, platform.NamespaceTargetDeleted)
	work, err := store.GetWorkState(ctx, c.db, key)
	if errors.Is(err, store.ErrNotFound) {
		// A deleting Namespace without its teardown work: queue it again.
		workID, err := enqueueNamespaceWork(ctx, c.db, ns.ID, c.actorID(), platform.NamespaceTargetDeleted)
		if err != nil {
			return err
		}
		if err := c.audit(ctx, auditEvent(res, map[string]any{"workId": workID})); err != nil {
			return err
		}
		c.respond(http.StatusAccepted, namespaceView(ns))
		return nil
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if work.State != "failed_permanent" {
		c.respond(http.StatusAccepted, namespaceView(ns))
		return nil
	}
	takeover := work.ActorID != c.actorID()
	if takeover {
		initiatorMay, err := s.initiatorMayDelete(ctx, c, work.ActorID, res)
		if err != nil {
			return err
		}
		if initiatorMay {
			return c.denyRequest(iam.Request{PrincipalID: c.actorID(), Action: iam.ActionDelete, Resource: res},
				"the deletion belongs to its initiator", "DELETION_OWNED_BY_INITIATOR")
		}
	}
	requeued, err := store.RetryFailedNamespaceDeletion(ctx, c.db, store.RetryFailedNamespaceDeletionParams{
		NamespaceID: ns.ID, InitiatorID: work.ActorID, ActorID: c.actorID()})
	if err != nil {
		return platform.Unavailable(err)
	}
	if requeued {
		details := map[string]any{"workId": key, "initiatingActorId": work.ActorID, "takeover": takeover}
		if err := c.audit(ctx, auditEvent(res, details)); err != nil {
			return err
		}
	}
	c.respond(http.StatusAccepted, namespaceView(ns))
	return nil
}

// initiatorMayDelete asks IAM whether the initiator of a failed teardown still holds
// namespace:delete. An unknown or revoked initiator may not.
func (s *Server) initiatorMayDelete(ctx context.Context, c *call, initiatorID string, res iam.Resource) (bool, error) {
	decision, err := c.iam.Authorize(ctx, iam.Request{PrincipalID: initiatorID, Action: iam.ActionDelete, Resource: res})
	if err != nil {
		return false, platform.Unavailable(err)
	}
	return iam.Allows(decision, s.cfg.IAMDriverID), nil
}
