package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/signin"
	"github.com/openclaw/occ/internal/store"
)

// External sign-in: start stores a short-lived attempt bound to the browser by a cookie, the
// provider's callback consumes it once before the code exchange, and the starting tab trades the
// callback's receipt for the session key. An identity signs in only if an administrator attached
// it.

// Console paths the callback returns to.
const (
	consoleHome          = "/console/"
	authorizationCodeMax = 4096
)

type providersView struct {
	Password       bool             `json:"password"`
	GitHub         bool             `json:"github"`
	Google         bool             `json:"google"`
	OIDC           bool             `json:"oidc"`
	SessionBinding bool             `json:"sessionBinding"`
	OIDCSignIn     *oidcSignInLabel `json:"oidcSignIn,omitempty"`
}

type oidcSignInLabel struct {
	Label            string `json:"label"`
	AuthorizationURL string `json:"authorizationUrl"`
}

// getProviders says which sign-in methods the console offers.
func (s *Server) getProviders(ctx context.Context, c *call) error {
	st := s.signInState
	v := providersView{Password: !st.cfg.RecoveryOnly, SessionBinding: st.external()}
	_, v.GitHub = st.providers[signin.GitHub]
	_, v.Google = st.providers[signin.Google]
	if p, ok := st.providers[signin.OIDC]; ok {
		v.OIDC = true
		authURL := signin.KnownAuthorizationURL(p)
		if authURL == "" {
			if err := signin.Discover(ctx, p); err == nil {
				authURL = signin.KnownAuthorizationURL(p)
			}
		}
		if authURL != "" {
			v.OIDCSignIn = &oidcSignInLabel{Label: st.cfg.OIDCLabel, AuthorizationURL: authURL}
		}
	}
	c.respond(http.StatusOK, v)
	return nil
}

func (s *Server) provider(name string) (signin.Provider, error) {
	if p, ok := s.signInState.providers[name]; ok {
		return p, nil
	}
	return nil, platform.NotFound("This sign-in provider is not configured.")
}

// providerName is the provider segment of a /api/auth/providers/{name}/... route.
func providerName(c *call) string {
	parts := strings.Split(c.route.Path, "/")
	return parts[4]
}

// budgetKeyOf is what a sign-in step's budget keys on: the client address behind a trusted
// proxy; otherwise the browser's own cookie (every browser behind an ingress shares its address),
// and nothing at start, which has no browser state yet.
func (s *Server) budgetKeyOf(c *call, cookieName string) (string, []byte) {
	if addr, trusted := s.clientAddress(c.r); trusted {
		return "ip:" + addr, budgetKey("ip", addr)
	}
	if cookieName == "" {
		return "", nil
	}
	v := cookieValue(c.r, cookieName)
	return "browser:" + v, budgetKey("browser", v)
}

// admitStep applies a sign-in step's concurrency cap and per-minute budget.
func (s *Server) admitStep(ctx context.Context, c *call, bucket, cookieName string) (func(), error) {
	key, hashed := s.budgetKeyOf(c, cookieName)
	leave, ok := s.signInState.gates[bucket].enter(key)
	if !ok {
		return nil, &platform.Error{Problem: problem.Problem{Code: platform.CodeRateLimited, Message: "Too many sign-ins in progress. Try again later."}, RetryAfter: 1e9}
	}
	if hashed != nil {
		if err := s.spend(ctx, bucket, hashed, signInPerMinute); err != nil {
			leave()
			return nil, err
		}
	}
	return leave, nil
}

func cookieValue(r *http.Request, name string) string {
	var found string
	n := 0
	for _, ck := range r.Cookies() {
		if ck.Name == name {
			found, n = ck.Value, n+1
		}
	}
	if n != 1 || !auth.WellFormedToken(found) {
		return ""
	}
	return found
}

type startView struct {
	URL       string `json:"url"`
	AttemptID string `json:"attemptId"`
}

