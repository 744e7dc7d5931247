package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

// Guided provisioning (docs/worker.md, decision 36 of docs/architecture.md). One work item runs
// one run of a provisioning record: its steps in order, each decided under the claim and
// published by its own finalization transaction, which writes the step's resources, their audit
// events and the record's next phase together. A pass that stops between two steps (a crash, a
// lost claim) leaves the record at the next step, and the next claim starts there: no step is
// done twice. Each step re-authorizes the requester for what the route it stands for would
// check, so a caller cannot provision what it could not create step by step.

// Audit actions of the steps: the routes they stand for, and the provisioning's own outcome.
const (
	actionConfigurationsCreate = "openclaw.configurations.create"
	actionAgentsCreate         = "openclaw.agents.create"
	actionRolesCreate          = "openclaw.iam.roles.create"
	actionBindingsCreate       = "openclaw.iam.access_bindings.create"
	actionAgentsDeploy         = "openclaw.agents.deploy"
	actionAgentsProvision      = "openclaw.agents.provision.lifecycle"
)

// stepRefusal ends a run at its step: the record fails with this code and message.
type stepRefusal struct {
	r       result
	message string
	action  string // the step's route action, for a denial's audit
	res     iam.Resource
}

func refuse(code, message string) *stepRefusal {
	return &stepRefusal{r: permanent(code), message: message}
}

func (s *stepRefusal) Error() string { return "worker: provisioning step refused: " + s.r.code }

// provisionStepFunc decides one step under the claim (effects included) and returns what its
// finalization writes, or why the run ends there.
type provisionStepFunc func(w *Worker, a *activeClaim, p *provisioning) (publish func(ctx context.Context, tx txDB) error, refusal *stepRefusal, err error)

// provisioning is the record a pass works on and its decoded request.
type provisioning struct {
	row store.ProvisioningRow
	req platform.ProvisioningRequest
}

var provisionSteps = []struct {
	phase string
	run   provisionStepFunc
}{
	{store.ProvisioningPhaseConfiguration, (*Worker).provisionConfiguration},
	{store.ProvisioningPhaseAgent, (*Worker).provisionAgent},
	{store.ProvisioningPhaseGrant, (*Worker).provisionGrant},
	{store.ProvisioningPhaseAdmission, (*Worker).provisionAdmission},
}

func nextPhase(phase string) string {
	for i, s := range provisionSteps {
		if s.phase == phase && i+1 < len(provisionSteps) {
			return provisionSteps[i+1].phase
		}
	}
	return store.ProvisioningPhaseDone
}

// provisionPass runs the record's remaining steps.
func (w *Worker) provisionPass(a *activeClaim) (result, passReport, error) {
	work := a.claim.Work
	id, ok := platform.ProvisioningWorkID(work.Key)
	if !ok {
		return w.unsupportedPass(a)
	}
	for {
		row, err := store.GetProvisioning(a.ctx, w.pool, work.NamespaceID, id, store.NoLock)
		if errors.Is(err, store.ErrNotFound) {
			r := permanent(codeInvalidTarget)
			return r, passReport{}, w.finalize(a, func(ctx context.Context, tx txDB) error {
				_, err := w.fail(ctx, tx, a, r.code, nil)
				return err
			})
		} else if err != nil {
			return result{}, passReport{}, err
		}
		if row.Status != store.ProvisioningQueued || platform.ProvisioningWorkKey(row.ID, row.Run) != work.Key {
			r := success(platform.CodeProvisioningSuperseded)
			return r, passReport{}, w.finalize(a, func(ctx context.Context, tx txDB) error {
				_, err := w.complete(ctx, tx, a, r.code, nil)
				return err
			})
		}
		p := &provisioning{row: row}
		var step provisionStepFunc
		for _, s := range provisionSteps {
			if s.phase == row.Phase {
				step = s.run
			}
		}
		var refusal *stepRefusal
		var publish func(ctx context.Context, tx txDB) error
		req, err := platform.DecodeProvisioningRequest(row.Request)
		p.req = req
		if err != nil || step == nil {
			refusal = refuse(platform.CodeProvisioningInvalid, "The stored provisioning request cannot be read.")
		} else {
			publish, refusal, err = step(w, a, p)
			if errors.Is(err, errClaimLost) {
				return result{}, passReport{}, errClaimLost
			} else if err != nil {
				refusal = &stepRefusal{r: dependencyFailure(err), message: platform.MessageDependencyUnavailable}
			}
		}
		if refusal == nil {
			next := nextPhase(row.Phase)
			err := w.finalize(a, func(ctx context.Context, tx txDB) error {
				if err := publish(ctx, tx); err != nil {
					return err
				}
				return w.advanceProvisioning(ctx, tx, a, p, next)
			})
			var late *stepRefusal
			if errors.As(err, &late) {
				refusal = late // decided inside the transaction (a name taken meanwhile)
			} else if err != nil {
				return result{}, passReport{}, err
			} else if next == store.ProvisioningPhaseDone {
				return success(platform.CodeProvisioningSucceeded), passReport{}, nil
			} else {
				continue
			}
		}
		r := refusal.r
		return r, w.exhaustedReport(a, r), w.finalize(a, func(ctx context.Context, tx txDB) error {
			return w.failProvisioning(ctx, tx, a, p, refusal)
		})
	}
}

