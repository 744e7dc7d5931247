package store_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

func lane(name string, budget int) store.SignInLane {
	h := sha256.Sum256([]byte(name))
	return store.SignInLane{KeyHash: h[:], Budget: budget}
}

func budget(lanes ...store.SignInLane) store.SignInBudget {
	return store.SignInBudget{Lanes: lanes, Window: time.Minute, AttemptTTL: 2 * time.Minute}
}

// TestSignInLanes: failures inside the window and attempts in flight count against the budget; a
// success clears the failures; a release only ends the attempt; an attempt whose replica died
// stops counting after its time to live; a refusal says when the oldest failure leaves the window.
func TestSignInLanes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := pgtest.New(t).App(t)
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	l := budget(lane("budget", 3))
	acquire := func(at time.Time) (bool, time.Time) {
		t.Helper()
		ok, retry, err := store.AcquireSignInLanes(ctx, app, l, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok, retry
	}
	end := func(attempt, at time.Time, o store.SignInOutcome) {
		t.Helper()
		if err := store.EndSignInAttempt(ctx, app, l, attempt, at, o); err != nil {
			t.Fatal(err)
		}
	}
	// Two failures and one attempt in flight fill a budget of three.
	for i := range 2 {
		at := t0.Add(time.Duration(i) * time.Second)
		if ok, _ := acquire(at); !ok {
			t.Fatalf("attempt %d refused", i)
		}
		end(at, at, store.SignInFailed)
	}
	inFlight := t0.Add(3 * time.Second)
	if ok, _ := acquire(inFlight); !ok {
		t.Fatal("third attempt refused")
	}
	if ok, retry := acquire(t0.Add(4 * time.Second)); ok || !retry.Equal(t0.Add(time.Minute)) {
		t.Fatalf("over budget: admitted %v, retry at %v", ok, retry)
	}
	// Releasing the attempt in flight frees its place without spending.
	end(inFlight, inFlight, store.SignInReleased)
	at := t0.Add(5 * time.Second)
	if ok, _ := acquire(at); !ok {
		t.Fatal("refused after a release")
	}
	// A success clears the failures.
	end(at, at, store.SignInSucceeded)
	for i := range 3 {
		if ok, _ := acquire(t0.Add(6*time.Second + time.Duration(i)*time.Millisecond)); !ok {
			t.Fatalf("attempt %d after a success refused", i)
		}
	}
	// Those three never end (their replica died): after the time to live they no longer count.
	if ok, retry := acquire(t0.Add(7 * time.Second)); ok || !retry.IsZero() {
		t.Fatalf("attempts in flight fill the budget: admitted %v, retry at %v", ok, retry)
	}
	if ok, _ := acquire(t0.Add(6*time.Second + 2*time.Minute + time.Millisecond)); !ok {
		t.Fatal("dead attempts still counted after their time to live")
	}
	// Another lane is independent.
	if ok, _, err := store.AcquireSignInLanes(ctx, app, budget(lane("other", 1)), t0); err != nil || !ok {
		t.Fatalf("another lane: %v %v", ok, err)
	}
	// Several lanes are spent all or none: "other" is full, so "wide" is not spent either.
	if ok, _, err := store.AcquireSignInLanes(ctx, app, budget(lane("wide", 1), lane("other", 1)), t0); err != nil || ok {
		t.Fatalf("a full lane among several: admitted %v, %v", ok, err)
	}
	if ok, _, err := store.AcquireSignInLanes(ctx, app, budget(lane("wide", 1)), t0); err != nil || !ok {
		t.Fatalf("a refused attempt spent another lane: %v %v", ok, err)
	}
}

// BenchmarkSignInLanes is what the budgets cost a password sign-in: acquire and end on the two
// lanes the API spends, one statement each (compare with auth's BenchmarkVerifyPassword, the hash every sign-in runs).
func BenchmarkSignInLanes(b *testing.B) {
	ctx := context.Background()
	app := pgtest.New(b).App(b)
	lanes := budget(lane("client", 10), lane("email", 100))
	now := time.Now()
	b.ResetTimer()
	for i := range b.N {
		at := now.Add(time.Duration(i) * time.Microsecond)
		if _, _, err := store.AcquireSignInLanes(ctx, app, lanes, at); err != nil {
			b.Fatal(err)
		}
		if err := store.EndSignInAttempt(ctx, app, lanes, at, at, store.SignInSucceeded); err != nil {
			b.Fatal(err)
		}
	}
}
