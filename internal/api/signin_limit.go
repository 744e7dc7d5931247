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

// signInLanes are the budgets one attempt spends, most specific first.
func signInLanes(email, client string) []store.SignInLane {
	key := func(parts ...string) []byte {
		h := sha256.New()
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		return h.Sum(nil)
	}
	return []store.SignInLane{
		{KeyHash: key("sign-in.client", email, client), Window: signInWindow, AttemptTTL: signInAttemptTTL, Budget: signInClientFailures},
		{KeyHash: key("sign-in.email", email), Window: signInWindow, AttemptTTL: signInAttemptTTL, Budget: signInEmailFailures},
	}
}

// signInAttempt is one admitted attempt on every lane; end it exactly once.
type signInAttempt struct {
	s     *Server
	lanes []store.SignInLane
	at    time.Time
}

// acquireSignIn admits an attempt on every lane of email and client, or answers how long until
// one may be admitted (at least a second).
func (s *Server) acquireSignIn(ctx context.Context, email, client string) (*signInAttempt, time.Duration, error) {
	a := &signInAttempt{s: s, at: s.now()}
	for _, lane := range signInLanes(email, client) {
		ok, retryAt, err := store.AcquireSignInLane(ctx, s.pool, lane, a.at)
		if err != nil {
			a.end(ctx, store.SignInReleased)
			return nil, 0, platform.Unavailable(err)
		}
		if !ok {
			a.end(ctx, store.SignInReleased)
			wait := time.Second
			if !retryAt.IsZero() {
				wait = retryAt.Sub(a.at)
			}
			return nil, roundUpSecond(wait), nil
		}
		a.lanes = append(a.lanes, lane)
	}
	return a, 0, nil
}

// end ends the attempt on every lane it was admitted to. It runs even when the request's context
// is done: an attempt left open would hold budget until its time to live.
func (a *signInAttempt) end(ctx context.Context, outcome store.SignInOutcome) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	now := a.s.now()
	for _, lane := range a.lanes {
		if err := store.EndSignInAttempt(ctx, a.s.pool, lane, a.at, now, outcome); err != nil {
			a.s.log.Warn("authentication.sign-in-limit-warning", "code", platform.CodeDependencyUnavailable)
		}
	}
	a.lanes = nil
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
