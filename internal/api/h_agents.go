package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Agents. An Agent is created stopped with its own
// ServicePrincipal; deploy admits an immutable revision; stop and delete queue Agent work. Plugins,
// plugin approvers, repositories, workspace defaults and Backends are not part of this release:
// their upstream members are accepted in their empty forms and refused otherwise
// (FEATURE_NOT_AVAILABLE), so that upstream's clients, which send the empty forms, work here. Initial workspace files are staged at creation.

type agentView struct {
	ID                  string                `json:"id"`
	NamespaceID         string                `json:"namespaceId"`
	Name                string                `json:"name"`
	ServicePrincipalID  string                `json:"servicePrincipalId"`
	ConfigurationID     string                `json:"configurationId"`
	BackendID           *string               `json:"backendId"`
	HarnessAuth         *platform.HarnessAuth `json:"harnessAuth"`
	ExecutionMode       string                `json:"executionMode"`
	DesiredRuntimeState string                `json:"desiredRuntimeState"`
	ActiveRevisionID    *string               `json:"activeRevisionId,omitempty"`
	Status              string                `json:"status"`
	CreatedAt           string                `json:"createdAt"`
	// ConfigurationReadError replaces harnessAuth when the stored draft cannot be decoded.
	ConfigurationReadError *readError `json:"configurationReadError,omitempty"`
}

type readError struct {
	Code  string `json:"code"`
	Field string `json:"field"`
}

func agentToView(a store.AgentRow) agentView {
	v := agentView{ID: a.ID, NamespaceID: a.NamespaceID, Name: a.Name, ServicePrincipalID: a.ServicePrincipalID,
		ConfigurationID: a.ConfigurationID, BackendID: a.BackendID, ExecutionMode: a.ExecutionMode,
		DesiredRuntimeState: a.DesiredRuntimeState, ActiveRevisionID: a.ActiveRevisionID, Status: a.Status,
		CreatedAt: platform.FormatTime(a.CreatedAt)}
	if len(a.HarnessAuth) > 0 {
		ha, err := decodeHarnessAuth(a.HarnessAuth)
		if err != nil {
			v.ConfigurationReadError = &readError{Code: "SAVED_CONFIGURATION_UNREADABLE", Field: "harnessAuth"}
		} else {
			v.HarnessAuth = &ha
		}
	}
	return v
}

func decodeHarnessAuth(raw json.RawMessage) (platform.HarnessAuth, error) {
	var ha platform.HarnessAuth
	if err := json.Unmarshal(raw, &ha); err != nil || ha.Method == "" {
		return platform.HarnessAuth{}, errors.New("api: unreadable harness auth")
	}
	return ha, nil
}

// agentBody is the create and patch body. Pointers tell omitted from null.
type agentBody struct {
	Name            *string         `json:"name"`
	ConfigurationID string          `json:"configurationId"`
	ExecutionMode   *string         `json:"executionMode"`
	HarnessAuth     json.RawMessage `json:"harnessAuth"`

	// Members of features this OCC does not implement (only their empty forms pass).
	BackendID           json.RawMessage `json:"backendId"`
	Plugins             json.RawMessage `json:"plugins"`
	PluginApprovers     json.RawMessage `json:"pluginApprovers"`
	RepositoryBindings  json.RawMessage `json:"repositoryBindings"`
	RepositoryAccess    json.RawMessage `json:"repositoryAccess"`
	WorkspaceDefaultsID json.RawMessage `json:"workspaceDefaultsId"`

	// InitialWorkspaceFiles is create only (the patch schema refuses it).
	InitialWorkspaceFiles map[string]string `json:"initialWorkspaceFiles"`
}

// refuseUnavailableFeatures answers 400 FEATURE_NOT_AVAILABLE, with a detail at each member, when
// a member of a feature this OCC does not implement carries more than its empty form.
func (b agentBody) refuseUnavailableFeatures() error {
	members := []struct {
		path, feature string
		raw           json.RawMessage
	}{
		{"/backendId", "Backends", b.BackendID},
		{"/plugins", "plugins", b.Plugins},
		{"/pluginApprovers", "plugin approvers", b.PluginApprovers},
		{"/repositoryBindings", "repository bindings", b.RepositoryBindings},
		{"/repositoryAccess", "repository access", b.RepositoryAccess},
		{"/workspaceDefaultsId", "workspace defaults", b.WorkspaceDefaultsID},
	}
	var features []string
	var details []problem.Detail
	for _, m := range members {
		if !emptyForm(m.raw) {
			features = append(features, m.feature)
			details = append(details, problem.Detail{Path: m.path, Code: problem.DetailInvalidValue})
		}
	}
	if len(details) == 0 {
		return nil
	}
	return platform.NewError(platform.CodeFeatureNotAvailable,
		"Not available in this OCC: "+strings.Join(features, ", ")+".", details...)
}

