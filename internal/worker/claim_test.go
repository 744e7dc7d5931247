package worker

import (
	"context"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// A batched renewal sent before a pass's finalization committed is refused once the transition
// has cleared the claim's token. That refusal must not turn the committed pass into a lost claim
// (its worker.completed line would become a CLAIM_LOST error); before the transition, the same
// refusal is a lost claim.
func TestARefusalAfterThePassesOwnTransitionIsNotALostClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	q := queue.New(app, queue.Options{LeaseDuration: time.Minute})
	claim := func() *activeClaim {
		t.Helper()
		ns := fixture.New(t, app).NamespaceIn("provisioning").ID
		target := platform.NamespaceTargetReady
		if _, err := queue.Enqueue(ctx, app, queue.EnqueueWork{Key: platform.NamespaceWorkKey(ns, target), NamespaceID: ns,
			ActorID: "prn_test", NamespaceTarget: &target}); err != nil {
			t.Fatal(err)
		}
		claims, err := q.Claim(ctx, 1)
		if err != nil || len(claims) != 1 {
			t.Fatalf("claim: %v %v", claims, err)
		}
		a := newActiveClaim(ctx, q, claims[0], time.Now(), nil, func(f func()) { f() })
		t.Cleanup(a.release)
		return a
	}

	ended := claim()
	sentAt, ok := ended.beginRenewal()
	if !ok {
		t.Fatal("a live claim refused to renew")
	}
	if _, err := q.Complete(ctx, app, ended.claim, "", nil); err != nil {
		t.Fatal(err)
	}
	ended.end()
	ended.endRenewal("batch", sentAt, time.Time{}, false, nil)
	if lost, cause := ended.outcomeState(); lost {
		t.Fatalf("a refusal after the pass's own transition lost the claim (%s)", cause)
	}
	if _, ok := ended.beginRenewal(); ok {
		t.Fatal("a renewal was sent for a claim that ended")
	}

	live := claim()
	sentAt, _ = live.beginRenewal()
	live.endRenewal("batch", sentAt, time.Time{}, false, nil)
	if lost, cause := live.outcomeState(); !lost || cause != CauseRenewalRefused {
		t.Fatalf("a refused renewal of a live claim: lost %v (%s)", lost, cause)
	}
}
