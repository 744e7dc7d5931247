// Package chaos is a Jepsen-style history checker for the controller worker. It
// replays the event logs that workers write with OCC_WORKER_EVENT_LOG against the final
// database state and reports every invariant violation, and the recovery time of the claims that
// died with a worker.
//
// Times: ClaimedAt, LeaseExpiresAt and evidence times come from the database clock; event and
// death times from the worker and test clocks. The checker compares the two only in the recovery
// measure, where processes, test and PostgreSQL share one machine.
package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/worker"
)

// Options are the worker settings of the run and the checker's tolerances.
type Options struct {
	MaxAttempts int
	Lease       time.Duration
	Poll        time.Duration
	// Slack is added to lease + poll for recovery and liveness bounds (scheduling, database
	// latency, -race).
	Slack time.Duration
	// End is when the history ended (quiescence); queued and claimed rows are judged against it.
	End time.Time
}

// Admission is work the test caused (its key and, for Agent work, the Agent).
type Admission struct {
	Key     string
	AgentID string
}

// Death is a fault that stopped a worker process: a SIGKILL, or a SIGSTOP (the process may come
// back; its claims that outlive the lease are recovered by others).
type Death struct {
	PID  int
	At   time.Time
	Kind string
}

// History is what the run observed.
type History struct {
	Events   []worker.Event
	Admitted []Admission
	Deaths   []Death
}

// WorkRow, Agent, Revision and Evidence are the final database state.
type WorkRow struct {
	Key            string
	NamespaceID    string
	AgentID        *string
	State          string
	AttemptCount   int
	AvailableAt    time.Time
	LeaseExpiresAt *time.Time
	CompletedAt    *time.Time
}

// Agent is one row of occ.agents.
type Agent struct {
	ID, NamespaceID  string
	ActiveRevisionID *string
}

// Revision is one row of occ.agent_revisions.
type Revision struct{ ID, AgentID string }

// Evidence is one reconcile audit event (the queue's evidence row) of a work item.
type Evidence struct {
	WorkID, ReasonCode string
	At                 time.Time
}

// State is the final database state.
type State struct {
	Work      []WorkRow
	Agents    []Agent
	Revisions []Revision
	Evidence  []Evidence
}

// LoadState reads the final state (as a role that can read occ.*; the owner in tests).
func LoadState(ctx context.Context, db store.DBTX) (State, error) {
	var s State
	rows, err := db.Query(ctx, `SELECT idempotency_key, namespace_id, agent_id, state, attempt_count, available_at, lease_expires_at,
	  completed_at FROM occ.controller_work`)
	if err == nil {
		s.Work, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (WorkRow, error) {
			var w WorkRow
			return w, r.Scan(&w.Key, &w.NamespaceID, &w.AgentID, &w.State, &w.AttemptCount, &w.AvailableAt, &w.LeaseExpiresAt, &w.CompletedAt)
		})
	}
	if err == nil {
		rows, err = db.Query(ctx, `SELECT id, namespace_id, active_revision_id FROM occ.agents`)
	}
	if err == nil {
		s.Agents, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Agent, error) {
			var a Agent
			return a, r.Scan(&a.ID, &a.NamespaceID, &a.ActiveRevisionID)
		})
	}
	if err == nil {
		rows, err = db.Query(ctx, `SELECT id, agent_id FROM occ.agent_revisions`)
	}
	if err == nil {
		s.Revisions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Revision, error) {
			var v Revision
			return v, r.Scan(&v.ID, &v.AgentID)
		})
	}
	if err == nil {
		rows, err = db.Query(ctx, `SELECT details->>'workId', COALESCE(details->>'reasonCode', ''), occurred_at
		  FROM occ.audit_events WHERE action = 'reconcile' AND details ? 'workId'`)
	}
	if err == nil {
		s.Evidence, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Evidence, error) {
			var e Evidence
			return e, r.Scan(&e.WorkID, &e.ReasonCode, &e.At)
		})
	}
	return s, err
}

