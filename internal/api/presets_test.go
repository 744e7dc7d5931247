package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/api"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/preset"
)

func TestPresetCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.createNamespace("presets-crud")
	base := "/namespaces/" + ns + "/presets"
	template := map[string]any{
		"variables": map[string]any{
			"name":   map[string]any{"type": "string", "description": "Agent name"},
			"apiKey": map[string]any{"type": "password"},
		},
		"agent": map[string]any{"name": "{{ vars.name }}", "executionMode": "dedicated",
			"harnessAuth": map[string]any{"method": "api_key", "secret": "{{ vars.apiKey }}"}},
		"configuration": map[string]any{
			"values":         map[string]any{"agents": map[string]any{"defaults": map[string]any{"model": "codex/gpt-5"}}},
			"secretBindings": map[string]any{"SLACK_TOKEN": map[string]any{"source": map[string]any{"kind": "secret", "id": "sec_x"}}},
		},
	}
	created := e.expect(e.do(req{method: "POST", path: base, key: e.adminKey, body: map[string]any{"name": "codex", "template": template}}), 201).data()
	id, _ := created["id"].(string)
	if !strings.HasPrefix(id, "pre_") || created["namespaceId"] != ns || created["name"] != "codex" {
		t.Fatalf("created %v", created)
	}
	// A reference without namespaceId is completed with the path Namespace.
	source := created["template"].(map[string]any)["configuration"].(map[string]any)["secretBindings"].(map[string]any)["SLACK_TOKEN"].(map[string]any)["source"].(map[string]any)
	if source["namespaceId"] != ns {
		t.Fatalf("stored source %v", source)
	}

	e.expect(e.do(req{method: "POST", path: base, key: e.adminKey, body: map[string]any{"name": "codex", "template": map[string]any{}}}), 409)
	got := e.expect(e.do(req{method: "GET", path: base + "/" + id, key: e.adminKey}), 200).data()
	if mustJSON(got) != mustJSON(created) {
		t.Fatalf("read %v, created %v", got, created)
	}
	list := e.expect(e.do(req{method: "GET", path: base, key: e.adminKey}), 200).list()
	if len(list) != 1 {
		t.Fatalf("list %v", list)
	}

	// PATCH: a name alone keeps the template; a template replaces it whole.
	renamed := e.expect(e.do(req{method: "PATCH", path: base + "/" + id, key: e.adminKey, body: map[string]any{"name": "codex-2"}}), 200).data()
	if renamed["name"] != "codex-2" || mustJSON(renamed["template"]) != mustJSON(created["template"]) {
		t.Fatalf("renamed %v", renamed)
	}
	replaced := e.expect(e.do(req{method: "PATCH", path: base + "/" + id, key: e.adminKey, body: map[string]any{"template": map[string]any{}}}), 200).data()
	if replaced["name"] != "codex-2" || mustJSON(replaced["template"]) != "{}" {
		t.Fatalf("replaced %v", replaced)
	}

	// Refusals name the template path, never the value.
	const credential = "sk-live-never-echo-this"
	for _, c := range []struct {
		name     string
		template map[string]any
		path     string
	}{
		{"credential literal", map[string]any{"agent": map[string]any{"harnessAuth": map[string]any{"method": "api_key", "secret": credential}}},
			"/template/agent/harnessAuth/secret"},
		{"default of the wrong type", map[string]any{"variables": map[string]any{"n": map[string]any{"type": "number", "default": credential}}},
			"/template/variables/n/default"},
		{"cross-Namespace reference", map[string]any{"agent": map[string]any{"harnessAuth": map[string]any{"method": "api_key",
			"source": map[string]any{"kind": "secret", "namespaceId": e.defaultNS, "id": "sec_x"}}}},
			"/template/agent/harnessAuth/source/namespaceId"},
		{"password outside the secret", map[string]any{"variables": map[string]any{"p": map[string]any{"type": "password"}},
			"configuration": map[string]any{"values": map[string]any{"k": "{{ vars.p }}"}}}, "/template/configuration/values/k"},
	} {
		r := e.do(req{method: "POST", path: base, key: e.adminKey, body: map[string]any{"name": "bad", "template": c.template}})
		if r.status != 400 || r.errCode() != "INVALID_REQUEST" || len(r.details()) != 1 || r.details()[0]["path"] != c.path {
			t.Errorf("%s: %d %s", c.name, r.status, r.raw)
		}
		if strings.Contains(string(r.raw), credential) {
			t.Errorf("%s: the answer echoes the value: %s", c.name, r.raw)
		}
		if msg, _ := r.doc["error"].(map[string]any)["message"].(string); !strings.HasPrefix(msg, "Preset ") {
			t.Errorf("%s: message %q does not name the template path", c.name, msg)
		}
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE details::text LIKE '%vars.%'`); n != 0 {
		t.Fatalf("%d audit events carry a template", n)
	}

	// A Preset blocks the deletion of its Namespace until it is deleted.
	r := e.do(req{method: "DELETE", path: "/namespaces/" + ns, key: e.adminKey})
	if r.status != 409 || r.errCode() != "NAMESPACE_NOT_EMPTY" || !strings.Contains(string(r.raw), "Presets") || !strings.Contains(string(r.raw), id) {
		t.Fatalf("namespace delete: %d %s", r.status, r.raw)
	}
	e.expect(e.do(req{method: "DELETE", path: base + "/" + id, key: e.adminKey}), 204)
	e.expect(e.do(req{method: "GET", path: base + "/" + id, key: e.adminKey}), 404)
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + ns, key: e.adminKey}), 202)
	e.expect(e.do(req{method: "POST", path: base, key: e.adminKey, body: map[string]any{"name": "late", "template": map[string]any{}}}), 409)
}

// withPresets configures Installation default Presets.
func withPresets(defs ...preset.Definition) envOption {
	return func(_ *env, cfg *api.Config) { cfg.Presets = defs }
}

func presetNames(t *testing.T, e *env, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, item := range e.expect(e.do(req{method: "GET", path: "/namespaces/" + ns + "/presets", key: e.adminKey}), 200).list() {
		p := item.(map[string]any)
		out[p["name"].(string)] = p["id"].(string)
	}
	return out
}

func TestPresetDefaults(t *testing.T) {
	t.Parallel()
	custom := preset.Definition{Name: "team", Template: json.RawMessage(`{"agent": {"executionMode": "embedded",
		"harnessAuth": {"method": "api_key", "source": {"kind": "secret", "id": "sec_team"}}}}`)}
	defaults := append(preset.Bundled(), custom)
	e := newEnv(t, withPresets(defaults...))

	// API start seeded the bootstrap Namespace; its copies hold its own Namespace.
	seeded := presetNames(t, e, e.defaultNS)
	if len(seeded) != 3 || seeded["team"] == "" || seeded["Embedded OpenClaw"] == "" || seeded["Dedicated Codex"] == "" {
		t.Fatalf("seeded %v", seeded)
	}
	team := e.expect(e.do(req{method: "GET", path: "/namespaces/" + e.defaultNS + "/presets/" + seeded["team"], key: e.adminKey}), 200).data()
	if !strings.Contains(mustJSON(team["template"]), `"namespaceId":"`+e.defaultNS+`"`) {
		t.Fatalf("seeded template %v", team["template"])
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1 AND namespace_id = $2`, api.ActionPresetsSeed, e.defaultNS); n != 1 {
		t.Fatalf("%d seed audit events", n)
	}

	// A new Namespace receives them in its create; a creator without preset:create creates nothing.
	ns := e.createNamespace("with-defaults")
	if got := presetNames(t, e, ns); len(got) != 3 {
		t.Fatalf("new Namespace holds %v", got)
	}
	creator := e.newServicePrincipal("")
	e.grant(creator.id, "", "", "", perm(iam.ActionCreate, iam.KindNamespace))
	r := e.do(creator.apply(req{method: "POST", path: "/namespaces", body: map[string]any{"name": "no-presets"}}))
	if r.status != 403 {
		t.Fatalf("creator without preset:create: %d %s", r.status, r.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.namespaces WHERE name = 'no-presets'`); n != 0 {
		t.Fatal("the refused create left a Namespace")
	}

	// Deletion removes unchanged copies; an edited copy blocks it and nothing is removed.
	edited := presetNames(t, e, ns)["team"]
	e.expect(e.do(req{method: "PATCH", path: "/namespaces/" + ns + "/presets/" + edited, key: e.adminKey,
		body: map[string]any{"template": map[string]any{}}}), 200)
	r = e.do(req{method: "DELETE", path: "/namespaces/" + ns, key: e.adminKey})
	if r.status != 409 || r.errCode() != "NAMESPACE_NOT_EMPTY" || !strings.Contains(string(r.raw), edited) {
		t.Fatalf("delete with an edited default: %d %s", r.status, r.raw)
	}
	if got := presetNames(t, e, ns); len(got) != 3 {
		t.Fatalf("the refused deletion removed Presets: %v", got)
	}
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + ns + "/presets/" + edited, key: e.adminKey}), 204)
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + ns, key: e.adminKey}), 202)
	if n := e.count(`SELECT count(*) FROM occ.presets WHERE namespace_id = $1`, ns); n != 0 {
		t.Fatalf("%d default copies outlived the deletion", n)
	}

	// A restart restores a deleted default and keeps a same-name copy as it is.
	e.expect(e.do(req{method: "DELETE", path: "/namespaces/" + e.defaultNS + "/presets/" + seeded["Dedicated Codex"], key: e.adminKey}), 204)
	e.expect(e.do(req{method: "PATCH", path: "/namespaces/" + e.defaultNS + "/presets/" + seeded["team"], key: e.adminKey,
		body: map[string]any{"template": map[string]any{}}}), 200)
	restarted, err := api.New(context.Background(), api.Config{Pool: e.app, ReadPool: e.appRead, IAMDriverID: iamDriverID, Presets: defaults})
	if err != nil {
		t.Fatal(err)
	}
	_ = restarted
	after := presetNames(t, e, e.defaultNS)
	if len(after) != 3 || after["Dedicated Codex"] == seeded["Dedicated Codex"] || after["team"] != seeded["team"] {
		t.Fatalf("after restart %v (before %v)", after, seeded)
	}
	if n := e.count(`SELECT count(*) FROM occ.presets WHERE id = $1 AND template = '{}'::jsonb`, seeded["team"]); n != 1 {
		t.Fatal("the restart overwrote an edited copy")
	}
	// A failed Namespace is skipped.
	failed := e.createNamespace("failed-ns")
	e.exec(`DELETE FROM occ.presets WHERE namespace_id = $1`, failed)
	e.exec(`UPDATE occ.namespaces SET status = 'failed' WHERE id = $1`, failed)
	if _, err := api.New(context.Background(), api.Config{Pool: e.app, ReadPool: e.appRead, IAMDriverID: iamDriverID, Presets: defaults}); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM occ.presets WHERE namespace_id = $1`, failed); n != 0 {
		t.Fatalf("a failed Namespace received %d Presets", n)
	}
}

