package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// call is one request on its way through the pipeline.
type call struct {
	s         *Server
	r         *http.Request
	route     *Route
	requestID string
	params    map[string]string
	query     map[string]string
	body      json.RawMessage // canonical, schema-valid JSON

	cred auth.Credential
	// keyAhead is the hash of a remembered service key (cred) not yet confirmed; keyRead is its
	// read, sent with the identity lookup (decision 48).
	keyAhead []byte
	keyRead  *store.Pending[store.ServiceKey]
	identity *iam.Identity
	// db runs the route's statements: its transaction (TxWrite) or a read-only connection (TxRead);
	// pipe is the same connection, to send reads ahead of the next statement.
	db   store.DBTX
	pipe *store.Pipeline
	// auditDB receives the call's audit rows: sent with the commit in a PipelinedTx, at once
	// anywhere else.
	auditDB   store.Execer
	iam       *iam.Native
	namespace *store.Namespace // the path Namespace (ScopeNamespace)
	// agentRead is the path Agent read with route.AgentLock, queued with the path Namespace.
	agentRead *store.Pending[store.AgentRow]

	status     int
	data       any
	nextCursor string
	cookies    []*http.Cookie
	raw        []byte // a bare body (the OpenAPI document, a log download)
	// rawType and rawDisposition, when set, answer raw as a download of that type.
	rawType, rawDisposition string
	redirect                string // a 302 Location (sign-in callbacks)

	// undo compensates driver effects made inside the transaction when it does not commit;
	// afterCommit runs driver effects that must wait for the commit (deletions).
	undo        []func(context.Context)
	afterCommit []func(context.Context)
}

// onRollback registers a compensation of a driver effect, run (newest first) when the route's
// transaction does not commit. It is not run when the commit's outcome is unknown: the effect
// may belong to committed state.
func (c *call) onRollback(f func(context.Context)) { c.undo = append(c.undo, f) }

// onCommit registers a driver effect that runs after the transaction committed.
func (c *call) onCommit(f func(context.Context)) { c.afterCommit = append(c.afterCommit, f) }

// settle runs the compensations or the post-commit effects for the transaction's outcome err.
func (c *call) settle(ctx context.Context, err error) {
	ctx = context.WithoutCancel(ctx)
	if err == nil {
		for _, f := range c.afterCommit {
			f(ctx)
		}
		return
	}
	var pe *platform.Error
	if errors.As(err, &pe) && pe.Code == platform.CodeUnknownOutcome {
		return
	}
	for i := len(c.undo) - 1; i >= 0; i-- {
		c.undo[i](ctx)
	}
}

// denial is a 403 whose audit event is written after the route's transaction rolled back.
type denial struct {
	event audit.Event
	// details is what the caller may learn of the missing permission (explain).
	details []problem.Detail
}

func (d *denial) Error() string { return "api: authorization denied: " + d.event.DecisionReason }

func (c *call) bind(db store.DBTX) {
	c.db, c.auditDB, c.pipe = db, db, nil
	switch db := db.(type) {
	case *store.PipelinedTx:
		c.auditDB, c.pipe = db.AtCommit(), &db.Pipeline
	case *store.Pipeline:
		c.pipe = db
	}
	c.iam = iam.NewNative(c.s.cfg.IAMDriverID, iam.StoreSource{DB: db})
	// A route that changes the policy may authorize again in the same transaction, which must see
	// its own change: only reads and the write routes that keep the policy reuse decisions.
	if c.route.Tx == TxRead || c.route.KeepsPolicy {
		c.iam = c.iam.WithCache(c.s.decisions)
	}
}

// decode unmarshals the validated body into v.
func (c *call) decode(v any) error {
	if err := json.Unmarshal(c.body, v); err != nil {
		return platform.NewError(platform.CodeInvalidRequest, "The request is invalid.",
			problem.Detail{Path: "", Code: problem.DetailInvalidType})
	}
	return nil
}

// bodyHas reports whether the validated body has a top-level member.
func (c *call) bodyHas(member string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(c.body, &m) != nil {
		return false
	}
	_, ok := m[member]
	return ok
}

func (c *call) respond(status int, data any) {
	c.status, c.data = status, data
}

// Resources the route table's targets name.

