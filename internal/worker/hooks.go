package worker

import (
	"time"

	"github.com/openclaw/occ/internal/queue"
)

// hooks are the worker's verification hooks: explicit calls at each step of the claim protocol,
// never values carried by a context. noHooks is the production default; the event log
// (eventlog.go, OCC_WORKER_EVENT_LOG) implements them for the chaos test and post-mortems.
//
// Each hook runs before the step it describes is acknowledged: a claim before its pass starts, a
// renewal's answer before the pass continues, an effect's start before the Compute call, a
// publication before the pass reports its result.
type hooks interface {
	// claimed: a claim, before its pass starts.
	claimed(a *activeClaim, sentAt time.Time)
	// renewed: the answer to a renewal sent at sentAt (until: the new database expiry).
	renewed(a *activeClaim, renewal string, sentAt, until time.Time, result string, lost bool, err error)
	// effect: the start (EventEffectStart) or end (EventEffectEnd, with its error) of an external call.
	effect(a *activeClaim, typ, call string, err error)
	// publishBegun opens a finalization transaction; renewedInTx, transition and pointer report
	// what it wrote, and published closes it once it committed or failed.
	publishBegun(a *activeClaim)
	renewedInTx(a *activeClaim, until time.Time)
	transition(a *activeClaim, op queue.Transition, code string, w queue.Work, err error)
	pointer(a *activeClaim, agentID string, previous *string, active string, changed bool)
	published(a *activeClaim, sentAt time.Time, err error)
	// released: the pass is over, with its outcome and, for a lost claim, its cause.
	released(a *activeClaim, outcome, cause string)
	close()
}

// noHooks records nothing.
type noHooks struct{}

func (noHooks) claimed(*activeClaim, time.Time)                                         {}
func (noHooks) renewed(*activeClaim, string, time.Time, time.Time, string, bool, error) {}
func (noHooks) effect(*activeClaim, string, string, error)                              {}
func (noHooks) publishBegun(*activeClaim)                                               {}
func (noHooks) renewedInTx(*activeClaim, time.Time)                                     {}
func (noHooks) transition(*activeClaim, queue.Transition, string, queue.Work, error)    {}
func (noHooks) pointer(*activeClaim, string, *string, string, bool)                     {}
func (noHooks) published(*activeClaim, time.Time, error)                                {}
func (noHooks) released(*activeClaim, string, string)                                   {}
func (noHooks) close()                                                                  {}
