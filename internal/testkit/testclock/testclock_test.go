package testclock

import (
	"testing"
	"time"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := New(start)
	if !c.Now().Equal(start) {
		t.Fatalf("now %v", c.Now())
	}
	c.Advance(90 * time.Second)
	if got := c.Now().Sub(start); got != 90*time.Second {
		t.Fatalf("advanced %v", got)
	}
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Fatalf("set: %v", c.Now())
	}
}
