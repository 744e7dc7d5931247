package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Guided provisioning: one idempotent request that the worker turns into a
// Configuration, an Agent, the grants its ServicePrincipal needs and the first revision (decision
// 36 of docs/architecture.md). The route validates everything it can with the Configuration and
// Agent create rules, records the request and its first work item in one transaction and answers
// 202; GET reads how far it got; retry starts a new run from the step that failed.

// provisioningBody is the part of the body that is not the Agent's draft (agentBody decodes that).
type provisioningBody struct {
	RequestID     string             `json:"requestId"`
	Configuration configurationInput `json:"configuration"`
}

type provisioningView struct {
	WorkID          string             `json:"workId"`
	RequestID       string             `json:"requestId"`
	Status          string             `json:"status"`
	Phase           string             `json:"phase"`
	AttemptCount    int                `json:"attemptCount"`
	Run             int                `json:"run"`
	UpdatedAt       string             `json:"updatedAt"`
	ConfigurationID *string            `json:"configurationId,omitempty"`
	AgentID         *string            `json:"agentId,omitempty"`
	RevisionID      *string            `json:"revisionId,omitempty"`
	URL             string             `json:"url"`
	Error           *deploymentAttempt `json:"error,omitempty"`
	Steps           []provisioningStep `json:"steps"`
}

type provisioningStep struct {
	Step   string             `json:"step"`
	Status string             `json:"status"`
	Error  *deploymentAttempt `json:"error,omitempty"`
}

// Projected statuses of a provisioning (the record keeps queued, succeeded and failed).
const (
	provisioningRunning = "running"
	stepPending         = "pending"
)

var provisioningPhases = []string{store.ProvisioningPhaseConfiguration, store.ProvisioningPhaseAgent,
	store.ProvisioningPhaseGrant, store.ProvisioningPhaseAdmission}

// provisioningToView projects the record and its current run's work item: a live claim is
// running; a work item the queue failed (lease recovery at the attempt limit) is failed with its
// code even though the record never saw it.
func provisioningToView(p store.ProvisioningRow, work *store.WorkRecord, now time.Time) provisioningView {
	v := provisioningView{WorkID: p.ID, RequestID: p.RequestID, Status: p.Status, Phase: p.Phase, Run: p.Run,
		UpdatedAt: platform.FormatTime(p.UpdatedAt),
		URL:       "/namespaces/" + p.NamespaceID + "/agents/provision/" + p.ID}
	if p.ErrorCode != nil && p.ErrorMessage != nil {
		v.Error = &deploymentAttempt{Code: *p.ErrorCode, Message: *p.ErrorMessage, At: v.UpdatedAt}
	}
	if work != nil {
		v.AttemptCount = work.AttemptCount
		if p.Status == store.ProvisioningQueued {
			switch {
			case work.State == queue.StateClaimed && work.LeaseExpiresAt != nil && work.LeaseExpiresAt.After(now):
				v.Status = provisioningRunning
			case work.State == queue.StateFailedPermanent:
				code := queue.CodeUnknownFailure
				if work.ReasonCode != nil {
					code = *work.ReasonCode
				}
				v.Status = store.ProvisioningFailed
				v.Error = &deploymentAttempt{Code: code, Message: platform.FailureMessage(code), At: platform.FormatTime(work.UpdatedAt)}
			}
		}
	}
	reached := len(provisioningPhases)
	for i, phase := range provisioningPhases {
		if phase == p.Phase {
			reached = i
		}
	}
	if reached > 0 {
		v.ConfigurationID = &p.ConfigurationID
	}
	if reached > 1 {
		v.AgentID = &p.AgentID
	}
	v.RevisionID = p.RevisionID
	v.Steps = make([]provisioningStep, len(provisioningPhases))
	for i, phase := range provisioningPhases {
		st := provisioningStep{Step: phase, Status: stepPending}
		switch {
		case i < reached:
			st.Status = store.ProvisioningSucceeded
		case i == reached && v.Status == store.ProvisioningFailed:
			st.Status, st.Error = store.ProvisioningFailed, v.Error
		case i == reached && v.Status == provisioningRunning:
			st.Status = provisioningRunning
		}
		v.Steps[i] = st
	}
	return v
}

// provisioningFingerprint is the SHA-256 of the canonical body: the same request repeated has the
// same fingerprint whatever its member order or spacing.
func provisioningFingerprint(body json.RawMessage) (string, error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", err
	}
	canonical, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

func (s *Server) respondProvisioning(ctx context.Context, c *call, status int, p store.ProvisioningRow) error {
	work, err := store.GetWork(ctx, c.db, platform.ProvisioningWorkKey(p.ID, p.Run))
	var w *store.WorkRecord
	if err == nil {
		w = &work
	} else if !errors.Is(err, store.ErrNotFound) {
		return platform.Unavailable(err)
	}
	now, err := store.DatabaseNow(ctx, c.db)
	if err != nil {
		return platform.Unavailable(err)
	}
	c.respond(status, map[string]any{"provisioning": provisioningToView(p, w, now)})
	return nil
}