// emptyForm reports whether a member is absent, null, {} or [].
func emptyForm(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return true
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// refuseExecutionModeChange: an Agent's execution mode is fixed at creation; an update may repeat it.
func refuseExecutionModeChange(a store.AgentRow, mode *string) error {
	if mode == nil || *mode == a.ExecutionMode {
		return nil
	}
	return platform.NewError(platform.CodeFeatureNotAvailable,
		"Changing an Agent's execution mode is not available in this OCC.",
		problem.Detail{Path: "/executionMode", Code: problem.DetailInvalidValue})
}

// checkWorkspaceFiles applies what the schema cannot say: each file fits 16 KiB in UTF-8 and holds
// no NUL (the decoder already refused invalid UTF-8 and lone surrogates). The error names the
// member, never its content.
func checkWorkspaceFiles(files map[string]string) error {
	for _, name := range platform.WorkspaceFileNames {
		content, ok := files[name]
		if !ok {
			continue
		}
		path := "/initialWorkspaceFiles/" + name
		if len(content) > platform.MaxWorkspaceFileBytes {
			return platform.Invalid("Initial workspace file "+name+" is larger than 16 KiB in UTF-8.", path, problem.DetailTooLong)
		}
		if strings.ContainsRune(content, 0) {
			return platform.Invalid("Initial workspace file "+name+" contains a NUL character.", path, problem.DetailInvalidValue)
		}
	}
	return nil
}

// harnessAuthInput validates a harnessAuth member: runtime takes no source; api_key a Secret;
// codex_pat a Secret or a ServiceAccount; every source names this Namespace (400) and exists (404).
// It returns the binding (nil for null) and what it references.
func (s *Server) harnessAuthInput(ctx context.Context, c *call, raw json.RawMessage) (*platform.HarnessAuth, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var ha platform.HarnessAuth
	if err := json.Unmarshal(raw, &ha); err != nil {
		return nil, platform.Invalid("The harnessAuth is invalid.", "/harnessAuth", problem.DetailInvalidType)
	}
	src := ha.Source
	switch ha.Method {
	case platform.HarnessAuthRuntime:
		if src != nil {
			return nil, platform.Invalid("The runtime method takes no source.", "/harnessAuth/source", problem.DetailUnknownField)
		}
		return &ha, nil
	case platform.HarnessAuthAPIKey, platform.HarnessAuthCodexPAT:
		if src == nil {
			return nil, platform.Invalid("This method needs a source.", "/harnessAuth/source", problem.DetailRequired)
		}
	default:
		return nil, platform.Invalid("The method is not supported.", "/harnessAuth/method", problem.DetailInvalidValue)
	}
	allowSA := ha.Method == platform.HarnessAuthCodexPAT
	switch {
	case src.Kind == platform.RefKindSecret:
	case src.Kind == platform.RefKindServiceAccount && allowSA:
	default:
		return nil, platform.Invalid("This method cannot use that kind of source.", "/harnessAuth/source/kind", problem.DetailInvalidValue)
	}
	if src.NamespaceID != c.namespace.ID {
		return nil, platform.Invalid("The source must be in this Namespace.", "/harnessAuth/source/namespaceId", problem.DetailInvalidValue)
	}
	prefix := platform.PrefixSecret
	if src.Kind == platform.RefKindServiceAccount {
		prefix = platform.PrefixServiceAccount
	}
	if !platform.ValidID(prefix, src.ID) {
		return nil, platform.Invalid("The source id is malformed.", "/harnessAuth/source/id", problem.DetailInvalidFormat)
	}
	var err error
	if src.Kind == platform.RefKindSecret {
		_, err = store.GetSecret(ctx, c.db, c.namespace.ID, src.ID, store.LockShare)
	} else {
		_, err = store.GetServiceAccount(ctx, c.db, c.namespace.ID, src.ID, store.LockShare)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, platform.NotFound("The Harness authentication source does not exist in this Namespace.")
	} else if err != nil {
		return nil, platform.Unavailable(err)
	}
	return &ha, nil
}

// authorizeHarnessSource checks what using a source needs: secret:operate (for principal) on a
// Secret, service_account:read (caller) on a ServiceAccount.
func (c *call) authorizeHarnessSource(ctx context.Context, p principal, ha *platform.HarnessAuth) error {
	if ha == nil || ha.Source == nil {
		return nil
	}
	if ha.Source.Kind == platform.RefKindServiceAccount {
		if p.agent != nil {
			return nil
		}
		return c.authorize(ctx, iam.ActionRead, nsResource(iam.KindServiceAccount, ha.Source.ID, c.namespace.ID))
	}
	return c.authorizeAs(ctx, p, iam.ActionOperate, nsResource(iam.KindSecret, ha.Source.ID, c.namespace.ID))
}

// agentConfiguration reads the Agent's Configuration (404 when absent, locked FOR SHARE) and checks
// the caller's configuration:read.
func (s *Server) agentConfiguration(ctx context.Context, c *call, id string) (store.ConfigurationRow, error) {
	row, err := store.GetConfiguration(ctx, c.db, c.namespace.ID, id, store.LockShare)
	if errors.Is(err, store.ErrNotFound) {
		return row, platform.NotFound("The Configuration does not exist in this Namespace.")
	} else if err != nil {
		return row, platform.Unavailable(err)
	}
	if err := c.authorize(ctx, iam.ActionRead, nsResource(iam.KindConfiguration, row.ID, row.NamespaceID)); err != nil {
		return row, err
	}
	return row, nil
}

func (s *Server) listAgents(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	ns := c.namespace.ID
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.AgentRow, error) {
			rows, err := store.ListAgents(ctx, c.db, ns, keyCursor(after), n)
			if err != nil {
				return nil, platform.Unavailable(err)
			}
			return rows, nil
		},
		keepRead(ctx, c, func(a store.AgentRow) iam.Resource { return nsResource(iam.KindAgent, a.ID, ns) }),
		func(a store.AgentRow) cursorDoc { return keyDoc(a.CreatedAt, a.ID) },
		after)
	if err != nil {
		return err
	}
	views := make([]agentView, len(items))
	for i, a := range items {
		views[i] = agentToView(a)
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

func (s *Server) createAgent(ctx context.Context, c *call) error {
	var b agentBody
	if err := c.decode(&b); err != nil {
		return err
	}
	if err := b.refuseUnavailableFeatures(); err != nil {
		return err
	}
	if err := checkWorkspaceFiles(b.InitialWorkspaceFiles); err != nil {
		return err
	}
	ha, err := s.harnessAuthInput(ctx, c, b.HarnessAuth)
	if err != nil {
		return err
	}
	cfg, err := s.agentConfiguration(ctx, c, b.ConfigurationID)
	if err != nil {
		return err
	}
	if err := c.authorizeHarnessSource(ctx, c.self(), ha); err != nil {
		return err
	}
	if st := c.namespace.Status; st != platform.NamespaceProvisioning && st != platform.NamespaceReady {
		return platform.Conflict("The Namespace does not accept new Agents.")
	}
	mode := platform.ExecutionEmbedded
	if b.ExecutionMode != nil {
		mode = *b.ExecutionMode
	}
	row := store.AgentRow{ID: platform.NewID(platform.PrefixAgent), NamespaceID: c.namespace.ID, Name: *b.Name,
		ExecutionMode: mode, ServicePrincipalID: platform.NewID(platform.PrefixServicePrincipal), ConfigurationID: cfg.ID}
	if ha != nil {
		row.HarnessAuth = rawObject(ha)
	}
	created, err := store.InsertAgent(ctx, c.db, row)
	if errors.Is(err, store.ErrDuplicate) {
		return platform.Conflict("An Agent with this name exists in the Namespace.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	details := map[string]any{"name": created.Name, "servicePrincipalId": created.ServicePrincipalID,
		"configurationId": created.ConfigurationID, "executionMode": created.ExecutionMode}
	if ha != nil {
		details["harnessAuthMethod"] = ha.Method
	}
	if len(b.InitialWorkspaceFiles) > 0 {
		raw, err := json.Marshal(b.InitialWorkspaceFiles)
		if err != nil {
			return platform.Unavailable(err)
		}
		if err := store.InsertInitialWorkspaceFiles(ctx, c.db, created.NamespaceID, created.ID, raw); err != nil {
			return platform.Unavailable(err)
		}
		// The audit names the files, never their content.
		var names []string
		for _, name := range platform.WorkspaceFileNames {
			if _, ok := b.InitialWorkspaceFiles[name]; ok {
				names = append(names, name)
			}
		}
		details["initialWorkspaceFiles"] = names
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindAgent, created.ID, created.NamespaceID), details)); err != nil {
		return err
	}
	c.respond(http.StatusCreated, agentToView(created))
	return nil
}

