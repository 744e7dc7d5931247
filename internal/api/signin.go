package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/signin"
	"github.com/openclaw/occ/internal/store"
)

// SignIn is how people sign in besides passwords: the external providers and everything around
// them. The zero value is the password-only profile with CLI sessions disabled.
type SignIn struct {
	// Providers are the configured GitHub, Google and OIDC providers (at most one of each).
	Providers []signin.Provider
	// RecoveryUserID seeds the recovery account on the first start with a provider.
	RecoveryUserID string
	// RecoveryOnly is OCC_AUTH_PASSWORD_SIGN_IN=recovery-only.
	RecoveryOnly bool
	// OIDCLabel is the console button label of OIDC sign-in.
	OIDCLabel string
	// TrustedProxy is the ingress whose forwarded client address is believed (production).
	TrustedProxy *settings.TrustedProxy
	// CLISessions enables `occ login`.
	CLISessions bool
	// CLISessionMaxLifetime caps new CLI sessions (0: 8 hours).
	CLISessionMaxLifetime time.Duration
	// CookieDomain scopes the session cookie to a parent domain (native admin).
	CookieDomain string
}

// SignInRecorder counts callbacks that matched no pending attempt
// (occ_sign_in_unmatched_callbacks_total). A Config.Metrics that implements it receives them.
type SignInRecorder interface {
	ObserveUnmatchedCallback(provider string)
}

// Sign-in limits. Budgets per minute are shared by every replica (PostgreSQL); the concurrency
// caps bound the work one replica runs at once.
const (
	signInAttemptLifetime = 5 * time.Minute
	signInReceiptLifetime = 2 * time.Minute
	maxPendingAttempts    = 1000
	signInPerMinute       = 30
	signInActivePerKey    = 4
	signInActivePerStep   = 8
	attemptCookie         = "occ_login_attempt"
	receiptCookie         = "occ_login_receipt"
	// accountLockTimeout bounds waiting for a locked account: a retryable 503 after it.
	accountLockTimeout = 5 * time.Second
)

// Bucket names of the per-minute budgets.
const (
	bucketSignInStart    = "sign-in.start"
	bucketSignInCallback = "sign-in.callback"
	bucketSignInResult   = "sign-in.result"
	bucketCLIStart       = "cli.start"
	bucketCLIPoll        = "cli.poll"
	bucketCLIWrongCode   = "cli.wrong-code"
)

// activeGate caps concurrent work of one sign-in step: perKey per key and total in all.
type activeGate struct {
	mu     sync.Mutex
	total  int
	perKey map[string]int
}

func (g *activeGate) enter(key string) (leave func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perKey == nil {
		g.perKey = map[string]int{}
	}
	if g.total >= signInActivePerStep || (key != "" && g.perKey[key] >= signInActivePerKey) {
		return nil, false
	}
	g.total++
	if key != "" {
		g.perKey[key]++
	}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.total--
		if key != "" {
			if g.perKey[key]--; g.perKey[key] <= 0 {
				delete(g.perKey, key)
			}
		}
	}, true
}

// signInState is the server's sign-in configuration, derived once.
type signInState struct {
	cfg       SignIn
	providers map[string]signin.Provider // by name
	instances map[string]bool
	gates     map[string]*activeGate // by bucket
}

func newSignInState(cfg SignIn) (*signInState, error) {
	st := &signInState{cfg: cfg, providers: map[string]signin.Provider{}, instances: map[string]bool{}, gates: map[string]*activeGate{}}
	for _, p := range cfg.Providers {
		if _, dup := st.providers[p.Name()]; dup {
			return nil, fmt.Errorf("api: two %s providers", p.Name())
		}
		st.providers[p.Name()] = p
		st.instances[p.InstanceID()] = true
	}
	if len(st.providers) > 0 && cfg.RecoveryUserID == "" {
		return nil, errors.New("api: external sign-in needs a recovery account")
	}
	if st.cfg.CLISessionMaxLifetime <= 0 {
		st.cfg.CLISessionMaxLifetime = settings.DefaultCLISessionMaxLifetime
	}
	for _, b := range []string{bucketSignInStart, bucketSignInCallback, bucketSignInResult} {
		st.gates[b] = &activeGate{}
	}
	return st, nil
}

// external reports whether the guarded profile (a configured provider) is active.
func (st *signInState) external() bool { return len(st.providers) > 0 }

// ErrRecoveryAccountInvalid is returned by New when the recovery account does not exist or does
// not qualify (a local password and Installation administer).
var ErrRecoveryAccountInvalid = errors.New("api: the recovery account does not qualify")

// prepareSignIn seeds and checks the recovery account and writes the startup warnings of the
// external sign-in profile.
func (s *Server) prepareSignIn(ctx context.Context) error {
	st := s.signInState
	if !st.external() {
		return nil
	}
	seed, err := store.GetAccountControl(ctx, s.pool, st.cfg.RecoveryUserID, store.NoLock)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: OCC_AUTH_GITHUB_RECOVERY_USER_ID names no account", ErrRecoveryAccountInvalid)
	} else if err != nil {
		return err
	}
	holder, err := store.SeedRecovery(ctx, s.pool, s.installation.ID, seed.Account.ID)
	if err != nil {
		return err
	}
	if holder != seed.Account.ID {
		s.log.Warn("authentication.recovery-seed-warning", "code", "RECOVERY_SEED_DIFFERS")
	}
	ok, err := s.qualifiesForRecovery(ctx, s.pool, holder)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: it needs a local password and Installation administer", ErrRecoveryAccountInvalid)
	}
	if s.cfg.Mode == settings.Production && st.cfg.TrustedProxy == nil {
		s.log.Warn("authentication.sign-in-limit-warning", "code", "TRUSTED_PROXY_NOT_CONFIGURED")
	}
	if st.cfg.RecoveryOnly {
		var instances []string
		for id := range st.instances {
			instances = append(instances, id)
		}
		missing, err := store.EnabledAccountsWithoutIdentity(ctx, s.pool, instances, holder, 20)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			s.log.Warn("authentication.password-sign-in-warning", "code", "EXTERNAL_IDENTITY_MISSING",
				"skippedUserIds", strings.Join(missing, " "))
		}
	}
	for _, p := range st.cfg.Providers {
		go func() {
			// Discovery now spares the first sign-in the wait; a failure is retried on use.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signin.Deadline)
			defer cancel()
			_ = signin.Discover(dctx, p)
		}()
	}
	return nil
}