// provisionAgent records a guided provisioning. A requestId this caller already used in the
// Namespace answers the recorded provisioning when the body is the same (nothing changes) and 409
// PROVISIONING_REQUEST_CONFLICT otherwise; the lookup comes before validation, because the
// provisioning's own steps may since have made a fresh validation fail (its Agent's name is taken).
func (s *Server) provisionAgent(ctx context.Context, c *call) error {
	var pb provisioningBody
	if err := c.decode(&pb); err != nil {
		return err
	}
	var ab agentBody
	if err := c.decode(&ab); err != nil {
		return err
	}
	fingerprint, err := provisioningFingerprint(c.body)
	if err != nil {
		return platform.Unavailable(err)
	}
	ns := c.namespace.ID
	replay := func() error {
		existing, err := store.GetProvisioningByRequest(ctx, c.db, ns, c.actorID(), pb.RequestID)
		if err != nil {
			return platform.Unavailable(err)
		}
		if existing.Fingerprint != fingerprint {
			return platform.NewError(platform.CodeProvisioningRequestConflict,
				"This requestId was already used with a different request; use a new requestId.")
		}
		return s.respondProvisioning(ctx, c, http.StatusAccepted, existing)
	}
	if _, err := store.GetProvisioningByRequest(ctx, c.db, ns, c.actorID(), pb.RequestID); err == nil {
		return replay()
	} else if !errors.Is(err, store.ErrNotFound) {
		return platform.Unavailable(err)
	}

	// The Agent create rules, then the Configuration create rules, then what deploy will need.
	if err := ab.refuseUnavailableFeatures(); err != nil {
		return err
	}
	if err := checkWorkspaceFiles(ab.InitialWorkspaceFiles); err != nil {
		return err
	}
	ha, err := s.harnessAuthInput(ctx, c, ab.HarnessAuth)
	if err != nil {
		return err
	}
	if err := c.authorizeHarnessSource(ctx, c.self(), ha); err != nil {
		return err
	}
	cfgs, err := s.configurations()
	if err != nil {
		return err
	}
	bindings := map[string]platform.SecretBinding{}
	if pb.Configuration.SecretBindings != nil {
		bindings = *pb.Configuration.SecretBindings
	}
	if bindings, err = s.admitConfigurationInput(ctx, c, pb.Configuration, bindings); err != nil {
		return err
	}
	if err := refuseDeletingNamespace(c); err != nil {
		return err
	}
	if err := requireReadyNamespace(c); err != nil {
		return err
	}
	if ha == nil {
		return platform.Conflict("Provisioning deploys the Agent: set harnessAuth.")
	}
	mode := platform.ExecutionEmbedded
	if ab.ExecutionMode != nil {
		mode = *ab.ExecutionMode
	}
	if _, ok := platform.PinnedHarnesses[mode]; !ok {
		return platform.Conflict("The execution mode has no pinned Harness.")
	}
	compute := s.cfg.Compute
	if compute == nil {
		return platform.Unavailable(errors.New("api: no Compute Driver is selected"))
	}
	if !driver.SupportsHarnessAuth(compute, ha.Method) {
		return platform.NewError(platform.CodeHarnessAuthUnsupported,
			"The selected Compute Driver ("+compute.Implementation()+") does not support Harness authentication method "+
				ha.Method+"; select a Compute Driver that can deploy Agents.")
	}
	if _, err := store.GetAgentByName(ctx, c.db, ns, *ab.Name); err == nil {
		return platform.Conflict("An Agent with this name exists in the Namespace.")
	} else if !errors.Is(err, store.ErrNotFound) {
		return platform.Unavailable(err)
	}

	req := platform.ProvisioningRequest{Name: *ab.Name, ExecutionMode: mode, HarnessAuth: ha,
		ConfigurationKind: pb.Configuration.Kind, SecretBindingsSet: pb.Configuration.SecretBindings != nil}
	if len(bindings) > 0 {
		req.SecretBindings = bindings
	}
	row := store.ProvisioningRow{ID: platform.NewID(platform.PrefixProvisioning), NamespaceID: ns, ActorID: c.actorID(),
		RequestID: pb.RequestID, Fingerprint: fingerprint, Request: rawObject(req), StagedValues: pb.Configuration.Values,
		StagedWorkspaceFiles: stagedWorkspaceFiles(ab.InitialWorkspaceFiles),
		ConfigurationID:      platform.NewID(platform.PrefixConfiguration), AgentID: platform.NewID(platform.PrefixAgent),
		ServicePrincipalID: platform.NewID(platform.PrefixServicePrincipal), RoleID: "role_" + uuid.NewString()}
	var rawBindings json.RawMessage
	if req.SecretBindingsSet {
		rawBindings = rawObject(bindings)
	}
	doc := driver.ConfigurationDocument{ID: row.ConfigurationID, NamespaceID: ns, Kind: req.ConfigurationKind, Generation: 1,
		Values: pb.Configuration.Values, SecretBindings: rawBindings, CreatedAt: time.Now().UTC()}
	if err := cfgs.Validate(ctx, doc); err != nil {
		return configurationDriverError(err)
	}
	created, err := store.InsertProvisioning(ctx, c.db, row)
	if errors.Is(err, store.ErrDuplicate) {
		return replay() // a concurrent request with this requestId committed first
	} else if err != nil {
		return platform.Unavailable(err)
	}
	key := platform.ProvisioningWorkKey(created.ID, created.Run)
	if err := store.EnqueueProvisioningWork(ctx, c.db, key, ns, c.actorID()); err != nil {
		return platform.Unavailable(err)
	}
	details := map[string]any{"workId": created.ID, "requestId": created.RequestID, "run": created.Run,
		"configurationId": created.ConfigurationID, "servicePrincipalId": created.ServicePrincipalID,
		"name": req.Name, "executionMode": mode, "harnessAuthMethod": ha.Method, "secretIds": req.ConsumedSecretIDs()}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindAgent, created.AgentID, ns), details)); err != nil {
		return err
	}
	return s.respondProvisioning(ctx, c, http.StatusAccepted, created)
}

