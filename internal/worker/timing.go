package worker

import (
	"sync"
	"time"

	"github.com/openclaw/occ/internal/queue"
)

// Deploy timing: the worker.completed fields of deploy passes, for the passes this process ran.

type deployTiming struct {
	passes       int
	prepare      time.Duration
	firstUnready time.Time
	firstReady   time.Time
	activated    time.Time
}

// timingStore holds the deploy timing of the worker's 256 most recent deploy work items.
type timingStore struct {
	mu sync.Mutex // guards the timings' fields
	m  *boundedMap[*deployTiming]
}

func newTimingStore() *timingStore { return &timingStore{m: newBoundedMap[*deployTiming](256)} }

func (s *timingStore) get(key string) *deployTiming {
	return s.m.getOrSet(key, func() *deployTiming { return &deployTiming{} })
}

func (s *timingStore) update(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

func millis(d time.Duration) int64 { return max(d, 0).Milliseconds() }

// attrs are the deploy timing fields of worker.completed for t.
func (s *timingStore) attrs(t *deployTiming, work queue.Work) []any {
	var out []any
	s.update(func() {
		var wait time.Duration
		switch {
		case t.firstUnready.IsZero():
		case !t.firstReady.IsZero():
			wait = t.firstReady.Sub(t.firstUnready)
		default:
			wait = time.Since(t.firstUnready)
		}
		out = []any{"deployPasses", t.passes, "prepareMs", millis(t.prepare), "readinessWaitMs", millis(wait),
			"elapsedMs", millis(time.Since(work.CreatedAt))}
		if !t.activated.IsZero() && !t.firstReady.IsZero() {
			out = append(out, "activationMs", millis(t.activated.Sub(t.firstReady)))
		}
	})
	return out
}
