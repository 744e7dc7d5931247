package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openclaw/occ/internal/driver"
)

// Harness identifiers and modes. Each Harness is pinned to one descriptor version per
// build: a revision records the descriptor it was admitted with, and a worker refuses a revision
// whose descriptor it does not run (HARNESS_DESCRIPTOR_MISMATCH).
const (
	HarnessOpenClaw = "openclaw"
	HarnessCodex    = "codex"

	ExecutionEmbedded  = "embedded"
	ExecutionDedicated = "dedicated"
)

// HarnessDescriptor is the pinned {id, version, mode} snapshotted into a revision.
type HarnessDescriptor struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Mode    string `json:"mode"`
}

// PinnedHarnesses are the descriptors this build admits and runs: embedded OpenClaw and dedicated
// Codex.
var PinnedHarnesses = map[string]HarnessDescriptor{
	ExecutionEmbedded:  {ID: HarnessOpenClaw, Version: "2026.11.0", Mode: ExecutionEmbedded},
	ExecutionDedicated: {ID: HarnessCodex, Version: "0.63.0", Mode: ExecutionDedicated},
}

// Harness authentication methods in scope.
const (
	HarnessAuthRuntime  = "runtime"
	HarnessAuthAPIKey   = "api_key"
	HarnessAuthCodexPAT = "codex_pat"
)

// MaxWorkspaceFileBytes bounds one initial workspace file in UTF-8 bytes (upstream's live-file
// limit, 16 KiB).
const MaxWorkspaceFileBytes = 16 << 10

// WorkspaceFileNames are the names initialWorkspaceFiles accepts.
var WorkspaceFileNames = driver.WorkspaceFileNames

// Reference kinds.
const (
	RefKindSecret         = "secret"
	RefKindServiceAccount = "service_account"
)

// Ref is a typed reference to a Namespace resource: {kind, namespaceId, id}. Revisions carry
// references only, never values.
type Ref struct {
	Kind        string `json:"kind"`
	NamespaceID string `json:"namespaceId"`
	ID          string `json:"id"`
}

// HarnessAuth is the Agent's Harness authentication binding: {method:"runtime"}, or api_key /
// codex_pat with a Secret (codex_pat also a ServiceAccount) source.
type HarnessAuth struct {
	Method string `json:"method"`
	Source *Ref   `json:"source,omitempty"`
}

// SecretBinding projects one Secret into the workload environment under its map key.
type SecretBinding struct {
	Source   Ref            `json:"source"`
	Delivery SecretDelivery `json:"delivery"`
}

// SecretDelivery is how a bound Secret reaches the workload; only {type:"env"} exists.
type SecretDelivery struct {
	Type string `json:"type"`
}

// ComputeSelection names the Compute Driver a revision is pinned to.
type ComputeSelection struct {
	ID             string `json:"id"`
	Implementation string `json:"implementation"`
}

// RevisionSpec is the immutable snapshot admitted by deploy and stored in
// occ.agent_revisions.admitted_spec. The worker reads only this, never the
// Agent's editable draft.
type RevisionSpec struct {
	ConfigurationID         string                   `json:"configurationId"`
	ConfigurationKind       string                   `json:"configurationKind"`
	ConfigurationGeneration int64                    `json:"configurationGeneration"`
	Configuration           json.RawMessage          `json:"configuration"` // the native document; SecretRefs unresolved
	Harness                 HarnessDescriptor        `json:"harness"`
	Compute                 ComputeSelection         `json:"compute"`
	ServicePrincipalID      string                   `json:"servicePrincipalId"`
	BackendID               *string                  `json:"backendId"`
	HarnessAuth             HarnessAuth              `json:"harnessAuth"`
	SecretDriverID          string                   `json:"secretDriverId,omitempty"`
	SecretBindings          map[string]SecretBinding `json:"secretBindings,omitempty"`
	// InitialWorkspaceFiles are the files staged with the Agent at creation; the first revision
	// takes them (and the staging row goes), later revisions have none. Revision reads never show
	// them.
	InitialWorkspaceFiles map[string]string `json:"initialWorkspaceFiles,omitempty"`
}

// SecretRefs lists every Secret the revision consumes: the harness auth source first, then the
// bindings (in map order; callers that need a stable order sort).
func (s RevisionSpec) SecretRefs() []Ref {
	var out []Ref
	if s.HarnessAuth.Source != nil && s.HarnessAuth.Source.Kind == RefKindSecret {
		out = append(out, *s.HarnessAuth.Source)
	}
	for _, b := range s.SecretBindings {
		out = append(out, b.Source)
	}
	return out
}

// RevisionRef names one admitted revision row.
type RevisionRef struct {
	ID, NamespaceID, AgentID string
	Number                   int64
	AdmittedAt               time.Time
}

// DriverRevision is the snapshot a Compute Driver realizes: revision ref admitted with spec s.
func (s RevisionSpec) DriverRevision(ref RevisionRef) driver.Revision {
	return driver.Revision{
		ID: ref.ID, NamespaceID: ref.NamespaceID, AgentID: ref.AgentID, Number: ref.Number,
		ExecutionMode:      s.Harness.Mode,
		Harness:            driver.Harness{ID: s.Harness.ID, Version: s.Harness.Version, Mode: s.Harness.Mode},
		Compute:            driver.ComputeRef{ID: s.Compute.ID, Implementation: s.Compute.Implementation},
		ServicePrincipalID: s.ServicePrincipalID, HarnessAuthMethod: s.HarnessAuth.Method,
		Spec: s.Configuration, CreatedAt: ref.AdmittedAt, InitialWorkspaceFiles: s.InitialWorkspaceFiles,
	}
}

// DecodeRevisionSpec reads an admitted_spec document strictly: unknown fields are an error, so a
// worker never acts on a snapshot it does not fully understand.
func DecodeRevisionSpec(raw []byte) (RevisionSpec, error) {
	var s RevisionSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return RevisionSpec{}, fmt.Errorf("revision spec: %w", err)
	}
	if s.ConfigurationID == "" || s.Harness.ID == "" || s.Compute.ID == "" || s.ServicePrincipalID == "" || s.HarnessAuth.Method == "" {
		return RevisionSpec{}, errors.New("revision spec: missing required fields")
	}
	return s, nil
}

// WorkKeys of Agent and revision work.
func RevisionWorkKey(revisionID string) string { return "agent_revision:" + revisionID + ":reconcile" }

// AgentDeleteWorkKey is the (deduplicating) deletion key of an Agent.
func AgentDeleteWorkKey(agentID string) string { return "agent:" + agentID + ":reconcile:deleted" }

// AgentStopWorkKey is the key of one stop request (a new operation id per request).
func AgentStopWorkKey(agentID, operationID string) string {
	return "agent:" + agentID + ":reconcile:stopped:" + operationID
}