// advanceProvisioning moves the record to its next phase; after the last step it also completes
// the work and audits the provisioning's success.
func (w *Worker) advanceProvisioning(ctx context.Context, tx txDB, a *activeClaim, p *provisioning, next string) error {
	moved, err := store.AdvanceProvisioning(ctx, tx, p.row.ID, p.row.Phase, next, p.row.RevisionID, p.row.GrantedSecretIDs)
	if err != nil {
		return err
	}
	if !moved {
		return errors.New("worker: the provisioning record moved under its claim")
	}
	if next != store.ProvisioningPhaseDone {
		return nil
	}
	if err := w.appendProvisioningOutcome(ctx, tx, a, p, audit.OutcomeSuccess, platform.CodeProvisioningSucceeded); err != nil {
		return err
	}
	_, err = w.complete(ctx, tx, a, platform.CodeProvisioningSucceeded, nil)
	return err
}

// failProvisioning records a refused step: a retry that has attempts left requeues the work and
// leaves the record as it is; otherwise the record fails at its phase with the code and message,
// and so does the work. A denial is audited as the route would have audited it.
func (w *Worker) failProvisioning(ctx context.Context, tx txDB, a *activeClaim, p *provisioning, s *stepRefusal) error {
	if s.r.denial != nil {
		if err := w.appendDenial(ctx, tx, a, s.action, s.res, s.r.denial); err != nil {
			return err
		}
	}
	if s.r.outcome == outcomeRetry && !w.exhausted(a, s.r) {
		_, err := w.retry(ctx, tx, a, s.r.code)
		return err
	}
	if _, err := store.FailProvisioning(ctx, tx, p.row.ID, p.row.Phase, s.r.code, s.message); err != nil {
		return err
	}
	if err := w.appendProvisioningOutcome(ctx, tx, a, p, audit.OutcomeFailure, s.r.code); err != nil {
		return err
	}
	_, err := w.fail(ctx, tx, a, s.r.code, nil)
	return err
}

func (w *Worker) appendProvisioningOutcome(ctx context.Context, tx txDB, a *activeClaim, p *provisioning, outcome, code string) error {
	details := map[string]any{"workId": p.row.ID, "run": p.row.Run, "step": p.row.Phase, "reasonCode": code,
		"attemptCount": a.claim.Attempt()}
	if p.row.RevisionID != nil {
		details["revisionId"] = *p.row.RevisionID
	}
	return w.appendProvisioningEvent(ctx, tx, a, actionAgentsProvision, agentResource(p.row.NamespaceID, p.row.AgentID), outcome, code, details)
}