// pathAgent reads the path's Agent (404) with lock and checks action on it (403).
func (s *Server) pathAgent(ctx context.Context, c *call, action string, lock store.RowLock) (store.AgentRow, error) {
	var a store.AgentRow
	var err error
	if c.agentRead != nil && c.route.AgentLock == lock {
		a, err = c.agentRead.Result(ctx)
		c.agentRead = nil
	} else {
		a, err = store.GetAgent(ctx, c.db, c.namespace.ID, c.params["agentId"], lock)
	}
	if errors.Is(err, store.ErrNotFound) {
		return a, platform.NotFound("The Agent does not exist in this Namespace.")
	} else if err != nil {
		return a, platform.Unavailable(err)
	}
	if err := c.authorize(ctx, action, nsResource(iam.KindAgent, a.ID, a.NamespaceID)); err != nil {
		return a, err
	}
	return a, nil
}

func refuseDeletingAgent(a store.AgentRow) error {
	if a.Status == platform.AgentDeleting {
		return platform.NewError(platform.CodeAgentDeleting, "The Agent is being deleted.")
	}
	return nil
}

func (s *Server) getAgent(ctx context.Context, c *call) error {
	a, err := s.pathAgent(ctx, c, iam.ActionRead, store.NoLock)
	if err != nil {
		return err
	}
	c.respond(0, agentToView(a))
	return nil
}

