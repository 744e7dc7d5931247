package docker

import (
	"context"
	"sync"
)

// keyedLock serializes the driver's work per network name inside this process, so concurrent
// EnsureNamespace and DeleteNamespace calls for one Namespace do not race each other at the
// engine. Across processes the worker's per-lane claims already allow one pass per Namespace at a
// time. Waiting honours the caller's context.
type keyedLock struct {
	mu    sync.Mutex
	locks map[string]*keyEntry
}

type keyEntry struct {
	ch   chan struct{} // holds one token while the key is locked
	refs int           // holders and waiters; the entry is dropped at zero
}

// lock acquires key, or returns ctx's error. The returned function releases it.
func (k *keyedLock) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = make(map[string]*keyEntry)
	}
	e, ok := k.locks[key]
	if !ok {
		e = &keyEntry{ch: make(chan struct{}, 1)}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()

	done := func() {
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}