// pathProvisioning reads the path's provisioning for its initiator: another caller, even one
// with the same permissions, is told it does not exist. Once the steps created the Configuration
// and the Agent, reading their progress also needs read on them.
func (s *Server) pathProvisioning(ctx context.Context, c *call, lock store.RowLock) (store.ProvisioningRow, error) {
	p, err := store.GetProvisioning(ctx, c.db, c.namespace.ID, c.params["workId"], lock)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.ActorID != c.actorID()) {
		return p, platform.NotFound("The provisioning does not exist in this Namespace.")
	} else if err != nil {
		return p, platform.Unavailable(err)
	}
	if p.Phase != store.ProvisioningPhaseConfiguration {
		if err := c.authorize(ctx, iam.ActionRead, nsResource(iam.KindConfiguration, p.ConfigurationID, p.NamespaceID)); err != nil {
			return p, err
		}
	}
	if p.Phase != store.ProvisioningPhaseConfiguration && p.Phase != store.ProvisioningPhaseAgent {
		if err := c.authorize(ctx, iam.ActionRead, nsResource(iam.KindAgent, p.AgentID, p.NamespaceID)); err != nil {
			return p, err
		}
	}
	return p, nil
}

func (s *Server) getProvisioning(ctx context.Context, c *call) error {
	p, err := s.pathProvisioning(ctx, c, store.NoLock)
	if err != nil {
		return err
	}
	return s.respondProvisioning(ctx, c, http.StatusOK, p)
}

// retryProvisioning starts the next run of a failed provisioning at its failed step (409
// PROVISIONING_NOT_FAILED otherwise). The steps re-check the requester's rights as they run.
func (s *Server) retryProvisioning(ctx context.Context, c *call) error {
	p, err := s.pathProvisioning(ctx, c, store.LockUpdate)
	if err != nil {
		return err
	}
	previous := platform.ProvisioningWorkKey(p.ID, p.Run)
	if err := refuseDeletingNamespace(c); err != nil {
		return err
	}
	retried, err := store.RetryProvisioning(ctx, c.db, p.NamespaceID, p.ID, previous)
	if errors.Is(err, store.ErrNotFound) {
		return platform.NewError(platform.CodeProvisioningNotFailed, "Only a failed provisioning can be retried.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	key := platform.ProvisioningWorkKey(retried.ID, retried.Run)
	if err := store.EnqueueProvisioningWork(ctx, c.db, key, retried.NamespaceID, c.actorID()); err != nil {
		return platform.Unavailable(err)
	}
	details := map[string]any{"workId": retried.ID, "run": retried.Run, "phase": retried.Phase}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindAgent, retried.AgentID, retried.NamespaceID), details)); err != nil {
		return err
	}
	return s.respondProvisioning(ctx, c, http.StatusAccepted, retried)
}

// stagedWorkspaceFiles is what a provisioning stages of the Agent's initial workspace files: nil
// for none, so that the Agent step stages nothing.
func stagedWorkspaceFiles(files map[string]string) json.RawMessage {
	if len(files) == 0 {
		return nil
	}
	return rawObject(files)
}