func (c *call) installationResource() iam.Resource {
	return iam.Resource{Kind: iam.KindInstallation, ID: c.s.installation.ID}
}

func namespaceResource(id string) iam.Resource {
	ns := id
	return iam.Resource{Kind: iam.KindNamespace, ID: id, NamespaceID: &ns}
}

// primaryResource is what a denial before any permission check (identity, scope) is about.
func (c *call) primaryResource() iam.Resource {
	if id, ok := c.params["namespaceId"]; ok {
		return namespaceResource(id)
	}
	return c.installationResource()
}

func (c *call) target(p Permission) iam.Resource {
	switch p.Target {
	case TargetInstallationCollection:
		return iam.Resource{Kind: p.Kind, ID: c.s.installation.ID}
	case TargetPathNamespace:
		return namespaceResource(c.params["namespaceId"])
	case TargetNamespaceCollection:
		ns := c.params["namespaceId"]
		return iam.Resource{Kind: p.Kind, ID: ns, NamespaceID: &ns}
	}
	return c.installationResource()
}

// admitIdentity resolves the credential to its IAM identity, enforces the credential's Namespace
// scope, reads the path Namespace and checks the route's generic permissions, in this order.
func (c *call) admitIdentity(ctx context.Context) error {
	route := c.route
	scope := c.cred.NamespaceScope()
	// The path Namespace is read in the identity lookup's round trip (decision 47); an admission
	// refused before it needs the read leaves its result unread.
	var nsRead *store.Pending[store.Namespace]
	if route.Scope == ScopeNamespace && (scope == nil || *scope == c.params["namespaceId"]) {
		nsRead = store.GetNamespaceAhead(c.pipe, c.params["namespaceId"], route.NamespaceLock)
		if route.AgentLock != store.NoLock {
			c.agentRead = store.GetAgentAhead(c.pipe, c.params["namespaceId"], c.params["agentId"], route.AgentLock)
		}
	}
	ident, err := c.iam.LookupIdentity(ctx, c.cred.IdentityLookup(c.s.installation.ID))
	if err := c.confirmKey(ctx); err != nil {
		return err
	}
	switch {
	case errors.Is(err, iam.ErrAmbiguousIdentity), errors.Is(err, iam.ErrPolicyInvalid), errors.Is(err, iam.ErrInvalidLookup):
		return c.deny(nil, "identity invalid", "IDENTITY_UNRESOLVED")
	case err != nil:
		return platform.Unavailable(err)
	case ident == nil:
		return c.deny(nil, "identity not provisioned", "IDENTITY_UNRESOLVED")
	}
	c.identity = ident
	if ident.AgentID != nil {
		return c.deny(nil, "agent-owned principal", "CREDENTIAL_SCOPE")
	}
	if c.cred.Kind == auth.KindServiceKey && ident.Kind != iam.IdentityKindServicePrincipal {
		return c.deny(nil, "identity kind mismatch", "IDENTITY_UNRESOLVED")
	}
	if c.cred.Human() && ident.Kind != iam.IdentityKindPrincipal {
		return c.deny(nil, "identity kind mismatch", "IDENTITY_UNRESOLVED")
	}
	switch route.Scope {
	case ScopeInstallation:
		if scope != nil {
			return c.deny(nil, "namespace-scoped credential on an installation route", "CREDENTIAL_SCOPE")
		}
	case ScopeNamespace:
		if scope != nil && *scope != c.params["namespaceId"] {
			return c.deny(nil, "credential scoped to another namespace", "CREDENTIAL_SCOPE")
		}
		ns, err := nsRead.Result(ctx)
		if errors.Is(err, store.ErrNotFound) {
			return platform.NotFound("The Namespace does not exist.")
		} else if err != nil {
			return platform.Unavailable(err)
		}
		c.namespace = &ns
	}
	for _, p := range route.Permissions {
		if !p.generic() || (p.Cond != nil && !p.Cond(c)) {
			continue
		}
		if err := c.authorize(ctx, p.Action, c.target(p)); err != nil {
			return err
		}
	}
	return nil
}

