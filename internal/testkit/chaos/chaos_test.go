package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/worker"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const lease = 2 * time.Second

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func tp(ms int) *time.Time { t := at(ms); return &t }

func sp(s string) *string { return &s }

// builder writes a history the way workers would.
type builder struct {
	events []worker.Event
	seq    map[string]uint64
}

func (b *builder) add(proc string, pid int, e worker.Event) {
	if b.seq == nil {
		b.seq = map[string]uint64{}
	}
	b.seq[proc]++
	e.Process, e.PID, e.Seq, e.LeaseMs = proc, pid, b.seq[proc], lease.Milliseconds()
	b.events = append(b.events, e)
}

// claim at ms (database clock = worker clock here).
func (b *builder) claim(proc string, pid int, work, lane, token string, attempt, ms int) {
	b.add(proc, pid, worker.Event{Type: worker.EventClaim, At: at(ms), WorkID: work, Lane: lane, Token: token, Attempt: attempt,
		ClaimedAt: tp(ms), LeaseExpiresAt: tp(ms + int(lease.Milliseconds())), SentAt: tp(ms)})
}

func (b *builder) renew(proc string, pid int, work, lane, token, result string, ms int) {
	b.add(proc, pid, worker.Event{Type: worker.EventRenew, At: at(ms), WorkID: work, Lane: lane, Token: token, Result: result,
		LeaseExpiresAt: tp(ms + int(lease.Milliseconds()))})
}

func (b *builder) publish(proc string, pid int, work, lane, token, result, transition, state string, ms int, mod ...func(*worker.Event)) {
	e := worker.Event{Type: worker.EventPublish, At: at(ms), WorkID: work, Lane: lane, Token: token, Result: result,
		Transition: transition, State: state, LeaseExpiresAt: tp(ms + int(lease.Milliseconds()))}
	for _, m := range mod {
		m(&e)
	}
	b.add(proc, pid, e)
}

func (b *builder) release(proc string, pid int, work, lane, token string, ms int) {
	b.add(proc, pid, worker.Event{Type: worker.EventRelease, At: at(ms), WorkID: work, Lane: lane, Token: token, Outcome: "success"})
}

func opts() Options {
	return Options{MaxAttempts: 3, Lease: lease, Poll: 50 * time.Millisecond, Slack: time.Second, End: at(60_000)}
}

const (
	agentA = "agt_a"
	rev1   = "rev_1"
	rev2   = "rev_2"
	work1  = "agent_revision:rev_1:reconcile"
	work2  = "agent_revision:rev_2:reconcile"
)

// healthy: two deployments of one Agent, the first interrupted by a SIGKILL and recovered.
func healthy() (*builder, History, State) {
	b := &builder{}
	b.claim("w1", 101, work1, agentA, "t1", 1, 1000)
	b.renew("w1", 101, work1, agentA, "t1", worker.ResultOK, 1600)
	// w1 is killed at 1700; its lease ran to 3600; recovery at 3650.
	b.claim("w2", 102, work1, agentA, "t2", 2, 3700)
	b.publish("w2", 102, work1, agentA, "t2", worker.ResultAccepted, "", "", 4000, func(e *worker.Event) {
		e.Activation, e.AgentID, e.ActiveRevisionID = true, agentA, rev1
	})
	b.publish("w2", 102, work1, agentA, "t2", worker.ResultAccepted, "complete", "succeeded", 4200)
	b.release("w2", 102, work1, agentA, "t2", 4201)
	b.claim("w2", 102, work2, agentA, "t3", 1, 5000)
	b.publish("w2", 102, work2, agentA, "t3", worker.ResultAccepted, "defer", "queued", 5500)
	b.release("w2", 102, work2, agentA, "t3", 5501)
	b.claim("w2", 102, work2, agentA, "t4", 1, 6500)
	b.publish("w2", 102, work2, agentA, "t4", worker.ResultAccepted, "", "", 7000, func(e *worker.Event) {
		e.Activation, e.AgentID, e.ActiveRevisionID, e.PreviousRevisionID = true, agentA, rev2, rev1
	})
	b.publish("w2", 102, work2, agentA, "t4", worker.ResultAccepted, "complete", "succeeded", 7200)
	b.release("w2", 102, work2, agentA, "t4", 7201)
	h := History{Admitted: []Admission{{work1, agentA}, {work2, agentA}}, Deaths: []Death{{PID: 101, At: at(1700), Kind: "SIGKILL"}}}
	s := State{
		Work: []WorkRow{
			{Key: work1, AgentID: sp(agentA), State: "succeeded", AttemptCount: 2},
			{Key: work2, AgentID: sp(agentA), State: "succeeded", AttemptCount: 1},
		},
		Agents:    []Agent{{ID: agentA, ActiveRevisionID: sp(rev2)}},
		Revisions: []Revision{{rev1, agentA}, {rev2, agentA}},
		Evidence:  []Evidence{{work1, "LEASE_EXPIRED", at(3650)}},
	}
	return b, h, s
}

