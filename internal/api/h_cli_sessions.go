package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// `occ login`: the CLI starts a device authorization (unauthenticated) and polls for it; the
// person approves or denies it in a signed-in browser; the CLI then receives a CLI session that
// admits the person's own Principal and never outlives the approving browser session. Every
// piece of state lives in PostgreSQL, so each step may reach another replica.

const (
	deviceAuthorizationLifetime    = 10 * time.Minute
	maxPendingDeviceAuthorizations = 1000
	cliPollInterval                = 5 * time.Second
	cliVerificationPath            = "/console/cli-login"
	cliStartPerMinute              = 30
	// cliPollsPerMinute bounds one address polling many codes (12 a minute per code at the
	// advertised interval).
	cliPollsPerMinute       = 240
	cliWrongCodesPerMinute  = 5
	maxCLISessionsPerParent = 10
)

func (s *Server) cliEnabled() error {
	if !s.signInState.cfg.CLISessions {
		return platform.NotFound("CLI sign-in is not enabled on this controller.")
	}
	return nil
}

type cliStartBody struct {
	ClientLabel string  `json:"clientLabel"`
	NamespaceID *string `json:"namespaceId"`
}

type cliStartView struct {
	DeviceCode      string `json:"deviceCode"`
	UserCode        string `json:"userCode"`
	VerificationURI string `json:"verificationUri"`
	Interval        int    `json:"interval"`
	ExpiresIn       int    `json:"expiresIn"`
}

// startCLISignIn starts `occ login`: 30 a minute per client address, 1,000 pending in all (the
// oldest are evicted).
func (s *Server) startCLISignIn(ctx context.Context, c *call) error {
	if err := s.cliEnabled(); err != nil {
		return err
	}
	var b cliStartBody
	if err := c.decode(&b); err != nil {
		return err
	}
	addr, _ := s.clientAddress(c.r)
	if err := s.spend(ctx, bucketCLIStart, budgetKey("ip", addr), cliStartPerMinute); err != nil {
		return err
	}
	deviceCode, err := auth.NewSecret()
	if err != nil {
		return platform.Unavailable(err)
	}
	for attempt := 0; ; attempt++ {
		userCode, err := auth.NewUserCode()
		if err != nil {
			return platform.Unavailable(err)
		}
		normalized, _ := auth.NormalizeUserCode(userCode)
		var started store.DeviceAuthorization
		err = s.inTx(ctx, func(tx *store.PipelinedTx) error {
			var err error
			started, err = store.InsertDeviceAuthorization(ctx, tx, store.DeviceAuthorization{
				ID: platform.NewID("cda"), DeviceCodeHash: auth.HashToken(deviceCode), UserCodeHash: auth.HashToken(normalized),
				ClientLabel: b.ClientLabel, RequesterAddress: addr, NamespaceID: b.NamespaceID,
			}, deviceAuthorizationLifetime, maxPendingDeviceAuthorizations)
			return err
		})
		if errors.Is(err, store.ErrUserCodeTaken) && attempt == 0 {
			continue
		}
		if err != nil {
			return err
		}
		c.respond(http.StatusCreated, cliStartView{DeviceCode: deviceCode, UserCode: userCode,
			VerificationURI: cliVerificationPath, Interval: int(cliPollInterval / time.Second),
			ExpiresIn: int(started.ExpiresAt.Sub(started.CreatedAt).Seconds())})
		return nil
	}
}

type cliTokenBody struct {
	DeviceCode string `json:"deviceCode"`
}

type cliSessionView struct {
	ID          string  `json:"id"`
	ClientLabel string  `json:"clientLabel"`
	CreatedAt   string  `json:"createdAt"`
	ExpiresAt   string  `json:"expiresAt"`
	NamespaceID *string `json:"namespaceId,omitempty"`
}

type cliUserView struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
}

type cliTokenView struct {
	Token   string         `json:"token"`
	Session cliSessionView `json:"session"`
	User    cliUserView    `json:"user"`
}

func cliSession(s store.CLISession) cliSessionView {
	return cliSessionView{ID: s.ID, ClientLabel: s.ClientLabel, CreatedAt: platform.FormatTime(s.CreatedAt),
		ExpiresAt: platform.FormatTime(s.ExpiresAt), NamespaceID: s.NamespaceID}
}

func cliUser(a store.Account) cliUserView { return cliUserView{ID: a.ID, Email: a.Email, Name: a.Name} }

