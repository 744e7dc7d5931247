package api

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// emailShape is the account email rule after trimming and lowercasing.
var emailShape = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)

func normalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func validEmail(s string) bool {
	n := len([]rune(s))
	return n >= 3 && n <= 320 && emailShape.MatchString(s)
}

var errBadCredentials = platform.NewError(platform.CodeUnauthenticated, "The email or password is incorrect.")

type signInBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

type signInResult struct {
	Authenticated bool   `json:"authenticated"`
	SessionKey    string `json:"sessionKey"`
}

// signIn checks a password and starts a session. Unknown emails, wrong passwords and disabled
// accounts answer alike and cost alike (a hash is always verified). The limiter is consulted before
// any lookup; a success creates the session and its audit event in one transaction.
func (s *Server) signIn(ctx context.Context, c *call) error {
	var b signInBody
	if err := c.decode(&b); err != nil {
		return err
	}
	email := normalizeEmail(b.Email)
	if !validEmail(email) {
		return platform.Invalid("The email is not valid.", "/email", problem.DetailInvalidFormat)
	}
	client, _ := s.clientAddress(c.r)
	attempt, retryAfter, err := s.acquireSignIn(ctx, email, client)
	if err != nil {
		return err
	}
	if attempt == nil {
		s.log.Warn("authentication.sign-in-limited", "requestId", c.requestID, "code", platform.CodeRateLimited)
		return &platform.Error{Problem: problem.Problem{Code: platform.CodeRateLimited, Message: "Too many failed sign-ins. Try again later."}, RetryAfter: retryAfter}
	}
	login, err := s.passwordLogin(ctx, email)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		attempt.end(ctx, store.SignInReleased)
		return platform.Unavailable(err)
	}
	hash := s.dummyHash
	if found {
		hash = login.PasswordHash
	}
	var match bool
	var verr error
	if err := s.withHashSlot(ctx, func() { match, verr = auth.VerifyPassword(hash, b.Password) }); err != nil {
		attempt.end(ctx, store.SignInReleased)
		return err
	}
	if !found || verr != nil || !match || login.Account.Disabled {
		attempt.end(ctx, store.SignInFailed)
		s.auditSignInFailure(ctx, c, login, found)
		return errBadCredentials
	}

	token, tokenHash, err := auth.NewSessionToken()
	if err != nil {
		attempt.end(ctx, store.SignInReleased)
		return platform.Unavailable(err)
	}
	sessionID := auth.NewSessionID()
	c.identity = s.principalOf(login.Account)
	err = s.inTx(ctx, func(tx *store.PipelinedTx) error {
		c.bind(tx)
		if _, err := store.InsertSession(ctx, tx, sessionID, tokenHash, login.Account.ID, auth.SessionLifetime); err != nil {
			return platform.Unavailable(err)
		}
		return c.audit(ctx, audit.Event{Resource: audit.Resource{Kind: "session", ID: sessionID},
			Details: map[string]any{"accountId": login.Account.ID, "method": "password"}})
	})
	if err != nil {
		attempt.end(ctx, store.SignInReleased)
		return err
	}
	attempt.end(ctx, store.SignInSucceeded)
	c.cookies = append(c.cookies, s.cookies.Session(token, auth.SessionLifetime))
	c.respond(http.StatusOK, signInResult{Authenticated: true, SessionKey: auth.SessionKey([]byte(s.cfg.AuthSecret), sessionID)})
	return nil
}

// auditSignInFailure records a refused sign-in, best effort: a failed append changes nothing
// for the caller (the failure already counts).
func (s *Server) auditSignInFailure(ctx context.Context, c *call, login store.PasswordLogin, found bool) {
	if found {
		c.identity = s.principalOf(login.Account)
	}
	err := s.inTx(ctx, func(tx *store.PipelinedTx) error {
		c.bind(tx)
		return c.audit(ctx, audit.Event{Outcome: audit.OutcomeFailure, ReasonCode: "INVALID_CREDENTIALS",
			Resource: audit.Resource{Kind: iam.KindInstallation, ID: s.installation.ID}})
	})
	if err != nil {
		s.log.Warn("authentication.audit-warning", "requestId", c.requestID, "code", platform.CodeDependencyUnavailable)
	}
	c.identity = nil
}

// principalOf is the human Principal of an account, for audit actors of routes that resolve no
// IAM identity (sign-in, sign-out).
func (s *Server) principalOf(a store.Account) *iam.Identity {
	return &iam.Identity{ID: a.PrincipalID, Kind: iam.IdentityKindPrincipal, Issuer: auth.Issuer(s.installation.ID), Subject: a.ID}
}

// signOut deletes the stored session and clears the cookie; the session is 401 from now on.
func (s *Server) signOut(ctx context.Context, c *call) error {
	session := c.cred.Session
	c.identity = s.principalOf(session.Account)
	// Concurrent sign-outs of one session all admitted it; only the one that deleted it ends it.
	if deleted, err := store.DeleteSession(ctx, c.db, session.ID); err != nil {
		return platform.Unavailable(err)
	} else if !deleted {
		return platform.NewError(platform.CodeUnauthenticated, platform.MessageUnauthenticated)
	}
	if err := c.audit(ctx, audit.Event{Resource: audit.Resource{Kind: "session", ID: session.ID},
		Details: map[string]any{"accountId": session.Account.ID}}); err != nil {
		return err
	}
	c.cookies = append(c.cookies, s.cookies.Clear())
	c.respond(http.StatusOK, struct{}{})
	return nil
}