// patchAgent replaces the draft: configurationId is required; omitted name and harnessAuth are
// kept; harnessAuth null clears it.
func (s *Server) patchAgent(ctx context.Context, c *call) error {
	var b agentBody
	if err := c.decode(&b); err != nil {
		return err
	}
	a, err := s.pathAgent(ctx, c, iam.ActionUpdate, store.LockUpdate)
	if err != nil {
		return err
	}
	if err := b.refuseUnavailableFeatures(); err != nil {
		return err
	}
	if err := refuseExecutionModeChange(a, b.ExecutionMode); err != nil {
		return err
	}
	ha, err := s.harnessAuthInput(ctx, c, b.HarnessAuth)
	if err != nil {
		return err
	}
	if len(b.HarnessAuth) == 0 && len(a.HarnessAuth) > 0 {
		old, err := decodeHarnessAuth(a.HarnessAuth)
		if err != nil {
			return platform.Unavailable(err)
		}
		ha = &old
	}
	cfg, err := s.agentConfiguration(ctx, c, b.ConfigurationID)
	if err != nil {
		return err
	}
	if err := c.authorizeHarnessSource(ctx, c.self(), ha); err != nil {
		return err
	}
	// Replacing a ServiceAccount source also needs read on the one being replaced.
	if len(a.HarnessAuth) > 0 {
		if old, err := decodeHarnessAuth(a.HarnessAuth); err == nil && old.Source != nil && old.Source.Kind == platform.RefKindServiceAccount {
			if err := c.authorize(ctx, iam.ActionRead, nsResource(iam.KindServiceAccount, old.Source.ID, a.NamespaceID)); err != nil {
				return err
			}
		}
	}
	if err := refuseDeletingAgent(a); err != nil {
		return err
	}
	a.ConfigurationID = cfg.ID
	if b.Name != nil {
		a.Name = *b.Name
	}
	a.HarnessAuth = nil
	if ha != nil {
		a.HarnessAuth = rawObject(ha)
	}
	updated, err := store.UpdateAgentDraft(ctx, c.db, a)
	if errors.Is(err, store.ErrDuplicate) {
		return platform.Conflict("An Agent with this name exists in the Namespace.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	details := map[string]any{"name": updated.Name, "configurationId": updated.ConfigurationID}
	if ha != nil {
		details["harnessAuthMethod"] = ha.Method
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindAgent, a.ID, a.NamespaceID), details)); err != nil {
		return err
	}
	c.respond(0, agentToView(updated))
	return nil
}

