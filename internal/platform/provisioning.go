package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
)

// ProvisioningRequest is what a guided provisioning request stores for the worker's steps: the
// Agent's draft and the Configuration's metadata (its values are staged apart, see
// docs/architecture.md decision 36). The API writes it once it validated the body the way the
// Configuration and Agent create routes do; the worker decodes it strictly.
type ProvisioningRequest struct {
	Name              string                   `json:"name"`
	ExecutionMode     string                   `json:"executionMode"`
	HarnessAuth       *HarnessAuth             `json:"harnessAuth,omitempty"`
	ConfigurationKind string                   `json:"configurationKind"`
	SecretBindings    map[string]SecretBinding `json:"secretBindings,omitempty"`
	// SecretBindingsSet tells an explicit {} from an omitted member (Configuration create stores
	// them differently).
	SecretBindingsSet bool `json:"secretBindingsSet,omitempty"`
}

// DecodeProvisioningRequest reads a stored request strictly: a worker never runs steps for a
// request it does not fully understand (one written by a newer API).
func DecodeProvisioningRequest(raw []byte) (ProvisioningRequest, error) {
	var r ProvisioningRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return ProvisioningRequest{}, err
	}
	if r.Name == "" || r.ExecutionMode == "" || r.ConfigurationKind == "" {
		return ProvisioningRequest{}, errors.New("provisioning request: missing required fields")
	}
	return r, nil
}

// ConsumedSecretIDs lists, sorted and once each, the Secrets the first revision will consume: the
// bound ones and a Secret Harness authentication source.
func (r ProvisioningRequest) ConsumedSecretIDs() []string {
	seen := map[string]bool{}
	var ids []string
	for _, b := range r.SecretBindings {
		if !seen[b.Source.ID] {
			seen[b.Source.ID] = true
			ids = append(ids, b.Source.ID)
		}
	}
	if r.HarnessAuth != nil && r.HarnessAuth.Source != nil && r.HarnessAuth.Source.Kind == RefKindSecret && !seen[r.HarnessAuth.Source.ID] {
		ids = append(ids, r.HarnessAuth.Source.ID)
	}
	sort.Strings(ids)
	return ids
}

// ProvisioningWorkKey is the work item of one run of a provisioning record.
func ProvisioningWorkKey(workID string, run int) string {
	return "agent_provisioning:" + workID + ":" + strconv.Itoa(run)
}

// ProvisioningWorkID returns the record id a provisioning work key names.
func ProvisioningWorkID(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "agent_provisioning:")
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ":")
	return id, ok && ValidID(PrefixProvisioning, id)
}

// Provisioning step failures recorded on the record (besides the worker's shared
// AUTHORIZATION_DENIED, ACTOR_REVOKED and the API's own codes).
const (
	CodeProvisioningSucceeded = "PROVISIONING_SUCCEEDED"
	// CodeProvisioningSuperseded: the work item found its record no longer waiting for it.
	CodeProvisioningSuperseded = "PROVISIONING_SUPERSEDED"
	CodeProvisioningInvalid    = "INVALID_PROVISIONING_REQUEST"
)