type sessionUser struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
}

type sessionView struct {
	Authenticated bool        `json:"authenticated"`
	SessionKey    string      `json:"sessionKey"`
	User          sessionUser `json:"user"`
}

// session describes the cookie's session, or null: anonymous is 200, not 401.
func (s *Server) session(_ context.Context, c *call) error {
	if c.cred.Kind != auth.KindSession {
		c.respond(http.StatusOK, nil)
		return nil
	}
	ses := c.cred.Session
	c.respond(http.StatusOK, sessionView{
		Authenticated: true,
		SessionKey:    auth.SessionKey([]byte(s.cfg.AuthSecret), ses.ID),
		User:          sessionUser{ID: ses.Account.ID, Email: ses.Account.Email, Name: ses.Account.Name},
	})
	return nil
}

type createAccountBody struct {
	Email    string  `json:"email"`
	Password string  `json:"password"`
	Name     *string `json:"name"`
	RoleID   *string `json:"roleId"`
	GitHub   *struct {
		Subject string `json:"subject"`
	} `json:"github"`
}

type accountView struct {
	ID          string `json:"id"`
	Email       string `json:"email"`
	Name        string `json:"name"`
	PrincipalID string `json:"principalId"`
}

// createAccount writes, in one transaction, the account with its password, its human Principal,
// the optional exact-Installation binding to an Installation Role, and the audit event. No session
// is issued.
func (s *Server) createAccount(ctx context.Context, c *call) error {
	var b createAccountBody
	if err := c.decode(&b); err != nil {
		return err
	}
	email := normalizeEmail(b.Email)
	if !validEmail(email) {
		return platform.Invalid("The email is not valid.", "/email", problem.DetailInvalidFormat)
	}
	if b.GitHub != nil {
		return platform.Conflict("GitHub sign-in is not configured.")
	}
	name := email
	if b.Name != nil {
		name = *b.Name
	}
	if !platform.ValidName(name) {
		return platform.Invalid("The name is not valid.", "/name", problem.DetailInvalidFormat)
	}
	var role *store.IAMRole
	if b.RoleID != nil {
		r, err := store.GetRole(ctx, c.db, *b.RoleID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && r.NamespaceID != nil) {
			return platform.Invalid("The Role is not an Installation Role.", "/roleId", problem.DetailInvalidValue)
		} else if err != nil {
			return platform.Unavailable(err)
		}
		role = &r
	}
	var hash string
	var herr error
	if err := s.withHashSlot(ctx, func() { hash, herr = auth.HashPassword(b.Password) }); err != nil {
		return err
	}
	if herr != nil {
		return platform.Unavailable(herr)
	}
	accountID := platform.NewID(platform.PrefixAccount)
	principalID := platform.NewID(platform.PrefixPrincipal)
	issuer := auth.Issuer(s.installation.ID)
	if err := store.InsertIAMIdentity(ctx, c.db, store.IAMIdentity{ID: principalID, Kind: iam.IdentityKindPrincipal,
		Issuer: &issuer, Subject: &accountID}); err != nil {
		return platform.Unavailable(err)
	}
	if err := store.InsertAccount(ctx, c.db, store.Account{ID: accountID, Email: email, Name: name, PrincipalID: principalID}, hash); err != nil {
		if errors.Is(err, store.ErrDuplicate) {
			return platform.Conflict("An account with this email exists.")
		}
		return platform.Unavailable(err)
	}
	details := map[string]any{"accountId": accountID, "principalId": principalID}
	if role != nil {
		kind, ins := iam.KindInstallation, s.installation.ID
		bindingID := "binding_auth_" + uuid.NewString()
		if err := store.InsertIAMBinding(ctx, c.db, store.IAMBinding{ID: bindingID, IdentitySubjectID: &principalID,
			RoleID: role.ID, ResourceKind: &kind, ResourceID: &ins}); err != nil {
			return platform.Unavailable(err)
		}
		details["roleId"], details["bindingId"] = role.ID, bindingID
	}
	if err := c.audit(ctx, audit.Event{Resource: audit.Resource{Kind: "account", ID: accountID}, Details: details}); err != nil {
		return err
	}
	c.respond(http.StatusCreated, accountView{ID: accountID, Email: email, Name: name, PrincipalID: principalID})
	return nil
}

type issueKeyBody struct {
	ServicePrincipalID string  `json:"servicePrincipalId"`
	NamespaceID        *string `json:"namespaceId"`
	Name               string  `json:"name"`
	ExpiresIn          *int64  `json:"expiresIn"`
}