// ReadEventLogs decodes the JSON lines of worker event logs. A torn last line (a process killed
// mid-write) is skipped; any other undecodable line is an error.
func ReadEventLogs(paths ...string) ([]worker.Event, error) {
	var out []worker.Event
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // a worker that never claimed anything
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		var bad []int
		n := 0
		for sc.Scan() {
			n++
			var e worker.Event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				bad = append(bad, n)
				continue
			}
			out = append(out, e)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(bad) > 1 || (len(bad) == 1 && bad[0] != n) {
			return nil, fmt.Errorf("%s: undecodable lines %v", p, bad)
		}
	}
	return out, nil
}

// Invariants, as named in violations.
const (
	InvLostWork        = "no-lost-work"
	InvAttempts        = "bounded-attempts"
	InvFencedPublish   = "fenced-publish"
	InvLaneExclusion   = "lane-exclusion"
	InvOneActive       = "one-active-revision"
	InvRecovery        = "recovery-bound"
	InvHistoryWellForm = "well-formed-history"
	InvEffectAfterLoss = "no-effect-after-loss"
)

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Message   string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Message }

// Report is the checker's verdict.
type Report struct {
	Violations []Violation
	// Recoveries are the recovery times of claims that died with a worker (Death.At to the
	// claim's recovery: LEASE_EXPIRED evidence or the next claim of its work).
	Recoveries []time.Duration
	Counts     map[string]int
}

// Err is nil when no invariant is broken, otherwise one error listing the violations: the count
// per invariant, then at most 10 of each.
func (r Report) Err() error {
	if len(r.Violations) == 0 {
		return nil
	}
	const maxShown = 10
	per := map[string]int{}
	var lines []string
	for _, v := range r.Violations {
		if per[v.Invariant]++; per[v.Invariant] <= maxShown {
			lines = append(lines, v.String())
		}
	}
	for inv, n := range per {
		if n > maxShown {
			lines = append(lines, fmt.Sprintf("… and %d more %s", n-maxShown, inv))
		}
	}
	return fmt.Errorf("chaos: %d invariant violation(s) %v:\n%s", len(r.Violations), per, strings.Join(lines, "\n"))
}

// RecoveryDistribution returns p50, p90 and max of Recoveries (zeros when empty).
func (r Report) RecoveryDistribution() (p50, p90, maxD time.Duration) {
	if len(r.Recoveries) == 0 {
		return 0, 0, 0
	}
	d := slices.Clone(r.Recoveries)
	slices.Sort(d)
	at := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return at(0.5), at(0.9), d[len(d)-1]
}

// claimInfo is everything the logs say about one token.
type claimInfo struct {
	claim     worker.Event
	holds     []hold // database times at which the token verifiably held an unexpired lease
	released  bool
	published []worker.Event
	ended     bool           // an accepted publish moved the row out of this claim
	events    []worker.Event // every event of the token after its claim, in the order it logged them
}

type hold struct {
	at   time.Time
	what string
}

func dbTime(e worker.Event, lease time.Duration) (time.Time, bool) {
	if e.LeaseExpiresAt == nil {
		return time.Time{}, false
	}
	if e.LeaseMs > 0 {
		lease = time.Duration(e.LeaseMs) * time.Millisecond
	}
	return e.LeaseExpiresAt.Add(-lease), true
}

// Check replays h against s.
func Check(h History, s State, o Options) Report {
	c := &checker{h: h, s: s, o: o, r: Report{Counts: map[string]int{}}}
	c.index()
	c.lostWork()
	c.attempts()
	c.exclusion()
	c.activeRevision()
	c.recovery()
	c.effectsAfterLoss()
	sort.SliceStable(c.r.Violations, func(i, j int) bool { return c.r.Violations[i].Invariant < c.r.Violations[j].Invariant })
	return c.r
}

type checker struct {
	h      History
	s      State
	o      Options
	r      Report
	claims map[string]*claimInfo // by token
	byWork map[string][]*claimInfo
	byLane map[string][]*claimInfo
}