func agentWork(key, namespaceID, agentID, actorID, target string) queue.EnqueueWork {
	return queue.EnqueueWork{Key: key, NamespaceID: namespaceID, ActorID: actorID, AgentID: &agentID, AgentTarget: &target}
}

func enqueue(ctx context.Context, c *call, w queue.EnqueueWork) error {
	if _, err := queue.Enqueue(ctx, c.db, w); err != nil {
		if errors.Is(err, queue.ErrConflict) {
			return platform.Conflict("Conflicting work is already queued for this Agent.")
		}
		return platform.Unavailable(err)
	}
	return nil
}

// deleteAgent: status deleting, desired stopped and the deduplicating teardown work, in one
// transaction. While deleting it is repeat-safe; after a failed teardown the initiator's repeat
// requeues it, and another permitted caller takes it over only once the initiator lost
// agent:delete.
func (s *Server) deleteAgent(ctx context.Context, c *call) error {
	a, err := s.pathAgent(ctx, c, iam.ActionDelete, store.LockUpdate)
	if err != nil {
		return err
	}
	res := nsResource(iam.KindAgent, a.ID, a.NamespaceID)
	key := platform.AgentDeleteWorkKey(a.ID)
	if a.Status == platform.AgentDeleting {
		work, err := store.GetWorkState(ctx, c.db, key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return platform.Unavailable(err)
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			if err := enqueue(ctx, c, agentWork(key, a.NamespaceID, a.ID, c.actorID(), platform.AgentTargetDeleted)); err != nil {
				return err
			}
			if err := c.audit(ctx, auditEvent(res, map[string]any{"workId": key})); err != nil {
				return err
			}
		case work.State == queue.StateFailedPermanent:
			takeover := work.ActorID != c.actorID()
			if takeover {
				decision, err := c.iam.Authorize(ctx, iam.Request{PrincipalID: work.ActorID, Action: iam.ActionDelete, Resource: res})
				if err != nil {
					return platform.Unavailable(err)
				}
				if iam.Allows(decision, s.cfg.IAMDriverID) {
					return c.denyRequest(iam.Request{PrincipalID: c.actorID(), Action: iam.ActionDelete, Resource: res},
						"the deletion belongs to its initiator", "DELETION_OWNED_BY_INITIATOR")
				}
			}
			requeued, err := store.RetryFailedAgentDeletion(ctx, c.db, store.RetryFailedAgentDeletionParams{
				NamespaceID: a.NamespaceID, AgentID: a.ID, InitiatorID: work.ActorID, ActorID: c.actorID()})
			if err != nil {
				return platform.Unavailable(err)
			}
			if requeued {
				if err := c.audit(ctx, auditEvent(res, map[string]any{"workId": key, "initiatingActorId": work.ActorID, "takeover": takeover})); err != nil {
					return err
				}
			}
		}
		c.respond(http.StatusAccepted, agentToView(a))
		return nil
	}
	updated, err := store.MarkAgentDeleting(ctx, c.db, a.NamespaceID, a.ID)
	if err != nil {
		return platform.Unavailable(err)
	}
	if err := enqueue(ctx, c, agentWork(key, a.NamespaceID, a.ID, c.actorID(), platform.AgentTargetDeleted)); err != nil {
		return err
	}
	if err := c.audit(ctx, auditEvent(res, map[string]any{"workId": key})); err != nil {
		return err
	}
	c.respond(http.StatusAccepted, agentToView(updated))
	return nil
}

// stopAgent: desired stopped and a new stop operation (its own key per request).
func (s *Server) stopAgent(ctx context.Context, c *call) error {
	a, err := s.pathAgent(ctx, c, iam.ActionOperate, store.LockUpdate)
	if err != nil {
		return err
	}
	if err := refuseDeletingAgent(a); err != nil {
		return err
	}
	updated, err := store.SetAgentDesiredState(ctx, c.db, store.SetAgentDesiredStateParams{
		NamespaceID: a.NamespaceID, AgentID: a.ID, State: platform.RuntimeStopped})
	if err != nil {
		return platform.Unavailable(err)
	}
	key := platform.AgentStopWorkKey(a.ID, uuid.NewString())
	if err := enqueue(ctx, c, agentWork(key, a.NamespaceID, a.ID, c.actorID(), platform.AgentTargetStopped)); err != nil {
		return err
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindAgent, a.ID, a.NamespaceID), map[string]any{"workId": key})); err != nil {
		return err
	}
	c.respond(http.StatusAccepted, agentToView(updated))
	return nil
}
