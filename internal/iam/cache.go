package iam

import (
	"context"
	"sync"
)

// DecisionCache keeps decisions for reuse while the policy they were decided on has not changed.
// It is shared by the requests of one process; each request reads the policy epoch (a number that
// every committed change to the policy tables changes) in the statement that looks up its
// identity, and only uses or adds decisions made under that same epoch. A request that begins
// after a revocation committed reads the new epoch and decides afresh, on every process at once:
// the cache never outlives a policy change (decision 42 in docs/architecture.md).
//
// A decision depends on nothing but the policy and its request (Decide), so a decision made under
// an epoch is the decision any later request with that epoch and request would make.
type DecisionCache struct {
	mu        sync.Mutex
	epoch     int64
	decisions map[cacheKey]Decision
	limit     int
}

type cacheKey struct {
	principalID, action, kind, id, namespaceID string
	inNamespace                                bool
}

func keyOf(req Request) cacheKey {
	k := cacheKey{principalID: req.PrincipalID, action: req.Action, kind: req.Resource.Kind, id: req.Resource.ID}
	if req.Resource.NamespaceID != nil {
		k.namespaceID, k.inNamespace = *req.Resource.NamespaceID, true
	}
	return k
}

// NewDecisionCache returns an empty cache of at most limit decisions (at least 1); when it is
// full it starts over.
func NewDecisionCache(limit int) *DecisionCache {
	return &DecisionCache{limit: max(limit, 1), decisions: map[cacheKey]Decision{}}
}

// get returns the decision made for req under epoch, if any.
func (c *DecisionCache) get(epoch int64, req Request) (Decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return Decision{}, false
	}
	d, ok := c.decisions[keyOf(req)]
	return d, ok
}

// put keeps d, decided for req on policy read after epoch was read. A newer epoch replaces every
// decision of the older one; a decision of an older epoch than the cache's is dropped (its
// request began before a change the cache has already seen).
func (c *DecisionCache) put(epoch int64, req Request, d Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case epoch < c.epoch:
		return
	case epoch > c.epoch || len(c.decisions) >= c.limit:
		c.epoch = epoch
		c.decisions = make(map[cacheKey]Decision, len(c.decisions))
	}
	c.decisions[keyOf(req)] = d
}

// epochSource is a PolicySource that can read the policy epoch in the statement that looks up an
// identity (StoreSource).
type epochSource interface {
	LookupIdentityAtEpoch(ctx context.Context, q IdentityLookup) ([]Identity, int64, error)
}

// WithCache returns a Native for one request that reuses the decisions of cache: its
// LookupIdentity reads the policy epoch, and its Authorize and AuthorizeEach calls after that
// consult and fill the cache under that epoch. Before a lookup, or over a source that cannot read
// the epoch, it decides afresh like n. The returned Native holds the request's epoch: never share
// it between requests.
func (n *Native) WithCache(cache *DecisionCache) *Native {
	c := *n
	c.cache = cache
	c.epochKnown = false
	return &c
}