func (c *checker) fail(inv, format string, args ...any) {
	c.r.Violations = append(c.r.Violations, Violation{Invariant: inv, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) index() {
	c.claims, c.byWork, c.byLane = map[string]*claimInfo{}, map[string][]*claimInfo{}, map[string][]*claimInfo{}
	events := slices.Clone(c.h.Events)
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].Process != events[j].Process {
			return events[i].Process < events[j].Process
		}
		return events[i].Seq < events[j].Seq
	})
	for _, e := range events {
		c.r.Counts["events"]++
		c.r.Counts[e.Type]++
		if e.Type == worker.EventClaim {
			if _, dup := c.claims[e.Token]; dup {
				c.fail(InvHistoryWellForm, "token %s of %s claimed twice", e.Token, e.WorkID)
				continue
			}
			if e.ClaimedAt == nil {
				c.fail(InvHistoryWellForm, "claim of %s (token %s) has no claimedAt", e.WorkID, e.Token)
				continue
			}
			ci := &claimInfo{claim: e, holds: []hold{{*e.ClaimedAt, "claim"}}}
			c.claims[e.Token] = ci
			c.byWork[e.WorkID] = append(c.byWork[e.WorkID], ci)
			c.byLane[e.Lane] = append(c.byLane[e.Lane], ci)
		}
	}
	for _, e := range events {
		if e.Type == worker.EventClaim {
			continue
		}
		ci := c.claims[e.Token]
		if ci == nil {
			c.fail(InvHistoryWellForm, "%s event of %s by process %s for token %s that it never claimed", e.Type, e.WorkID, e.Process, e.Token)
			continue
		}
		ci.events = append(ci.events, e)
		if ci.claim.Process != e.Process {
			c.fail(InvHistoryWellForm, "%s event of %s by process %s for token %s claimed by process %s", e.Type, e.WorkID, e.Process, e.Token, ci.claim.Process)
		}
		switch e.Type {
		case worker.EventRenew:
			if e.Result == worker.ResultOK || e.Result == worker.ResultLate {
				if t, ok := dbTime(e, c.o.Lease); ok {
					ci.holds = append(ci.holds, hold{t, "renewal"})
				}
			}
		case worker.EventPublish:
			ci.published = append(ci.published, e)
			switch e.Result {
			case worker.ResultAccepted:
				c.r.Counts["publish-accepted"]++
				if t, ok := dbTime(e, c.o.Lease); ok {
					ci.holds = append(ci.holds, hold{t, "accepted publish"})
				} else {
					// Every finalization transaction begins by renewing the claim; the event
					// carries that renewal's expiry. Without it the publish was not fenced.
					c.fail(InvFencedPublish, "unfenced publish: %s token %s (process %s) committed at %s without the claim renewal that must begin the transaction",
						e.WorkID, e.Token, e.Process, e.At.Format(time.RFC3339Nano))
					if e.SentAt != nil {
						ci.holds = append(ci.holds, hold{*e.SentAt, "accepted publish"})
					}
				}
				if e.Transition != "" || strings.HasSuffix(e.WorkID, ":reconcile:deleted") && strings.HasPrefix(e.WorkID, "agent:") {
					ci.ended = true
				}
			case worker.ResultRefused:
				c.r.Counts["publish-refused"]++
			default:
				c.r.Counts["publish-error"]++
			}
		case worker.EventRelease:
			ci.released = true
		}
	}
	for _, list := range c.byLane {
		sort.Slice(list, func(i, j int) bool { return list[i].claim.ClaimedAt.Before(*list[j].claim.ClaimedAt) })
	}
	for _, list := range c.byWork {
		sort.Slice(list, func(i, j int) bool { return list[i].claim.ClaimedAt.Before(*list[j].claim.ClaimedAt) })
	}
}

