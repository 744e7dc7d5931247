package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/store"
)

// Appender writes audit events for one Installation.
type Appender struct {
	installationID string
	newID          func() (string, error)
}

// NewAppender returns an Appender bound to the server's Installation id; it refuses
// events that name another Installation.
func NewAppender(installationID string) *Appender {
	return &Appender{installationID: installationID, newID: newAuditID}
}

func newAuditID() (string, error) {
	u, err := uuid.NewRandom()
	if err != nil {
		return "", fmt.Errorf("audit: generate id: %w", err)
	}
	return "aud_" + u.String(), nil
}

// Validate reports whether Append would accept ev (after filling its defaults).
// Failures wrap ErrInvalidEvent and are *ValidationError values.
func (a *Appender) Validate(ev Event) error {
	return validate(withDefaults(ev, a.installationID), a.installationID)
}

// Append validates ev, redacts its details, packs the envelope fields and inserts one
// row through db, which should be the transaction of the change the event describes.
// It returns the event id. Nothing is written when the event is invalid.
func (a *Appender) Append(ctx context.Context, db store.Execer, ev Event) (string, error) {
	row, err := a.buildRow(ev)
	if err != nil {
		return "", err
	}
	if err := store.InsertAuditEvent(ctx, db, row); err != nil {
		return "", fmt.Errorf("audit: append %s: %w", row.Action, err)
	}
	return row.ID, nil
}

// metadata is the packed form of the optional envelope fields.
type metadata struct {
	SchemaVersion       int            `json:"schemaVersion"`
	Source              string         `json:"source"`
	RequestID           string         `json:"requestId,omitempty"`
	AdmissionDecisionID string         `json:"admissionDecisionId,omitempty"`
	Actor               *Actor         `json:"actor,omitempty"`
	IAMDriverID         string         `json:"iamDriverId,omitempty"`
	Authorization       *Authorization `json:"authorization,omitempty"`
	DecisionReason      string         `json:"decisionReason,omitempty"`
	ReasonCode          string         `json:"reasonCode,omitempty"`
}

// buildRow turns an event into the row Append inserts.
func (a *Appender) buildRow(ev Event) (store.AuditEventRow, error) {
	ev = withDefaults(ev, a.installationID)
	if err := validate(ev, a.installationID); err != nil {
		return store.AuditEventRow{}, err
	}
	if ev.ID == "" {
		id, err := a.newID()
		if err != nil {
			return store.AuditEventRow{}, err
		}
		ev.ID = id
	}

	details := map[string]any{}
	if ev.Details != nil {
		maps.Copy(details, Redact(ev.Details).(map[string]any))
	}
	details[MetadataKey] = packMetadata(ev)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(details); err != nil {
		return store.AuditEventRow{}, fmt.Errorf("audit: encode details: %w", err)
	}

	return store.AuditEventRow{
		ID:           ev.ID,
		OccurredAt:   ev.OccurredAt,
		Kind:         ev.Kind,
		ActorID:      ev.ActorID,
		Action:       ev.Action,
		NamespaceID:  ev.NamespaceID,
		ResourceKind: ev.Resource.Kind,
		ResourceID:   ev.Resource.ID,
		Outcome:      ev.Outcome,
		Details:      bytes.TrimSuffix(buf.Bytes(), []byte("\n")),
	}, nil
}

// packMetadata keeps the envelope fields that are set; free-text fields go through the
// string redaction, and decisionReason is cut to 120 characters after it.
func packMetadata(ev Event) metadata {
	m := metadata{
		SchemaVersion:       SchemaVersion,
		Source:              Source,
		RequestID:           redactString(ev.RequestID),
		AdmissionDecisionID: redactString(ev.AdmissionDecisionID),
		IAMDriverID:         redactString(ev.IAMDriverID),
		DecisionReason:      truncate(redactString(ev.DecisionReason), maxDecisionReasonLength),
		ReasonCode:          ev.ReasonCode,
	}
	if ev.Actor != nil {
		actor := *ev.Actor
		actor.PrincipalID = redactString(actor.PrincipalID)
		actor.ID = redactString(actor.ID)
		actor.Issuer = redactString(actor.Issuer)
		actor.Subject = redactString(actor.Subject)
		m.Actor = &actor
	}
	if ev.Authorization != nil {
		authz := *ev.Authorization
		authz.PrincipalID = redactString(authz.PrincipalID)
		authz.Resource.ID = redactString(authz.Resource.ID)
		m.Authorization = &authz
	}
	return m
}

func truncate(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// Decode turns a stored row back into an Event, unpacking details.__occAuditMetadata
// into the envelope fields. The row has no Installation column, so InstallationID is
// left empty for the caller to set. Rows written without metadata (the queue's SQL
// evidence rows) decode with SchemaVersion 1 and Source "occ". Numbers in Details come
// back as json.Number.
func Decode(row store.AuditEventRow) (Event, error) {
	ev := Event{
		SchemaVersion: SchemaVersion,
		ID:            row.ID,
		NamespaceID:   row.NamespaceID,
		OccurredAt:    row.OccurredAt,
		Source:        Source,
		Kind:          row.Kind,
		ActorID:       row.ActorID,
		Action:        row.Action,
		Resource:      Resource{Kind: row.ResourceKind, ID: row.ResourceID},
		Outcome:       row.Outcome,
	}
	if row.NamespaceID != nil {
		ns := *row.NamespaceID
		ev.Resource.NamespaceID = &ns
	}
	if len(row.Details) == 0 {
		return ev, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(row.Details, &members); err != nil {
		return Event{}, fmt.Errorf("audit: decode details of %s: %w", row.ID, err)
	}
	if raw, ok := members[MetadataKey]; ok {
		delete(members, MetadataKey)
		var m metadata
		if err := json.Unmarshal(raw, &m); err != nil {
			return Event{}, fmt.Errorf("audit: decode %s of %s: %w", MetadataKey, row.ID, err)
		}
		if m.SchemaVersion != 0 {
			ev.SchemaVersion = m.SchemaVersion
		}
		if m.Source != "" {
			ev.Source = m.Source
		}
		ev.RequestID = m.RequestID
		ev.AdmissionDecisionID = m.AdmissionDecisionID
		ev.Actor = m.Actor
		ev.IAMDriverID = m.IAMDriverID
		ev.Authorization = m.Authorization
		ev.DecisionReason = m.DecisionReason
		ev.ReasonCode = m.ReasonCode
	}
	if len(members) == 0 {
		return ev, nil
	}
	ev.Details = make(map[string]any, len(members))
	for k, raw := range members {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return Event{}, fmt.Errorf("audit: decode details of %s: %w", row.ID, err)
		}
		ev.Details[k] = v
	}
	return ev, nil
}
