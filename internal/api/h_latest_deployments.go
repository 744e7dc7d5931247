package api

import (
	"context"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
)

// latestDeploymentView is one Agent's newest revision and its deployment status: what a list of
// Agents shows next to each one, read in one request instead of two per Agent.
type latestDeploymentView struct {
	AgentID      string           `json:"agentId"`
	DeploymentID string           `json:"deploymentId"`
	Revision     int64            `json:"revision"`
	Status       string           `json:"status"`
	Error        *deploymentError `json:"error"`
}

// listLatestDeployments lists, in Agent creation order, the newest revision of every Agent of the
// Namespace whose revision the caller may read (agent_revision:read), with the status projection
// of GET …/deployments/{id} (without progress). Agents without a revision are left out.
func (s *Server) listLatestDeployments(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	ns := c.namespace.ID
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.LatestRevision, error) {
			rows, err := store.ListLatestRevisions(ctx, c.db, ns, keyCursor(after), n)
			if err != nil {
				return nil, platform.Unavailable(err)
			}
			return rows, nil
		},
		func(batch []store.LatestRevision) ([]bool, error) {
			verdicts := make([]bool, len(batch))
			var resources []iam.Resource
			var index []int
			for i, l := range batch {
				if l.RevisionID != "" {
					resources = append(resources, nsResource(iam.KindAgentRevision, l.RevisionID, ns))
					index = append(index, i)
				}
			}
			if len(resources) == 0 {
				return verdicts, nil
			}
			allowed, err := c.allowedEach(ctx, iam.ActionRead, resources)
			if err != nil {
				return nil, err
			}
			for j, ok := range allowed {
				verdicts[index[j]] = ok
			}
			return verdicts, nil
		},
		func(l store.LatestRevision) cursorDoc { return keyDoc(l.AgentCreatedAt, l.AgentID) },
		after)
	if err != nil {
		return err
	}
	views := make([]latestDeploymentView, 0, len(items))
	if len(items) > 0 {
		keys := make([]string, len(items))
		for i, l := range items {
			keys[i] = platform.RevisionWorkKey(l.RevisionID)
		}
		works, err := store.GetWorks(ctx, c.db, keys)
		if err != nil {
			return platform.Unavailable(err)
		}
		now, err := store.DatabaseNow(ctx, c.db)
		if err != nil {
			return platform.Unavailable(err)
		}
		for i, l := range items {
			v := latestDeploymentView{AgentID: l.AgentID, DeploymentID: l.RevisionID, Revision: l.Number, Status: platform.DeploymentQueued}
			if w, ok := works[keys[i]]; ok {
				v.Status, _, v.Error, _ = projectDeployment(w, now)
			}
			views = append(views, v)
		}
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}
