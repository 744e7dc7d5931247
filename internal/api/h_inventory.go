package api

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
)

// The Installation's deployment inventory: upstream's shape (Namespaces, each with its Agents),
// paged by Agent in creation order; a Namespace whose Agents span two pages appears in both.

type inventoryView struct {
	InstallationID string                   `json:"installationId"`
	Namespaces     []inventoryNamespaceView `json:"namespaces"`
}

type inventoryNamespaceView struct {
	ID     string               `json:"id"`
	Status string               `json:"status"`
	Agents []inventoryAgentView `json:"agents"`
}

type inventoryAgentView struct {
	ID                   string                 `json:"id"`
	Name                 string                 `json:"name"`
	Status               string                 `json:"status"`
	DesiredRuntimeState  string                 `json:"desiredRuntimeState"`
	ExecutionMode        string                 `json:"executionMode"`
	ActiveRevisionID     *string                `json:"activeRevisionId,omitempty"`
	DeploymentInProgress bool                   `json:"deploymentInProgress"`
	ActiveRevision       *inventoryRevisionView `json:"activeRevision,omitempty"`
}

// inventoryRevisionView is what the active revision pinned at admission and the images its
// runtime runs (ours).
type inventoryRevisionView struct {
	Revision int64             `json:"revision"`
	Harness  json.RawMessage   `json:"harness"`
	Compute  json.RawMessage   `json:"compute"`
	Images   runtimeImagesView `json:"images"`
}

func (s *Server) getDeploymentInventory(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	agents, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.InventoryAgent, error) {
			rows, err := store.ListInventoryAgents(ctx, c.db, keyCursor(after), n)
			if err != nil {
				return nil, platform.Unavailable(err)
			}
			return rows, nil
		},
		keepAll[store.InventoryAgent],
		func(a store.InventoryAgent) cursorDoc { return keyDoc(a.CreatedAt, a.ID) },
		after)
	if err != nil {
		return err
	}
	inProgress, err := deploymentsInProgress(ctx, c, agents)
	if err != nil {
		return err
	}
	view := inventoryView{InstallationID: s.installation.ID, Namespaces: []inventoryNamespaceView{}}
	at := map[string]int{}
	for _, a := range agents {
		i, ok := at[a.NamespaceID]
		if !ok {
			i = len(view.Namespaces)
			at[a.NamespaceID] = i
			view.Namespaces = append(view.Namespaces, inventoryNamespaceView{ID: a.NamespaceID, Status: a.NamespaceStatus,
				Agents: []inventoryAgentView{}})
		}
		v := inventoryAgentView{ID: a.ID, Name: a.Name, Status: a.Status, DesiredRuntimeState: a.DesiredRuntimeState,
			ExecutionMode: a.ExecutionMode, DeploymentInProgress: inProgress[a.LatestRevisionID]}
		if a.ActiveRevisionID != "" {
			id := a.ActiveRevisionID
			v.ActiveRevisionID = &id
			images, err := s.inventoryImages(ctx, c, a)
			if err != nil {
				return err
			}
			v.ActiveRevision = &inventoryRevisionView{Revision: a.ActiveRevisionNumber, Harness: a.Harness, Compute: a.Compute, Images: images}
		}
		view.Namespaces[i].Agents = append(view.Namespaces[i].Agents, v)
	}
	c.respond(0, view)
	c.setNext(next)
	return nil
}

// inventoryImages reads an Agent's observed images. An administrator's inventory is not held to
// the runtime views' per-principal budget; a driver that cannot answer for one Agent leaves that
// Agent's images unavailable rather than failing the whole inventory.
func (s *Server) inventoryImages(ctx context.Context, c *call, a store.InventoryAgent) (runtimeImagesView, error) {
	images, err := s.activeRevisionImages(ctx, c, a.NamespaceID, a.ID, a.ActiveRevisionID, nil)
	var e *platform.Error
	if errors.As(err, &e) && e.Code == platform.CodeDependencyUnavailable && ctx.Err() == nil {
		return runtimeImagesView{Status: runtimeImagesUnavailable, Images: []runtimeImageView{}}, nil
	}
	return images, err
}

// deploymentsInProgress reports, per newest revision, whether its deployment is queued or running.
func deploymentsInProgress(ctx context.Context, c *call, agents []store.InventoryAgent) (map[string]bool, error) {
	var keys []string
	for _, a := range agents {
		if a.LatestRevisionID != "" {
			keys = append(keys, platform.RevisionWorkKey(a.LatestRevisionID))
		}
	}
	out := map[string]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	works, err := store.GetWorks(ctx, c.db, keys)
	if err != nil {
		return nil, platform.Unavailable(err)
	}
	now, err := store.DatabaseNow(ctx, c.db)
	if err != nil {
		return nil, platform.Unavailable(err)
	}
	for _, a := range agents {
		if a.LatestRevisionID == "" {
			continue
		}
		status := platform.DeploymentQueued
		if w, ok := works[platform.RevisionWorkKey(a.LatestRevisionID)]; ok {
			status, _, _, _ = projectDeployment(w, now)
		}
		out[a.LatestRevisionID] = status == platform.DeploymentQueued || status == platform.DeploymentRunning
	}
	return out, nil
}