// startSignIn begins an external sign-in.
func (s *Server) startSignIn(ctx context.Context, c *call) error {
	p, err := s.provider(providerName(c))
	if err != nil {
		return err
	}
	leave, err := s.admitStep(ctx, c, bucketSignInStart, "")
	if err != nil {
		return err
	}
	defer leave()
	var state, browser, verifier string
	for _, dst := range []*string{&state, &browser, &verifier} {
		if *dst, err = auth.NewSecret(); err != nil {
			return platform.Unavailable(err)
		}
	}
	secret := []byte(s.cfg.AuthSecret)
	authURL, err := p.AuthorizationURL(ctx, state, verifier, auth.Keyed(secret, "nonce", state))
	if err != nil {
		if d := signin.AsDenial(err); d.Failure != nil {
			s.warnProviderUnavailable(c, p, d.Failure)
		}
		return platform.NewError(platform.CodeDependencyUnavailable, "The sign-in provider is unavailable.")
	}
	var attempt store.SignInAttempt
	err = s.inTx(ctx, func(tx *store.PipelinedTx) error {
		var err error
		attempt, err = store.InsertSignInAttempt(ctx, tx, store.SignInAttempt{
			StateHash: auth.HashToken(state), BrowserHash: auth.HashToken(browser), ProviderKey: p.AttemptKey(),
			CodeVerifier: verifier,
		}, signInAttemptLifetime, maxPendingAttempts)
		return err
	})
	if err != nil {
		return err
	}
	maxAge := int(attempt.ExpiresAt.Sub(attempt.CreatedAt).Seconds())
	c.cookies = append(c.cookies, s.cookies.Secured(attemptCookie, browser, maxAge, http.SameSiteLaxMode))
	c.respond(http.StatusOK, startView{URL: authURL, AttemptID: auth.Keyed(secret, "attempt", state)})
	return nil
}

// callbackQuery is a well-formed callback: exactly one state, and either one code or one error.
func callbackQuery(r *http.Request) (state, code, providerError string, ok bool) {
	q := r.URL.Query()
	states, codes, errs := q["state"], q["code"], q["error"]
	if len(states) != 1 || len(codes) > 1 || len(errs) > 1 || !auth.WellFormedToken(states[0]) {
		return "", "", "", false
	}
	switch {
	case len(codes) == 1 && len(errs) == 0 && codes[0] != "" && len(codes[0]) <= authorizationCodeMax:
		return states[0], codes[0], "", true
	case len(errs) == 1 && len(codes) == 0 && errs[0] != "" && len(errs[0]) <= 200:
		return states[0], "", errs[0], true
	}
	return "", "", "", false
}

// completeSignIn is the provider's redirect back. It always answers 302: to /console/ with the
// session and a two-minute receipt, or to /console/?authError=<provider>. A callback that matches
// no pending attempt is only counted; once it matches, every denial is audited.
func (s *Server) completeSignIn(ctx context.Context, c *call) error {
	name := providerName(c)
	failed := func(reason string) error {
		q := url.Values{"authError": {name}}
		if reason != "" {
			q.Set("authReason", reason)
		}
		c.redirect = consoleHome + "?" + q.Encode()
		return nil
	}
	p, ok := s.signInState.providers[name]
	state, code, providerError, wellFormed := callbackQuery(c.r)
	browser := cookieValue(c.r, s.cookies.SecuredName(attemptCookie))
	if !ok || !wellFormed || browser == "" {
		s.observeUnmatched(name)
		return failed("")
	}
	leave, err := s.admitStep(ctx, c, bucketSignInCallback, s.cookies.SecuredName(attemptCookie))
	if err != nil {
		return failed("")
	}
	defer leave()
	attempt, err := store.ConsumeSignInAttempt(ctx, s.pool, auth.HashToken(state), auth.HashToken(browser), p.AttemptKey())
	if errors.Is(err, store.ErrNotFound) {
		s.observeUnmatched(name)
		return failed("")
	} else if err != nil {
		return failed("")
	}
	c.cookies = append(c.cookies, s.cookies.Secured(attemptCookie, "", -1, http.SameSiteLaxMode))
	deny := func(reason, authReason string, details map[string]any) error {
		s.auditExternalDenial(ctx, c, p, reason, details)
		return failed(authReason)
	}
	if providerError != "" {
		// The provider reports its own failure (RFC 6749 section 4.1.2.1).
		if providerError == "server_error" || providerError == "temporarily_unavailable" {
			s.warnProviderUnavailable(c, p, &signin.Failure{Step: signin.StepAuthorization, Cause: signin.CauseProviderError})
			return deny(signin.ReasonUnavailable, "", nil)
		}
		return deny(signin.ReasonRejected, "", nil)
	}
	secret := []byte(s.cfg.AuthSecret)
	identity, err := p.Exchange(ctx, code, attempt.CodeVerifier, auth.Keyed(secret, "nonce", state))
	if err != nil {
		d := signin.AsDenial(err)
		if d.Failure != nil {
			s.warnProviderUnavailable(c, p, d.Failure)
		}
		switch d.Reason {
		case signin.ReasonMembershipRequired:
			return deny(d.Reason, "membership", nil)
		case signin.ReasonMembershipUnavailable:
			return deny(d.Reason, "membership-unavailable", nil)
		}
		return deny(d.Reason, "", nil)
	}
	receipt, err := auth.NewSecret()
	if err != nil {
		return failed("")
	}
	token, tokenHash, err := auth.NewSessionToken()
	if err != nil {
		return failed("")
	}
	sessionID := auth.NewSessionID()
	var login store.ExternalLogin
	var refusal string
	err = s.inTx(ctx, func(tx *store.PipelinedTx) error {
		c.bind(tx)
		var err error
		login, err = store.GetExternalLogin(ctx, tx, p.InstanceID(), identity.Subject)
		switch {
		case errors.Is(err, store.ErrNotFound):
			refusal = signin.ReasonRejected
			return nil
		case err != nil:
			return platform.Unavailable(err)
		case login.Account.Disabled:
			refusal = "ACCOUNT_DISABLED"
			return nil
		}
		if _, err := store.InsertExternalSession(ctx, tx, sessionID, tokenHash, login.Account.ID, login.MethodID,
			p.InstanceID(), auth.SessionLifetime); err != nil {
			return platform.Unavailable(err)
		}
		if err := store.InsertSignInReceipt(ctx, tx, auth.HashToken(receipt), auth.Keyed(secret, "attempt", state),
			sessionID, p.InstanceID(), signInReceiptLifetime); err != nil {
			return platform.Unavailable(err)
		}
		c.identity = s.principalOf(login.Account)
		return c.audit(ctx, audit.Event{Action: ActionSignIn, Resource: audit.Resource{Kind: "session", ID: sessionID},
			Details: map[string]any{"accountId": login.Account.ID, "method": p.Name(), "providerId": p.InstanceID()}})
	})
	c.identity = nil
	switch {
	case err != nil:
		return failed("")
	case refusal == "ACCOUNT_DISABLED":
		// Only the person the provider just authenticated reaches this, so it may say why.
		return deny(refusal, "account-disabled", map[string]any{"userId": login.Account.ID})
	case refusal != "":
		return deny(refusal, "", nil)
	}
	c.cookies = append(c.cookies, s.cookies.Session(token, auth.SessionLifetime),
		s.cookies.Secured(receiptCookie, receipt, int(signInReceiptLifetime.Seconds()), http.SameSiteStrictMode))
	c.redirect = consoleHome
	return nil
}