// exchangeCLIDeviceCode is the CLI's poll. In one transaction: the authorization is locked and the
// poll recorded; an approved one whose parent browser session is live is consumed, its CLI session
// inserted and the issue audited, so two pollers consume it once and an audit failure issues
// nothing (the CLI polls again).
func (s *Server) exchangeCLIDeviceCode(ctx context.Context, c *call) error {
	if err := s.cliEnabled(); err != nil {
		return err
	}
	var b cliTokenBody
	if err := c.decode(&b); err != nil {
		return err
	}
	addr, _ := s.clientAddress(c.r)
	if err := s.spend(ctx, bucketCLIPoll, budgetKey("ip", addr), cliPollsPerMinute); err != nil {
		return err
	}
	expired := platform.NewError(platform.CodeExpiredToken,
		"The sign-in request expired, was already used or lost its approving browser session. Run occ login again.")
	var answer *platform.Error
	var issued store.CLISession
	var token string
	err := s.inTx(ctx, func(tx *store.PipelinedTx) error {
		c.bind(tx)
		a, err := store.PollDeviceAuthorization(ctx, tx, auth.HashToken(b.DeviceCode))
		if errors.Is(err, store.ErrNotFound) {
			answer = expired
			return nil
		} else if err != nil {
			return platform.Unavailable(err)
		}
		sinceExpiry, err := store.ElapsedSince(ctx, tx, a.ExpiresAt)
		if err != nil {
			return platform.Unavailable(err)
		}
		if sinceExpiry >= 0 {
			answer = expired
			return nil
		}
		if a.LastPolledAt != nil {
			// RFC 8628 slow_down, with a second of slack for timer jitter.
			since, err := store.ElapsedSince(ctx, tx, *a.LastPolledAt)
			if err != nil {
				return platform.Unavailable(err)
			}
			if since < cliPollInterval-time.Second {
				answer = platform.NewError(platform.CodeSlowDown, "Polling too fast: wait 5 seconds longer between requests.")
				return nil
			}
		}
		switch a.State {
		case store.DeviceAuthorizationPending:
			answer = platform.NewError(platform.CodeAuthorizationPending, "Waiting for approval in the console.")
			return nil
		case store.DeviceAuthorizationDenied:
			answer = platform.NewError(platform.CodeAccessDenied, "The sign-in request was denied in the console.")
			return nil
		case store.DeviceAuthorizationConsumed:
			answer = expired
			return nil
		}
		if _, live, err := store.LiveParentSession(ctx, tx, *a.ParentSessionID); err != nil {
			return platform.Unavailable(err)
		} else if !live {
			answer = expired
			return nil
		}
		if n, err := store.CountLiveCLISessions(ctx, tx, *a.ParentSessionID); err != nil {
			return platform.Unavailable(err)
		} else if n >= maxCLISessionsPerParent {
			answer = platform.NewError(platform.CodeCLISessionLimit,
				"The approving browser session already holds 10 CLI sessions. Revoke one in the console, or sign in to the console again.")
			return nil
		}
		var hash []byte
		if token, hash, err = auth.NewCLIToken(); err != nil {
			return platform.Unavailable(err)
		}
		account, err := store.GetAccountControl(ctx, tx, *a.AccountID, store.NoLock)
		if err != nil {
			return platform.Unavailable(err)
		}
		issued, err = store.InsertCLISession(ctx, tx, store.CLISession{ID: platform.NewID("cls"), AuthorizationID: a.ID,
			ParentSessionID: *a.ParentSessionID, NamespaceID: a.NamespaceID, ClientLabel: a.ClientLabel, Account: account.Account},
			hash, s.signInState.cfg.CLISessionMaxLifetime)
		if errors.Is(err, store.ErrCLISessionRefused) {
			answer = expired
			return nil
		} else if err != nil {
			return platform.Unavailable(err)
		}
		if err := store.MarkDeviceAuthorizationConsumed(ctx, tx, a.ID); err != nil {
			return platform.Unavailable(err)
		}
		c.identity = s.principalOf(account.Account)
		defer func() { c.identity = nil }()
		return c.audit(ctx, audit.Event{Action: ActionCLISessionsIssue, Resource: audit.Resource{Kind: "cli_session", ID: issued.ID},
			Details: map[string]any{"cliSessionId": issued.ID, "authorizationId": a.ID, "parentSessionId": *a.ParentSessionID,
				"expiresAt": platform.FormatTime(issued.ExpiresAt)}})
	})
	if err != nil {
		return err
	}
	if answer != nil {
		return answer
	}
	c.respond(http.StatusOK, cliTokenView{Token: token, Session: cliSession(issued), User: cliUser(issued.Account)})
	return nil
}

type userCodeBody struct {
	UserCode string `json:"userCode"`
}

type decideBody struct {
	UserCode string `json:"userCode"`
	Decision string `json:"decision"`
}

type pendingView struct {
	ClientLabel      string  `json:"clientLabel"`
	RequesterAddress string  `json:"requesterAddress"`
	SameAddress      bool    `json:"sameAddress"`
	NamespaceID      *string `json:"namespaceId,omitempty"`
	CodeExpiresAt    string  `json:"codeExpiresAt"`
	SessionExpiresAt string  `json:"sessionExpiresAt"`
}

