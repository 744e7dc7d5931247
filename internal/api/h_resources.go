package api

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// Helpers shared by the Namespace-owned resources (Configurations, Secrets, ServiceAccounts,
// Agents).

// nsResource is an exact Namespace-owned resource.
func nsResource(kind, id, namespaceID string) iam.Resource {
	ns := namespaceID
	return iam.Resource{Kind: kind, ID: id, NamespaceID: &ns}
}

// refuseDeletingNamespace keeps new resources out of a Namespace being torn down.
func refuseDeletingNamespace(c *call) error {
	if c.namespace.Status == platform.NamespaceDeleting {
		return platform.Conflict("The Namespace is being deleted.")
	}
	return nil
}

// requireReadyNamespace is the rule of Secret writes and deploys: 409 NAMESPACE_NOT_READY.
func requireReadyNamespace(c *call) error {
	if c.namespace.Status != platform.NamespaceReady {
		return platform.NewError(platform.CodeNamespaceNotReady, "The Namespace is not ready.")
	}
	return nil
}

// referencedMessage is the 409 of a delete refused while references remain: kinds, not ids.
func referencedMessage(what string, kinds []string) *platform.Error {
	names := map[string]string{"configuration": "Configurations", "agent": "Agents",
		"agent_revision": "active or pending AgentRevisions"}
	var parts []string
	for _, k := range kinds {
		if n, ok := names[k]; ok {
			parts = append(parts, n)
		}
	}
	return platform.Conflict("The " + what + " is still referenced by " + strings.Join(parts, ", ") + ".")
}

// secretRefs checks typed Secret references of the request: one naming another Namespace is 400 at
// its path; then every referenced Secret must exist in the Namespace (404). It returns the ids in a
// stable order.
func (s *Server) checkSecretRefs(ctx context.Context, c *call, refs map[string]platform.Ref) ([]string, error) {
	paths := make([]string, 0, len(refs))
	for p := range refs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var details []problem.Detail
	ids := []string{}
	seen := map[string]bool{}
	for _, p := range paths {
		r := refs[p]
		switch {
		case r.Kind != platform.RefKindSecret:
			details = append(details, problem.Detail{Path: p + "/kind", Code: problem.DetailInvalidValue})
		case r.NamespaceID != c.namespace.ID:
			details = append(details, problem.Detail{Path: p + "/namespaceId", Code: problem.DetailInvalidValue})
		case !platform.ValidID(platform.PrefixSecret, r.ID):
			details = append(details, problem.Detail{Path: p + "/id", Code: problem.DetailInvalidFormat})
		case !seen[r.ID]:
			seen[r.ID] = true
			ids = append(ids, r.ID)
		}
	}
	if len(details) > 0 {
		return nil, platform.NewError(platform.CodeInvalidRequest, "A Secret reference must name a Secret of this Namespace.", details...)
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return ids, nil
	}
	found, err := store.ExistingSecrets(ctx, c.db, c.namespace.ID, ids)
	if err != nil {
		return nil, platform.Unavailable(err)
	}
	for _, id := range ids {
		if !found[id] {
			return nil, platform.NotFound("A referenced Secret does not exist in this Namespace.")
		}
	}
	return ids, nil
}

// authorizeSecretsOperate checks secret:operate on every Secret for principal (the caller, or an
// Agent's own ServicePrincipal). A denial is audited like any other.
func (c *call) authorizeSecretsOperate(ctx context.Context, p principal, ids []string) error {
	for _, id := range ids {
		if err := c.authorizeAs(ctx, p, iam.ActionOperate, nsResource(iam.KindSecret, id, c.namespace.ID)); err != nil {
			return err
		}
	}
	return nil
}

// authorizeAs is authorize for another principal (an Agent's own ServicePrincipal at deploy).
func (c *call) authorizeAs(ctx context.Context, p principal, action string, res iam.Resource) error {
	if p.agent == nil {
		return c.authorize(ctx, action, res)
	}
	req := iam.Request{PrincipalID: p.id, Action: action, Resource: res}
	decision, err := c.iam.Authorize(ctx, req)
	if err != nil {
		return platform.Unavailable(err)
	}
	if iam.Allows(decision, c.s.cfg.IAMDriverID) {
		return nil
	}
	return c.explain(ctx, p, req, c.denyRequest(req, "agent principal: "+decision.Reason, "AUTHORIZATION_DENIED"))
}

// rawObject marshals v (nil stays nil).
func rawObject(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}