// lostWork: every admitted work item is terminal, still legitimately queued or held at the end, or
// vanished with its deleted Agent (occ.finalize_agent_deletion removes every work row of it).
func (c *checker) lostWork() {
	rows := map[string]WorkRow{}
	for _, w := range c.s.Work {
		rows[w.Key] = w
	}
	agents := map[string]bool{}
	for _, a := range c.s.Agents {
		agents[a.ID] = true
	}
	admitted := map[string]string{} // key → agent
	for _, a := range c.h.Admitted {
		admitted[a.Key] = a.AgentID
	}
	for _, ci := range c.claims {
		if _, ok := admitted[ci.claim.WorkID]; !ok || admitted[ci.claim.WorkID] == "" {
			if strings.HasPrefix(ci.claim.WorkID, "agent") {
				admitted[ci.claim.WorkID] = ci.claim.Lane
			} else {
				admitted[ci.claim.WorkID] = ""
			}
		}
	}
	for k, w := range rows {
		if _, ok := admitted[k]; !ok {
			admitted[k] = deref(w.AgentID)
		}
	}
	c.r.Counts["admitted"] = len(admitted)
	grace := c.o.Lease + c.o.Poll + c.o.Slack
	keys := make([]string, 0, len(admitted))
	for k := range admitted {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		agent := admitted[k]
		w, ok := rows[k]
		switch {
		case !ok && agent != "" && !agents[agent] && len(c.byWork["agent:"+agent+":reconcile:deleted"]) > 0:
			c.r.Counts["vanished-with-agent"]++
		case !ok:
			c.fail(InvLostWork, "work %s (agent %q) vanished: no row, and no worker deleted its Agent", k, agent)
		case w.State == "succeeded" || w.State == "failed_permanent":
			c.r.Counts["terminal"]++
		case w.State == "claimed" && w.LeaseExpiresAt != nil && w.LeaseExpiresAt.Add(grace).After(c.o.End):
			c.r.Counts["held-at-end"]++
		case w.State == "claimed":
			c.fail(InvLostWork, "work %s is stuck claimed: its lease expired at %v, more than lease+poll+slack (%v) before the end %v",
				k, fmtTime(w.LeaseExpiresAt), grace, c.o.End.Format(time.RFC3339Nano))
		case w.State == "queued" && w.AttemptCount < c.o.MaxAttempts && w.AvailableAt.Add(c.o.Poll+c.o.Slack).After(c.o.End):
			c.r.Counts["queued-at-end"]++
		case w.State == "queued":
			c.fail(InvLostWork, "work %s is queued (attempt %d) and was due at %s, more than poll+slack before the end: nobody claims it",
				k, w.AttemptCount, w.AvailableAt.Format(time.RFC3339Nano))
		default:
			c.fail(InvLostWork, "work %s is in unknown state %q", k, w.State)
		}
	}
}

// attempts: no claim beyond the attempt budget, and no more claims than the budget plus the
// documented refunds (each accepted defer refunds its attempt; ACTIVE_REVISION_RECOVERY refunds
// one).
func (c *checker) attempts() {
	for _, w := range c.s.Work {
		if w.AttemptCount > c.o.MaxAttempts {
			c.fail(InvAttempts, "work %s ends with attempt_count %d > max attempts %d", w.Key, w.AttemptCount, c.o.MaxAttempts)
		}
	}
	recoveries := map[string]int{}
	for _, e := range c.s.Evidence {
		if e.ReasonCode == "ACTIVE_REVISION_RECOVERY" {
			recoveries[e.WorkID]++
		}
	}
	for key, list := range c.byWork {
		refunds := recoveries[key]
		for _, ci := range list {
			if ci.claim.Attempt > c.o.MaxAttempts {
				c.fail(InvAttempts, "work %s claimed at attempt %d > max attempts %d (token %s)", key, ci.claim.Attempt, c.o.MaxAttempts, ci.claim.Token)
			}
			for _, p := range ci.published {
				if p.Transition == "defer" && p.Result != worker.ResultRefused {
					refunds++
				}
			}
		}
		if limit := c.o.MaxAttempts + refunds; len(list) > limit {
			c.fail(InvAttempts, "work %s was claimed %d times, more than max attempts %d + %d refunds", key, len(list), c.o.MaxAttempts, refunds)
		}
	}
}