// approvingSession admits only a browser session that also sent its x-occ-session-key: the
// approval page must prove which session approves.
func (s *Server) approvingSession(c *call) error {
	if len(c.r.Header.Values(auth.SessionKeyHeader)) != 1 {
		return platform.NewError(platform.CodeUnauthenticated, "The approval needs the x-occ-session-key of the signed-in browser session.")
	}
	return nil
}

// wrongCodeKeys are the two budgets a wrong code spends: the account's and the address's.
func (s *Server) wrongCodeKeys(c *call) [][]byte {
	addr, _ := s.clientAddress(c.r)
	return [][]byte{budgetKey("account", c.cred.Session.Account.ID), budgetKey("ip", addr)}
}

// typedCode checks the wrong-code budget, then normalizes the typed code.
func (s *Server) typedCode(ctx context.Context, c *call, typed string) (string, bool, error) {
	for _, key := range s.wrongCodeKeys(c) {
		hits, retry, err := store.RateLimitHits(ctx, s.pool, bucketCLIWrongCode, key)
		if err != nil {
			return "", false, platform.Unavailable(err)
		}
		if hits >= cliWrongCodesPerMinute {
			return "", false, &platform.Error{Problem: problem.Problem{Code: platform.CodeRateLimited, Message: "Too many wrong codes. Try again later."}, RetryAfter: time.Duration(retry) * time.Second}
		}
	}
	code, ok := auth.NormalizeUserCode(typed)
	return code, ok, nil
}

// wrongCode spends the wrong-code budget and answers 404.
func (s *Server) wrongCode(ctx context.Context, c *call) error {
	for _, key := range s.wrongCodeKeys(c) {
		if _, _, err := store.SpendRateLimit(ctx, s.pool, bucketCLIWrongCode, key); err != nil {
			return platform.Unavailable(err)
		}
	}
	return platform.NotFound("No pending sign-in request has this code. Check the code shown by occ login; it expires after 10 minutes.")
}

// sessionExpiry is when a CLI session approved now would end.
func (s *Server) sessionExpiry(c *call) time.Time {
	capped := time.Now().Add(s.signInState.cfg.CLISessionMaxLifetime)
	if c.cred.Session.ExpiresAt.Before(capped) {
		return c.cred.Session.ExpiresAt
	}
	return capped
}

// approvalCode runs the steps the approval routes share: the feature switch, the approving
// session, the body, and the typed code under the wrong-code budget (a malformed code is wrong).
func (s *Server) approvalCode(ctx context.Context, c *call, body any, typed func() string) (string, error) {
	if err := s.cliEnabled(); err != nil {
		return "", err
	}
	if err := s.approvingSession(c); err != nil {
		return "", err
	}
	if err := c.decode(body); err != nil {
		return "", err
	}
	code, ok, err := s.typedCode(ctx, c, typed())
	if err != nil {
		return "", err
	}
	if !ok {
		return "", s.wrongCode(ctx, c)
	}
	return code, nil
}

// lookupCLIDeviceAuthorization shows the approval page what it is asked to approve.
func (s *Server) lookupCLIDeviceAuthorization(ctx context.Context, c *call) error {
	var b userCodeBody
	code, err := s.approvalCode(ctx, c, &b, func() string { return b.UserCode })
	if err != nil {
		return err
	}
	a, err := store.GetPendingDeviceAuthorization(ctx, s.pool, auth.HashToken(code))
	if errors.Is(err, store.ErrNotFound) {
		return s.wrongCode(ctx, c)
	} else if err != nil {
		return platform.Unavailable(err)
	}
	addr, _ := s.clientAddress(c.r)
	c.respond(http.StatusOK, pendingView{ClientLabel: a.ClientLabel, RequesterAddress: a.RequesterAddress,
		SameAddress: a.RequesterAddress == addr, NamespaceID: a.NamespaceID, CodeExpiresAt: platform.FormatTime(a.ExpiresAt),
		SessionExpiresAt: platform.FormatTime(s.sessionExpiry(c))})
	return nil
}