type issuedKeyView struct {
	ID                 string  `json:"id"`
	ServicePrincipalID string  `json:"servicePrincipalId"`
	NamespaceID        *string `json:"namespaceId,omitempty"`
	Name               string  `json:"name"`
	ExpiresAt          string  `json:"expiresAt"`
	Key                string  `json:"key"`
}

// issueServiceKey issues a key for a non-Agent ServicePrincipal whose scope matches the request.
// The caller must hold every grant of the target (identity coverage); the key is stored as a
// SHA-256 hash and shown in this response only.
func (s *Server) issueServiceKey(ctx context.Context, c *call) error {
	var b issueKeyBody
	if err := c.decode(&b); err != nil {
		return err
	}
	target, err := store.GetIdentity(ctx, c.db, b.ServicePrincipalID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (target.Kind != iam.IdentityKindServicePrincipal || target.AgentID != nil)) {
		return platform.Invalid("The ServicePrincipal does not exist or cannot hold keys.", "/servicePrincipalId", problem.DetailInvalidValue)
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if !sameScope(target.NamespaceID, b.NamespaceID) {
		return platform.Invalid("The namespaceId must be the ServicePrincipal's Namespace.", "/namespaceId", problem.DetailInvalidValue)
	}
	if b.NamespaceID != nil {
		ns, err := store.GetNamespace(ctx, c.db, *b.NamespaceID, store.LockShare)
		if errors.Is(err, store.ErrNotFound) {
			return platform.Invalid("The Namespace does not exist.", "/namespaceId", problem.DetailInvalidValue)
		} else if err != nil {
			return platform.Unavailable(err)
		}
		if ns.Status == platform.NamespaceDeleting {
			return platform.Conflict("The Namespace is being deleted.")
		}
	}
	if err := s.checkCoverage(ctx, c, target.ID); err != nil {
		return err
	}
	secret, err := auth.NewServiceKey()
	if err != nil {
		return platform.Unavailable(err)
	}
	lifetime := auth.DefaultServiceKeyLifetime
	if b.ExpiresIn != nil {
		lifetime = time.Duration(*b.ExpiresIn) * time.Second
	}
	key := store.ServiceKey{ID: "key_" + uuid.NewString(), Hash: secret.Hash, Start: secret.Start,
		ServicePrincipalID: target.ID, InstallationID: s.installation.ID, NamespaceID: b.NamespaceID,
		Name: b.Name, CreatedBy: c.actorID()}
	expires, err := store.IssueServiceKey(ctx, c.db, key, lifetime)
	if err != nil {
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, audit.Event{NamespaceID: b.NamespaceID,
		Resource: audit.Resource{Kind: "service_key", ID: key.ID, NamespaceID: b.NamespaceID},
		Details: map[string]any{"issuerId": c.actorID(), "servicePrincipalId": target.ID,
			"serviceKeyId": key.ID, "serviceKeyName": key.Name}}); err != nil {
		return err
	}
	c.respond(http.StatusCreated, issuedKeyView{ID: key.ID, ServicePrincipalID: target.ID, NamespaceID: b.NamespaceID,
		Name: key.Name, ExpiresAt: platform.FormatTime(expires), Key: secret.Plaintext})
	return nil
}

// revokeServiceKey deletes a key: it is refused (401) from the next request on.
func (s *Server) revokeServiceKey(ctx context.Context, c *call) error {
	key, err := store.GetServiceKey(ctx, c.db, c.params["keyId"])
	if errors.Is(err, store.ErrNotFound) || (err == nil && key.InstallationID != s.installation.ID) {
		return platform.NotFound("The service key does not exist.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if err := s.checkCoverage(ctx, c, key.ServicePrincipalID); err != nil {
		return err
	}
	if deleted, err := store.DeleteServiceKey(ctx, c.db, key.ID); err != nil {
		return platform.Unavailable(err)
	} else if !deleted {
		return platform.NotFound("The service key does not exist.")
	}
	if err := c.audit(ctx, audit.Event{NamespaceID: key.NamespaceID,
		Resource: audit.Resource{Kind: "service_key", ID: key.ID, NamespaceID: key.NamespaceID},
		Details: map[string]any{"issuerId": c.actorID(), "servicePrincipalId": key.ServicePrincipalID,
			"serviceKeyId": key.ID, "serviceKeyName": key.Name}}); err != nil {
		return err
	}
	c.respond(http.StatusOK, struct {
		ID      string `json:"id"`
		Revoked bool   `json:"revoked"`
	}{key.ID, true})
	return nil
}

// checkCoverage applies the identity-coverage rule: the caller may delegate to
// target only if it holds every grant target holds. Failure is an audited 403.
func (s *Server) checkCoverage(ctx context.Context, c *call, targetID string) error {
	covers, err := c.iam.CoversIdentityAccess(ctx, c.identity.ID, targetID)
	if err != nil && !errors.Is(err, iam.ErrPolicyInvalid) {
		return platform.Unavailable(err)
	}
	if err != nil || !covers {
		res := c.installationResource()
		return c.deny(&res, "target grants not covered", "SERVICE_PRINCIPAL_GRANTS_NOT_COVERED")
	}
	return nil
}

func sameScope(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