// exclusion: a token held its lane continuously from its claim to its last confirmed hold (a
// renewal, or the renewal that begins an accepted publish: both require an unexpired lease, and
// only renewals extend it). Another claim in that lane that had certainly taken effect (its worker
// logged it) before such a hold is two owners at once; if the hold is an accepted publish of the
// same work, a stale token published.
func (c *checker) exclusion() {
	for lane, list := range c.byLane {
		for i := range list {
			for j := i + 1; j < len(list); j++ {
				// A claim's claimedAt is the database clock when its row was formed; the claim may
				// have taken effect later (the statement can wait on the unique lane index for a
				// transaction that is releasing the lane). It certainly had taken effect when its
				// worker logged it (same machine clock), so that time orders the pair: a is the
				// claim logged first, and only its confirmations after b was logged are overlaps.
				a, b := list[i], list[j]
				if b.claim.At.Before(a.claim.At) {
					a, b = b, a
				}
				// b's row formed before a had certainly taken effect: b took effect before a (its
				// worker logged it late, stopped in between), or waited for a's release. Neither is
				// two owners; only a b formed while a certainly held can be.
				if b.claim.ClaimedAt.Before(a.claim.At) {
					continue
				}
				start := *a.claim.ClaimedAt
				bt := b.claim.At
				var last *hold // a's latest confirmation after b's claim
				for j := range a.holds {
					if h := &a.holds[j]; h.at.After(bt) && (last == nil || h.at.After(last.at)) {
						last = h
					}
				}
				switch {
				case last == nil:
				case last.what == "accepted publish" && b.claim.WorkID == a.claim.WorkID:
					c.fail(InvFencedPublish, "stale token published: %s token %s (attempt %d, process %s) had its publish accepted at %s, after the newer claim %s (attempt %d, process %s) at %s",
						a.claim.WorkID, a.claim.Token, a.claim.Attempt, a.claim.Process, last.at.Format(time.RFC3339Nano),
						b.claim.Token, b.claim.Attempt, b.claim.Process, bt.Format(time.RFC3339Nano))
				default:
					c.fail(InvLaneExclusion, "lane %s held twice: %s token %s (claimed %s) confirmed its lease by a %s at %s, after %s token %s claimed the lane at %s without the first lease expiring",
						lane, a.claim.WorkID, a.claim.Token, start.Format(time.RFC3339Nano), last.what, last.at.Format(time.RFC3339Nano),
						b.claim.WorkID, b.claim.Token, bt.Format(time.RFC3339Nano))
				}
			}
		}
	}
}

// unfinished reports whether a claim's outcome may be missing from the log (no release: the
// worker died or was still running).
func (ci *claimInfo) unfinished() bool { return !ci.released }

// activeRevision: the final pointer names a revision of its own Agent, every accepted activation
// sets the pointer to its own candidate from the pointer the previous publish left (a
// compare-and-set chain: two activations from one predecessor would be two active revisions),
// and the final pointer is the one the last publish left. A gap is tolerated only where a claim
// of that Agent ended without a logged outcome.
func (c *checker) activeRevision() {
	revs := map[string]string{}
	for _, r := range c.s.Revisions {
		revs[r.ID] = r.AgentID
	}
	final := map[string]*string{}
	for _, a := range c.s.Agents {
		final[a.ID] = a.ActiveRevisionID
		if a.ActiveRevisionID != nil {
			owner, ok := revs[*a.ActiveRevisionID]
			switch {
			case !ok:
				c.fail(InvOneActive, "agent %s's active revision %s does not exist", a.ID, *a.ActiveRevisionID)
			case owner != a.ID:
				c.fail(InvOneActive, "agent %s's active revision %s belongs to agent %s", a.ID, *a.ActiveRevisionID, owner)
			}
		}
	}
	type pub struct {
		e  worker.Event
		at time.Time
	}
	byAgent := map[string][]pub{}
	for _, ci := range c.claims {
		for _, p := range ci.published {
			if (!p.Activation && !p.Cleared) || p.Result == worker.ResultRefused {
				continue
			}
			at, ok := dbTime(p, c.o.Lease)
			if !ok {
				at = *ci.claim.ClaimedAt
			}
			if p.Activation {
				c.r.Counts["activations"]++
				if want := "agent_revision:" + p.ActiveRevisionID + ":reconcile"; p.WorkID != want {
					c.fail(InvOneActive, "publish by %s (token %s) activated revision %s, not its own candidate", p.WorkID, p.Token, p.ActiveRevisionID)
				}
			}
			byAgent[p.AgentID] = append(byAgent[p.AgentID], pub{p, at})
		}
	}
	gap := func(agent string, from, to time.Time) bool {
		for _, ci := range c.byLane[agent] {
			if t := *ci.claim.ClaimedAt; ci.unfinished() && t.After(from) && (to.IsZero() || t.Before(to)) {
				return true
			}
		}
		return false
	}
	for agent, pubs := range byAgent {
		sort.Slice(pubs, func(i, j int) bool { return pubs[i].at.Before(pubs[j].at) })
		known, pointer, last := false, "", time.Time{}
		for i, p := range pubs {
			if i == 0 && p.e.Activation && p.e.PreviousRevisionID == "" {
				known = true // a first activation starts from no pointer
			}
			if known && p.e.PreviousRevisionID != pointer && !gap(agent, last, p.at) {
				what := "activated " + p.e.ActiveRevisionID
				if p.e.Cleared {
					what = "cleared the pointer"
				}
				c.fail(InvOneActive, "agent %s: publish by %s (token %s) %s from %q, but the pointer was %q (set by the previous accepted publish): two revisions active from one predecessor",
					agent, p.e.WorkID, p.e.Token, what, p.e.PreviousRevisionID, pointer)
			}
			known, pointer, last = p.e.Result == worker.ResultAccepted, p.e.ActiveRevisionID, p.at
		}
		f, exists := final[agent]
		if !exists || !known {
			continue // deleted Agent, or an ambiguous last publish
		}
		if deref(f) != pointer && !gap(agent, last, time.Time{}) {
			c.fail(InvOneActive, "agent %s ends with active revision %q, but its last accepted publish left %q", agent, deref(f), pointer)
		}
	}
}

