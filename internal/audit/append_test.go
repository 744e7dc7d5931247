package audit

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openclaw/occ/internal/store"
)

const (
	installationID = "ins_0f8fad5b-d9cb-469f-a165-70867728950e"
	namespaceID    = "ns_7c9e6679-7425-40de-944b-e07fc1f90ae7"
	eventID        = "aud_16fd2706-8baf-433b-82eb-8c7fada847da"
)

func validEvent() Event {
	return Event{
		NamespaceID: ptr(namespaceID),
		ActorID:     "prn_1",
		Action:      "openclaw.namespaces.create",
		Resource:    Resource{Kind: "namespace", ID: namespaceID, NamespaceID: ptr(namespaceID)},
	}
}

func TestValidationFailures(t *testing.T) {
	a := NewAppender(installationID)
	cases := []struct {
		field  string
		mutate func(*Event)
	}{
		{"installationId", func(e *Event) { e.InstallationID = "ins_other" }},
		{"id", func(e *Event) { e.ID = "aud_not-a-uuid" }},
		{"id", func(e *Event) { e.ID = "aud_16FD2706-8BAF-433B-82EB-8C7FADA847DA" }},
		{"id", func(e *Event) { e.ID = "16fd2706-8baf-433b-82eb-8c7fada847da" }},
		{"kind", func(e *Event) { e.Kind = "reconcile" }},
		{"outcome", func(e *Event) { e.Outcome = "ok" }},
		{"action", func(e *Event) { e.Action = "" }},
		{"action", func(e *Event) { e.Action = strings.Repeat("a", 201) }},
		{"resource.kind", func(e *Event) { e.Resource.Kind = "" }},
		{"resource.id", func(e *Event) { e.Resource.ID = "" }},
		{"resource.namespaceId", func(e *Event) { e.Resource.NamespaceID = nil }},
		{"resource.namespaceId", func(e *Event) { e.NamespaceID = nil }},
		{"resource.namespaceId", func(e *Event) { e.Resource.NamespaceID = ptr("ns_other") }},
		{"namespaceId", func(e *Event) { e.NamespaceID, e.Resource.NamespaceID = ptr(""), ptr("") }},
		{"actor.kind", func(e *Event) { e.Actor = &Actor{PrincipalID: "prn_1", Kind: "user"} }},
		{"reasonCode", func(e *Event) { e.ReasonCode = "lower_case" }},
		{"reasonCode", func(e *Event) { e.ReasonCode = "A" + strings.Repeat("B", 64) }},
		{"details", func(e *Event) { e.Details = map[string]any{MetadataKey: map[string]any{}} }},
	}
	for _, c := range cases {
		ev := validEvent()
		c.mutate(&ev)
		err := a.Validate(ev)
		var verr *ValidationError
		if !errors.Is(err, ErrInvalidEvent) || !errors.As(err, &verr) || verr.Field != c.field {
			t.Errorf("%s: err = %v", c.field, err)
			continue
		}
		if _, err := a.buildRow(ev); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%s: buildRow err = %v", c.field, err)
		}
		if _, err := a.Append(t.Context(), refusingDB{t: t}, ev); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%s: Append err = %v", c.field, err)
		}
	}
	if err := NewAppender("").Validate(validEvent()); !errors.Is(err, ErrInvalidEvent) {
		t.Errorf("appender without installation: %v", err)
	}
	// Valid edge cases.
	for name, mutate := range map[string]func(*Event){
		"no namespace":       func(e *Event) { e.NamespaceID, e.Resource = nil, Resource{Kind: "installation", ID: installationID} },
		"explicit install":   func(e *Event) { e.InstallationID = installationID },
		"explicit id":        func(e *Event) { e.ID = eventID },
		"action 200":         func(e *Event) { e.Action = strings.Repeat("é", 200) },
		"reason code 64":     func(e *Event) { e.ReasonCode = "A" + strings.Repeat("B", 63) },
		"metadata key below": func(e *Event) { e.Details = map[string]any{"x": map[string]any{MetadataKey: 1}} },
		"failure outcome":    func(e *Event) { e.Outcome = OutcomeFailure },
	} {
		ev := validEvent()
		mutate(&ev)
		if err := a.Validate(ev); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidationErrorDoesNotQuoteValues(t *testing.T) {
	ev := validEvent()
	ev.ReasonCode = "sk-proj-abcdefghijklmnop"
	err := NewAppender(installationID).Validate(ev)
	if err == nil || strings.Contains(err.Error(), "sk-proj") {
		t.Fatalf("err = %v", err)
	}
}

func TestDefaults(t *testing.T) {
	a := NewAppender(installationID)
	cases := []struct {
		kind, outcome, wantKind, wantOutcome string
	}{
		{"", "", KindMutation, OutcomeSuccess},
		{KindBootstrap, "", KindBootstrap, OutcomeSuccess},
		{KindMutation, "", KindMutation, OutcomeSuccess},
		{KindAuthorizationDenial, "", KindAuthorizationDenial, OutcomeDenied},
		{KindAccess, "", KindAccess, OutcomeDenied},
		{KindMutation, OutcomeFailure, KindMutation, OutcomeFailure},
		{KindAccess, OutcomeSuccess, KindAccess, OutcomeSuccess},
	}
	for _, c := range cases {
		ev := validEvent()
		ev.Kind, ev.Outcome = c.kind, c.outcome
		row, err := a.buildRow(ev)
		if err != nil {
			t.Fatal(err)
		}
		if row.Kind != c.wantKind || row.Outcome != c.wantOutcome {
			t.Errorf("kind %q outcome %q → %q %q", c.kind, c.outcome, row.Kind, row.Outcome)
		}
	}

	actors := []struct {
		actorID string
		actor   *Actor
		want    string
	}{
		{"", nil, ActorUnresolved},
		{"", &Actor{PrincipalID: "prn_2"}, "prn_2"},
		{"", &Actor{ID: "spn_3", Kind: ActorKindServicePrincipal}, "spn_3"},
		{"", &Actor{PrincipalID: "prn_2", Unresolved: true}, ActorUnresolved},
		{"prn_1", &Actor{PrincipalID: "prn_2"}, "prn_1"},
	}
	for _, c := range actors {
		ev := validEvent()
		ev.ActorID, ev.Actor = c.actorID, c.actor
		row, err := a.buildRow(ev)
		if err != nil {
			t.Fatal(err)
		}
		if row.ActorID != c.want {
			t.Errorf("actor %q %+v → %q, want %q", c.actorID, c.actor, row.ActorID, c.want)
		}
	}
}

func TestGeneratedIDs(t *testing.T) {
	a := NewAppender(installationID)
	seen := map[string]bool{}
	for range 100 {
		row, err := a.buildRow(validEvent())
		if err != nil {
			t.Fatal(err)
		}
		if !auditIDPattern.MatchString(row.ID) || seen[row.ID] {
			t.Fatalf("id %q", row.ID)
		}
		seen[row.ID] = true
	}
	ev := validEvent()
	ev.ID = eventID
	if row, _ := a.buildRow(ev); row.ID != eventID {
		t.Fatalf("explicit id replaced: %q", row.ID)
	}
	a.newID = func() (string, error) { return "", errors.New("no entropy") }
	if _, err := a.buildRow(validEvent()); err == nil {
		t.Fatal("id generation error swallowed")
	}
}

func TestBuildRow(t *testing.T) {
	at := time.Date(2026, 11, 30, 8, 40, 59, 123_000_000, time.UTC)
	ev := Event{
		ID:                  eventID,
		NamespaceID:         ptr(namespaceID),
		OccurredAt:          &at,
		Kind:                KindAuthorizationDenial,
		Actor:               &Actor{PrincipalID: "prn_1", Kind: ActorKindPrincipal, Issuer: "https://issuer.example", Subject: "user@example.com"},
		Action:              "openclaw.namespaces.delete",
		Resource:            Resource{Kind: "namespace", ID: namespaceID, NamespaceID: ptr(namespaceID)},
		RequestID:           "req_1",
		AdmissionDecisionID: "adm_1",
		IAMDriverID:         "native-iam",
		Authorization:       &Authorization{PrincipalID: "prn_1", Action: "delete", Resource: Resource{Kind: "namespace", ID: namespaceID, NamespaceID: ptr(namespaceID)}},
		DecisionReason:      "no explicit scoped binding; header was Bearer abc.def-123 " + strings.Repeat("x", 200),
		ReasonCode:          "AUTHORIZATION_DENIED",
		Details:             map[string]any{"bindingId": "binding_1", "password": "hunter2", "note": "<ok> & sk-proj-abcdefghijklmnop"},
	}
	row, err := NewAppender(installationID).buildRow(ev)
	if err != nil {
		t.Fatal(err)
	}
	wantRow := store.AuditEventRow{
		ID: eventID, OccurredAt: &at, Kind: KindAuthorizationDenial, ActorID: "prn_1",
		Action: "openclaw.namespaces.delete", NamespaceID: ptr(namespaceID), ResourceKind: "namespace",
		ResourceID: namespaceID, Outcome: OutcomeDenied,
	}
	gotRow := row
	gotRow.Details = nil
	if !reflect.DeepEqual(gotRow, wantRow) {
		t.Fatalf("row = %+v\nwant %+v", gotRow, wantRow)
	}

	var details map[string]any
	if err := json.Unmarshal(row.Details, &details); err != nil {
		t.Fatalf("details not JSON: %v", err)
	}
	reason := "no explicit scoped binding; header was " + Redacted + " " + strings.Repeat("x", 200)
	reason = reason[:120]
	want := map[string]any{
		"bindingId": "binding_1",
		"password":  Redacted,
		"note":      "<ok> & " + Redacted,
		MetadataKey: map[string]any{
			"schemaVersion":       1.0,
			"source":              "occ",
			"requestId":           "req_1",
			"admissionDecisionId": "adm_1",
			"actor":               map[string]any{"principalId": "prn_1", "kind": "principal", "issuer": "https://issuer.example", "subject": "user@example.com"},
			"iamDriverId":         "native-iam",
			"authorization": map[string]any{"principalId": "prn_1", "action": "delete",
				"resource": map[string]any{"kind": "namespace", "id": namespaceID, "namespaceId": namespaceID}},
			"decisionReason": reason,
			"reasonCode":     "AUTHORIZATION_DENIED",
		},
	}
	if !reflect.DeepEqual(details, want) {
		t.Fatalf("details:\n got %#v\nwant %#v", details, want)
	}
	if !strings.Contains(string(row.Details), `"<ok> & `) {
		t.Errorf("HTML escaping applied: %s", row.Details)
	}
	// The caller's details map is not modified.
	if ev.Details["password"] != "hunter2" || len(ev.Details) != 3 {
		t.Errorf("caller's details changed: %v", ev.Details)
	}
}

func TestMinimalMetadata(t *testing.T) {
	row, err := NewAppender(installationID).buildRow(validEvent())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"` + MetadataKey + `":{"schemaVersion":1,"source":"occ"}}`; string(row.Details) != want {
		t.Fatalf("details = %s, want %s", row.Details, want)
	}
	if row.OccurredAt != nil {
		t.Fatalf("OccurredAt set: %v", row.OccurredAt)
	}
}

func TestDecisionReasonTruncatesByCharacter(t *testing.T) {
	ev := validEvent()
	ev.DecisionReason = strings.Repeat("é", 130)
	row, err := NewAppender(installationID).buildRow(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(row)
	if err != nil {
		t.Fatal(err)
	}
	if got.DecisionReason != strings.Repeat("é", 120) {
		t.Fatalf("reason = %q", got.DecisionReason)
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 8, 40, 59, 123_000_000, time.UTC)
	in := Event{
		ID:                  eventID,
		NamespaceID:         ptr(namespaceID),
		OccurredAt:          &at,
		Kind:                KindAccess,
		Outcome:             OutcomeSuccess,
		Actor:               &Actor{ID: "spn_1", Kind: ActorKindServicePrincipal},
		Action:              "openclaw.agents.runtime_logs.view",
		Resource:            Resource{Kind: "agent", ID: "agt_1", NamespaceID: ptr(namespaceID)},
		RequestID:           "req_1",
		AdmissionDecisionID: "adm_1",
		IAMDriverID:         "native-iam",
		Authorization:       &Authorization{PrincipalID: "spn_1", Action: "read_logs", Resource: Resource{Kind: "agent", ID: "agt_1", NamespaceID: ptr(namespaceID)}},
		DecisionReason:      "allowed",
		ReasonCode:          "RUNTIME_LOGS_VIEWED",
		Details: map[string]any{
			"revisionId": "rev_1", "pod": "agent-0", "container": "gateway", "previous": false,
			"lineCount": 200, "viewId": "view_1", "admittingPermission": "agent:read_logs",
		},
	}
	row, err := NewAppender(installationID).buildRow(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(row)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.SchemaVersion, want.Source = SchemaVersion, Source
	want.ActorID = "spn_1"
	want.InstallationID = "" // not stored
	want.Details = map[string]any{
		"revisionId": "rev_1", "pod": "agent-0", "container": "gateway", "previous": false,
		"lineCount": json.Number("200"), "viewId": "view_1", "admittingPermission": "agent:read_logs",
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, want)
	}
	// The decoded form marshals to the stored event shape.
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"schemaVersion":1`, `"source":"occ"`, `"actorId":"spn_1"`, `"actor":{"id":"spn_1","kind":"service_principal"}`,
		`"resource":{"kind":"agent","id":"agt_1","namespaceId":"` + namespaceID + `"}`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("decoded JSON lacks %s: %s", s, b)
		}
	}
	if strings.Contains(string(b), MetadataKey) {
		t.Errorf("metadata key left in details: %s", b)
	}
}

