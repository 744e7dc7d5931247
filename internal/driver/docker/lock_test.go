package docker

import (
	"context"
	"errors"
	"testing"
)

func TestKeyedLock(t *testing.T) {
	t.Parallel()
	var k keyedLock
	ctx := context.Background()
	unlockA, err := k.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := k.lock(ctx, "b") // other keys are independent
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := k.lock(cancelled, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("lock of a held key with a cancelled context = %v", err)
	}

	acquired := make(chan func())
	go func() {
		unlock, err := k.lock(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		acquired <- unlock
	}()
	unlockA()
	(<-acquired)()
	unlockB()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.locks) != 0 {
		t.Fatalf("%d lock entries left after release", len(k.locks))
	}
}