func check(b *builder, h History, s State) Report {
	h.Events = b.events
	return Check(h, s, opts())
}

func TestHealthyHistoryPasses(t *testing.T) {
	b, h, s := healthy()
	r := check(b, h, s)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	p50, _, maxD := r.RecoveryDistribution()
	if len(r.Recoveries) != 1 || p50 != 1950*time.Millisecond || maxD != p50 {
		t.Fatalf("recoveries %v", r.Recoveries)
	}
}

func wantViolation(t *testing.T, r Report, inv string, fragments ...string) {
	t.Helper()
	err := r.Err()
	if err == nil {
		t.Fatalf("no violation; want %s", inv)
	}
	for _, v := range r.Violations {
		if v.Invariant != inv {
			continue
		}
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(v.Message, f)
		}
		if ok {
			t.Logf("fails loudly: %v", err)
			return
		}
	}
	t.Fatalf("want %s violation with %q, got:\n%v", inv, fragments, err)
}

func TestLostWork(t *testing.T) {
	b, h, s := healthy()
	h.Admitted = append(h.Admitted, Admission{Key: "agent:agt_b:reconcile:stopped:x", AgentID: "agt_b"})
	wantViolation(t, check(b, h, s), InvLostWork, "agent:agt_b:reconcile:stopped:x", "vanished")

	b, h, s = healthy()
	s.Work[1] = WorkRow{Key: work2, AgentID: sp(agentA), State: "queued", AttemptCount: 1, AvailableAt: at(10_000)}
	wantViolation(t, check(b, h, s), InvLostWork, work2, "nobody claims it")

	b, h, s = healthy()
	s.Work[1] = WorkRow{Key: work2, AgentID: sp(agentA), State: "claimed", AttemptCount: 1, LeaseExpiresAt: tp(10_000)}
	wantViolation(t, check(b, h, s), InvLostWork, work2, "stuck claimed")

	// Vanishing with a deleted Agent is legitimate.
	b, h, s = healthy()
	del := "agent:agt_a:reconcile:deleted"
	b.claim("w2", 102, del, agentA, "t9", 1, 8000)
	b.publish("w2", 102, del, agentA, "t9", worker.ResultAccepted, "", "", 8500)
	b.release("w2", 102, del, agentA, "t9", 8501)
	s.Work, s.Agents, s.Revisions = nil, nil, nil
	if err := check(b, h, s).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestBoundedAttempts(t *testing.T) {
	b, h, s := healthy()
	b.claim("w2", 102, "namespace:ns1:reconcile:ready", "ns1", "x1", 4, 9000)
	wantViolation(t, check(b, h, s), InvAttempts, "attempt 4 > max attempts 3")

	b, h, s = healthy()
	for i, tok := range []string{"y1", "y2", "y3", "y4"} {
		ms := 20_000 + i*1000
		b.claim("w2", 102, "namespace:ns1:reconcile:ready", "ns1", tok, 1+i%3, ms)
		b.publish("w2", 102, "namespace:ns1:reconcile:ready", "ns1", tok, worker.ResultAccepted, "retry", "queued", ms+100)
		b.release("w2", 102, "namespace:ns1:reconcile:ready", "ns1", tok, ms+101)
	}
	s.Work = append(s.Work, WorkRow{Key: "namespace:ns1:reconcile:ready", State: "failed_permanent", AttemptCount: 3})
	wantViolation(t, check(b, h, s), InvAttempts, "claimed 4 times, more than max attempts 3 + 0 refunds")

	b, h, s = healthy()
	s.Work[0].AttemptCount = 7
	wantViolation(t, check(b, h, s), InvAttempts, "attempt_count 7")
}

func TestStalePublishIsCaught(t *testing.T) {
	// The SIGSTOP case: w1 stops at 1700 past its lease, w2 claims the work, w1 wakes and its
	// publish is accepted — the fence failed.
	b, h, s := healthy()
	b.publish("w1", 101, work1, agentA, "t1", worker.ResultAccepted, "complete", "succeeded", 3800)
	h.Deaths = []Death{{PID: 101, At: at(1700), Kind: "SIGSTOP"}}
	wantViolation(t, check(b, h, s), InvFencedPublish, "stale token published", "t1", "t2")
}

func TestOverlappingClaimsOnALane(t *testing.T) {
	b, h, s := healthy()
	// Another work item of the same Agent claimed while t4 still renews its lease.
	stop := "agent:agt_a:reconcile:stopped:s1"
	b.claim("w1b", 103, stop, agentA, "t5", 1, 6600)
	b.publish("w1b", 103, stop, agentA, "t5", worker.ResultAccepted, "complete", "succeeded", 6700)
	b.release("w1b", 103, stop, agentA, "t5", 6701)
	s.Work = append(s.Work, WorkRow{Key: stop, AgentID: sp(agentA), State: "succeeded", AttemptCount: 1})
	wantViolation(t, check(b, h, s), InvLaneExclusion, "lane agt_a held twice", "t4", "t5")

	// After the first lease expired (no confirmation after the other claim) it is fine.
	b, h, s = healthy()
	b.claim("w1b", 103, stop, agentA, "t5", 1, 7300)
	b.publish("w1b", 103, stop, agentA, "t5", worker.ResultAccepted, "complete", "succeeded", 7400)
	b.release("w1b", 103, stop, agentA, "t5", 7401)
	s.Work = append(s.Work, WorkRow{Key: stop, AgentID: sp(agentA), State: "succeeded", AttemptCount: 1})
	if err := check(b, h, s).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestClaimThatWaitedOnTheLaneIndexIsNoOverlap(t *testing.T) {
	// t5's row was formed (claimedAt) while t4 still held the lane; its statement then waited on
	// the unique lane index until t4's finalization committed, and returned after it.
	b, h, s := healthy()
	stop := "agent:agt_a:reconcile:stopped:s1"
	b.claim("w1b", 103, stop, agentA, "t5", 1, 7100)
	b.events[len(b.events)-1].At = at(7250)
	b.publish("w1b", 103, stop, agentA, "t5", worker.ResultAccepted, "complete", "succeeded", 7400)
	b.release("w1b", 103, stop, agentA, "t5", 7401)
	s.Work = append(s.Work, WorkRow{Key: stop, AgentID: sp(agentA), State: "succeeded", AttemptCount: 1})
	if err := check(b, h, s).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestClaimFormedBeforeTheHolderButLoggedAfterItsReleaseIsNoOverlap(t *testing.T) {
	// t5's row was formed (claimedAt 6400) before t4's claim (6500); its statement waited on the
	// unique lane index through t4's whole hold and returned after t4's release (7201). t5's
	// later publish is not a second owner: t5 took effect after t4 had let the lane go.
	b, h, s := healthy()
	stop := "agent:agt_a:reconcile:stopped:s1"
	b.claim("w1b", 103, stop, agentA, "t5", 1, 6400)
	b.events[len(b.events)-1].At = at(7250)
	b.publish("w1b", 103, stop, agentA, "t5", worker.ResultAccepted, "complete", "succeeded", 7400)
	b.release("w1b", 103, stop, agentA, "t5", 7401)
	s.Work = append(s.Work, WorkRow{Key: stop, AgentID: sp(agentA), State: "succeeded", AttemptCount: 1})
	if err := check(b, h, s).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestTwoActiveRevisions(t *testing.T) {
	// rev2 activates from "" although rev1 was active: two revisions believed active.
	b, h, s := healthy()
	for i := range b.events {
		if b.events[i].Activation && b.events[i].ActiveRevisionID == rev2 {
			b.events[i].PreviousRevisionID = ""
		}
	}
	wantViolation(t, check(b, h, s), InvOneActive, "two revisions active from one predecessor")

	b, h, s = healthy()
	s.Agents[0].ActiveRevisionID = sp("rev_other")
	s.Revisions = append(s.Revisions, Revision{"rev_other", "agt_other"})
	r := check(b, h, s)
	wantViolation(t, r, InvOneActive, "belongs to agent agt_other")
	wantViolation(t, r, InvOneActive, "its last accepted publish left \"rev_2\"")

	b, h, s = healthy()
	for i := range b.events {
		if b.events[i].Activation && b.events[i].ActiveRevisionID == rev2 {
			b.events[i].ActiveRevisionID = rev1
		}
	}
	wantViolation(t, check(b, h, s), InvOneActive, "not its own candidate")
}

func TestSlowRecovery(t *testing.T) {
	b, h, s := healthy()
	s.Evidence[0].At = at(9000)
	for i := range b.events {
		if b.events[i].Token == "t2" && b.events[i].Type == worker.EventClaim {
			b.events[i].ClaimedAt = tp(9100)
		}
	}
	wantViolation(t, check(b, h, s), InvRecovery, "recovered after 7.3s, more than lease+poll+slack = 3.05s")

	b, h, s = healthy()
	s.Evidence = nil
	b.events = b.events[:2] // only w1's claim and renewal: nothing ever recovered it
	s.Work = s.Work[1:]
	h.Admitted = h.Admitted[1:]
	s.Work = append(s.Work, WorkRow{Key: work1, AgentID: sp(agentA), State: "queued", AttemptCount: 1, AvailableAt: at(59_999)})
	s.Agents[0].ActiveRevisionID = nil
	wantViolation(t, check(b, h, s), InvRecovery, "never recovered")
}

func TestUnfencedPublish(t *testing.T) {
	b, h, s := healthy()
	for i := range b.events {
		if b.events[i].Type == worker.EventPublish && b.events[i].Token == "t3" {
			b.events[i].LeaseExpiresAt = nil // committed without the renewal that begins finalization
		}
	}
	wantViolation(t, check(b, h, s), InvFencedPublish, "unfenced publish", "t3")
}

func TestOrphanCompletedWithoutRecovery(t *testing.T) {
	// w1 dies holding work1; nobody recovers or claims it, yet the row ends succeeded after the
	// death: a publish without the claim.
	b, h, s := healthy()
	s.Evidence = nil
	b.events = b.events[:2]
	s.Work[0] = WorkRow{Key: work1, AgentID: sp(agentA), State: "succeeded", AttemptCount: 1, CompletedAt: tp(5000)}
	s.Work = s.Work[:1]
	h.Admitted = h.Admitted[:1]
	s.Agents[0].ActiveRevisionID = nil
	wantViolation(t, check(b, h, s), InvRecovery, "completed at", "without being recovered")

	// Completed before the death: w1's own publish committed, its event line was never written.
	s.Work[0].CompletedAt = tp(1650)
	if r := check(b, h, s); r.Err() != nil || r.Counts["released-before-death"] != 1 {
		t.Fatalf("%v %v", r.Err(), r.Counts)
	}
}

func TestMalformedHistory(t *testing.T) {
	b, h, s := healthy()
	b.publish("w3", 104, work1, agentA, "nope", worker.ResultAccepted, "complete", "succeeded", 9000)
	wantViolation(t, check(b, h, s), InvHistoryWellForm, "never claimed")
}

func TestReadEventLogsSkipsATornLastLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "w.jsonl")
	body := `{"type":"claim","pid":1,"process":"1-1","seq":1,"workId":"k","token":"t","claimedAt":"2026-11-30T12:00:00Z"}` + "\n" + `{"type":"ren`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ev, err := ReadEventLogs(p, filepath.Join(dir, "missing.jsonl"))
	if err != nil || len(ev) != 1 || ev[0].Token != "t" {
		t.Fatalf("%v %v", ev, err)
	}
	if err := os.WriteFile(p, []byte("garbage\n"+body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEventLogs(p); err == nil {
		t.Fatal("garbage accepted")
	}
}

func (b *builder) effect(proc string, pid int, work, lane, token, typ, result string, ms int) {
	b.add(proc, pid, worker.Event{Type: typ, At: at(ms), WorkID: work, Lane: lane, Token: token, Result: result, Call: "ActivateRevision"})
}

// renewSent is a renewal sent at sentMs and answered at ms.
func (b *builder) renewSent(proc string, pid int, work, lane, token, result string, sentMs, ms int) {
	b.renew(proc, pid, work, lane, token, result, ms)
	b.events[len(b.events)-1].SentAt = tp(sentMs)
}

func TestEffectAfterTheClaimWasLost(t *testing.T) {
	// t1's renewal is refused by the fence, and w1 still starts an effect under t1.
	b, h, s := healthy()
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectStart, "", 1650)
	h.Deaths = nil
	b.renew("w1", 101, work1, agentA, "t1", worker.ResultRefused, 1680)
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectStart, "", 1690)
	wantViolation(t, check(b, h, s), InvEffectAfterLoss, "t1", "started an effect (ActivateRevision)", "renew (refused)")

	// An effect after the token's release.
	b, h, s = healthy()
	b.effect("w2", 102, work2, agentA, "t4", worker.EventEffectStart, "", 7300)
	wantViolation(t, check(b, h, s), InvEffectAfterLoss, "t4", "release (success)")

	// t1's lease (confirmed at 1600, so to 3600) ran out and t2 took the work at 3700 (logged
	// then); w1, never stopped, starts an effect under t1 at 3800 without a confirmation since.
	b, h, s = healthy()
	h.Deaths = nil
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectStart, "", 3800)
	s.Evidence = nil
	wantViolation(t, check(b, h, s), InvEffectAfterLoss, "t1", "the newer claim "+work1+" token t2")
}

func TestEffectsUnderALiveClaimPass(t *testing.T) {
	b, h, s := healthy()
	h.Deaths = []Death{{PID: 101, At: at(1700), Kind: "SIGKILL"}}
	// t1 renews just before its effect, which ends normally; a later refused renewal ends an
	// effect in flight as claim_lost: no effect starts after the loss.
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectStart, "", 1610)
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectEnd, worker.ResultOK, 1650)
	b.renew("w1", 101, work1, agentA, "t1", worker.ResultOK, 1660)
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectStart, "", 1665)
	b.renew("w1", 101, work1, agentA, "t1", worker.ResultRefused, 1690)
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectEnd, "claim_lost", 1695)
	// A newer claim of the lane starts effects under its own confirmations.
	stop := "agent:agt_a:reconcile:stopped:s2"
	b.claim("w2", 102, stop, agentA, "t6", 1, 8000)
	b.effect("w2", 102, stop, agentA, "t6", worker.EventEffectStart, "", 8010)
	b.effect("w2", 102, stop, agentA, "t6", worker.EventEffectEnd, worker.ResultOK, 8100)
	b.publish("w2", 102, stop, agentA, "t6", worker.ResultAccepted, "complete", "succeeded", 8200)
	b.release("w2", 102, stop, agentA, "t6", 8201)
	s.Work = append(s.Work, WorkRow{Key: stop, AgentID: sp(agentA), State: "succeeded", AttemptCount: 1})
	r := check(b, h, s)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Counts["effects"] != 3 || r.Counts["effects-after-stop"] != 0 {
		t.Fatalf("counts %v", r.Counts)
	}

	// A process stopped between the renewal before its effect (sent 1590, answered 1600) and the
	// effect's start: the newer claim at 3700 is counted, not failed (no lease fences a paused
	// process).
	b, h, s = healthy()
	h.Deaths = []Death{{PID: 101, At: at(1605), Kind: "SIGSTOP"}}
	b.renewSent("w1", 101, work1, agentA, "t1", worker.ResultOK, 1590, 1600)
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectStart, "", 4605)
	b.renew("w1", 101, work1, agentA, "t1", worker.ResultRefused, 4610)
	b.effect("w1", 101, work1, agentA, "t1", worker.EventEffectEnd, "claim_lost", 4620)
	r = check(b, h, s)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Counts["effects-after-stop"] != 1 {
		t.Fatalf("counts %v", r.Counts)
	}
}