func TestPresetSeedingNeedsAnAdministrator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Without any Principal allowed to administer the Installation, a missing default stops startup.
	e.exec(`DELETE FROM occ.iam_access_bindings WHERE identity_subject_id = $1`, e.adminPrincipal)
	_, err := api.New(context.Background(), api.Config{Pool: e.app, ReadPool: e.appRead, IAMDriverID: iamDriverID, Presets: preset.Bundled()})
	if err == nil || !strings.Contains(err.Error(), "cannot be seeded") {
		t.Fatalf("New = %v", err)
	}
	if n := e.count(`SELECT count(*) FROM occ.presets`); n != 0 {
		t.Fatalf("the refused start left %d Presets", n)
	}
}

// TestPresetSeedingByConcurrentReplicas: API replicas starting together add each default once.
func TestPresetSeedingByConcurrentReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := api.New(context.Background(), api.Config{Pool: e.app, ReadPool: e.appRead, IAMDriverID: iamDriverID, Presets: preset.Bundled()})
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := e.count(`SELECT count(*) FROM occ.presets WHERE namespace_id = $1`, e.defaultNS); n != len(preset.Bundled()) {
		t.Fatalf("%d copies of %d defaults", n, len(preset.Bundled()))
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE action = $1`, api.ActionPresetsSeed); n != 1 {
		t.Fatalf("%d seed audit events, want the one of the replica that wrote them", n)
	}
}