func TestDecodeRowsWithoutMetadata(t *testing.T) {
	// The queue's SQL evidence rows carry plain details.
	row := store.AuditEventRow{
		ID: eventID, Kind: KindMutation, ActorID: "prn_1", Action: "reconcile", NamespaceID: ptr(namespaceID),
		ResourceKind: "agent_revision", ResourceID: "rev_1", Outcome: OutcomeFailure,
		Details: []byte(`{"reasonCode":"LEASE_EXPIRED","attemptCount":3,"workId":"agent_revision:rev_1:deploy","final":true}`),
	}
	ev, err := Decode(row)
	if err != nil {
		t.Fatal(err)
	}
	if ev.SchemaVersion != 1 || ev.Source != "occ" || ev.ReasonCode != "" || ev.Actor != nil ||
		ev.Details["attemptCount"] != json.Number("3") || ev.Details["final"] != true ||
		*ev.Resource.NamespaceID != namespaceID {
		t.Fatalf("decoded %+v", ev)
	}
	for _, details := range [][]byte{nil, []byte(`{}`), []byte(`null`)} {
		row.Details = details
		ev, err := Decode(row)
		if err != nil || ev.Details != nil {
			t.Errorf("%s: %+v %v", details, ev.Details, err)
		}
	}
	for _, details := range [][]byte{[]byte(`[1]`), []byte(`{"` + MetadataKey + `":"x"}`), []byte(`{`)} {
		row.Details = details
		if _, err := Decode(row); err == nil {
			t.Errorf("%s: no error", details)
		}
	}
}

// refusingDB fails the test if Append touches the database. The embedded (nil)
// interface keeps it compiling as store.DBTX grows; any other method panics.
type refusingDB struct {
	t *testing.T
	store.DBTX
}

func (db refusingDB) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	db.t.Error("Exec called for an invalid event")
	return pgconn.CommandTag{}, errors.New("refused")
}

func (db refusingDB) Query(context.Context, string, ...any) (pgx.Rows, error) {
	db.t.Error("Query called")
	return nil, errors.New("refused")
}

func (db refusingDB) QueryRow(context.Context, string, ...any) pgx.Row {
	db.t.Error("QueryRow called")
	return nil
}
