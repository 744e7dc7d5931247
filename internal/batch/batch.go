// Package batch serves requests of concurrent callers in groups, one call per group (natural
// batching): a request that finds the Runner idle is served at once, alone, and the requests that
// arrive while a group is being served wait and form the next group. No timer delays a request,
// so a quiet caller pays nothing, and a busy Runner's groups grow with the load: a statement per
// group instead of a statement per request.
//
// Each group is served by one of its own callers, the first to arrive, so a Runner has no
// goroutine of its own to start or stop.
package batch

import (
	"errors"
	"fmt"
	"sync"
)

// Serve serves one group: one result per request, in order, or an error that is every request's.
type Serve[Req, Res any] func(reqs []Req) ([]Res, error)

// Runner gathers requests into groups of at most its limit and serves each group with one Serve
// call.
type Runner[Req, Res any] struct {
	serve Serve[Req, Res]
	max   int

	mu      sync.Mutex
	waiting []*call[Req, Res]
	busy    bool // a group is being served; the next one's first caller will serve it
}

type call[Req, Res any] struct {
	req  Req
	res  Res
	err  error
	wake chan bool // true: serve the next group (this call is its first); false: served
}

// NewRunner returns a Runner serving groups of at most limit (at least 1) requests with serve.
func NewRunner[Req, Res any](limit int, serve Serve[Req, Res]) *Runner[Req, Res] {
	return &Runner[Req, Res]{serve: serve, max: max(limit, 1)}
}

// errServePanicked is every request's error when serving their group panicked.
var errServePanicked = errors.New("batch: serving the group panicked")

// Do adds req to the next group and returns its result once that group has been served. It does
// not give up early: a request, once made, is either served or failed with its group.
func (r *Runner[Req, Res]) Do(req Req) (Res, error) {
	c := &call[Req, Res]{req: req, wake: make(chan bool, 1)}
	r.mu.Lock()
	r.waiting = append(r.waiting, c)
	first := !r.busy
	r.busy = true
	r.mu.Unlock()
	if first || <-c.wake {
		r.serveNext()
	}
	return c.res, c.err
}

// serveNext serves the waiting group whose first call is the caller's, then wakes its calls and
// hands the next group, if any, to that group's first call.
func (r *Runner[Req, Res]) serveNext() {
	r.mu.Lock()
	n := min(len(r.waiting), r.max)
	group := make([]*call[Req, Res], n)
	copy(group, r.waiting)
	r.waiting = r.waiting[n:]
	r.mu.Unlock()

	defer func() {
		p := recover()
		if p != nil {
			for _, c := range group {
				c.err = fmt.Errorf("%w: %v", errServePanicked, p)
			}
		}
		r.mu.Lock()
		var next *call[Req, Res]
		if len(r.waiting) > 0 {
			next = r.waiting[0]
		} else {
			r.busy = false
		}
		r.mu.Unlock()
		for _, c := range group[1:] {
			c.wake <- false
		}
		if next != nil {
			next.wake <- true
		}
		if p != nil {
			panic(p)
		}
	}()

	reqs := make([]Req, n)
	for i, c := range group {
		reqs[i] = c.req
	}
	res, err := r.serve(reqs)
	if err == nil && len(res) != n {
		err = fmt.Errorf("batch: %d results for %d requests", len(res), n)
	}
	for i, c := range group {
		if err != nil {
			c.err = err
			continue
		}
		c.res = res[i]
	}
}
