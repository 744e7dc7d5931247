package auth

import (
	"sync"
	"time"
)

// Sign-in limiter defaults: 10 failures a minute per email, 4,096 tracked emails.
const (
	DefaultSignInFailures = 10
	DefaultSignInWindow   = time.Minute
	DefaultSignInLanes    = 4096
)

// SignInLimiter bounds password guessing per email: within any window, at most Failures attempts
// may fail, and attempts still in flight count against the budget, so parallel guesses cannot
// overrun it. A success does not spend and clears the email's lane. When every tracked lane holds
// spent failures, new emails are refused rather than evicting them (an attacker cannot flush a
// victim's lane by trying many emails). Wrong passwords and unknown emails spend alike.
//
// It is in-process state: each API replica keeps its own budget.
type SignInLimiter struct {
	Failures int
	Window   time.Duration
	Lanes    int
	now      func() time.Time

	mu    sync.Mutex
	lanes map[string]*signInLane
}

type signInLane struct {
	failures []time.Time // oldest first, all within the window after pruning
	inFlight int
}

// NewSignInLimiter returns a limiter with the default budget reading time from now (time.Now when
// nil); tests inject a clock.
func NewSignInLimiter(now func() time.Time) *SignInLimiter {
	if now == nil {
		now = time.Now
	}
	return &SignInLimiter{
		Failures: DefaultSignInFailures, Window: DefaultSignInWindow, Lanes: DefaultSignInLanes,
		now: now, lanes: map[string]*signInLane{},
	}
}

// SignInAttempt is one admitted attempt; exactly one of Fail, Succeed or Release ends it.
type SignInAttempt struct {
	l    *SignInLimiter
	key  string
	once sync.Once
}

// Acquire admits one attempt for email (already normalized). When the budget is spent it returns
// ok false and how long until an attempt may be admitted again (at least one second).
func (l *SignInLimiter) Acquire(email string) (attempt *SignInAttempt, retryAfter time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lane := l.lanes[email]
	if lane == nil {
		if len(l.lanes) >= l.Lanes {
			l.pruneAll(now)
		}
		if len(l.lanes) >= l.Lanes {
			return nil, l.earliestRelease(now), false
		}
		lane = &signInLane{}
		l.lanes[email] = lane
	}
	l.prune(lane, now)
	if len(lane.failures)+lane.inFlight >= l.Failures {
		wait := time.Second
		if len(lane.failures) > 0 {
			wait = lane.failures[0].Add(l.Window).Sub(now)
		}
		return nil, roundUpSecond(wait), false
	}
	lane.inFlight++
	return &SignInAttempt{l: l, key: email}, 0, true
}

// Fail ends the attempt as a failed sign-in: it spends the budget for a window.
func (a *SignInAttempt) Fail() {
	a.end(func(lane *signInLane, now time.Time) { lane.failures = append(lane.failures, now) })
}

// Succeed ends the attempt as a successful sign-in: the lane is cleared.
func (a *SignInAttempt) Succeed() {
	a.end(func(lane *signInLane, _ time.Time) { lane.failures = nil })
}

// Release ends an attempt that neither succeeded nor failed (a dependency was unavailable).
func (a *SignInAttempt) Release() { a.end(func(*signInLane, time.Time) {}) }

func (a *SignInAttempt) end(f func(lane *signInLane, now time.Time)) {
	if a == nil {
		return
	}
	a.once.Do(func() {
		l := a.l
		l.mu.Lock()
		defer l.mu.Unlock()
		lane := l.lanes[a.key]
		if lane == nil {
			return
		}
		lane.inFlight--
		f(lane, l.now())
		if lane.inFlight == 0 && len(lane.failures) == 0 {
			delete(l.lanes, a.key)
		}
	})
}

func (l *SignInLimiter) prune(lane *signInLane, now time.Time) {
	cut := 0
	for cut < len(lane.failures) && !lane.failures[cut].Add(l.Window).After(now) {
		cut++
	}
	lane.failures = lane.failures[cut:]
}

func (l *SignInLimiter) pruneAll(now time.Time) {
	for key, lane := range l.lanes {
		l.prune(lane, now)
		if lane.inFlight == 0 && len(lane.failures) == 0 {
			delete(l.lanes, key)
		}
	}
}

// earliestRelease is when some lane's oldest failure leaves the window.
func (l *SignInLimiter) earliestRelease(now time.Time) time.Duration {
	wait := l.Window
	for _, lane := range l.lanes {
		if len(lane.failures) > 0 {
			if w := lane.failures[0].Add(l.Window).Sub(now); w < wait {
				wait = w
			}
		}
	}
	return roundUpSecond(wait)
}

func roundUpSecond(d time.Duration) time.Duration {
	if d < time.Second {
		return time.Second
	}
	return (d + time.Second - 1).Truncate(time.Second)
}
