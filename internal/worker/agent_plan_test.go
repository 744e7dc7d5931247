package worker

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/store"
)

var admitted = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func agentRev(id string, number int64, at time.Time) agentRevision {
	return agentRevision{row: store.WorkerRevision{ID: id, NamespaceID: "ns_1", AgentID: "agt_1", Number: number, AdmittedAt: at},
		spec: platform.RevisionSpec{ServicePrincipalID: "sp_1"}}
}

// stopSnap is a stopped Agent whose revision 2 is active, with revisions 1 and 2 of this Compute
// admitted before the stop.
func stopSnap() *stopSnapshot {
	agentID, target, active := "agt_1", queue.AgentStopped, "rev_2"
	return &stopSnapshot{
		work:      store.WorkRecord{NamespaceID: "ns_1", AgentID: &agentID, AgentTarget: &target, CreatedAt: admitted.Add(time.Hour)},
		principal: "sp_1",
		ns:        store.NamespaceRow{ID: "ns_1", Status: store.NamespaceReady},
		agent: store.WorkerAgent{ID: agentID, NamespaceID: "ns_1", ServicePrincipalID: "sp_1",
			DesiredRuntimeState: store.RuntimeStopped, ActiveRevisionID: &active},
		revisions: []agentRevision{agentRev("rev_1", 1, admitted), agentRev("rev_2", 2, admitted)},
		owned:     map[string]bool{"rev_1": true, "rev_2": true},
	}
}

func endPlan(r result) stopPlan { return stopPlan{end: &r} }

// TestPlanStop covers every branch of the Agent stop planner (docs/worker.md, Agent passes).
func TestPlanStop(t *testing.T) {
	failed := errors.New("connection refused")
	denied := result{outcome: outcomePermanent, code: codeAuthorizationDenied}
	set := func(ids ...string) []agentRevision {
		var out []agentRevision
		for _, id := range ids {
			for _, r := range stopSnap().revisions {
				if r.row.ID == id {
					out = append(out, r)
				}
			}
		}
		return out
	}
	cases := []struct {
		name   string
		change func(s *stopSnapshot)
		want   stopPlan
	}{
		{"active first, then the others newest first", func(s *stopSnapshot) {}, stopPlan{set: set("rev_2", "rev_1"), active: "rev_2"}},
		{"ended by a read or the re-authorization", func(s *stopSnapshot) { s.ended = &denied }, endPlan(denied)},
		{"Agent gone", func(s *stopSnapshot) { s.readErr = store.ErrNotFound }, endPlan(permanent(codeInvalidAgentOwner))},
		{"Namespace tombstoned", func(s *stopSnapshot) { now := time.Now(); s.ns.DeletedAt = &now }, endPlan(permanent(codeInvalidAgentOwner))},
		{"principal changed", func(s *stopSnapshot) { s.agent.ServicePrincipalID = "sp_2" }, endPlan(permanent(codeInvalidAgentOwner))},
		{"failed read", func(s *stopSnapshot) { s.readErr = failed }, endPlan(dependencyFailure(failed))},
		{"deploy admitted meanwhile", func(s *stopSnapshot) { s.agent.DesiredRuntimeState = store.RuntimeRunning }, endPlan(success(codeStopSuperseded))},
		{"active pointer names no revision", func(s *stopSnapshot) { s.agent.ActiveRevisionID = ptr("rev_gone") }, endPlan(permanent(codeInvalidActiveRevision))},
		{"active revision admitted after the stop", func(s *stopSnapshot) { s.revisions[1].row.AdmittedAt = admitted.Add(2 * time.Hour) },
			endPlan(success(codeStopSuperseded))},
		{"active revision of another Compute", func(s *stopSnapshot) { s.owned["rev_2"] = false }, endPlan(permanent(codeComputeDriverMismatch))},
		{"revision of another principal", func(s *stopSnapshot) { s.revisions[0].spec.ServicePrincipalID = "sp_2" },
			endPlan(permanent(codeInvalidRevisionOwner))},
		{"other Compute and later revisions are left", func(s *stopSnapshot) {
			s.owned["rev_1"] = false
			s.revisions = append(s.revisions, agentRev("rev_3", 3, admitted.Add(2*time.Hour)))
			s.owned["rev_3"] = true
		}, stopPlan{set: set("rev_2"), active: "rev_2"}},
		{"nothing active", func(s *stopSnapshot) { s.agent.ActiveRevisionID = nil }, stopPlan{set: set("rev_2", "rev_1")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := stopSnap()
			c.change(s)
			if got := planStop(s); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("plan %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestPlanDelete covers every branch of the Agent delete planner.
func TestPlanDelete(t *testing.T) {
	failed := errors.New("connection refused")
	d := &denial{code: codeActorRevoked}
	snap := func() *deleteSnapshot {
		agentID, target := "agt_1", queue.AgentDeleted
		return &deleteSnapshot{
			work: store.WorkRecord{NamespaceID: "ns_1", AgentID: &agentID, AgentTarget: &target},
			agent: store.WorkerAgent{ID: agentID, NamespaceID: "ns_1", ServicePrincipalID: "sp_1",
				Status: store.AgentDeleting, DesiredRuntimeState: store.RuntimeStopped},
			revisions: []agentRevision{agentRev("rev_1", 1, admitted)},
			owned:     true,
		}
	}
	cases := []struct {
		name   string
		change func(s *deleteSnapshot)
		want   *result
	}{
		{"retire", func(s *deleteSnapshot) {}, nil},
		{"work of another shape", func(s *deleteSnapshot) { s.work.AgentTarget = ptr(queue.AgentStopped) }, &result{outcome: outcomePermanent, code: codeInvalidTarget}},
		{"Agent gone", func(s *deleteSnapshot) { s.readErr = store.ErrNotFound }, &result{outcome: outcomePermanent, code: codeInvalidAgentOwner}},
		{"failed read", func(s *deleteSnapshot) { s.readErr = failed }, func() *result { r := dependencyFailure(failed); return &r }()},
		{"not deleting", func(s *deleteSnapshot) { s.agent.Status = store.AgentActive }, &result{outcome: outcomePermanent, code: codeInvalidAgentState}},
		{"still running", func(s *deleteSnapshot) { s.agent.DesiredRuntimeState = store.RuntimeRunning }, &result{outcome: outcomePermanent, code: codeInvalidAgentState}},
		{"re-authorization failed", func(s *deleteSnapshot) { s.authErr = failed }, func() *result { r := dependencyFailure(failed); return &r }()},
		{"re-authorization refused", func(s *deleteSnapshot) { s.denial = d }, &result{outcome: outcomePermanent, code: codeActorRevoked, denial: d}},
		{"revision of another principal", func(s *deleteSnapshot) { s.revisions[0].spec.ServicePrincipalID = "sp_2" }, &result{outcome: outcomePermanent, code: codeInvalidRevisionOwner}},
		{"revision of another Compute", func(s *deleteSnapshot) { s.owned = false }, &result{outcome: outcomePermanent, code: codeComputeDriverMismatch}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := snap()
			c.change(s)
			if got := planDelete(s); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("plan %+v, want %+v", got, c.want)
			}
		})
	}
}
