package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
)

// Account controls of the external sign-in profile: read an account, disable, enable, revoke its
// sessions, attach and detach external identities, enrol, and the recovery designation. Every
// mutation takes the version just read, advances it, and needs every IAM grant of the target
// account's Principal; none changes IAM grants.

type accountControlView struct {
	UserID      string              `json:"userId"`
	PrincipalID string              `json:"principalId"`
	Version     int64               `json:"version"`
	Disabled    bool                `json:"disabled"`
	Methods     []accountMethodView `json:"methods"`
}

type accountMethodView struct {
	MethodID   string `json:"methodId"`
	ProviderID string `json:"providerId"`
	Subject    string `json:"subject"`
}

type userIDView struct {
	UserID string `json:"userId"`
}

type expectedVersionBody struct {
	ExpectedVersion int64 `json:"expectedVersion"`
}

type attachBody struct {
	ExpectedVersion int64  `json:"expectedVersion"`
	Subject         string `json:"subject"`
}

var errPasswordOnlyProfile = platform.Conflict("Account controls need GitHub, Google or OIDC sign-in to be configured.")

// guarded refuses the account routes in the password-only profile: without a provider there is
// no account version, disabled state or session binding to control.
func (s *Server) guarded() error {
	if !s.signInState.external() {
		return errPasswordOnlyProfile
	}
	return nil
}

// targetAccount reads and locks the path account.
func (s *Server) targetAccount(ctx context.Context, c *call) (store.AccountControl, error) {
	if err := s.guarded(); err != nil {
		return store.AccountControl{}, err
	}
	if err := lockTimeout(ctx, c.db); err != nil {
		return store.AccountControl{}, err
	}
	a, err := store.GetAccountControl(ctx, c.db, c.params["userId"], store.LockUpdate)
	if errors.Is(err, store.ErrNotFound) {
		return a, platform.NotFound("The account does not exist.")
	} else if err != nil {
		return a, platform.Unavailable(err)
	}
	return a, nil
}

// coverAccount applies the takeover rule: the caller must hold every IAM grant of the account's
// Principal. A refusal is an audited 403 naming the account.
func (s *Server) coverAccount(ctx context.Context, c *call, a store.Account) error {
	covers, err := c.iam.CoversIdentityAccess(ctx, c.identity.ID, a.PrincipalID)
	if err != nil && !errors.Is(err, iam.ErrPolicyInvalid) {
		return platform.Unavailable(err)
	}
	if err != nil || !covers {
		res := c.installationResource()
		d := c.deny(&res, "the caller does not hold every grant of the target account's Principal", "ACCOUNT_PRINCIPAL_GRANTS_NOT_COVERED")
		var den *denial
		if errors.As(d, &den) {
			if den.event.Details == nil {
				den.event.Details = map[string]any{}
			}
			den.event.Details["userId"], den.event.Details["principalId"] = a.ID, a.PrincipalID
		}
		return d
	}
	return nil
}

// coveredTarget decodes the body, reads and locks the path account and applies the takeover rule.
func (s *Server) coveredTarget(ctx context.Context, c *call, body any) (store.AccountControl, error) {
	if err := c.decode(body); err != nil {
		return store.AccountControl{}, err
	}
	a, err := s.targetAccount(ctx, c)
	if err != nil {
		return a, err
	}
	return a, s.coverAccount(ctx, c, a.Account)
}

func checkVersion(a store.AccountControl, expected int64) error {
	if a.Version != expected {
		return platform.Conflict("The account changed since it was read: read it again and use its version.")
	}
	return nil
}

func accountControl(a store.AccountControl) accountControlView {
	v := accountControlView{UserID: a.Account.ID, PrincipalID: a.Account.PrincipalID, Version: a.Version,
		Disabled: a.Account.Disabled, Methods: []accountMethodView{}}
	for _, m := range a.Methods {
		v.Methods = append(v.Methods, accountMethodView{MethodID: m.ID, ProviderID: m.ProviderID, Subject: m.Subject})
	}
	return v
}