// confirmKey judges the remembered service key whose read travelled with the identity lookup: a
// key no longer live is refused (401) before anything the lookup found is used.
func (c *call) confirmKey(ctx context.Context) error {
	if c.keyRead == nil {
		return nil
	}
	key, err := c.keyRead.Result(ctx)
	remembered := c.cred.Key
	cred, err := c.s.admitter.ConfirmKey(c.keyAhead, key, err)
	c.keyAhead, c.keyRead = nil, nil
	if err != nil {
		return admissionProblem(err)
	}
	// A key's row never changes while it lives; the identity lookup relied on that.
	if cred.Key.ServicePrincipalID != remembered.ServicePrincipalID || !sameScope(cred.Key.NamespaceID, remembered.NamespaceID) {
		return platform.Unavailable(errors.New("api: a remembered service key's row changed"))
	}
	c.cred = cred
	return nil
}

// authorize asks the IAM driver whether the caller may perform action on res (fresh, or a decision
// made under the policy epoch this request read: decision 42). A denial is returned as a *denial
// (403, audited after rollback); a storage failure as 503.
func (c *call) authorize(ctx context.Context, action string, res iam.Resource) error {
	allowed, decision, err := c.decide(ctx, action, res)
	if err != nil {
		return err
	}
	if allowed {
		return nil
	}
	req := iam.Request{PrincipalID: c.identity.ID, Action: action, Resource: res}
	return c.explain(ctx, c.self(), req, c.denyRequest(req, decision.Reason, "AUTHORIZATION_DENIED"))
}

// allowed is authorize without a denial: for filtering list items.
func (c *call) allowed(ctx context.Context, action string, res iam.Resource) (bool, error) {
	ok, _, err := c.decide(ctx, action, res)
	return ok, err
}

// allowedEach is allowed for each of resources (a list page: one kind, one Namespace), decided with
// one policy read per (kind, Namespace) instead of one per resource; allowed[i] is what
// c.allowed(ctx, action, resources[i]) returns.
func (c *call) allowedEach(ctx context.Context, action string, resources []iam.Resource) ([]bool, error) {
	decisions, err := c.iam.AuthorizeEach(ctx, c.identity.ID, action, resources)
	if err != nil {
		return nil, platform.Unavailable(err)
	}
	out := make([]bool, len(decisions))
	for i, d := range decisions {
		out[i] = iam.Allows(d, c.s.cfg.IAMDriverID)
	}
	return out, nil
}

func (c *call) decide(ctx context.Context, action string, res iam.Resource) (bool, iam.Decision, error) {
	decision, err := c.iam.Authorize(ctx, iam.Request{PrincipalID: c.identity.ID, Action: action, Resource: res})
	if err != nil {
		return false, decision, platform.Unavailable(err)
	}
	return iam.Allows(decision, c.s.cfg.IAMDriverID), decision, nil
}

// deny builds the denial of a request refused before any permission check.
func (c *call) deny(res *iam.Resource, reason, code string) error {
	r := c.primaryResource()
	if res != nil {
		r = *res
	}
	ev := c.denialEvent(r, reason, code)
	return &denial{event: ev}
}

func (c *call) denyRequest(req iam.Request, reason, code string) error {
	ev := c.denialEvent(req.Resource, reason, code)
	ev.Authorization = &audit.Authorization{PrincipalID: req.PrincipalID, Action: req.Action, Resource: auditResource(req.Resource)}
	return &denial{event: ev}
}

// principal is whom an authorization is asked for: the caller, or an Agent's own ServicePrincipal
// (deploy checks both).
type principal struct {
	id, kind string
	// agent is the Agent whose ServicePrincipal this is; nil for the caller.
	agent *iam.Resource
}

func (c *call) self() principal { return principal{id: c.identity.ID, kind: c.identity.Kind} }

func agentPrincipal(a store.AgentRow) principal {
	res := nsResource(iam.KindAgent, a.ID, a.NamespaceID)
	return principal{id: a.ServicePrincipalID, kind: iam.IdentityKindServicePrincipal, agent: &res}
}

