package api

import (
	"sync"
	"time"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
)

// Runtime view budgets, per API replica as upstream: each principal may read each Agent's
// runtime 2 times per second with a burst of 10, and the replica runs at most 16 reads at once.
// They protect the cluster's API server from a console left following, not a shared quota, so
// they live in memory: a replica that restarts forgets them.
const (
	runtimeReadsPerSecond = 2
	runtimeReadBurst      = 10
	runtimeConcurrent     = 16
	// runtimeGateKeys bounds the buckets kept; idle full buckets are dropped first.
	runtimeGateKeys = 10_000
)

type runtimeBucket struct {
	tokens float64
	at     time.Time
}

type runtimeGate struct {
	slots   chan struct{}
	mu      sync.Mutex
	buckets map[string]*runtimeBucket
}

func newRuntimeGate() *runtimeGate {
	return &runtimeGate{slots: make(chan struct{}, runtimeConcurrent), buckets: map[string]*runtimeBucket{}}
}

// enter spends one read of principal on agent at now and takes a replica slot; release gives the
// slot back. A refused read spends nothing.
func (g *runtimeGate) enter(principal, agent string, now time.Time) (release func(), err error) {
	if wait := g.spend(principal+"/"+agent, now); wait > 0 {
		return nil, &platform.Error{Problem: problem.Problem{Code: platform.CodeRuntimeLogsRateLimited,
			Message: "Too many runtime reads of this Agent. Try again shortly."}, RetryAfter: max(wait, time.Second)}
	}
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	default:
		return nil, platform.NewError(platform.CodeRuntimeLogsUnavailable, "Too many runtime reads are in progress on this API replica. Try again shortly.")
	}
}

// spend takes a token of key's bucket; it returns how long until one is available when none is.
func (g *runtimeGate) spend(key string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.buckets[key]
	if !ok {
		if len(g.buckets) >= runtimeGateKeys {
			g.pruneLocked(now)
		}
		b = &runtimeBucket{tokens: runtimeReadBurst, at: now}
		g.buckets[key] = b
	}
	b.tokens = min(runtimeReadBurst, b.tokens+now.Sub(b.at).Seconds()*runtimeReadsPerSecond)
	b.at = now
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / runtimeReadsPerSecond * float64(time.Second))
	}
	b.tokens--
	return 0
}

// pruneLocked drops the buckets that refilled: forgetting them changes no answer.
func (g *runtimeGate) pruneLocked(now time.Time) {
	full := time.Duration(runtimeReadBurst / runtimeReadsPerSecond * float64(time.Second))
	for k, b := range g.buckets {
		if now.Sub(b.at) >= full {
			delete(g.buckets, k)
		}
	}
}
