package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientNamesWhereIdsAreTaken: Namespaces, Agents, Secrets and Roles are addressed by name as
// well as by id; an unknown name and an ambiguous one are errors, the latter listing the
// candidates.
func TestClientNamesWhereIdsAreTaken(t *testing.T) {
	t.Parallel()
	api := startSimulatedStack(t)
	created := api.occ(nil, "namespace", "create", "team-n", "--wait", "-o", "name")
	// With -o name the progress goes to stderr and stdout holds the id only.
	if created.code != 0 || !strings.Contains(created.stderr, "]  ready\n") {
		t.Fatalf("namespace create --wait: %+v", created)
	}
	nsID := strings.TrimSpace(created.stdout)
	if got := strings.TrimSpace(mustSucceed(t, api.occ(nil, "namespace", "get", "team-n", "-o", "name"), "namespace get by name").stdout); got != nsID {
		t.Fatalf("namespace get team-n: %q, want %q", got, nsID)
	}
	ns := map[string]string{"OCC_NAMESPACE": "team-n"}
	cfg := strings.TrimSpace(mustSucceed(t, api.occIn(ns, `{"kind":"agent","values":{"agents":{}}}`, "configuration", "create", "-f", "-", "-o", "name"),
		"configuration create").stdout)
	secret := strings.TrimSpace(mustSucceed(t, api.occ(ns, "secret", "create", "openai", "--from-literal", "sk-test-1234", "-o", "name"), "secret").stdout)
	created = mustSucceed(t, api.occ(ns, "agent", "create", "tour", "--configuration", cfg, "--mode", "embedded", "--auth", "runtime", "-o", "json"), "agent create")
	if jsonField(t, created.stdout, "name") != "tour" || jsonField(t, created.stdout, "namespaceId") != nsID {
		t.Fatalf("agent create: %s", created.stdout)
	}
	// --secret takes a name and implies api_key.
	var keyed struct {
		HarnessAuth struct {
			Method string
			Source struct{ Kind, NamespaceID, ID string }
		}
	}
	raw := mustSucceed(t, api.occ(ns, "agent", "create", "keyed", "--configuration", cfg, "--secret", "openai", "-o", "json"), "agent create --secret").stdout
	if err := json.Unmarshal([]byte(raw), &keyed); err != nil || keyed.HarnessAuth.Method != "api_key" || keyed.HarnessAuth.Source.ID != secret ||
		keyed.HarnessAuth.Source.Kind != "secret" || keyed.HarnessAuth.Source.NamespaceID != nsID {
		t.Fatalf("harnessAuth from --secret: %s", raw)
	}
	if r := mustSucceed(t, api.occ(ns, "agent", "list", "-o", "wide"), "agent list -o wide"); !strings.Contains(r.stdout, "HARNESS AUTH") ||
		!strings.Contains(r.stdout, "api_key (secret "+secret+")") {
		t.Fatalf("wide: %s", r.stdout)
	}
	mustSucceed(t, api.occ(ns, "agent", "deploy", "tour", "--wait"), "agent deploy by name")
	revisions := mustSucceed(t, api.occ(ns, "agent", "revisions", "tour"), "agent revisions by name").stdout
	if !strings.Contains(revisions, "succeeded") || !strings.HasPrefix(strings.Split(revisions, "\n")[1], "*") {
		t.Fatalf("revisions: %s", revisions)
	}
	if r := mustSucceed(t, api.occ(ns, "agent", "deployment-status", "tour", "-o", "name"), "deployment-status -o name"); !strings.HasPrefix(r.stdout, "rev_") {
		t.Fatalf("deployment-status -o name: %q", r.stdout)
	}
	mustSucceed(t, api.occ(ns, "secret", "get", "openai"), "secret get by name")
	// The id of the Namespace works as well as its name, from the flag too.
	mustSucceed(t, api.occ(nil, "agent", "get", "tour", "--namespace", nsID), "agent get --namespace ID")
	mustSucceed(t, api.occ(nil, "agent", "get", "tour", "-n", "team-n"), "agent get -n NAME")

	if r := api.occ(ns, "agent", "get", "nope"); r.code != 1 || !strings.Contains(r.stderr, "Error: no Agent named nope in the Namespace team-n ("+nsID+"). List them with: occ agent list") {
		t.Fatalf("unknown name: %+v", r)
	}
	if r := api.occ(map[string]string{"OCC_NAMESPACE": "team-nowhere"}, "agent", "list"); r.code != 1 || !strings.Contains(r.stderr, "no Namespace named team-nowhere") {
		t.Fatalf("unknown Namespace: %+v", r)
	}
	// Two Roles may share a name: the name is then ambiguous and the error lists both.
	role := filepath.Join(t.TempDir(), "role.yaml")
	if err := os.WriteFile(role, []byte("name: readers\npermissions: [{action: read, resourceKind: namespace}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first := strings.TrimSpace(mustSucceed(t, api.occ(ns, "iam", "role", "create", "-f", role, "-o", "name"), "role").stdout)
	second := strings.TrimSpace(mustSucceed(t, api.occ(ns, "iam", "role", "create", "-f", role, "-o", "name"), "role again").stdout)
	r := api.occ(ns, "iam", "role", "get", "readers")
	if r.code != 1 || !strings.Contains(r.stderr, "the name readers is ambiguous: 2 Roles have it (") ||
		!strings.Contains(r.stderr, first) || !strings.Contains(r.stderr, second) || !strings.Contains(r.stderr, "Pass the id instead.") {
		t.Fatalf("ambiguous: %+v", r)
	}
	mustSucceed(t, api.occ(ns, "iam", "role", "get", first), "role by id")
}

// TestClientOutputFormats: -o name prints ids, --no-headers drops the header, -o wide adds
// columns, --all-namespaces lists every Namespace.
func TestClientOutputFormats(t *testing.T) {
	t.Parallel()
	api := startClientAPI(t)
	if r := mustSucceed(t, api.occ(nil, "namespace", "list", "-o", "name"), "-o name"); r.stdout != api.defaultNS+"\n" {
		t.Fatalf("-o name: %q", r.stdout)
	}
	if r := mustSucceed(t, api.occ(nil, "namespace", "list", "--no-headers"), "--no-headers"); strings.Contains(r.stdout, "NAME") ||
		!strings.HasPrefix(r.stdout, api.defaultNS+"   default") {
		t.Fatalf("--no-headers: %q", r.stdout)
	}
	id := strings.TrimSpace(mustSucceed(t, api.occ(nil, "namespace", "create", "team-o", "-o", "name"), "create -o name").stdout)
	if !strings.HasPrefix(id, "ns_") {
		t.Fatalf("create -o name: %q", id)
	}
	mustSucceed(t, api.occ(nil, "iam", "service-principal", "create", "-n", "team-o"), "sp create")
	all := mustSucceed(t, api.occ(nil, "iam", "service-principal", "list", "-A"), "-A").stdout
	if lines := strings.Split(strings.TrimSpace(all), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAMESPACE ") ||
		!strings.HasPrefix(lines[1], "team-o ") {
		t.Fatalf("-A: %q", all)
	}
	if r := mustSucceed(t, api.occ(nil, "namespace", "delete", "team-o", "--yes", "-o", "name"), "delete -o name"); r.stdout != id+"\n" {
		t.Fatalf("delete -o name: %q", r.stdout)
	}
	if r := api.occ(nil, "namespace", "list", "-o", "xml"); r.code != 2 || !strings.Contains(r.stderr, "table, wide, name, json or yaml") {
		t.Fatalf("-o xml: %+v", r)
	}
}

// TestClientConfirmation: deleting a Namespace and revoking the key in use ask first; no answer
// or anything but yes does nothing; --yes skips the question.
func TestClientConfirmation(t *testing.T) {
	t.Parallel()
	api := startClientAPI(t)
	id := strings.TrimSpace(mustSucceed(t, api.occ(nil, "namespace", "create", "team-c", "-o", "name"), "create").stdout)
	for _, answer := range []string{"", "n\n", "whatever\n"} {
		r := api.occIn(nil, answer, "namespace", "delete", "team-c")
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "Delete the Namespace team-c ("+id+")? ") ||
			!strings.Contains(r.stderr, "[y/N]") || !strings.Contains(r.stderr, "Not confirmed; nothing was done.") {
			t.Fatalf("answer %q: %+v", answer, r)
		}
	}
	if got := jsonField(t, mustSucceed(t, api.occ(nil, "namespace", "get", "team-c", "-o", "json"), "get").stdout, "status"); got != "provisioning" {
		t.Fatalf("an unconfirmed delete changed the Namespace: %s", got)
	}
	if r := api.occIn(nil, "y\n", "namespace", "delete", "team-c"); r.code != 0 || r.stdout != "Namespace team-c ("+id+") is being deleted.\n" {
		t.Fatalf("yes: %+v", r)
	}

	// Another key is revoked without a question; the key in use only after one.
	sp := jsonField(t, mustSucceed(t, api.occ(map[string]string{"OCC_NAMESPACE": "default"}, "iam", "service-principal", "create", "-o", "json"), "sp").stdout, "id")
	other := filepath.Join(t.TempDir(), "other.json")
	mustSucceed(t, api.occ(map[string]string{"OCC_NAMESPACE": "default"}, "service-key", "create", "--service-principal", sp, "--name", "other", "--out", other), "key")
	var doc struct{ Data struct{ ID string } }
	raw, _ := os.ReadFile(other)
	_ = json.Unmarshal(raw, &doc)
	if r := api.occ(nil, "service-key", "revoke", doc.Data.ID); r.code != 0 || r.stderr != "" {
		t.Fatalf("revoke another key: %+v", r)
	}
	raw, _ = os.ReadFile(api.keyFile)
	_ = json.Unmarshal(raw, &doc)
	if r := api.occ(nil, "service-key", "revoke", doc.Data.ID); r.code != 1 || !strings.Contains(r.stderr, "It is the key this command uses ("+api.keyFile+")") {
		t.Fatalf("revoke the key in use: %+v", r)
	}
	mustSucceed(t, api.occ(nil, "namespace", "list"), "the key still works")
	if r := api.occIn(nil, "yes\n", "service-key", "revoke", doc.Data.ID); r.code != 0 {
		t.Fatalf("revoke confirmed: %+v", r)
	}
	if r := api.occ(nil, "namespace", "list"); r.code != 1 || !strings.Contains(r.stderr, "Hint: the service key "+doc.Data.ID+" in "+api.keyFile+" was refused") {
		t.Fatalf("after the revocation: %+v", r)
	}
}
