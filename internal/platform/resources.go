package platform

import (
	"regexp"
	"time"
	"unicode/utf8"
)

// TimeLayout is the API's timestamp format: UTC with exactly milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t in TimeLayout (UTC, truncated to milliseconds).
func FormatTime(t time.Time) string { return t.UTC().Truncate(time.Millisecond).Format(TimeLayout) }

// ParseTime parses a TimeLayout timestamp; ok is false for anything else, including impossible
// dates.
func ParseTime(s string) (time.Time, bool) {
	if !timestampPattern.MatchString(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(TimeLayout, s)
	return t, err == nil
}

// TimestampPattern is the shape of an API timestamp (ECMA-262 and RE2 compatible).
const TimestampPattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{3}Z$`

var timestampPattern = regexp.MustCompile(TimestampPattern)

// IDPattern returns the exact pattern of <prefix>_<lowercase uuidv4> identifiers.
func IDPattern(prefix string) string {
	return `^` + prefix + `_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`
}

// OpaqueIDPattern is the rule of opaque identifiers (IAM Roles, bindings, service principals and
// keys in URLs): 1..200 characters without whitespace or control characters. The database applies
// the same rule (occ.is_opaque_id).
const OpaqueIDPattern = `^[^\x00-\x20\x7f-\x9f]{1,200}$`

var opaqueID = regexp.MustCompile(OpaqueIDPattern)

// ValidOpaqueID reports whether s is a well-formed opaque identifier.
func ValidOpaqueID(s string) bool { return utf8.ValidString(s) && opaqueID.MatchString(s) }

// DNSLabelPattern is a Kubernetes DNS-1123 label (1..63 characters), the rule of existingNamespace.
const DNSLabelPattern = `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`

// Namespace lifecycle states. A tombstoned Namespace keeps status deleting and is
// never returned.
const (
	NamespaceProvisioning = "provisioning"
	NamespaceReady        = "ready"
	NamespaceFailed       = "failed"
	NamespaceDeleting     = "deleting"
)

// Namespace targets of controller work.
const (
	NamespaceTargetReady   = "ready"
	NamespaceTargetDeleted = "deleted"
)

// NamespaceWorkKey is the idempotency key of a Namespace's lifecycle work toward target.
func NamespaceWorkKey(namespaceID, target string) string {
	return "namespace:" + namespaceID + ":reconcile:" + target
}

// Namespace is the API projection of a Namespace.
type Namespace struct {
	ID                string  `json:"id"`
	Name              string  `json:"name"`
	ExistingNamespace *string `json:"existingNamespace,omitempty"`
	Status            string  `json:"status"`
	CreatedAt         string  `json:"createdAt"`
}

// Installation is the API projection of the singleton Installation.
type Installation struct {
	ID           string                    `json:"id"`
	Name         string                    `json:"name"`
	CreatedAt    string                    `json:"createdAt"`
	Capabilities *InstallationCapabilities `json:"capabilities,omitempty"`
}

// InstallationCapabilities are what the Installation's selected Drivers offer. agentProvisioning
// is upstream's (its plugin and native-worker members are absent: those features are not
// implemented); harnessAuth, runtime and presets are ours.
type InstallationCapabilities struct {
	// AgentProvisioning is absent when no execution mode can be deployed.
	AgentProvisioning *AgentProvisioningCapabilities `json:"agentProvisioning,omitempty"`
	// HarnessAuth lists, per execution mode, the Harness authentication methods the Compute
	// Driver admits at deploy.
	HarnessAuth map[string][]string `json:"harnessAuth"`
	Runtime     RuntimeCapabilities `json:"runtime"`
	Presets     bool                `json:"presets"`
}

// AgentProvisioningCapabilities are the execution modes a new Agent can be deployed in.
type AgentProvisioningCapabilities struct {
	ExecutionModes []string `json:"executionModes"`
}

// RuntimeCapabilities says which runtime views of deployed revisions the Compute Driver offers.
type RuntimeCapabilities struct {
	Status      bool `json:"status"`
	Logs        bool `json:"logs"`
	Diagnostics bool `json:"diagnostics"`
	Images      bool `json:"images"`
}

// ResourceRef names one Namespace-owned resource, for messages such as NAMESPACE_NOT_EMPTY.
type ResourceRef struct {
	Kind string
	ID   string
}