// recovery: each claim that a worker death left behind is recovered (LEASE_EXPIRED or
// ACTIVE_REVISION_RECOVERY evidence) within lease + poll + slack of the death. A claim the dead
// worker released itself just before dying (its publish committed, the event line not yet
// written) shows as a later claim without recovery evidence, a row it completed before the death,
// or a work item that vanished with its deleted Agent; those are counted, not measured. A row
// completed after the death without any recovery is a violation: someone published without the
// claim.
func (c *checker) recovery() {
	evidence := map[string][]time.Time{}
	for _, e := range c.s.Evidence {
		if e.ReasonCode == "LEASE_EXPIRED" || e.ReasonCode == "ACTIVE_REVISION_RECOVERY" {
			evidence[e.WorkID] = append(evidence[e.WorkID], e.At)
		}
	}
	rows := map[string]WorkRow{}
	for _, w := range c.s.Work {
		rows[w.Key] = w
	}
	bound := c.o.Lease + c.o.Poll + c.o.Slack
	for _, d := range c.h.Deaths {
		c.r.Counts["deaths"]++
		for _, ci := range c.claims {
			cl := ci.claim
			if cl.PID != d.PID || cl.At.After(d.At) || ci.released || ci.ended {
				continue
			}
			survived := false // a stopped process that came back within its lease
			for _, h := range ci.holds {
				if h.what != "claim" && h.at.After(d.At) {
					survived = true
				}
			}
			if survived {
				c.r.Counts["claims-survived-stop"]++
				continue
			}
			c.r.Counts["orphaned-claims"]++
			// The claim's recovery comes before the next claim of its work: evidence after that
			// belongs to a later claim (the dying worker had released this one itself).
			var next time.Time
			for _, other := range c.byWork[cl.WorkID] {
				if t := *other.claim.ClaimedAt; t.After(*cl.ClaimedAt) && (next.IsZero() || t.Before(next)) {
					next = t
				}
			}
			later := !next.IsZero()
			var recovered time.Time
			for _, t := range evidence[cl.WorkID] {
				if t.After(*cl.ClaimedAt) && (!later || t.Before(next)) && (recovered.IsZero() || t.Before(recovered)) {
					recovered = t
				}
			}
			if recovered.IsZero() {
				w, exists := rows[cl.WorkID]
				switch {
				case later || (exists && w.CompletedAt != nil && !w.CompletedAt.After(d.At)) ||
					(!exists && strings.HasPrefix(cl.WorkID, "agent")):
					c.r.Counts["released-before-death"]++
				case exists && w.CompletedAt != nil:
					c.fail(InvRecovery, "%s of process %d at %s left %s (token %s) claimed; it was completed at %s without being recovered or claimed again",
						d.Kind, d.PID, d.At.Format(time.RFC3339Nano), cl.WorkID, cl.Token, w.CompletedAt.Format(time.RFC3339Nano))
				default:
					c.fail(InvRecovery, "%s of process %d at %s left %s (token %s) claimed, and it was never recovered",
						d.Kind, d.PID, d.At.Format(time.RFC3339Nano), cl.WorkID, cl.Token)
				}
				continue
			}
			took := max(0, recovered.Sub(d.At))
			c.r.Recoveries = append(c.r.Recoveries, took)
			if took > bound {
				c.fail(InvRecovery, "%s of process %d at %s: %s (token %s) recovered after %v, more than lease+poll+slack = %v",
					d.Kind, d.PID, d.At.Format(time.RFC3339Nano), cl.WorkID, cl.Token, took.Round(time.Millisecond), bound)
			}
		}
	}
}

