package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// hash is the lowercase hex SHA-256 of s truncated to n characters.
func hash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// Object names. They derive from ids only, never from
// display names, so no tenant chooses another tenant's object name.

// managedNamespaceName is the Kubernetes namespace of an OCC Namespace the driver creates.
func managedNamespaceName(namespaceID string) string { return "oce-" + hash(namespaceID, 15) }

func agentHash(agentID string) string       { return hash(agentID, 12) }
func revisionHash(revisionID string) string { return hash(revisionID, 12) }

// gatewayName names the gateway Deployment and Service of an Agent (embedded: the Agent's only
// workload).
func gatewayName(agentID string) string { return "gateway-" + agentHash(agentID) }

// agentName names the Harness ServiceAccount and Service (and the embedded gateway's
// ServiceAccount).
func agentName(agentID string) string { return "agent-" + agentHash(agentID) }

// harnessDeploymentName names the dedicated Harness Deployment of one revision.
func harnessDeploymentName(agentID, revisionID string) string {
	return agentName(agentID) + "-rev-" + revisionHash(revisionID)
}

// snapshotConfigMapName names the immutable gateway configuration snapshot of one revision.
func snapshotConfigMapName(agentID, revisionID string) string {
	return gatewayName(agentID) + "-rev-" + revisionHash(revisionID)
}

// gatewayStateClaimName names the gateway's private-state PVC.
func gatewayStateClaimName(agentID string) string { return "gateway-state-" + agentHash(agentID) }

// workspaceClaimName names the dedicated Harness workspace PVC.
func workspaceClaimName(agentID string) string { return "workspace-" + agentHash(agentID) }

// agentPolicyName names an Agent NetworkPolicy (base is e.g. "allow-agent-runtime").
func agentPolicyName(base, agentID string) string { return base + "-" + agentHash(agentID) }

// configurationConfigMapName names the ConfigMap of a Configuration:
// cfg-<slug of the id without "cfg_", at most 46>-<sha256(id)[:12]>.
func configurationConfigMapName(configurationID string) string {
	return "cfg-" + slug(strings.TrimPrefix(configurationID, "cfg_"), 46) + "-" + hash(configurationID, 12)
}

// secretObjectName names the Kubernetes Secret holding one OCC Secret's value;
// nonce makes a re-created Secret a new object.
func secretObjectName(namespaceID, secretID, nonce string) string {
	return "secret-" + hash(namespaceID, 12) + "-" + hash(secretID, 12) + "-" + hash(nonce, 12)
}

// slug keeps [a-z0-9-] of s (lowercased, other runes become '-'), trims dashes and cuts to n.
func slug(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
		if b.Len() >= n {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}
