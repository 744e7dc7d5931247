package worker

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
)

// planSnapshot is a loaded snapshot of a running Agent whose candidate (revision 2) passes every
// check: no active revision, no refusal, the dispatch context resolved.
func planSnapshot() *deploySnapshot {
	agentID, revID := "agt_1", "rev_2"
	spec := platform.RevisionSpec{Harness: platform.PinnedHarnesses[platform.ExecutionEmbedded], ServicePrincipalID: "sp_1"}
	return &deploySnapshot{
		work:        store.WorkRecord{Key: "agent_revision:rev_2:reconcile", NamespaceID: "ns_1", AgentID: &agentID, RevisionID: &revID},
		ns:          store.NamespaceRow{ID: "ns_1", Status: store.NamespaceReady},
		agent:       store.WorkerAgent{ID: agentID, NamespaceID: "ns_1", ExecutionMode: platform.ExecutionEmbedded, ServicePrincipalID: "sp_1", DesiredRuntimeState: store.RuntimeRunning},
		candidate:   agentRevision{row: store.WorkerRevision{ID: revID, NamespaceID: "ns_1", AgentID: agentID, Number: 2}, spec: spec},
		loaded:      true,
		ownsCompute: true,
	}
}

func withActive(s *deploySnapshot, id string, number int64) {
	s.agent.ActiveRevisionID = &id
	s.previous = &agentRevision{row: store.WorkerRevision{ID: id, Number: number}}
}

func ptr(s string) *string { return &s }