// effectsAfterLoss: a driver effect starts only under a claim that is still the item's. An
// effect-start of token T is a violation once T was lost for certain: after its release, after a
// renewal or publish of T that the fence refused, or after a newer claim of T's lane was logged
// (the lease ran out and someone else took the lane) with no confirmation of T since. The worker
// renews the claim just before each effect, so none of these can precede an effect-start unless
// the process stalled between that renewal and the call: a SIGSTOP of the process in that window
// is counted (effects-after-stop), not failed, because a lease cannot fence a paused process.
func (c *checker) effectsAfterLoss() {
	for _, ci := range c.claims {
		confirmed := ci.claim // T's latest confirmation: its claim or an extending renewal
		var lost *worker.Event
		for i := range ci.events {
			e := &ci.events[i]
			switch {
			case e.Type == worker.EventRenew && (e.Result == worker.ResultOK || e.Result == worker.ResultLate):
				confirmed = *e
			case lost == nil && e.Type == worker.EventRelease,
				lost == nil && (e.Type == worker.EventRenew || e.Type == worker.EventPublish) && e.Result == worker.ResultRefused:
				lost = e
			case e.Type == worker.EventEffectStart:
				c.r.Counts["effects"]++
				c.effectAfterLoss(ci, confirmed, lost, *e)
			}
		}
	}
}

func (c *checker) effectAfterLoss(ci *claimInfo, confirmed worker.Event, lost *worker.Event, e worker.Event) {
	why := ""
	if lost != nil {
		why = fmt.Sprintf("its %s (%s) at %s", lost.Type, lost.Result+lost.Outcome, lost.At.Format(time.RFC3339Nano))
	} else {
		held, ok := dbTime(confirmed, c.o.Lease)
		if !ok {
			held = *ci.claim.ClaimedAt
		}
		for _, b := range c.byLane[ci.claim.Lane] {
			// b certainly took effect after T's last confirmation (its row formed after it) and
			// before the effect started (its worker had logged it).
			if b != ci && b.claim.At.After(ci.claim.At) && b.claim.ClaimedAt.After(held) && b.claim.At.Before(e.At) {
				why = fmt.Sprintf("the newer claim %s token %s (process %s) at %s, after its last confirmation at %s",
					b.claim.WorkID, b.claim.Token, b.claim.Process, b.claim.At.Format(time.RFC3339Nano), held.Format(time.RFC3339Nano))
				break
			}
		}
	}
	if why == "" {
		return
	}
	if lost == nil || lost.Type != worker.EventRelease {
		from := confirmed.At
		if confirmed.SentAt != nil {
			from = *confirmed.SentAt
		}
		for _, d := range c.h.Deaths {
			if d.Kind == "SIGSTOP" && d.PID == e.PID && !d.At.Before(from) && d.At.Before(e.At) {
				c.r.Counts["effects-after-stop"]++
				return
			}
		}
	}
	c.fail(InvEffectAfterLoss, "%s token %s (process %s) started an effect%s at %s after %s",
		e.WorkID, e.Token, e.Process, callName(e.Call), e.At.Format(time.RFC3339Nano), why)
}

func callName(call string) string {
	if call == "" {
		return ""
	}
	return " (" + call + ")"
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Format(time.RFC3339Nano)
}