// appendProvisioningEvent writes a step's event in the requester's name, as the route would.
func (w *Worker) appendProvisioningEvent(ctx context.Context, tx txDB, a *activeClaim, action string, res iam.Resource, outcome, code string, details map[string]any) error {
	nsID := a.claim.Work.NamespaceID
	details["provisioningWorkId"] = a.claim.Work.Key
	_, err := w.audit.Append(ctx, tx.AtCommit(), audit.Event{
		Kind: audit.KindMutation, ActorID: a.claim.Work.ActorID, NamespaceID: &nsID, Action: action,
		Resource: audit.Resource{Kind: res.Kind, ID: res.ID, NamespaceID: &nsID},
		Outcome:  outcome, ReasonCode: code, IAMDriverID: w.cfg.IAMDriverID, Details: details,
	})
	return err
}

// authorizeStep re-checks each of reqs for the requester (or, where PrincipalID is set, for that
// principal); the first refusal ends the run with the step's audit action.
func (w *Worker) authorizeStep(a *activeClaim, action string, reqs ...iam.Request) (*stepRefusal, error) {
	for _, req := range reqs {
		if req.PrincipalID == "" {
			req.PrincipalID = a.claim.Work.ActorID
		}
		d, err := w.reauthorize(a.ctx, req)
		if err != nil {
			return nil, err
		}
		if d != nil {
			r := permanent(d.code)
			r.denial = d
			return &stepRefusal{r: r, action: action, res: req.Resource,
				message: fmt.Sprintf("The requester may no longer %s this %s.", req.Action, req.Resource.Kind)}, nil
		}
	}
	return nil, nil
}

func nsRes(kind, id, ns string) iam.Resource {
	n := ns
	return iam.Resource{Kind: kind, ID: id, NamespaceID: &n}
}

// readyNamespace refuses a Namespace that is no longer ready (checked up front by the API).
func (w *Worker) readyNamespace(ctx context.Context, db store.DBTX, id string, lock store.RowLock) (*stepRefusal, error) {
	ns, err := store.GetNamespace(ctx, db, id, lock)
	if errors.Is(err, store.ErrNotFound) || (err == nil && ns.Status != platform.NamespaceReady) {
		return refuse(platform.CodeNamespaceNotReady, "The Namespace is not ready."), nil
	}
	return nil, err
}

func secretRequests(principal, action string, ns string, ids []string) []iam.Request {
	out := make([]iam.Request, len(ids))
	for i, id := range ids {
		out[i] = iam.Request{PrincipalID: principal, Action: action, Resource: nsRes(iam.KindSecret, id, ns)}
	}
	return out
}