// auditExternalDenial records a refused external sign-in whose attempt matched. A failed append
// changes nothing for the browser: the sign-in is refused either way.
func (s *Server) auditExternalDenial(ctx context.Context, c *call, p signin.Provider, reason string, details map[string]any) {
	if details == nil {
		details = map[string]any{}
	}
	details["provider"], details["providerId"] = p.Name(), p.InstanceID()
	err := s.inTx(ctx, func(tx *store.PipelinedTx) error {
		c.bind(tx)
		return c.audit(ctx, audit.Event{Action: ActionSignIn, Outcome: audit.OutcomeFailure, ReasonCode: reason,
			Resource: audit.Resource{Kind: iam.KindInstallation, ID: s.installation.ID}, Details: details})
	})
	if err != nil {
		s.log.Warn("authentication.audit-warning", "requestId", c.requestID, "code", platform.CodeDependencyUnavailable)
	}
}

type resultBody struct {
	AttemptID string `json:"attemptId"`
}

// confirmSignIn trades the login receipt for the key of exactly the session the callback created,
// once. It never issues or extends a session.
func (s *Server) confirmSignIn(ctx context.Context, c *call) error {
	p, err := s.provider(providerName(c))
	if err != nil {
		return err
	}
	var b resultBody
	if err := c.decode(&b); err != nil {
		return err
	}
	refused := platform.NewError(platform.CodeUnauthenticated, "The sign-in receipt is missing, expired or already used.")
	receipt := cookieValue(c.r, s.cookies.SecuredName(receiptCookie))
	if receipt == "" {
		return refused
	}
	leave, err := s.admitStep(ctx, c, bucketSignInResult, s.cookies.SecuredName(receiptCookie))
	if err != nil {
		return err
	}
	defer leave()
	ok, err := store.ConsumeSignInReceipt(ctx, s.pool, auth.HashToken(receipt), b.AttemptID, c.cred.Session.ID, p.InstanceID())
	if err != nil {
		return platform.Unavailable(err)
	}
	if !ok {
		return refused
	}
	c.cookies = append(c.cookies, s.cookies.Secured(receiptCookie, "", -1, http.SameSiteStrictMode))
	c.respond(http.StatusOK, struct {
		SessionKey string `json:"sessionKey"`
	}{auth.SessionKey([]byte(s.cfg.AuthSecret), c.cred.Session.ID)})
	return nil
}