func TestRecoveryOfALaterClaimIsNotTheDeadClaimsRecovery(t *testing.T) {
	// w1 deferred t1 (committed, line unwritten) and was SIGKILLed at 1700; w2 claimed the work
	// at 1800 and was stopped past its lease; the LEASE_EXPIRED evidence at 4000 recovers t2. It
	// is not t1's recovery: t1 was released before the death (the chaos run measured such
	// evidence as a 14.5 s recovery of the dead claim).
	b := &builder{}
	b.claim("w1", 101, work1, agentA, "t1", 1, 1000)
	b.renew("w1", 101, work1, agentA, "t1", worker.ResultOK, 1600)
	b.claim("w2", 102, work1, agentA, "t2", 1, 1800)
	b.claim("w2", 102, work1, agentA, "t3", 2, 9100)
	b.publish("w2", 102, work1, agentA, "t3", worker.ResultAccepted, "complete", "succeeded", 9300)
	b.release("w2", 102, work1, agentA, "t3", 9301)
	h := History{Admitted: []Admission{{work1, agentA}}, Deaths: []Death{
		{PID: 101, At: at(1700), Kind: "SIGKILL"}, {PID: 102, At: at(1900), Kind: "SIGSTOP"}}}
	s := State{
		Work:      []WorkRow{{Key: work1, AgentID: sp(agentA), State: "succeeded", AttemptCount: 2}},
		Agents:    []Agent{{ID: agentA}},
		Revisions: []Revision{{rev1, agentA}},
		Evidence:  []Evidence{{work1, "LEASE_EXPIRED", at(4000)}},
	}
	r := check(b, h, s)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Counts["released-before-death"] != 1 || len(r.Recoveries) != 1 || r.Recoveries[0] != 2100*time.Millisecond {
		t.Fatalf("counts %v, recoveries %v", r.Counts, r.Recoveries)
	}
}