// decideCLIDeviceAuthorization approves or denies a pending request, audited in the same
// transaction. Deny is final.
func (s *Server) decideCLIDeviceAuthorization(ctx context.Context, c *call) error {
	var b decideBody
	code, err := s.approvalCode(ctx, c, &b, func() string { return b.UserCode })
	if err != nil {
		return err
	}
	approve := b.Decision == "approve"
	session := c.cred.Session
	var decided store.DeviceAuthorization
	var missing bool
	err = s.inTx(ctx, func(tx *store.PipelinedTx) error {
		c.bind(tx)
		var err error
		decided, err = store.DecideDeviceAuthorization(ctx, tx, auth.HashToken(code), approve, session.Account.ID, session.ID)
		if errors.Is(err, store.ErrNotFound) {
			missing = true
			return nil
		} else if err != nil {
			return platform.Unavailable(err)
		}
		action := ActionCLISessionsDeny
		if approve {
			action = ActionCLISessionsApprove
		}
		c.identity = s.principalOf(session.Account)
		defer func() { c.identity = nil }()
		details := map[string]any{"authorizationId": decided.ID, "requesterAddress": decided.RequesterAddress,
			"clientLabel": decided.ClientLabel}
		if decided.NamespaceID != nil {
			details["namespaceId"] = *decided.NamespaceID
		}
		return c.audit(ctx, audit.Event{Action: action, Resource: audit.Resource{Kind: "cli_device_authorization", ID: decided.ID},
			Details: details})
	})
	if err != nil {
		return err
	}
	if missing {
		return s.wrongCode(ctx, c)
	}
	out := struct {
		Decision         string `json:"decision"`
		SessionExpiresAt string `json:"sessionExpiresAt,omitempty"`
	}{Decision: b.Decision}
	if approve {
		out.SessionExpiresAt = platform.FormatTime(s.sessionExpiry(c))
	}
	c.respond(http.StatusOK, out)
	return nil
}

// listCLISessions lists the person's own unexpired CLI sessions.
func (s *Server) listCLISessions(ctx context.Context, c *call) error {
	if err := s.cliEnabled(); err != nil {
		return err
	}
	list, err := store.ListCLISessions(ctx, s.pool, c.cred.Session.Account.ID)
	if err != nil {
		return platform.Unavailable(err)
	}
	out := make([]cliSessionView, 0, len(list))
	for _, cs := range list {
		out = append(out, cliSession(cs))
	}
	c.respond(http.StatusOK, out)
	return nil
}

// revokeCLISession revokes one of the person's own CLI sessions (the console's Revoke).
func (s *Server) revokeCLISession(ctx context.Context, c *call) error {
	if err := s.cliEnabled(); err != nil {
		return err
	}
	return s.revokeOwnCLISession(ctx, c, c.cred.Session.Account, c.params["cliSessionId"], "console")
}

func (s *Server) revokeOwnCLISession(ctx context.Context, c *call, account store.Account, id, reason string) error {
	var deleted bool
	err := s.inTx(ctx, func(tx *store.PipelinedTx) error {
		c.bind(tx)
		var err error
		if deleted, err = store.DeleteCLISession(ctx, tx, account.ID, id); err != nil || !deleted {
			return err
		}
		c.identity = s.principalOf(account)
		defer func() { c.identity = nil }()
		return c.audit(ctx, audit.Event{Action: ActionCLISessionsRevoke, Resource: audit.Resource{Kind: "cli_session", ID: id},
			Details: map[string]any{"cliSessionId": id, "reason": reason}})
	})
	if err != nil {
		return err
	}
	if !deleted && reason == "console" {
		return platform.NotFound("The CLI session was not found.")
	} else if !deleted {
		// Concurrent logouts of one CLI session all admitted it; only the one that deleted it
		// ended it, the others answer as for a session that is gone.
		return platform.NewError(platform.CodeUnauthenticated, platform.MessageUnauthenticated)
	}
	c.respond(http.StatusOK, struct {
		ID      string `json:"id"`
		Revoked bool   `json:"revoked"`
	}{id, true})
	return nil
}

// cliCaller is the CLI session of a request to the current-session routes.
func (s *Server) cliCaller(c *call) (store.CLISession, error) {
	if err := s.cliEnabled(); err != nil {
		return store.CLISession{}, err
	}
	if c.cred.Kind != auth.KindCLISession {
		return store.CLISession{}, platform.NewError(platform.CodeUnauthenticated, "A valid CLI session (x-occ-cli-session) is required.")
	}
	return c.cred.CLI, nil
}

type currentCLISessionView struct {
	cliSessionView
	User cliUserView `json:"user"`
}

// getCurrentCLISession is `occ auth status`: the CLI session and who it admits.
func (s *Server) getCurrentCLISession(_ context.Context, c *call) error {
	cs, err := s.cliCaller(c)
	if err != nil {
		return err
	}
	c.respond(http.StatusOK, currentCLISessionView{cliSessionView: cliSession(cs), User: cliUser(cs.Account)})
	return nil
}

// endCurrentCLISession is `occ logout`. A concurrent revoke or logout may win: the loser answers
// 401 as for an ended session (occ logout treats that as signed out), and one event is audited.
func (s *Server) endCurrentCLISession(ctx context.Context, c *call) error {
	cs, err := s.cliCaller(c)
	if err != nil {
		return err
	}
	return s.revokeOwnCLISession(ctx, c, cs.Account, cs.ID, "logout")
}
