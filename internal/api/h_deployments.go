package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Deploy, revisions and deployment status.

type revisionView struct {
	ID                      string                            `json:"id"`
	NamespaceID             string                            `json:"namespaceId"`
	AgentID                 string                            `json:"agentId"`
	Revision                int64                             `json:"revision"`
	BackendID               *string                           `json:"backendId"`
	ConfigurationID         string                            `json:"configurationId,omitempty"`
	ConfigurationKind       string                            `json:"configurationKind,omitempty"`
	ConfigurationGeneration int64                             `json:"configurationGeneration,omitempty"`
	Configuration           json.RawMessage                   `json:"configuration,omitempty"`
	Harness                 *platform.HarnessDescriptor       `json:"harness,omitempty"`
	Compute                 *platform.ComputeSelection        `json:"compute,omitempty"`
	SecretDriverID          string                            `json:"secretDriverId,omitempty"`
	SecretBindings          map[string]platform.SecretBinding `json:"secretBindings,omitempty"`
	HarnessAuth             *platform.HarnessAuth             `json:"harnessAuth,omitempty"`
	CreatedAt               string                            `json:"createdAt"`
	ConfigurationReadError  *readError                        `json:"configurationReadError,omitempty"`
}

func revisionToView(r store.RevisionRow) revisionView {
	v := revisionView{ID: r.ID, NamespaceID: r.NamespaceID, AgentID: r.AgentID, Revision: r.Number,
		CreatedAt: platform.FormatTime(r.AdmittedAt)}
	spec, err := platform.DecodeRevisionSpec(r.AdmittedSpec)
	if err != nil {
		v.ConfigurationReadError = &readError{Code: "SAVED_CONFIGURATION_UNREADABLE", Field: "configuration"}
		return v
	}
	v.BackendID = spec.BackendID
	v.ConfigurationID, v.ConfigurationKind, v.ConfigurationGeneration = spec.ConfigurationID, spec.ConfigurationKind, spec.ConfigurationGeneration
	v.Configuration = spec.Configuration
	v.Harness, v.Compute, v.HarnessAuth = &spec.Harness, &spec.Compute, &spec.HarnessAuth
	v.SecretDriverID, v.SecretBindings = spec.SecretDriverID, spec.SecretBindings
	return v
}