func TestClaimLoggedLateByAStoppedWorkerIsNoOverlap(t *testing.T) {
	// w3 claims the stop work at 8000 and is SIGSTOPped before it logs the claim; its lease runs
	// out at 10000 and w4 takes the work at 10500 (attempt 2), renews, starts an effect and
	// publishes. w3 wakes and logs its old claim at 11000, after w4's: the log order is not the
	// order in which the claims took effect, and no lane was held twice.
	b, h, s := healthy()
	stop := "agent:agt_a:reconcile:stopped:s3"
	b.claim("w3", 103, stop, agentA, "t7", 1, 8000)
	b.events[len(b.events)-1].At = at(11000)
	b.claim("w4", 104, stop, agentA, "t8", 2, 10500)
	b.renew("w4", 104, stop, agentA, "t8", worker.ResultOK, 11200)
	b.effect("w4", 104, stop, agentA, "t8", worker.EventEffectStart, "", 11300)
	b.effect("w4", 104, stop, agentA, "t8", worker.EventEffectEnd, worker.ResultOK, 11350)
	b.publish("w4", 104, stop, agentA, "t8", worker.ResultAccepted, "complete", "succeeded", 11400)
	b.release("w4", 104, stop, agentA, "t8", 11401)
	b.renew("w3", 103, stop, agentA, "t7", worker.ResultRefused, 11010)
	b.add("w3", 103, worker.Event{Type: worker.EventRelease, At: at(11011), WorkID: stop, Lane: agentA, Token: "t7", Outcome: "claim_lost"})
	h.Admitted = append(h.Admitted, Admission{stop, agentA})
	h.Deaths = append(h.Deaths, Death{PID: 103, At: at(8100), Kind: "SIGSTOP"})
	s.Work = append(s.Work, WorkRow{Key: stop, AgentID: sp(agentA), State: "succeeded", AttemptCount: 2})
	s.Evidence = append(s.Evidence, Evidence{stop, "LEASE_EXPIRED", at(10450)})
	if err := check(b, h, s).Err(); err != nil {
		t.Fatal(err)
	}
}