func boundSecretIDs(bindings map[string]platform.SecretBinding) []string {
	seen := map[string]bool{}
	ids := []string{}
	for _, b := range bindings {
		if !seen[b.Source.ID] {
			seen[b.Source.ID] = true
			ids = append(ids, b.Source.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// harnessSourceRequest is what using the Harness authentication source needs (Agent create and
// deploy): secret:operate on a Secret, service_account:read (requester only) on a ServiceAccount.
func harnessSourceRequests(principal string, requester bool, ns string, ha *platform.HarnessAuth) []iam.Request {
	if ha == nil || ha.Source == nil {
		return nil
	}
	if ha.Source.Kind == platform.RefKindServiceAccount {
		if !requester {
			return nil
		}
		return []iam.Request{{PrincipalID: principal, Action: iam.ActionRead, Resource: nsRes(iam.KindServiceAccount, ha.Source.ID, ns)}}
	}
	return []iam.Request{{PrincipalID: principal, Action: iam.ActionOperate, Resource: nsRes(iam.KindSecret, ha.Source.ID, ns)}}
}

func (w *Worker) configurationDriver() (driver.Configuration, error) {
	if w.cfg.Configurations == nil {
		return nil, errors.New("worker: no Configuration Driver is selected")
	}
	return w.cfg.Configurations, nil
}

// provisionConfiguration: the requester's configuration:create and secret:operate on each bound
// Secret (the Configuration create route's checks), the document written to the Configuration
// Driver under the record's Configuration id (the same document on every attempt, so a write
// whose transaction did not commit is simply written again), then the row and its audit.
func (w *Worker) provisionConfiguration(a *activeClaim, p *provisioning) (func(ctx context.Context, tx txDB) error, *stepRefusal, error) {
	ns := p.row.NamespaceID
	if refusal, err := w.readyNamespace(a.ctx, w.pool, ns, store.NoLock); refusal != nil || err != nil {
		return nil, refusal, err
	}
	secrets := boundSecretIDs(p.req.SecretBindings)
	reqs := append([]iam.Request{{Action: iam.ActionCreate, Resource: nsRes(iam.KindConfiguration, ns, ns)}},
		secretRequests("", iam.ActionOperate, ns, secrets)...)
	if refusal, err := w.authorizeStep(a, actionConfigurationsCreate, reqs...); refusal != nil || err != nil {
		return nil, refusal, err
	}
	for _, id := range secrets {
		if _, err := store.GetSecret(a.ctx, w.pool, ns, id, store.NoLock); errors.Is(err, store.ErrNotFound) {
			return nil, refuse(platform.CodeNotFound, "A Secret the Configuration binds no longer exists."), nil
		} else if err != nil {
			return nil, nil, err
		}
	}
	cfgs, err := w.configurationDriver()
	if err != nil {
		return nil, nil, err
	}
	var rawBindings json.RawMessage
	if p.req.SecretBindingsSet {
		bindings := p.req.SecretBindings
		if bindings == nil {
			bindings = map[string]platform.SecretBinding{}
		}
		rawBindings, _ = json.Marshal(bindings)
	}
	doc := driver.ConfigurationDocument{ID: p.row.ConfigurationID, NamespaceID: ns, Kind: p.req.ConfigurationKind, Generation: 1,
		Values: p.row.StagedValues, SecretBindings: rawBindings, CreatedAt: p.row.CreatedAt.UTC()}
	err = w.effect(a, func(ctx context.Context) error {
		_, err := cfgs.Create(ctx, doc)
		return err
	})
	var ve *driver.ConfigurationValueError
	if errors.As(err, &ve) {
		return nil, refuse(platform.CodeInvalidRequest, "The Configuration Driver cannot store these values."), nil
	} else if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, tx txDB) error {
		row, err := store.InsertConfiguration(ctx, tx, store.ConfigurationRow{ID: p.row.ConfigurationID, NamespaceID: ns,
			DriverID: cfgs.ID(), SecretBindings: rawBindings})
		if err != nil {
			return err
		}
		return w.appendProvisioningEvent(ctx, tx, a, actionConfigurationsCreate, nsRes(iam.KindConfiguration, row.ID, ns),
			audit.OutcomeSuccess, "", map[string]any{"generation": row.Generation, "secretIds": secrets, "workId": p.row.ID})
	}, nil, nil
}

// provisionAgent: agent:create, configuration:read on the new Configuration and what the Harness
// authentication source needs (the Agent create route's checks), then the Agent with the
// record's Agent and ServicePrincipal ids.
func (w *Worker) provisionAgent(a *activeClaim, p *provisioning) (func(ctx context.Context, tx txDB) error, *stepRefusal, error) {
	ns := p.row.NamespaceID
	if refusal, err := w.readyNamespace(a.ctx, w.pool, ns, store.NoLock); refusal != nil || err != nil {
		return nil, refusal, err
	}
	reqs := append([]iam.Request{
		{Action: iam.ActionCreate, Resource: nsRes(iam.KindAgent, ns, ns)},
		{Action: iam.ActionRead, Resource: nsRes(iam.KindConfiguration, p.row.ConfigurationID, ns)},
	}, harnessSourceRequests("", true, ns, p.req.HarnessAuth)...)
	if refusal, err := w.authorizeStep(a, actionAgentsCreate, reqs...); refusal != nil || err != nil {
		return nil, refusal, err
	}
	var harness json.RawMessage
	if p.req.HarnessAuth != nil {
		harness, _ = json.Marshal(p.req.HarnessAuth)
	}
	return func(ctx context.Context, tx txDB) error {
		created, err := store.InsertAgent(ctx, tx, store.AgentRow{ID: p.row.AgentID, NamespaceID: ns, Name: p.req.Name,
			ExecutionMode: p.req.ExecutionMode, ServicePrincipalID: p.row.ServicePrincipalID, ConfigurationID: p.row.ConfigurationID,
			HarnessAuth: harness})
		switch {
		case errors.Is(err, store.ErrDuplicate):
			return refuse(platform.CodeResourceConflict, "An Agent with this name exists in the Namespace.")
		case errors.Is(err, store.ErrForeignKey):
			return refuse(platform.CodeNotFound, "The Harness authentication source no longer exists in this Namespace.")
		case err != nil:
			return err
		}
		details := map[string]any{"name": created.Name, "servicePrincipalId": created.ServicePrincipalID,
			"configurationId": created.ConfigurationID, "executionMode": created.ExecutionMode, "workId": p.row.ID}
		if p.req.HarnessAuth != nil {
			details["harnessAuthMethod"] = p.req.HarnessAuth.Method
		}
		if len(p.row.StagedWorkspaceFiles) > 0 {
			names, err := workspaceFileNames(p.row.StagedWorkspaceFiles)
			if err != nil {
				return err
			}
			if err := store.InsertInitialWorkspaceFiles(ctx, tx, ns, created.ID, p.row.StagedWorkspaceFiles); err != nil {
				return err
			}
			details["initialWorkspaceFiles"] = names // never their content
		}
		return w.appendProvisioningEvent(ctx, tx, a, actionAgentsCreate, agentResource(ns, created.ID), audit.OutcomeSuccess, "", details)
	}, nil, nil
}

// provisionGrant gives the Agent's ServicePrincipal secret:operate on each Secret its first
// revision consumes that it cannot operate yet: one Namespace Role (operate on secret) and one
// AccessBinding per Secret, as a person would create them through the IAM policy API, and with
// that API's checks for the requester (installation:administer, namespace:read, read on each
// exact Secret).
func (w *Worker) provisionGrant(a *activeClaim, p *provisioning) (func(ctx context.Context, tx txDB) error, *stepRefusal, error) {
	ns := p.row.NamespaceID
	if refusal, err := w.readyNamespace(a.ctx, w.pool, ns, store.NoLock); refusal != nil || err != nil {
		return nil, refusal, err
	}
	sp := p.row.ServicePrincipalID
	var missing []string
	for _, id := range p.req.ConsumedSecretIDs() {
		d, err := w.iam.Authorize(a.ctx, iam.Request{PrincipalID: sp, Action: iam.ActionOperate, Resource: nsRes(iam.KindSecret, id, ns)})
		if err != nil {
			return nil, nil, err
		}
		if !iam.Allows(d, w.cfg.IAMDriverID) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return func(context.Context, txDB) error { return nil }, nil, nil
	}
	reqs := []iam.Request{
		{Action: iam.ActionAdminister, Resource: iam.Resource{Kind: iam.KindInstallation, ID: w.cfg.InstallationID}},
		{Action: iam.ActionRead, Resource: nsRes(iam.KindNamespace, ns, ns)},
	}
	reqs = append(reqs, secretRequests("", iam.ActionRead, ns, missing)...)
	if refusal, err := w.authorizeStep(a, actionBindingsCreate, reqs...); refusal != nil || err != nil {
		return nil, refusal, err
	}
	p.row.GrantedSecretIDs = missing
	return func(ctx context.Context, tx txDB) error {
		role := store.IAMRole{ID: p.row.RoleID, NamespaceID: &ns, Permissions: [][2]string{{iam.ActionOperate, iam.KindSecret}}}
		if _, err := store.GetRole(ctx, tx, role.ID); errors.Is(err, store.ErrNotFound) {
			if _, err := store.InsertNamespaceRole(ctx, tx, role); err != nil {
				return err
			}
			if err := w.appendProvisioningEvent(ctx, tx, a, actionRolesCreate, nsRes(iam.KindNamespace, ns, ns), audit.OutcomeSuccess, "",
				map[string]any{"roleId": role.ID, "permissions": []any{map[string]any{"action": iam.ActionOperate, "resourceKind": iam.KindSecret}},
					"workId": p.row.ID}); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		kind := iam.KindSecret
		for _, id := range missing {
			secretID := id
			binding := store.IAMBinding{ID: "binding_" + uuid.NewString(), NamespaceID: &ns, IdentitySubjectID: &sp,
				RoleID: role.ID, ResourceKind: &kind, ResourceID: &secretID}
			if _, err := store.InsertNamespaceBinding(ctx, tx, binding); err != nil {
				return err
			}
			if err := w.appendProvisioningEvent(ctx, tx, a, actionBindingsCreate, nsRes(iam.KindSecret, secretID, ns), audit.OutcomeSuccess, "",
				map[string]any{"bindingId": binding.ID, "subjectKind": iam.SubjectKindIdentity, "subjectId": sp, "roleId": role.ID,
					"workId": p.row.ID}); err != nil {
				return err
			}
		}
		return nil
	}, nil, nil
}

// provisionAdmission admits the first revision as POST …/deploy does: the requester's
// agent:deploy and configuration:read, the Harness authentication source and every consumed
// Secret for the requester and for the Agent's ServicePrincipal, a Harness authentication the
// Compute Driver supports; then the snapshot of the Configuration's current document, desired
// state running and the revision's reconcile work, in one transaction with the Namespace and the
// Agent locked.
func (w *Worker) provisionAdmission(a *activeClaim, p *provisioning) (func(ctx context.Context, tx txDB) error, *stepRefusal, error) {
	ns := p.row.NamespaceID
	ha := p.req.HarnessAuth
	if ha == nil {
		return nil, refuse(platform.CodeResourceConflict, "The Agent has no Harness authentication."), nil
	}
	harness, ok := platform.PinnedHarnesses[p.req.ExecutionMode]
	if !ok {
		return nil, refuse(platform.CodeResourceConflict, "The Agent's execution mode has no pinned Harness."), nil
	}
	if !driver.SupportsHarnessAuth(w.cfg.Compute, ha.Method) {
		return nil, refuse(platform.CodeHarnessAuthUnsupported, "The selected Compute Driver does not support the Agent's Harness authentication method."), nil
	}
	cfg, err := store.GetConfiguration(a.ctx, w.pool, ns, p.row.ConfigurationID, store.NoLock)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuse(platform.CodeNotFound, "The provisioned Configuration no longer exists."), nil
	} else if err != nil {
		return nil, nil, err
	}
	bindings := map[string]platform.SecretBinding{}
	if len(cfg.SecretBindings) > 0 {
		if err := json.Unmarshal(cfg.SecretBindings, &bindings); err != nil {
			return nil, refuse(platform.CodeResourceConflict, "The Configuration's saved secretBindings cannot be read."), nil
		}
	}
	secrets := boundSecretIDs(bindings)
	sp := p.row.ServicePrincipalID
	reqs := []iam.Request{
		{Action: iam.ActionDeploy, Resource: agentResource(ns, p.row.AgentID)},
		{Action: iam.ActionRead, Resource: nsRes(iam.KindConfiguration, cfg.ID, ns)},
	}
	actor := a.claim.Work.ActorID
	for _, principal := range []string{actor, sp} {
		reqs = append(reqs, harnessSourceRequests(principal, principal == actor, ns, ha)...)
		reqs = append(reqs, secretRequests(principal, iam.ActionOperate, ns, secrets)...)
	}
	if refusal, err := w.authorizeStep(a, actionAgentsDeploy, reqs...); refusal != nil || err != nil {
		return nil, refusal, err
	}
	secretDriverID := w.cfg.SecretDriverID
	if secretDriverID == "" && (len(secrets) > 0 || (ha.Source != nil && ha.Source.Kind == platform.RefKindSecret)) {
		return nil, nil, errors.New("worker: no Secret Driver is selected")
	}
	cfgs, err := w.configurationDriver()
	if err != nil {
		return nil, nil, err
	}
	doc, err := effectValue(w, a, "", func(ctx context.Context) (driver.ConfigurationDocument, error) {
		return cfgs.Read(ctx, driver.ConfigurationRef{NamespaceID: ns, ID: cfg.ID})
	})
	if err != nil {
		return nil, nil, err
	}
	if doc.ID != cfg.ID || doc.NamespaceID != ns || doc.Kind != cfg.Kind || doc.Generation != cfg.Generation {
		return nil, nil, errors.New("worker: the stored Configuration does not match its metadata")
	}
	spec := platform.RevisionSpec{
		ConfigurationID: cfg.ID, ConfigurationKind: cfg.Kind, ConfigurationGeneration: cfg.Generation,
		Configuration: doc.Values, Harness: harness,
		Compute:            platform.ComputeSelection{ID: w.cfg.Compute.ID(), Implementation: w.cfg.Compute.Implementation()},
		ServicePrincipalID: sp, HarnessAuth: *ha, SecretDriverID: secretDriverID,
	}
	if len(bindings) > 0 {
		spec.SecretBindings = bindings
	}
	adm := admission{spec: spec, cfg: cfg, secrets: secrets}
	return func(ctx context.Context, tx txDB) error { return w.publishAdmission(ctx, tx, a, p, adm) }, nil, nil
}

// admission is what the admission step decided under the claim and its finalization writes.
type admission struct {
	spec    platform.RevisionSpec
	cfg     store.ConfigurationRow
	secrets []string
}

// publishAdmission admits the first revision in the step's finalization transaction, as the deploy
// route does: the Agent's row locked, the staged workspace files taken, the revision, the desired
// state, its work and its audit event.
func (w *Worker) publishAdmission(ctx context.Context, tx txDB, a *activeClaim, p *provisioning, adm admission) error {
	ns, spec, cfg, secrets := p.row.NamespaceID, adm.spec, adm.cfg, adm.secrets
	ha, actor := spec.HarnessAuth, a.claim.Work.ActorID
	if refusal, err := w.readyNamespace(ctx, tx, ns, store.LockShare); err != nil {
		return err
	} else if refusal != nil {
		return refusal
	}
	agent, err := store.GetAgent(ctx, tx, ns, p.row.AgentID, store.LockUpdate)
	if errors.Is(err, store.ErrNotFound) {
		return refuse(platform.CodeNotFound, "The provisioned Agent no longer exists.")
	} else if err != nil {
		return err
	}
	if agent.Status == platform.AgentDeleting {
		return refuse(platform.CodeAgentDeleting, "The Agent is being deleted.")
	}
	// The first revision takes the files staged with the Agent, as a deploy does.
	staged, err := store.TakeInitialWorkspaceFiles(ctx, tx, ns, agent.ID)
	if err != nil {
		return err
	}
	if len(staged) > 0 {
		if err := json.Unmarshal(staged, &spec.InitialWorkspaceFiles); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	rev, err := store.InsertRevision(ctx, tx, store.InsertRevisionParams{NamespaceID: ns, AgentID: agent.ID,
		ID: platform.NewID(platform.PrefixRevision), Spec: raw})
	if err != nil {
		return err
	}
	if _, err := store.SetAgentDesiredState(ctx, tx, store.SetAgentDesiredStateParams{
		NamespaceID: ns, AgentID: agent.ID, State: platform.RuntimeRunning}); err != nil {
		return err
	}
	key := platform.RevisionWorkKey(rev.ID)
	if _, err := queue.Enqueue(ctx, tx, queue.EnqueueWork{Key: key, NamespaceID: ns, ActorID: actor,
		AgentID: &agent.ID, RevisionID: &rev.ID}); err != nil {
		return err
	}
	p.row.RevisionID = &rev.ID
	details := map[string]any{"revisionId": rev.ID, "revision": rev.Number, "workId": key, "configurationId": cfg.ID,
		"configurationGeneration": cfg.Generation, "harnessAuthMethod": ha.Method, "computeDriverId": w.cfg.Compute.ID(),
		"secretIds": secrets, "provisioningId": p.row.ID}
	if len(spec.InitialWorkspaceFiles) > 0 {
		details["initialWorkspaceFiles"] = true // applied by this revision; never their content
	}
	return w.appendProvisioningEvent(ctx, tx, a, actionAgentsDeploy, agentResource(ns, agent.ID), audit.OutcomeSuccess, "", details)
}

// workspaceFileNames lists the names of staged workspace files in their fixed order.
func workspaceFileNames(staged json.RawMessage) ([]string, error) {
	var files map[string]string
	if err := json.Unmarshal(staged, &files); err != nil {
		return nil, err
	}
	var names []string
	for _, name := range platform.WorkspaceFileNames {
		if _, ok := files[name]; ok {
			names = append(names, name)
		}
	}
	return names, nil
}