// deployAgent admits an immutable revision, in one transaction with the Namespace locked before
// the Agent (the Namespace FOR SHARE, so deploys of different Agents run side by side; the Agent
// FOR UPDATE, so its revision numbers are taken one at a time): the Namespace must be ready; the caller needs agent:deploy,
// configuration:read, service_account:read on a ServiceAccount source, and secret:operate on every
// Secret the revision consumes — and so does the Agent's own ServicePrincipal; the selected Compute
// Driver must support the Harness authentication. The revision snapshots the Configuration's
// current document from the Configuration Driver, the pinned Harness descriptor, the Compute
// selection, the Secret references and the Secret Driver id (references only, never values). The
// Agent's desired state becomes running and the work agent_revision:<rev>:reconcile is queued.
func (s *Server) deployAgent(ctx context.Context, c *call) error {
	a, err := s.pathAgent(ctx, c, iam.ActionDeploy, store.LockUpdate)
	if err != nil {
		return err
	}
	// The first revision takes the files staged at creation, and the staging row goes with it (a
	// refusal below rolls that back); they travel with the Configuration's read.
	staged := store.TakeInitialWorkspaceFilesAhead(c.pipe, a.NamespaceID, a.ID)
	cfg, err := s.agentConfiguration(ctx, c, a.ConfigurationID)
	if err != nil {
		return err
	}
	var ha *platform.HarnessAuth
	if len(a.HarnessAuth) > 0 {
		decoded, err := decodeHarnessAuth(a.HarnessAuth)
		if err != nil {
			return platform.Conflict("The Agent's saved Harness authentication cannot be read; update the Agent.")
		}
		ha = &decoded
	}
	bindings := map[string]platform.SecretBinding{}
	if len(cfg.SecretBindings) > 0 {
		if err := json.Unmarshal(cfg.SecretBindings, &bindings); err != nil {
			return platform.Conflict("The Configuration's saved secretBindings cannot be read; update the Configuration.")
		}
	}
	secretIDs := bindingSecretIDs(bindings)
	for _, p := range []principal{c.self(), agentPrincipal(a)} {
		if err := c.authorizeHarnessSource(ctx, p, ha); err != nil {
			return err
		}
		if err := c.authorizeSecretsOperate(ctx, p, secretIDs); err != nil {
			return err
		}
	}
	if err := requireReadyNamespace(c); err != nil {
		return err
	}
	if err := refuseDeletingAgent(a); err != nil {
		return err
	}
	if ha == nil {
		return platform.Conflict("The Agent has no Harness authentication; set harnessAuth before deploying.")
	}
	harness, ok := platform.PinnedHarnesses[a.ExecutionMode]
	if !ok {
		return platform.Conflict("The Agent's execution mode has no pinned Harness.")
	}
	compute := s.cfg.Compute
	if compute == nil {
		return platform.Unavailable(errors.New("api: no Compute Driver is selected"))
	}
	if !driver.SupportsHarnessAuth(compute, ha.Method) {
		way := "select a Compute Driver that can deploy Agents."
		if driver.SupportsHarnessAuth(compute, platform.HarnessAuthAPIKey) {
			way = "bind an api_key Secret in the Agent's harnessAuth and deploy again."
		}
		return platform.NewError(platform.CodeHarnessAuthUnsupported,
			"The selected Compute Driver ("+compute.Implementation()+") does not support Harness authentication method "+
				ha.Method+"; "+way)
	}
	cfgs, err := s.configurations()
	if err != nil {
		return err
	}
	secretDriverID := ""
	if s.cfg.Secrets != nil {
		secretDriverID = s.cfg.Secrets.ID()
	} else if len(secretIDs) > 0 || (ha.Source != nil && ha.Source.Kind == platform.RefKindSecret) {
		return platform.Unavailable(errors.New("api: no Secret Driver is available"))
	}
	doc, err := readValues(ctx, cfgs, cfg)
	if err != nil {
		return err
	}
	spec := platform.RevisionSpec{
		ConfigurationID: cfg.ID, ConfigurationKind: cfg.Kind, ConfigurationGeneration: cfg.Generation,
		Configuration: doc.Values, Harness: harness,
		Compute:            platform.ComputeSelection{ID: compute.ID(), Implementation: compute.Implementation()},
		ServicePrincipalID: a.ServicePrincipalID, BackendID: nil, HarnessAuth: *ha,
		SecretDriverID: secretDriverID,
	}
	if len(bindings) > 0 {
		spec.SecretBindings = bindings
	}
	files, err := staged.Result(ctx)
	if err != nil {
		return platform.Unavailable(err)
	}
	if files != nil {
		if err := json.Unmarshal(files, &spec.InitialWorkspaceFiles); err != nil {
			return platform.Unavailable(err)
		}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return platform.Unavailable(err)
	}
	// The revision, the desired state and the work go in one round trip; a failure skips what
	// follows it, so the first failure is the one reported.
	revID := platform.NewID(platform.PrefixRevision)
	inserted := store.InsertRevisionAhead(c.pipe, store.InsertRevisionParams{
		NamespaceID: a.NamespaceID, AgentID: a.ID, ID: revID, Spec: raw})
	desired := store.SetAgentDesiredStateAhead(c.pipe, store.SetAgentDesiredStateParams{
		NamespaceID: a.NamespaceID, AgentID: a.ID, State: platform.RuntimeRunning})
	key := platform.RevisionWorkKey(revID)
	enqueueErr := enqueue(ctx, c, queue.EnqueueWork{Key: key, NamespaceID: a.NamespaceID, ActorID: c.actorID(),
		AgentID: &a.ID, RevisionID: &revID})
	rev, err := inserted.Result(ctx)
	if err != nil {
		return platform.Unavailable(err)
	}
	if _, err := desired.Result(ctx); err != nil {
		return platform.Unavailable(err)
	}
	if enqueueErr != nil {
		return enqueueErr
	}
	details := map[string]any{"revisionId": rev.ID, "revision": rev.Number, "workId": key,
		"configurationId": cfg.ID, "configurationGeneration": cfg.Generation, "harnessAuthMethod": ha.Method,
		"computeDriverId": compute.ID(), "secretIds": secretIDs}
	if files != nil {
		details["initialWorkspaceFiles"] = true // applied by this revision; never their content
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindAgent, a.ID, a.NamespaceID), details)); err != nil {
		return err
	}
	c.respond(http.StatusAccepted, revisionToView(rev))
	return nil
}

// pathRevision reads the path's revision of the path's Agent (404) and checks
// agent_revision:read on it (403).
func (s *Server) pathRevision(ctx context.Context, c *call, param string) (store.RevisionRow, error) {
	rev, err := store.GetRevision(ctx, c.db, store.GetRevisionParams{
		NamespaceID: c.namespace.ID, AgentID: c.params["agentId"], ID: c.params[param]})
	if errors.Is(err, store.ErrNotFound) {
		return rev, platform.NotFound("The revision does not exist for this Agent.")
	} else if err != nil {
		return rev, platform.Unavailable(err)
	}
	if err := c.authorize(ctx, iam.ActionRead, nsResource(iam.KindAgentRevision, rev.ID, rev.NamespaceID)); err != nil {
		return rev, err
	}
	return rev, nil
}

