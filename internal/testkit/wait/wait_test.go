package wait

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a TB whose Fatalf records the message and returns.
type recorder struct{ failed []string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var r recorder
	calls := 0
	Eventually(&r, Short, "the third call", func() bool { calls++; return calls == 3 })
	if len(r.failed) != 0 || calls != 3 {
		t.Fatalf("failed %v after %d calls", r.failed, calls)
	}
}

func TestEventuallyFailsWhenTheBudgetPasses(t *testing.T) {
	t.Parallel()
	var r recorder
	Eventually(&r, 30*time.Millisecond, "a condition that never holds", func() bool { return false })
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "timed out after 30ms waiting for a condition that never holds") ||
		strings.Contains(r.failed[0], "not yet") {
		t.Fatalf("failures %q", r.failed)
	}
}

func TestNoErrorReportsTheLastError(t *testing.T) {
	t.Parallel()
	var r recorder
	n := 0
	NoError(&r, 30*time.Millisecond, "the server", func() error { n++; return fmt.Errorf("attempt %d refused", n) })
	if len(r.failed) != 1 || !strings.HasSuffix(r.failed[0], fmt.Sprintf("waiting for the server: attempt %d refused", n)) {
		t.Fatalf("failures %q after %d attempts", r.failed, n)
	}
	r.failed = nil
	NoError(&r, Short, "a nil error", func() error { return nil })
	if len(r.failed) != 0 {
		t.Fatalf("failures %q", r.failed)
	}
}

func TestUntilReportsTheLastErrorSeen(t *testing.T) {
	t.Parallel()
	var r recorder
	n := 0
	Until(&r, 50*time.Millisecond, "a rollout", func() (bool, error) {
		n++
		if n == 1 {
			return false, errors.New("pods pending")
		}
		return false, nil
	})
	if len(r.failed) != 1 || !strings.HasSuffix(r.failed[0], "waiting for a rollout: pods pending") {
		t.Fatalf("failures %q", r.failed)
	}
	r.failed = nil
	Until(&r, Short, "done", func() (bool, error) { return true, errors.New("ignored once done") })
	if len(r.failed) != 0 {
		t.Fatalf("failures %q", r.failed)
	}
}