// explain adds to the denial err of req the permission that was missing, when the caller may read
// both its principal (itself, or the Agent whose ServicePrincipal it is) and its resource: a
// denial then says whom to grant what, and never tells a caller more than it could read anyway.
func (c *call) explain(ctx context.Context, p principal, req iam.Request, err error) error {
	var d *denial
	if !errors.As(err, &d) {
		return err
	}
	visible := []iam.Resource{req.Resource}
	if p.agent != nil {
		visible = append(visible, *p.agent)
	}
	for _, res := range visible {
		seen, err := c.mayRead(ctx, res)
		if err != nil {
			return err
		}
		if !seen {
			return d
		}
	}
	d.details = []problem.Detail{{Code: problem.DetailPermissionDenied, Permission: &problem.Permission{
		Principal: problem.Ref{Kind: p.kind, ID: p.id},
		Action:    req.Action,
		Resource:  problem.Ref{Kind: req.Resource.Kind, ID: req.Resource.ID, NamespaceID: req.Resource.NamespaceID},
	}}}
	return d
}

// mayRead reports whether the caller may read res; a collection (the Agents of a Namespace, the
// Namespaces of the Installation) is read through the object that holds it.
func (c *call) mayRead(ctx context.Context, res iam.Resource) (bool, error) {
	switch {
	case res.ID == c.s.installation.ID:
		res = c.installationResource()
	case res.NamespaceID != nil && res.ID == *res.NamespaceID:
		res = namespaceResource(res.ID)
	}
	return c.allowed(ctx, iam.ActionRead, res)
}

func (c *call) denialEvent(res iam.Resource, reason, code string) audit.Event {
	ev := audit.Event{
		Kind:           audit.KindAuthorizationDenial,
		Outcome:        audit.OutcomeDenied,
		Action:         c.route.Action,
		NamespaceID:    res.NamespaceID,
		Resource:       auditResource(res),
		RequestID:      c.requestID,
		IAMDriverID:    c.s.cfg.IAMDriverID,
		DecisionReason: reason,
		ReasonCode:     code,
	}
	c.fillActor(&ev)
	return ev
}

func auditResource(r iam.Resource) audit.Resource {
	return audit.Resource{Kind: r.Kind, ID: r.ID, NamespaceID: r.NamespaceID}
}

// fillActor records who acted: the resolved identity, or what the credential claimed.
func (c *call) fillActor(ev *audit.Event) {
	switch {
	case c.identity != nil && c.identity.Kind == iam.IdentityKindPrincipal:
		ev.ActorID = c.identity.ID
		ev.Actor = &audit.Actor{PrincipalID: c.identity.ID, Kind: audit.ActorKindPrincipal,
			Issuer: c.identity.Issuer, Subject: c.identity.Subject}
	case c.identity != nil:
		ev.ActorID = c.identity.ID
		ev.Actor = &audit.Actor{ID: c.identity.ID, Kind: audit.ActorKindServicePrincipal}
	default:
		ev.ActorID = audit.ActorUnresolved
		ev.Actor = &audit.Actor{Unresolved: true}
	}
	if c.cred.Kind == auth.KindServiceKey {
		if ev.Details == nil {
			ev.Details = map[string]any{}
		}
		ev.Details["actorServiceKeyId"] = c.cred.Key.ID
	}
	if c.cred.Kind == auth.KindCLISession {
		if ev.Details == nil {
			ev.Details = map[string]any{}
		}
		ev.Details["admissionMethod"], ev.Details["actorCliSessionId"] = "cli_session", c.cred.CLI.ID
	}
}

// audit appends the event of a successful mutation inside the route's transaction. If the append
// fails, the transaction (and with it the mutation) does not commit: 503.
func (c *call) audit(ctx context.Context, ev audit.Event) error {
	if ev.Kind == "" {
		ev.Kind = audit.KindMutation
	}
	if ev.Action == "" {
		ev.Action = c.route.Action
	}
	ev.RequestID = c.requestID
	ev.IAMDriverID = c.s.cfg.IAMDriverID
	c.fillActor(&ev)
	if _, err := c.s.appender.Append(ctx, c.auditDB, ev); err != nil {
		return platform.Unavailable(err)
	}
	return nil
}

// actorID is the identity id recorded as a work row's actor.
func (c *call) actorID() string { return c.identity.ID }

// auditEvent is a mutation event about res with details.
func auditEvent(res iam.Resource, details map[string]any) audit.Event {
	return audit.Event{NamespaceID: res.NamespaceID, Resource: auditResource(res), Details: details}
}
