package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/fixture"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// The refusals the API answers in its own words arrive classified from the real database.
func TestRefusalsArriveClassified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	adopted := "team-a"
	if _, err := store.InsertNamespace(ctx, app, id("ns"), "alpha", &adopted); err != nil {
		t.Fatal(err)
	}
	_, err := store.InsertNamespace(ctx, app, id("ns"), "alpha", nil)
	if !errors.Is(err, store.ErrDuplicate) || store.RefusedBy(err, store.ConstraintExistingNamespaceLive) {
		t.Fatalf("a name in use: %v", err)
	}
	_, err = store.InsertNamespace(ctx, app, id("ns"), "beta", &adopted)
	if !errors.Is(err, store.ErrDuplicate) || !store.RefusedBy(err, store.ConstraintExistingNamespaceLive) {
		t.Fatalf("an adopted namespace: %v", err)
	}

	fx := fixture.New(t, app)
	ns := fx.Namespace()
	a := fx.Agent(store.AgentRow{NamespaceID: ns.ID, Name: "triage"})
	if _, err := store.InsertAgent(ctx, app, store.AgentRow{ID: id("agt"), NamespaceID: ns.ID, Name: "triage", ExecutionMode: "embedded",
		ServicePrincipalID: id("spn"), ConfigurationID: a.ConfigurationID}); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("an Agent name in use: %v", err)
	}
	if _, err := store.DeleteConfiguration(ctx, app, ns.ID, a.ConfigurationID); !errors.Is(err, store.ErrForeignKey) {
		t.Fatalf("a Configuration an Agent uses: %v", err)
	}
}
