package audit

import (
	"errors"
	"regexp"
	"time"
	"unicode/utf8"
)

// Event kinds.
const (
	KindBootstrap           = "bootstrap"            // Installation creation
	KindMutation            = "mutation"             // a successful change, and worker reconcile evidence
	KindAuthorizationDenial = "authorization_denial" // every 403 decision
	KindAccess              = "access"               // audited reads (runtime log view/download)
)

// Event outcomes.
const (
	OutcomeSuccess = "success"
	OutcomeDenied  = "denied"
	OutcomeFailure = "failure"
)

// Actor kinds.
const (
	ActorKindPrincipal        = "principal"
	ActorKindServicePrincipal = "service_principal"
)

const (
	// ActorUnresolved is the actor id of an event whose actor could not be resolved.
	ActorUnresolved = "unresolved"
	// SchemaVersion is the version of the event envelope Append writes.
	SchemaVersion = 1
	// Source is the producer recorded in every envelope.
	Source = "occ"
	// MetadataKey is the details member holding the packed envelope fields.
	MetadataKey = "__occAuditMetadata"
)

const (
	maxActionLength         = 200
	maxDecisionReasonLength = 120
)

// Event is one audit event in its in-memory (and decoded) form. Append fills the
// defaults: ID ("aud_<uuid>"), InstallationID (the Appender's), Kind (mutation),
// Outcome (success for bootstrap and mutation, denied otherwise), ActorID (the actor's
// id, else "unresolved"). A nil OccurredAt lets the database clock stamp the event.
type Event struct {
	SchemaVersion       int            `json:"schemaVersion"` // set by Decode; Append always writes SchemaVersion
	ID                  string         `json:"id"`
	InstallationID      string         `json:"installationId"`
	NamespaceID         *string        `json:"namespaceId,omitempty"`
	OccurredAt          *time.Time     `json:"occurredAt,omitempty"`
	Source              string         `json:"source"` // set by Decode; Append always writes Source
	Kind                string         `json:"kind"`
	ActorID             string         `json:"actorId"`
	Actor               *Actor         `json:"actor,omitempty"`
	Action              string         `json:"action"`
	Resource            Resource       `json:"resource"`
	Outcome             string         `json:"outcome"`
	RequestID           string         `json:"requestId,omitempty"`
	AdmissionDecisionID string         `json:"admissionDecisionId,omitempty"`
	IAMDriverID         string         `json:"iamDriverId,omitempty"`
	Authorization       *Authorization `json:"authorization,omitempty"`
	DecisionReason      string         `json:"decisionReason,omitempty"` // redacted, cut to 120 characters
	ReasonCode          string         `json:"reasonCode,omitempty"`     // UPPER_SNAKE, at most 64 characters
	Details             map[string]any `json:"details,omitempty"`
}

// Actor describes who acted, as far as it was resolved.
type Actor struct {
	PrincipalID string `json:"principalId,omitempty"`
	ID          string `json:"id,omitempty"`
	Kind        string `json:"kind,omitempty"` // ActorKindPrincipal or ActorKindServicePrincipal
	Issuer      string `json:"issuer,omitempty"`
	Subject     string `json:"subject,omitempty"`
	Unresolved  bool   `json:"unresolved,omitempty"`
}

// Resource is what the event is about. NamespaceID must equal the event's.
type Resource struct {
	Kind        string  `json:"kind"`
	ID          string  `json:"id"`
	NamespaceID *string `json:"namespaceId,omitempty"`
}

// Authorization is the IAM request a decision answered.
type Authorization struct {
	PrincipalID string   `json:"principalId"`
	Action      string   `json:"action"`
	Resource    Resource `json:"resource"`
}

// ErrInvalidEvent is wrapped by every validation failure.
var ErrInvalidEvent = errors.New("audit: invalid event")

// ValidationError says which field of an event is invalid. It never quotes the value.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	return ErrInvalidEvent.Error() + ": " + e.Field + " " + e.Reason
}

func (e *ValidationError) Unwrap() error { return ErrInvalidEvent }

func invalid(field, reason string) error {
	return &ValidationError{Field: field, Reason: reason}
}

var (
	auditIDPattern    = regexp.MustCompile(`^aud_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	reasonCodePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
)

// withDefaults returns ev with the defaults of an audit event filled in, except the ID.
func withDefaults(ev Event, installationID string) Event {
	if ev.InstallationID == "" {
		ev.InstallationID = installationID
	}
	if ev.Kind == "" {
		ev.Kind = KindMutation
	}
	if ev.Outcome == "" {
		switch ev.Kind {
		case KindBootstrap, KindMutation:
			ev.Outcome = OutcomeSuccess
		default:
			ev.Outcome = OutcomeDenied
		}
	}
	if ev.ActorID == "" {
		ev.ActorID = ActorUnresolved
		if a := ev.Actor; a != nil && !a.Unresolved {
			if a.PrincipalID != "" {
				ev.ActorID = a.PrincipalID
			} else if a.ID != "" {
				ev.ActorID = a.ID
			}
		}
	}
	return ev
}

// validate checks an event whose defaults are filled in; an empty ID is allowed (Append
// generates one).
func validate(ev Event, installationID string) error {
	if installationID == "" {
		return invalid("installationId", "is not configured on the appender")
	}
	if ev.InstallationID != installationID {
		return invalid("installationId", "does not match this installation")
	}
	if ev.ID != "" && !auditIDPattern.MatchString(ev.ID) {
		return invalid("id", "must be aud_ followed by a lowercase UUIDv4")
	}
	switch ev.Kind {
	case KindBootstrap, KindMutation, KindAuthorizationDenial, KindAccess:
	default:
		return invalid("kind", "must be bootstrap, mutation, authorization_denial or access")
	}
	switch ev.Outcome {
	case OutcomeSuccess, OutcomeDenied, OutcomeFailure:
	default:
		return invalid("outcome", "must be success, denied or failure")
	}
	if ev.Action == "" || utf8.RuneCountInString(ev.Action) > maxActionLength {
		return invalid("action", "must be 1 to 200 characters")
	}
	if ev.Resource.Kind == "" {
		return invalid("resource.kind", "must not be empty")
	}
	if ev.Resource.ID == "" {
		return invalid("resource.id", "must not be empty")
	}
	if ev.NamespaceID != nil && *ev.NamespaceID == "" {
		return invalid("namespaceId", "must not be empty when set")
	}
	if !sameNamespace(ev.NamespaceID, ev.Resource.NamespaceID) {
		return invalid("resource.namespaceId", "must equal the event namespaceId")
	}
	if ev.Actor != nil {
		switch ev.Actor.Kind {
		case "", ActorKindPrincipal, ActorKindServicePrincipal:
		default:
			return invalid("actor.kind", "must be principal or service_principal")
		}
	}
	if ev.ReasonCode != "" && !reasonCodePattern.MatchString(ev.ReasonCode) {
		return invalid("reasonCode", "must be UPPER_SNAKE of at most 64 characters")
	}
	if _, reserved := ev.Details[MetadataKey]; reserved {
		return invalid("details", "must not use the reserved key "+MetadataKey)
	}
	return nil
}

func sameNamespace(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
