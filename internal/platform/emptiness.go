package platform

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// kindLabels name the kinds that keep a Namespace from being deleted, in the order they are listed.
var kindLabels = []struct{ kind, label string }{
	{"agent", "Agents"}, {"configuration", "Configurations"}, {"service_account", "ServiceAccounts"}, {"secret", "Secrets"}, {"preset", "Presets"},
	{"agent_provisioning", "queued provisionings"},
}

// NamespaceRemainsMessage lists what keeps a Namespace from being deleted: every remaining kind
// first, then as many ids as fit the 256 characters of an error message (never names).
func NamespaceRemainsMessage(remaining []ResourceRef) string {
	present := map[string]bool{}
	for _, r := range remaining {
		present[r.Kind] = true
	}
	var labels []string
	for _, k := range kindLabels {
		if present[k.kind] {
			labels = append(labels, k.label)
		}
	}
	var b strings.Builder
	b.WriteString("The Namespace still holds " + joinLabels(labels) + "; delete them first:")
	for i, r := range remaining {
		item := fmt.Sprintf(" %s %s", r.Kind, r.ID)
		if i > 0 {
			item = "," + item
		}
		if utf8.RuneCountInString(b.String())+utf8.RuneCountInString(item)+3 > 256 {
			b.WriteString(", …")
			return b.String()
		}
		b.WriteString(item)
	}
	b.WriteString(".")
	return b.String()
}

func joinLabels(labels []string) string {
	switch len(labels) {
	case 0:
		return "resources"
	case 1:
		return labels[0]
	}
	return strings.Join(labels[:len(labels)-1], ", ") + " and " + labels[len(labels)-1]
}
