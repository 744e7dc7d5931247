package api

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
)

// Password sign-in budgets, kept in PostgreSQL so that every replica spends the same ones. A
// client may fail 10 times a minute for one email from its own address; all clients together 100
// times a minute for one email, which bounds guessing from many addresses. One client therefore
// cannot lock an account out for everyone, and an attacker needs many addresses to do it at all.
// Behind an ingress the client address is the one the trusted proxies report
// (OCC_AUTH_TRUSTED_PROXY_CIDRS); without them every client shares the ingress's address.
const (
	signInClientFailures = 10
	signInEmailFailures  = 100
	signInWindow         = time.Minute
	// An attempt in flight counts against the budget until it ends, or this long if its replica
	// died before ending it (a sign-in is one request: far shorter than this).
	signInAttemptTTL = 2 * time.Minute
)

// signInBudget is what one attempt spends: the client's lane for the email, and the email's lane.
func signInBudget(email, client string) store.SignInBudget {
	key := func(parts ...string) []byte {
		h := sha256.New()
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		return h.Sum(nil)
	}
	return store.SignInBudget{Window: signInWindow, AttemptTTL: signInAttemptTTL, Lanes: []store.SignInLane{
		{KeyHash: key("sign-in.client", email, client), Budget: signInClientFailures},
		{KeyHash: key("sign-in.email", email), Budget: signInEmailFailures},
	}}
}

// signInAttempt is one admitted attempt; end it exactly once.
type signInAttempt struct {
	s      *Server
	budget store.SignInBudget
	at     time.Time
}

// acquireSignIn admits an attempt on every lane of email and client, or answers how long until
// one may be admitted (at least a second).
func (s *Server) acquireSignIn(ctx context.Context, email, client string) (*signInAttempt, time.Duration, error) {
	a := &signInAttempt{s: s, budget: signInBudget(email, client), at: s.now()}
	ok, retryAt, err := store.AcquireSignInLanes(ctx, s.pool, a.budget, a.at)
	if err != nil {
		return nil, 0, platform.Unavailable(err)
	}
	if !ok {
		wait := time.Second
		if !retryAt.IsZero() {
			wait = retryAt.Sub(a.at)
		}
		return nil, roundUpSecond(wait), nil
	}
	return a, 0, nil
}

// end ends the attempt on every lane. It runs even when the request's context is done: an
// attempt left open would hold budget until its time to live.
func (a *signInAttempt) end(ctx context.Context, outcome store.SignInOutcome) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := store.EndSignInAttempt(ctx, a.s.pool, a.budget, a.at, a.s.now(), outcome); err != nil {
		a.s.log.Warn("authentication.sign-in-limit-warning", "code", platform.CodeDependencyUnavailable)
	}
}

func roundUpSecond(d time.Duration) time.Duration {
	if d < time.Second {
		return time.Second
	}
	return (d + time.Second - 1).Truncate(time.Second)
}

// now reads the clock of the password sign-in budgets.
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}
