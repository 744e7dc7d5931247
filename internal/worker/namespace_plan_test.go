package worker

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/store"
)

// TestPlanNamespace covers every branch of the Namespace planner and of the classification of
// the Compute Driver's observation (docs/worker.md, Namespace passes).
func TestPlanNamespace(t *testing.T) {
	failed := errors.New("connection refused")
	denied := &result{outcome: outcomePermanent, code: codeActorRevoked}
	cases := []struct {
		name string
		kind namespaceKind
		s    namespaceSnapshot
		want *result
	}{
		{"ensure", ensurePass, namespaceSnapshot{ns: store.NamespaceRow{Status: store.NamespaceProvisioning}}, nil},
		{"delete", deletePass, namespaceSnapshot{ns: store.NamespaceRow{Status: store.NamespaceDeleting}}, nil},
		{"gone", ensurePass, namespaceSnapshot{readErr: store.ErrNotFound}, &result{outcome: outcomeSuccess, code: codeSupersededTarget}},
		{"failed read", deletePass, namespaceSnapshot{readErr: failed}, func() *result { r := dependencyFailure(failed); return &r }()},
		{"no longer provisioning", ensurePass, namespaceSnapshot{ns: store.NamespaceRow{Status: store.NamespaceReady}},
			&result{outcome: outcomeSuccess, code: codeSupersededTarget}},
		{"tombstoned", deletePass, namespaceSnapshot{ns: store.NamespaceRow{Status: store.NamespaceDeleting, DeletedAt: &time.Time{}}},
			&result{outcome: outcomeSuccess, code: codeSupersededTarget}},
		{"re-authorization refused", ensurePass, namespaceSnapshot{ns: store.NamespaceRow{Status: store.NamespaceProvisioning}, authorization: denied}, denied},
	}
	for _, c := range cases {
		if got := planNamespace(c.kind, &c.s); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	yes, no := true, false
	classify := []struct {
		name    string
		kind    namespaceKind
		obs     driver.NamespaceObservation
		outcome outcome
		code    string
	}{
		{"ready", ensurePass, driver.NamespaceObservation{Ready: &yes}, outcomeSuccess, codeNamespaceReconciled},
		{"not ready", ensurePass, driver.NamespaceObservation{Ready: &no}, outcomePending, codeNamespaceIncomplete},
		{"ready but failing", ensurePass, driver.NamespaceObservation{Ready: &yes, Failure: driver.FailureRetryable}, outcomeRetry, codeNamespaceReconciled},
		{"permanent failure", ensurePass, driver.NamespaceObservation{Ready: &no, Failure: driver.FailurePermanent}, outcomePermanent, codeNamespaceIncomplete},
		{"deleted", deletePass, driver.NamespaceObservation{Deleted: &yes}, outcomeSuccess, codeNamespaceReconciled},
		{"retryable teardown", deletePass, driver.NamespaceObservation{Deleted: &no, Failure: driver.FailureRetryable}, outcomeRetry, codeNamespaceIncomplete},
	}
	for _, c := range classify {
		if r := classifyNamespace(c.kind, c.obs); r.outcome != c.outcome || r.code != c.code {
			t.Errorf("%s: %s %s, want %s %s", c.name, r.outcome, r.code, c.outcome, c.code)
		}
	}
}