// qualifiesForRecovery: a local password and Installation administer.
func (s *Server) qualifiesForRecovery(ctx context.Context, db store.DBTX, accountID string) (bool, error) {
	a, err := store.GetAccountControl(ctx, db, accountID, store.NoLock)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if _, has, err := store.HasPassword(ctx, db, accountID); err != nil || !has {
		return false, err
	}
	native := iam.NewNative(s.cfg.IAMDriverID, iam.StoreSource{DB: db})
	d, err := native.Authorize(ctx, iam.Request{PrincipalID: a.Account.PrincipalID, Action: iam.ActionAdminister,
		Resource: iam.Resource{Kind: iam.KindInstallation, ID: s.installation.ID}})
	if err != nil {
		return false, err
	}
	return iam.Allows(d, s.cfg.IAMDriverID), nil
}

// budgetKey hashes a budget key: the raw value (an address, a cookie) is never stored.
func budgetKey(kind, value string) []byte {
	sum := sha256.Sum256([]byte(kind + ":" + value))
	return sum[:]
}

// spend adds one hit to key's budget in bucket; over perMinute it is a 429 with Retry-After.
func (s *Server) spend(ctx context.Context, bucket string, key []byte, perMinute int) error {
	hits, retry, err := store.SpendRateLimit(ctx, s.pool, bucket, key)
	if err != nil {
		return platform.Unavailable(err)
	}
	if hits > perMinute {
		return &platform.Error{Problem: problem.Problem{Code: platform.CodeRateLimited, Message: "Too many sign-in requests. Try again later."}, RetryAfter: time.Duration(retry) * time.Second}
	}
	return nil
}

// clientAddress is the request's client address and whether a trusted proxy reported it.
func (s *Server) clientAddress(r *http.Request) (string, bool) {
	return auth.ClientAddress(s.signInState.cfg.TrustedProxy, r)
}

// endSession ends a session whose provider instance is no longer configured. Only the replica
// whose DELETE removed the row audits it, so the end is recorded once.
func (s *Server) endSession(ctx context.Context, c *call, ended *auth.SessionEndedError) error {
	return s.inTx(ctx, func(tx *store.PipelinedTx) error {
		c.bind(tx)
		deleted, err := store.EndSession(ctx, tx, ended.SessionID)
		if err != nil || !deleted {
			return err
		}
		c.identity = s.principalOf(ended.Account)
		defer func() { c.identity = nil }()
		return c.audit(ctx, audit.Event{Action: ActionSignOut, ReasonCode: "PROVIDER_NOT_CONFIGURED",
			Resource: audit.Resource{Kind: "session", ID: ended.SessionID},
			Details:  map[string]any{"accountId": ended.Account.ID}})
	})
}

// observeUnmatched counts a callback that matched no attempt: it is never audited, because its
// sender is unauthenticated and can mint both the state and the cookie.
func (s *Server) observeUnmatched(provider string) {
	if r, ok := s.cfg.Metrics.(SignInRecorder); ok {
		r.ObserveUnmatchedCallback(provider)
	}
}

// warnProviderUnavailable logs a provider that could not answer, with bounded fields only.
func (s *Server) warnProviderUnavailable(c *call, p signin.Provider, f *signin.Failure) {
	attrs := []any{"requestId", c.requestID, "provider", p.Name(), "providerId", p.InstanceID(),
		"step", string(f.Step), "cause", string(f.Cause)}
	if f.Status != 0 {
		attrs = append(attrs, "status", f.Status)
	}
	if f.Code != "" {
		attrs = append(attrs, "code", f.Code)
	}
	s.log.Warn("authentication.provider-unavailable-warning", attrs...)
}

// lockTimeout bounds waits for locked accounts in the caller's transaction.
func lockTimeout(ctx context.Context, db store.DBTX) error {
	if err := store.SetLockTimeout(ctx, db, accountLockTimeout); err != nil {
		return platform.Unavailable(err)
	}
	return nil
}

// passwordLogin reads the password login of email. With recovery-only password sign-in, every
// email but the recovery account's is unknown, and no account of that email is read.
func (s *Server) passwordLogin(ctx context.Context, email string) (store.PasswordLogin, error) {
	if s.signInState.cfg.RecoveryOnly {
		r, err := store.GetRecovery(ctx, s.pool, s.installation.ID, store.NoLock)
		if err != nil {
			return store.PasswordLogin{}, err
		}
		if r.Account.Email != email {
			return store.PasswordLogin{}, store.ErrNotFound
		}
	}
	return store.GetPasswordLogin(ctx, s.pool, email)
}

// sweepInterval is how often expired device authorizations and CLI sessions are deleted.
const sweepInterval = 5 * time.Minute

// sweepSignIn deletes expired CLI sign-in rows until ctx ends (bounded batches; every replica may
// sweep, the deletes do not conflict).
func (s *Server) sweepSignIn(ctx context.Context) {
	if !s.signInState.cfg.CLISessions {
		return
	}
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = store.SweepCLISignIn(ctx, s.pool, 1000)
		}
	}
}