// getAccount reads an account's sign-in state: present state, not a receipt of a mutation.
func (s *Server) getAccount(ctx context.Context, c *call) error {
	if err := s.guarded(); err != nil {
		return err
	}
	a, err := store.GetAccountControl(ctx, c.db, c.params["userId"], store.NoLock)
	if errors.Is(err, store.ErrNotFound) {
		return platform.NotFound("The account does not exist.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	c.respond(http.StatusOK, accountControl(a))
	return nil
}

// accountMutation runs the shared steps of every versioned mutation: read and lock the target,
// check coverage and version, run change, advance the version, end the sessions when asked, and
// audit.
func (s *Server) accountMutation(ctx context.Context, c *call, endSessions bool, change func(a store.AccountControl) (disabled bool, details map[string]any, err error)) error {
	var b expectedVersionBody
	a, err := s.coveredTarget(ctx, c, &b)
	if err != nil {
		return err
	}
	if err := checkVersion(a, b.ExpectedVersion); err != nil {
		return err
	}
	disabled, details, err := change(a)
	if err != nil {
		return err
	}
	return s.commitAccountChange(ctx, c, a, disabled, endSessions, details)
}

func (s *Server) commitAccountChange(ctx context.Context, c *call, a store.AccountControl, disabled, endSessions bool, details map[string]any) error {
	version, err := store.BumpAccount(ctx, c.db, a.Account.ID, disabled)
	if err != nil {
		return platform.Unavailable(err)
	}
	if details == nil {
		details = map[string]any{}
	}
	details["userId"], details["principalId"], details["version"] = a.Account.ID, a.Account.PrincipalID, version
	if endSessions {
		n, err := store.DeleteAccountSessions(ctx, c.db, a.Account.ID)
		if err != nil {
			return platform.Unavailable(err)
		}
		details["sessionsEnded"] = n
	}
	if err := c.audit(ctx, audit.Event{Resource: audit.Resource{Kind: "account", ID: a.Account.ID}, Details: details}); err != nil {
		return err
	}
	c.respond(http.StatusOK, userIDView{UserID: a.Account.ID})
	return nil
}

func (s *Server) isRecoveryAccount(ctx context.Context, c *call, accountID string) (bool, error) {
	r, err := store.GetRecovery(ctx, c.db, s.installation.ID, store.NoLock)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, platform.Unavailable(err)
	}
	return r.Account.ID == accountID, nil
}

// disableAccount ends all access of an account and its sessions; the recovery account refuses.
func (s *Server) disableAccount(ctx context.Context, c *call) error {
	return s.accountMutation(ctx, c, true, func(a store.AccountControl) (bool, map[string]any, error) {
		if a.Account.Disabled {
			return false, nil, platform.Conflict("The account is already disabled.")
		}
		if recovery, err := s.isRecoveryAccount(ctx, c, a.Account.ID); err != nil {
			return false, nil, err
		} else if recovery {
			return false, nil, platform.Conflict("The recovery account cannot be disabled: move the recovery designation first.")
		}
		return true, nil, nil
	})
}

// enableAccount re-enables a disabled account; its person signs in again.
func (s *Server) enableAccount(ctx context.Context, c *call) error {
	return s.accountMutation(ctx, c, false, func(a store.AccountControl) (bool, map[string]any, error) {
		if !a.Account.Disabled {
			return false, nil, platform.Conflict("The account is not disabled.")
		}
		return false, nil, nil
	})
}

// revokeAccountSessions ends every session of the account; a fresh sign-in still works.
func (s *Server) revokeAccountSessions(ctx context.Context, c *call) error {
	return s.accountMutation(ctx, c, true, func(a store.AccountControl) (bool, map[string]any, error) {
		if a.Account.Disabled {
			return false, nil, platform.Conflict("The account is disabled.")
		}
		return false, nil, nil
	})
}

// detachMethod removes one external identity of the account and ends every session of it; a
// password method refuses.
func (s *Server) detachMethod(ctx context.Context, c *call) error {
	methodID := c.params["methodId"]
	return s.accountMutation(ctx, c, true, func(a store.AccountControl) (bool, map[string]any, error) {
		if a.Account.Disabled {
			return false, nil, platform.Conflict("The account is disabled.")
		}
		var found *store.AccountMethod
		for i := range a.Methods {
			if a.Methods[i].ID == methodID {
				found = &a.Methods[i]
			}
		}
		switch {
		case found == nil:
			return false, nil, platform.NotFound("The account has no such sign-in method.")
		case found.Provider == "password":
			return false, nil, platform.Conflict("A password method cannot be detached.")
		}
		if _, err := store.DetachIdentity(ctx, c.db, a.Account.ID, methodID); err != nil {
			return false, nil, platform.Unavailable(err)
		}
		return false, map[string]any{"methodId": methodID, "providerId": found.ProviderID}, nil
	})
}

// attachIdentity attaches a verified external subject of the route's provider to the account. The
// user, Principal and grants stay; the account's sessions end.
func (s *Server) attachIdentity(ctx context.Context, c *call) error {
	name := c.route.Path[len("/api/auth/accounts/{userId}/providers/"):]
	var b attachBody
	a, err := s.coveredTarget(ctx, c, &b)
	if err != nil {
		return err
	}
	p, ok := s.signInState.providers[name]
	switch {
	case !ok:
		return platform.Conflict("This sign-in provider is not configured.")
	case checkVersion(a, b.ExpectedVersion) != nil:
		return checkVersion(a, b.ExpectedVersion)
	case a.Account.Disabled:
		return platform.Conflict("The account is disabled.")
	}
	m := store.AccountMethod{ID: platform.NewID("mth"), Provider: name, ProviderID: p.InstanceID(), Subject: b.Subject}
	switch err := store.AttachIdentity(ctx, c.db, m, a.Account.ID); {
	case errors.Is(err, store.ErrIdentityTaken):
		return platform.Conflict("The external identity is already assigned.")
	case errors.Is(err, store.ErrIdentityInstanceHeld):
		return platform.Conflict("The account already has an identity of this provider: detach it first.")
	case err != nil:
		return platform.Unavailable(err)
	}
	return s.commitAccountChange(ctx, c, a, false, true,
		map[string]any{"methodId": m.ID, "provider": name, "providerId": p.InstanceID(), "subject": b.Subject})
}

type enrolView struct {
	UserID      string `json:"userId"`
	PrincipalID string `json:"principalId"`
	Version     int64  `json:"version"`
	Created     bool   `json:"created"`
}

// enrolAccount enrols an account that holds its Principal and exactly one password. Every OCC
// account is enrolled when it is created, so this answers created: false; the route exists for
// clients of the upstream contract.
func (s *Server) enrolAccount(ctx context.Context, c *call) error {
	a, err := s.targetAccount(ctx, c)
	if err != nil {
		return err
	}
	if err := s.coverAccount(ctx, c, a.Account); err != nil {
		return err
	}
	if _, has, err := store.HasPassword(ctx, c.db, a.Account.ID); err != nil {
		return platform.Unavailable(err)
	} else if !has {
		return platform.Conflict("Only an account with a local password can be enrolled.")
	}
	c.respond(http.StatusOK, enrolView{UserID: a.Account.ID, PrincipalID: a.Account.PrincipalID, Version: a.Version})
	return nil
}

type recoveryView struct {
	UserID      string `json:"userId"`
	PrincipalID string `json:"principalId"`
	MethodID    string `json:"methodId"`
	Changed     *bool  `json:"changed,omitempty"`
}

// getRecovery reads the recovery designation.
func (s *Server) getRecovery(ctx context.Context, c *call) error {
	if err := s.guarded(); err != nil {
		return err
	}
	r, err := store.GetRecovery(ctx, c.db, s.installation.ID, store.NoLock)
	if errors.Is(err, store.ErrNotFound) {
		return platform.NotFound("No recovery account is designated.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	c.respond(http.StatusOK, recoveryView{UserID: r.Account.ID, PrincipalID: r.Account.PrincipalID, MethodID: r.MethodID})
	return nil
}

type replaceRecoveryBody struct {
	UserID                string `json:"userId"`
	ExpectedCurrentUserID string `json:"expectedCurrentUserId"`
	ExpectedVersion       int64  `json:"expectedVersion"`
}

// replaceRecovery moves the designation to another qualifying account. The caller needs every
// grant of the current holder's Principal: taking the designation acts against the holder.
func (s *Server) replaceRecovery(ctx context.Context, c *call) error {
	if err := s.guarded(); err != nil {
		return err
	}
	var b replaceRecoveryBody
	if err := c.decode(&b); err != nil {
		return err
	}
	if err := lockTimeout(ctx, c.db); err != nil {
		return err
	}
	current, err := store.GetRecovery(ctx, c.db, s.installation.ID, store.LockUpdate)
	if errors.Is(err, store.ErrNotFound) {
		return platform.NotFound("No recovery account is designated.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if err := s.coverAccount(ctx, c, current.Account); err != nil {
		return err
	}
	if current.Account.ID != b.ExpectedCurrentUserID {
		return platform.Conflict("The recovery designation changed since it was read.")
	}
	target, err := store.GetAccountControl(ctx, c.db, b.UserID, store.LockUpdate)
	if errors.Is(err, store.ErrNotFound) {
		return platform.NotFound("The account does not exist.")
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if err := checkVersion(target, b.ExpectedVersion); err != nil {
		return err
	}
	if target.Account.Disabled {
		return platform.Conflict("A disabled account cannot be the recovery account.")
	}
	if ok, err := s.qualifiesForRecovery(ctx, c.db, target.Account.ID); err != nil {
		return platform.Unavailable(err)
	} else if !ok {
		return platform.Conflict("The recovery account needs a local password and Installation administer.")
	}
	methodID, _, err := store.HasPassword(ctx, c.db, target.Account.ID)
	if err != nil {
		return platform.Unavailable(err)
	}
	changed := target.Account.ID != current.Account.ID
	if changed {
		if err := store.SetRecovery(ctx, c.db, s.installation.ID, target.Account.ID); err != nil {
			return platform.Unavailable(err)
		}
		if err := c.audit(ctx, audit.Event{Resource: audit.Resource{Kind: iam.KindInstallation, ID: s.installation.ID},
			Details: map[string]any{"userId": target.Account.ID, "principalId": target.Account.PrincipalID,
				"previousUserId": current.Account.ID}}); err != nil {
			return err
		}
	}
	c.respond(http.StatusOK, recoveryView{UserID: target.Account.ID, PrincipalID: target.Account.PrincipalID,
		MethodID: methodID, Changed: &changed})
	return nil
}
