package batch

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// waitFor polls until cond holds (the test's goroutines are scheduled, not timed).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}

func (r *Runner[Req, Res]) waitingLen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting)
}

func TestIdleRunnerServesAlone(t *testing.T) {
	var groups [][]int
	r := NewRunner(8, func(reqs []int) ([]string, error) {
		groups = append(groups, append([]int(nil), reqs...))
		out := make([]string, len(reqs))
		for i, v := range reqs {
			out[i] = fmt.Sprint(v * 2)
		}
		return out, nil
	})
	for i := range 3 {
		res, err := r.Do(i)
		if err != nil || res != fmt.Sprint(i*2) {
			t.Fatalf("Do(%d) = %q, %v", i, res, err)
		}
	}
	if len(groups) != 3 {
		t.Fatalf("sequential calls were grouped: %v", groups)
	}
}

// While a group is served, later callers gather into the next group, up to the limit; each gets
// its own result.
func TestCallersArrivingDuringAServeFormTheNextGroups(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	r := NewRunner(3, func(reqs []int) ([]int, error) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(reqs))
		mu.Unlock()
		if first {
			<-release
		}
		out := make([]int, len(reqs))
		for i, v := range reqs {
			out[i] = -v
		}
		return out, nil
	})
	var wg sync.WaitGroup
	results := make([]int, 8)
	do := func(i int) {
		defer wg.Done()
		res, err := r.Do(i)
		if err != nil {
			t.Error(err)
		}
		results[i] = res
	}
	wg.Add(1)
	go do(0)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
	for i := 1; i < 8; i++ {
		wg.Add(1)
		go do(i)
	}
	waitFor(t, func() bool { return r.waitingLen() == 7 })
	close(release)
	wg.Wait()
	for i, v := range results {
		if v != -i {
			t.Fatalf("caller %d got %d", i, v)
		}
	}
	if want := []int{1, 3, 3, 1}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Fatalf("group sizes %v, want %v", sizes, want)
	}
	if r.busy || r.waitingLen() != 0 {
		t.Fatal("runner not idle after the last group")
	}
}

func TestServeErrorsAreEveryRequestsAndTheRunnerGoesOn(t *testing.T) {
	boom := errors.New("boom")
	fail := true
	r := NewRunner(4, func(reqs []int) ([]int, error) {
		if fail {
			return nil, boom
		}
		return reqs[:len(reqs)-1], nil // one result short
	})
	if _, err := r.Do(1); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	fail = false
	if _, err := r.Do(1); err == nil {
		t.Fatal("a group with a missing result was served")
	}
}

func TestPanicFailsTheGroupAndRePanics(t *testing.T) {
	r := NewRunner(4, func(reqs []int) ([]int, error) {
		if reqs[0] == 0 {
			panic("serve")
		}
		return reqs, nil
	})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the serving caller did not panic")
			}
		}()
		_, _ = r.Do(0)
	}()
	// The runner was handed back: the next call is served.
	if res, err := r.Do(7); err != nil || res != 7 {
		t.Fatalf("after a panic: %d %v", res, err)
	}
}