func (s *Server) listRevisions(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	a, err := s.pathAgent(ctx, c, iam.ActionRead, store.NoLock)
	if err != nil {
		return err
	}
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.RevisionRow, error) {
			var from int64
			if after != nil {
				from = after.Micro
			}
			rows, err := store.ListRevisions(ctx, c.db, a.NamespaceID, a.ID, from, n)
			if err != nil {
				return nil, platform.Unavailable(err)
			}
			return rows, nil
		},
		keepRead(ctx, c, func(r store.RevisionRow) iam.Resource {
			return nsResource(iam.KindAgentRevision, r.ID, r.NamespaceID)
		}),
		func(r store.RevisionRow) cursorDoc { return cursorDoc{Micro: r.Number} },
		after)
	if err != nil {
		return err
	}
	views := make([]revisionView, len(items))
	for i, r := range items {
		views[i] = revisionToView(r)
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

func (s *Server) getRevision(ctx context.Context, c *call) error {
	rev, err := s.pathRevision(ctx, c, "revisionId")
	if err != nil {
		return err
	}
	c.respond(0, revisionToView(rev))
	return nil
}

type deploymentView struct {
	DeploymentID string              `json:"deploymentId"`
	NamespaceID  string              `json:"namespaceId"`
	AgentID      string              `json:"agentId"`
	Status       string              `json:"status"`
	Progress     *deploymentProgress `json:"progress"`
	Error        *deploymentError    `json:"error"`
	Warnings     []deploymentWarning `json:"warnings"`
}

type deploymentProgress struct {
	LastAttempt   *deploymentAttempt `json:"lastAttempt"`
	NextAttemptAt *string            `json:"nextAttemptAt"`
}

type deploymentAttempt struct {
	At      string `json:"at"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

type deploymentError struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

type deploymentWarning struct {
	Code     string `json:"code"`
	PluginID string `json:"pluginId"`
}

// getDeployment projects the revision's work row and its latest evidence into a status.
func (s *Server) getDeployment(ctx context.Context, c *call) error {
	rev, err := s.pathRevision(ctx, c, "deploymentId")
	if err != nil {
		return err
	}
	view := deploymentView{DeploymentID: rev.ID, NamespaceID: rev.NamespaceID, AgentID: rev.AgentID, Warnings: []deploymentWarning{}}
	key := platform.RevisionWorkKey(rev.ID)
	work, err := store.GetWork(ctx, c.db, key)
	if errors.Is(err, store.ErrNotFound) {
		view.Status = platform.DeploymentQueued
		view.Progress = &deploymentProgress{}
		c.respond(0, view)
		return nil
	} else if err != nil {
		return platform.Unavailable(err)
	}
	now, err := store.DatabaseNow(ctx, c.db)
	if err != nil {
		return platform.Unavailable(err)
	}
	view.Status, view.Progress, view.Error, view.Warnings = projectDeployment(work, now)
	if view.Progress != nil {
		attempt, err := store.LatestWorkAttempt(ctx, c.db, key, nil)
		if err != nil {
			return platform.Unavailable(err)
		}
		if attempt != nil && !attempt.At.Before(work.CreatedAt) {
			code, message := platform.ProgressOf(attempt.Code)
			view.Progress.LastAttempt = &deploymentAttempt{At: platform.FormatTime(attempt.At), Code: code, Message: message}
		}
	}
	c.respond(0, view)
	return nil
}

// projectDeployment is the deployment status table of docs/worker.md (progress without
// lastAttempt).
func projectDeployment(w store.WorkRecord, now time.Time) (string, *deploymentProgress, *deploymentError, []deploymentWarning) {
	warnings := []deploymentWarning{}
	reason := ""
	if w.ReasonCode != nil {
		reason = *w.ReasonCode
	}
	switch w.State {
	case queue.StateQueued:
		at := platform.FormatTime(w.AvailableAt)
		return platform.DeploymentQueued, &deploymentProgress{NextAttemptAt: &at}, nil, warnings
	case queue.StateClaimed:
		if w.LeaseExpiresAt != nil && !w.LeaseExpiresAt.After(now) {
			return platform.DeploymentQueued, &deploymentProgress{}, nil, warnings
		}
		return platform.DeploymentRunning, &deploymentProgress{}, nil, warnings
	case queue.StateSucceeded:
		if reason == platform.CodeRevisionActivated || reason == platform.CodeRevisionAlreadyActive {
			var data struct {
				Warnings []deploymentWarning `json:"warnings"`
			}
			if len(w.ResultData) > 0 && json.Unmarshal(w.ResultData, &data) == nil && data.Warnings != nil {
				warnings = data.Warnings
				sort.Slice(warnings, func(i, j int) bool { return warnings[i].PluginID < warnings[j].PluginID })
			}
			return platform.DeploymentSucceeded, nil, nil, warnings
		}
	}
	if reason == "" {
		reason = queue.CodeUnknownFailure
	}
	e := &deploymentError{Code: reason, Message: platform.FailureMessage(reason)}
	if (reason == platform.CodeConvergenceDeadline || reason == platform.CodeRuntimeModelProbeFailed) && len(w.ResultData) > 0 {
		e.Data = w.ResultData
	}
	return platform.DeploymentFailed, nil, e, warnings
}