// TestPlanDeploy covers every branch of the deploy planner, in the order it decides (the steps of
// docs/worker.md, "Deploying a revision").
func TestPlanDeploy(t *testing.T) {
	readFailed := errors.New("connection refused")
	denied := revisionResult{result: result{outcome: outcomePermanent, code: codeAuthorizationDenied}}
	cases := []struct {
		name   string
		change func(s *deploySnapshot)
		want   deployStep
	}{
		{"prepare and publish", func(s *deploySnapshot) {}, stepPrepareAndPublish{}},
		{"work of another shape", func(s *deploySnapshot) { s.work.AgentTarget = ptr("stopped") },
			endWith(permanentResult(codeInvalidTarget))},
		{"work without its revision", func(s *deploySnapshot) { s.work.RevisionID = nil },
			endWith(permanentResult(codeInvalidTarget))},
		{"Agent or Namespace gone", func(s *deploySnapshot) { s.readErr = store.ErrNotFound },
			endWith(permanentResult(codeInvalidRevisionOwner))},
		{"failed read keeps a stored refusal", func(s *deploySnapshot) { s.readErr, s.refusal = readFailed, ptr(codeActorRevoked) },
			endWith(refusedWait(codeActorRevoked, readFailed))},
		{"failed read retries", func(s *deploySnapshot) { s.readErr = readFailed },
			endWith(revisionResult{result: dependencyFailure(readFailed)})},
		{"undecodable candidate", func(s *deploySnapshot) { s.undecodable, s.loaded = true, false },
			endWith(permanentResult(codeInvalidAdmittedRevision))},
		{"candidate not among the Agent's revisions", func(s *deploySnapshot) { s.loaded = false },
			endWith(permanentResult(codeInvalidRevisionOwner))},
		{"Namespace not ready", func(s *deploySnapshot) { s.ns.Status = store.NamespaceDeleting },
			endWith(permanentResult(codeNamespaceNotReady))},
		{"Namespace tombstoned", func(s *deploySnapshot) { now := time.Now(); s.ns.DeletedAt = &now },
			endWith(permanentResult(codeNamespaceNotReady))},
		{"candidate of another principal", func(s *deploySnapshot) { s.candidate.spec.ServicePrincipalID = "sp_2" },
			endWith(permanentResult(codeInvalidAdmittedRevision))},
		{"candidate of another execution mode", func(s *deploySnapshot) { s.agent.ExecutionMode = platform.ExecutionDedicated },
			endWith(permanentResult(codeInvalidAdmittedRevision))},
		{"Harness descriptor not pinned", func(s *deploySnapshot) { s.candidate.spec.Harness.Version = "0.0.1" },
			endWith(permanentResult(codeHarnessDescriptorMismatch))},
		{"another Compute", func(s *deploySnapshot) { s.ownsCompute = false },
			endWith(permanentResult(codeComputeDriverMismatch))},
		{"active pointer names no revision", func(s *deploySnapshot) { s.agent.ActiveRevisionID = ptr("rev_gone") },
			endWith(permanentResult(codeInvalidActiveRevision))},
		{"re-authorization refused", func(s *deploySnapshot) { s.authorization = verdict{ended: true, r: denied} },
			endWith(denied)},
		{"refusal re-decision could not read the clock", func(s *deploySnapshot) { s.redecideErr = readFailed },
			endWith(revisionResult{result: dependencyFailure(readFailed)})},
		{"stopped Agent, nothing active", func(s *deploySnapshot) { s.agent.DesiredRuntimeState = store.RuntimeStopped },
			stepStopStoppedAgent{retireEarlier: true}},
		{"stopped Agent, another revision active", func(s *deploySnapshot) {
			withActive(s, "rev_1", 1)
			s.agent.DesiredRuntimeState = store.RuntimeStopped
		}, stepStopStoppedAgent{retireEarlier: false}},
		{"stopped Agent, candidate active", func(s *deploySnapshot) {
			withActive(s, "rev_2", 2)
			s.agent.DesiredRuntimeState = store.RuntimeStopped
		}, stepStopStoppedAgent{retireEarlier: true}},
		{"exclusive supersession", func(s *deploySnapshot) { s.exclusive, s.laterExclusive = true, true }, stepSupersede{}},
		{"exclusive supersession stops a refused candidate first", func(s *deploySnapshot) {
			s.exclusive, s.laterExclusive, s.storedRefusal = true, true, ptr(codeActorRevoked)
		}, stepSupersede{stopRefused: true, refusal: codeActorRevoked}},
		{"exclusive supersession skips a candidate stopped recently", func(s *deploySnapshot) {
			s.exclusive, s.laterExclusive, s.storedRefusal, s.recentlyStopped = true, true, ptr(codeActorRevoked), true
		}, stepSupersede{}},
		{"later revision that is not exclusive", func(s *deploySnapshot) { s.laterExclusive = true }, stepPrepareAndPublish{}},
		{"standing refusal, newer active revision", func(s *deploySnapshot) {
			withActive(s, "rev_3", 3)
			s.refusal = ptr(codeActorRevoked)
		}, stepSupersede{}},
		{"standing refusal", func(s *deploySnapshot) { s.refusal = ptr(codeDeadlineExceeded) },
			stepStopRefused{refusal: codeDeadlineExceeded}},
		{"dispatch context unavailable", func(s *deploySnapshot) {
			s.dispatch = verdict{ended: true, r: permanentResult(codeSecretBindingUnavailable)}
		}, endWith(permanentResult(codeSecretBindingUnavailable))},
		{"already active", func(s *deploySnapshot) { withActive(s, "rev_2", 2) }, stepFinishActivation{}},
		{"newer active revision", func(s *deploySnapshot) { withActive(s, "rev_3", 3) }, stepSupersede{bind: true}},
		{"older active revision", func(s *deploySnapshot) { withActive(s, "rev_1", 1) }, stepPrepareAndPublish{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := planSnapshot()
			c.change(s)
			if got := planDeploy(s); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("plan %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestRedecide(t *testing.T) {
	cases := []struct {
		name    string
		refusal *string
		overdue bool
		want    *string
	}{
		{"no refusal", nil, false, nil},
		{"lifted", ptr(codeActorRevoked), false, nil},
		{"lifted after the deadline", ptr(codeInvalidHarnessAuth), true, ptr(codeDeadlineExceeded)},
		{"not decided again", ptr("IMAGE_REFUSED"), false, ptr("IMAGE_REFUSED")},
	}
	for _, c := range cases {
		if got := redecide(c.refusal, c.overdue); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
