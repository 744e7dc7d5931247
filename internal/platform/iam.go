package platform

import (
	"fmt"
	"strconv"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/problem"
)

// NamespaceRoleKinds are the resource kinds a Namespace Role may name: no
// installation.
var NamespaceRoleKinds = []string{
	iam.KindNamespace, iam.KindAgent, iam.KindAgentRevision, iam.KindConfiguration,
	iam.KindCredentialSource, iam.KindPreset, iam.KindSecret, iam.KindServiceAccount,
}

// BindingTargetKinds are the resource kinds a Namespace AccessBinding may target.
var BindingTargetKinds = NamespaceRoleKinds

// ValidateNamespaceRolePermissions applies the Namespace Role rules beyond the schema: every pair
// is in the supported matrix, `namespace` only with `read`, and no pair twice. Each problem names
// the offending list item.
func ValidateNamespaceRolePermissions(perms []iam.Permission) []problem.Detail {
	var details []problem.Detail
	seen := make(map[iam.Permission]bool, len(perms))
	for i, p := range perms {
		path := "/permissions/" + strconv.Itoa(i)
		switch {
		case !iam.Supported(p.Action, p.ResourceKind):
			details = append(details, problem.Detail{Path: path, Code: problem.DetailInvalidValue})
		case p.ResourceKind == iam.KindNamespace && p.Action != iam.ActionRead:
			details = append(details, problem.Detail{Path: path, Code: problem.DetailInvalidValue})
		case seen[p]:
			details = append(details, problem.Detail{Path: path, Code: problem.DetailInvalidValue})
		}
		seen[p] = true
	}
	return details
}

// NamespaceRoleProblem describes the first rule ValidateNamespaceRolePermissions found broken, as a
// client message naming the pair.
func NamespaceRoleProblem(perms []iam.Permission) string {
	seen := make(map[iam.Permission]bool, len(perms))
	for _, p := range perms {
		switch {
		case !iam.Supported(p.Action, p.ResourceKind):
			return fmt.Sprintf("The permission %s:%s is not supported.", p.ResourceKind, p.Action)
		case p.ResourceKind == iam.KindNamespace && p.Action != iam.ActionRead:
			return fmt.Sprintf("A Namespace Role may only grant namespace:read, not namespace:%s.", p.Action)
		case seen[p]:
			return fmt.Sprintf("The permission %s:%s is listed twice.", p.ResourceKind, p.Action)
		}
		seen[p] = true
	}
	return ""
}

// SortPermissions returns perms in the order of the supported matrix (kind, then action).
func SortPermissions(perms []iam.Permission) []iam.Permission {
	order := map[iam.Permission]int{}
	for i, p := range iam.SupportedPermissions() {
		order[p] = i
	}
	out := append([]iam.Permission(nil), perms...)
	rank := func(p iam.Permission) int {
		if r, ok := order[p]; ok {
			return r
		}
		return len(order)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && rank(out[j]) < rank(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
