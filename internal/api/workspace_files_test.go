package api_test

import (
	"strings"
	"testing"
)

// TestInitialWorkspaceFiles: Agent create validates initialWorkspaceFiles as upstream (the four
// names, strings, 16 KiB in UTF-8, no NUL; a coded 400 naming the member), stages them privately
// (never in the Agent or revision reads, the audit or the log), the first deploy snapshots them
// into its revision and removes the staging row, and a later revision carries none.
func TestInitialWorkspaceFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.readyNamespace("workspace")
	base := "/namespaces/" + ns
	cfg := e.expect(e.admin("POST", base+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}}), 201).data()["id"].(string)
	create := func(name string, files any) resp {
		return e.admin("POST", base+"/agents", map[string]any{"name": name, "configurationId": cfg,
			"harnessAuth": map[string]any{"method": "runtime"}, "initialWorkspaceFiles": files})
	}

	for _, tc := range []struct {
		files      any
		path, code string
	}{
		{map[string]any{"NOTES.md": "x"}, "/initialWorkspaceFiles/NOTES.md", "UNKNOWN_FIELD"},
		{map[string]any{"agents.md": "x"}, "/initialWorkspaceFiles/agents.md", "UNKNOWN_FIELD"},
		{map[string]any{"SOUL.md": 7}, "/initialWorkspaceFiles/SOUL.md", "INVALID_TYPE"},
		{map[string]any{"USER.md": nil}, "/initialWorkspaceFiles/USER.md", "INVALID_TYPE"},
		{map[string]any{"AGENTS.md": strings.Repeat("a", 16<<10+1)}, "/initialWorkspaceFiles/AGENTS.md", "TOO_LONG"},
		// 6,000 three-byte characters: under 16 Ki code points, over 16 KiB in UTF-8.
		{map[string]any{"IDENTITY.md": strings.Repeat("€", 6000)}, "/initialWorkspaceFiles/IDENTITY.md", "TOO_LONG"},
		{map[string]any{"USER.md": "before\x00after"}, "/initialWorkspaceFiles/USER.md", "INVALID_VALUE"},
		{[]any{"AGENTS.md"}, "/initialWorkspaceFiles", "INVALID_TYPE"},
	} {
		r := e.expect(create("refused", tc.files), 400)
		if r.errCode() != "INVALID_REQUEST" || !r.hasDetail(tc.path, tc.code) {
			t.Errorf("%v: %s, want %s at %s", tc.files, r.raw, tc.code, tc.path)
		}
		if strings.Contains(string(r.raw), "before") {
			t.Errorf("the refusal quotes the content: %s", r.raw)
		}
	}
	if n := e.count(`SELECT count(*) FROM occ.agents WHERE name = 'refused'`); n != 0 {
		t.Fatalf("a refused create left %d Agents", n)
	}
	// Exactly 16 KiB, empty strings, whitespace and newlines are kept as sent; {} stages nothing.
	const marker = "workspace-content-6d1f0a"
	files := map[string]any{
		"AGENTS.md":   "Answer support questions.\r\n  " + marker + "\n",
		"USER.md":     "",
		"IDENTITY.md": strings.Repeat("€", (16<<10)/3) + "a",
	}
	agent := e.expect(create("staged", files), 201).data()
	agentID := agent["id"].(string)
	if _, ok := agent["initialWorkspaceFiles"]; ok {
		t.Fatalf("the create response echoes the files: %v", agent)
	}
	plain := e.expect(create("plain", map[string]any{}), 201).data()["id"].(string)
	if n := e.count(`SELECT count(*) FROM occ.agent_initial_workspace_files WHERE agent_id = $1`, plain); n != 0 {
		t.Fatal("{} staged a row")
	}
	if n := e.count(`SELECT count(*) FROM occ.agent_initial_workspace_files WHERE agent_id = $1 AND files = $2::jsonb`, agentID, mustJSON(files)); n != 1 {
		t.Fatal("the files are not staged exactly as sent")
	}
	if n := e.count(`SELECT count(*) FROM occ.agents a WHERE a.id = $1 AND row_to_json(a)::text LIKE '%' || $2 || '%'`, agentID, marker); n != 0 {
		t.Fatal("the Agent row holds the content")
	}
	// The patch schema is closed to them: staged inputs have no update.
	patch := e.expect(e.admin("PATCH", base+"/agents/"+agentID, map[string]any{"configurationId": cfg,
		"initialWorkspaceFiles": map[string]any{"AGENTS.md": "x"}}), 400)
	if !patch.hasDetail("/initialWorkspaceFiles", "UNKNOWN_FIELD") {
		t.Fatalf("patch: %s", patch.raw)
	}
	for _, path := range []string{base + "/agents/" + agentID, base + "/agents"} {
		if r := e.expect(e.admin("GET", path, nil), 200); strings.Contains(string(r.raw), marker) || strings.Contains(string(r.raw), "initialWorkspaceFiles") {
			t.Fatalf("GET %s shows the files: %s", path, r.raw)
		}
	}

	// The first deploy takes them into its revision; the staging row goes in the same transaction.
	rev1 := e.expect(e.admin("POST", base+"/agents/"+agentID+"/deploy", nil), 202)
	rev1ID := rev1.data()["id"].(string)
	spec := e.revisionSpec(rev1ID)
	snap, _ := spec["initialWorkspaceFiles"].(map[string]any)
	if len(snap) != 3 || snap["AGENTS.md"] != files["AGENTS.md"] || snap["USER.md"] != "" || snap["IDENTITY.md"] != files["IDENTITY.md"] {
		t.Fatalf("revision 1 snapshot: %v", spec["initialWorkspaceFiles"])
	}
	if n := e.count(`SELECT count(*) FROM occ.agent_initial_workspace_files WHERE agent_id = $1`, agentID); n != 0 {
		t.Fatal("the staging row survived the first deploy")
	}
	rev2ID := e.expect(e.admin("POST", base+"/agents/"+agentID+"/deploy", nil), 202).data()["id"].(string)
	if _, ok := e.revisionSpec(rev2ID)["initialWorkspaceFiles"]; ok {
		t.Fatal("revision 2 carries initial workspace files")
	}
	for _, path := range []string{base + "/agents/" + agentID + "/revisions/" + rev1ID, base + "/agents/" + agentID + "/revisions"} {
		if r := e.expect(e.admin("GET", path, nil), 200); strings.Contains(string(r.raw), marker) || strings.Contains(string(r.raw), "initialWorkspaceFiles") {
			t.Fatalf("GET %s shows the files: %s", path, r.raw)
		}
	}
	if strings.Contains(string(rev1.raw), marker) {
		t.Fatalf("the deploy response shows the files: %s", rev1.raw)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE details::text LIKE '%' || $1 || '%'`, marker); n != 0 {
		t.Fatalf("%d audit events hold the content", n)
	}
	if n := e.count(`SELECT count(*) FROM occ.audit_events WHERE resource_id = $1 AND details -> 'initialWorkspaceFiles' = '["AGENTS.md","IDENTITY.md","USER.md"]'::jsonb`, agentID); n != 1 {
		t.Fatal("the create audit does not name the staged files")
	}
	if strings.Contains(e.logs.String(), marker) {
		t.Fatal("the log holds the content")
	}

	// Deleting a never-deployed Agent drops what it staged.
	gone := e.expect(create("gone", map[string]any{"SOUL.md": "calm"}), 201).data()["id"].(string)
	e.exec(`DELETE FROM occ.agents WHERE id = $1`, gone)
	if n := e.count(`SELECT count(*) FROM occ.agent_initial_workspace_files WHERE agent_id = $1`, gone); n != 0 {
		t.Fatal("the staged files outlived their Agent")
	}
}
