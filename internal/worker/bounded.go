package worker

import (
	"slices"
	"sync"
)

// boundedMap remembers at most n keys, evicting the oldest inserted. It is safe for concurrent use;
// guarding what pointer values point to is the caller's business.
type boundedMap[V any] struct {
	mu    sync.Mutex
	n     int
	order []string
	m     map[string]V
}

func newBoundedMap[V any](n int) *boundedMap[V] { return &boundedMap[V]{n: n, m: map[string]V{}} }

func (b *boundedMap[V]) get(k string) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[k]
	return v, ok
}

// set inserts or replaces the value of k.
func (b *boundedMap[V]) set(k string, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setLocked(k, v)
}

// getOrSet returns the value of k, inserting mk() first when k is absent.
func (b *boundedMap[V]) getOrSet(k string, mk func() V) V {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.m[k]; ok {
		return v
	}
	v := mk()
	b.setLocked(k, v)
	return v
}

// delete forgets k (and its place in the eviction order, so a later set starts it afresh).
func (b *boundedMap[V]) delete(k string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[k]; !ok {
		return
	}
	delete(b.m, k)
	if i := slices.Index(b.order, k); i >= 0 {
		b.order = slices.Delete(b.order, i, i+1)
	}
}

func (b *boundedMap[V]) setLocked(k string, v V) {
	if _, ok := b.m[k]; !ok {
		b.order = append(b.order, k)
		if len(b.order) > b.n {
			delete(b.m, b.order[0])
			b.order = b.order[1:]
		}
	}
	b.m[k] = v
}
