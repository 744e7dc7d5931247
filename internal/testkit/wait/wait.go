// Package wait polls a condition with a deadline, so that tests never sleep for a fixed time to
// let something happen. The deadline is one of a few named budgets, chosen by what is awaited;
// a budget is a bound on failure, never an assertion about speed, so budgets are generous.
package wait

import (
	"time"
)

// Budgets of Eventually.
const (
	// Short: an effect inside this process (a goroutine's state, a log line, a metric).
	Short = 10 * time.Second
	// Medium: a worker pass or a few database transactions on a loaded machine.
	Medium = 30 * time.Second
	// Long: a child process, a container or a Kubernetes object converging.
	Long = 2 * time.Minute
	// VeryLong: a whole control plane or a chaos run recovering.
	VeryLong = 3 * time.Minute
)

// TB is the part of testing.TB that Eventually uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// first and most are the polling intervals: a condition is checked at once, then after 10 ms,
// and the interval doubles up to 200 ms, so that a fast condition is seen quickly and a slow one
// (an API server, a database) is not hammered.
const (
	first = 10 * time.Millisecond
	most  = 200 * time.Millisecond
)

// Eventually polls cond until it holds; when budget passes first, the test fails with "timed out
// waiting for <what>".
func Eventually(t TB, budget time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, budget, what, func() (bool, error) { return cond(), nil })
}

// NoError polls fn until it returns nil; when budget passes first, the test fails with "timed out
// waiting for <what>" and the last error.
func NoError(t TB, budget time.Duration, what string, fn func() error) {
	t.Helper()
	Until(t, budget, what, func() (bool, error) {
		err := fn()
		return err == nil, err
	})
}

// Until polls cond until it reports done; when budget passes first, the test fails with "timed out
// waiting for <what>" and the last error cond returned, if any.
func Until(t TB, budget time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(budget)
	interval := first
	var last error
	for {
		done, err := cond()
		if done {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				t.Fatalf("timed out after %v waiting for %s: %v", budget, what, last)
			} else {
				t.Fatalf("timed out after %v waiting for %s", budget, what)
			}
			return // for a TB whose Fatalf returns
		}
		time.Sleep(interval)
		interval = min(2*interval, most)
	}
}
