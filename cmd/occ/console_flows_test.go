package main_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/testkit/wait"

	"github.com/chromedp/chromedp/kb"
)

// TestConsoleAgentLifecycle: an administrator signs in, creates a Namespace and watches it
// become ready, creates a Secret, creates an Agent with the grant its ServicePrincipal needs,
// deploys it and watches the deployment succeed, deploys again, stops it and deletes it.
func TestConsoleAgentLifecycle(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startConsoleStack(t, "{callDelayMs: 100, revisionReadyAfterMs: 1200}")
	b := newBrowser(t, stack.base, 1280, 900)

	b.open("/")
	b.signIn(adminEmail, adminPassword)
	b.waitFor("the Agents page", hasText("h1", "Agents"))

	// A Namespace: provisioning, then ready.
	b.click("nav a", "Namespaces")
	b.waitFor("the Namespaces page", hasText("h1", "Namespaces"))
	b.click("button", "Create Namespace")
	b.fill("Name", "team-a")
	b.click("dialog button", "Create")
	b.waitFor("team-a listed", hasText("table tr", "team-a"))
	b.waitFor("team-a ready", `[...document.querySelectorAll('tr')].some((r) => r.textContent.includes('team-a') && r.querySelector('.badge').textContent === 'ready')`)

	// Select it in the header; the choice is kept in the URL.
	b.click("table a", "team-a")
	b.waitFor("the Agents page of team-a", hasText("p.lead", "In Namespace team-a"))
	location := eval[string](b, `location.search`)
	if !strings.Contains(location, "namespace=ns_") {
		t.Fatalf("the Namespace is not in the URL: %s", location)
	}

	// A Secret.
	b.click("nav a", "Secrets")
	b.waitFor("the Secrets page", hasText("h1", "Secrets"))
	b.click("button", "Create Secret")
	b.fill("Name", "model-key")
	b.fill("Value", "sk-test-value-never-shown")
	b.click("dialog button", "Create Secret")
	b.waitFor("model-key listed", hasText("table a", "model-key"))
	page := eval[string](b, `document.documentElement.outerHTML`)
	if strings.Contains(page, "sk-test-value-never-shown") {
		t.Fatal("the Secret value is still in the page")
	}

	// An Agent with the grant.
	b.click("nav a", "Agents")
	b.click("a.button", "Create Agent")
	b.waitFor("the create form", hasText("h1", "Create an Agent"))
	b.fill("Name", "triage")
	b.choose("Secret", "model-key")
	// A document the API refuses: its problem is shown at its JSON path and line, and nothing is created.
	b.fill("Configuration", `{"models": {"providers": {"x": {"baseUrl": "not-a-url"}}}}`)
	b.click("button", "Create Agent")
	b.waitFor("the problem at its path", hasText(".json-problems li", "/models/providers/x/baseUrl"))
	b.waitFor("with its line", hasText(".json-problems li", "(line 1)"))
	b.waitFor("the request id", `/^req_/.test(document.querySelector('.alert .request-id').textContent)`)
	if n := stack.inst.scalar(t, `SELECT count(*)::text FROM occ.configurations`); n != "0" {
		t.Fatalf("%s Configurations after a refused one", n)
	}
	b.fill("Configuration", `{"agents": {}}`)
	b.click("button", "Create Agent")
	b.waitFor("the Agent page", hasText("h1", "triage"))
	b.waitFor("created notice", hasText(".alert", "Agent created"))

	// Deploy: live progress until the result.
	b.click("button", "Deploy new version")
	b.waitFor("version 1 deploying", `document.querySelector('.deployment[data-revision]') && document.querySelector('.timeline li') !== null`)
	b.waitFor("version 1 active", hasText(".deploy-result", "Version 1 is active."))
	phases := eval[int](b, `document.querySelectorAll('.timeline li').length`)
	if phases < 2 {
		t.Fatalf("%d phases shown", phases)
	}
	// Deploy again.
	b.click("button", "Deploy new version")
	b.waitFor("version 2 active", hasText(".deploy-result", "Version 2 is active."))
	b.click("button[role=tab]", "Versions")
	b.waitFor("two versions", `document.querySelectorAll('.tab-panel tbody tr').length === 2`)
	b.waitFor("both succeeded", `[...document.querySelectorAll('.tab-panel tbody tr .badge')].filter((e) => e.textContent === 'succeeded').length === 2`)

	// A concurrent change of the Configuration is never overwritten: saving asks for a reload.
	b.click("button[role=tab]", "Configuration")
	b.waitFor("the editor", `document.querySelector('.tab-panel textarea') !== null`)
	cfgID := stack.inst.scalar(t, `SELECT configuration_id FROM occ.agents WHERE name = 'triage'`)
	if st, r := stack.api.call("PATCH", "/namespaces/"+stack.inst.scalar(t, `SELECT namespace_id FROM occ.agents WHERE name = 'triage'`)+"/configurations/"+cfgID,
		map[string]any{"values": map[string]any{"agents": map[string]any{"changed": "elsewhere"}}}); st != 200 {
		t.Fatalf("concurrent change: %d %v", st, r)
	}
	b.fill("Configuration", `{"agents": {"changed": "here"}}`)
	b.click("button", "Save Configuration")
	b.waitFor("asked to reload", hasText(".alert", "changed since this page read it"))
	if got := stack.inst.scalar(t, `SELECT generation::text FROM occ.configurations WHERE id = $1`, cfgID); got != "2" {
		t.Fatalf("generation %s after a refused save", got)
	}
	b.click(".alert button", "Reload")
	b.waitFor("the reloaded page", hasText("h1", "triage"))

	// Stop, then delete.
	b.click("button", "Stop")
	b.click("dialog button", "Stop Agent")
	b.waitFor("stopped", hasText("[role=status]", "Stopped: no version is active."))
	b.click("button", "Delete")
	b.click("dialog button", "Permanently delete Agent")
	b.waitFor("back on the Agents list", hasText("h1", "Agents"))
	b.waitFor("the list is loaded", `document.querySelector('.list-region') && document.querySelector('.list-region').getAttribute('aria-busy') === 'false'`)
	if eval[bool](b, hasText("table a", "triage")) {
		t.Fatal("the deleted Agent is still listed")
	}
	if n := stack.inst.scalar(t, `SELECT count(*)::text FROM occ.agents`); n != "0" {
		t.Fatalf("%s Agents left in the database", n)
	}

	// The Namespace still holds the Secret: its delete is refused and the page links to it.
	b.click("nav a", "Namespaces")
	b.click("button[aria-label='Delete Namespace team-a']", "Delete")
	b.click("dialog button", "Delete Namespace")
	b.waitFor("what is left", hasText(".leftovers a", "model-key"))
	b.waitFor("the code", hasText(".alert .error-code", "NAMESPACE_NOT_EMPTY"))
}

// TestConsoleShowsAFailedDeployment: a deployment that failed shows its code, its message and
// what to check. The worker is stopped first and the failure is written as the worker records
// one, so the outcome is fixed.
func TestConsoleShowsAFailedDeployment(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startConsoleStack(t, "{}")
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return stack.inst.status(t) == "ready" })
	_ = stack.worker.cmd.Process.Kill()
	<-stack.worker.done
	ns := "/namespaces/" + stack.inst.defaultNS
	_, cfg := stack.api.call("POST", ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})
	_, agent := stack.api.call("POST", ns+"/agents", map[string]any{"name": "broken", "configurationId": data(cfg)["id"],
		"harnessAuth": map[string]any{"method": "runtime"}})
	agentID := data(agent)["id"].(string)
	st, rev := stack.api.call("POST", ns+"/agents/"+agentID+"/deploy", nil)
	if st != 202 {
		t.Fatalf("deploy: %d %v", st, rev)
	}
	if _, err := stack.inst.owner.Exec(context.Background(), `UPDATE occ.controller_work SET state = 'failed_permanent',
	  completed_at = clock_timestamp(), reason_code = 'RUNTIME_AUTHENTICATION_FAILED' WHERE idempotency_key = $1`,
		"agent_revision:"+data(rev)["id"].(string)+":reconcile"); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, stack.base, 1280, 900)
	b.open("/console/agents/" + agentID + "?namespace=" + stack.inst.defaultNS)
	b.signIn(adminEmail, adminPassword)
	b.waitFor("the failure", hasText(".deploy-result .error-code", "RUNTIME_AUTHENTICATION_FAILED"))
	b.waitFor("its message", hasText(".deploy-result", "The runtime credentials were rejected."))
	b.waitFor("what to check", hasText(".deploy-result", "What to check:"))
	b.click("nav a", "Agents")
	b.waitFor("the list shows it", hasText(".deployment-cell", "RUNTIME_AUTHENTICATION_FAILED"))
}

// TestConsoleNamesTheMissingGrantOfARefusedDeploy: a deploy refused because the Agent's own
// ServicePrincipal lacks secret:operate shows which principal lacks what on which Secret.
func TestConsoleNamesTheMissingGrantOfARefusedDeploy(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startConsoleStack(t, "{}")
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return stack.inst.status(t) == "ready" })
	nsID := stack.inst.defaultNS
	ns := "/namespaces/" + nsID
	_, sec := stack.api.call("POST", ns+"/secrets", map[string]any{"name": "token", "value": "console-denied-value-1618"})
	secID := data(sec)["id"].(string)
	_, cfg := stack.api.call("POST", ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{},
		"secretBindings": map[string]any{"TOKEN": map[string]any{"source": map[string]any{"kind": "secret", "id": secID, "namespaceId": nsID}}}})
	_, agent := stack.api.call("POST", ns+"/agents", map[string]any{"name": "ungranted", "configurationId": data(cfg)["id"],
		"harnessAuth": map[string]any{"method": "runtime"}})
	agentID, agentSP := data(agent)["id"].(string), data(agent)["servicePrincipalId"].(string)
	b := newBrowser(t, stack.base, 1280, 900)
	b.open("/console/agents/" + agentID + "?namespace=" + nsID)
	b.signIn(adminEmail, adminPassword)
	b.click("button", "Deploy new version")
	b.waitFor("the refusal", hasText(".alert .error-code", "FORBIDDEN"))
	b.waitFor("the missing grant", hasText(".alert .denied-permission", "ServicePrincipal "+agentSP+" lacks operate on secret "+secID))
}

// TestConsoleKeyboardOnlyAgentCreation: creating an Agent, including a new Secret in the
// picker's dialog, with Tab, arrows, typing and Enter only.
func TestConsoleKeyboardOnlyAgentCreation(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startConsoleStack(t, "{}")
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return stack.inst.status(t) == "ready" })
	b := newBrowser(t, stack.base, 1280, 900)
	b.open("/console/agents/new")
	b.waitFor("sign-in", hasText("h1", "Sign in"))
	b.tabTo("Email")
	b.keys(adminEmail)
	b.tabTo("Password")
	b.keys(adminPassword + kb.Enter)
	b.waitFor("back on the create form", hasText("h1", "Create an Agent"))

	b.tabTo("Name")
	b.keys("keyboard-agent")
	b.tabTo("Execution mode")
	b.keys(kb.ArrowDown) // dedicated
	b.tabTo("Create new Secret…")
	b.keys(kb.Enter)
	b.waitFor("the Secret dialog", `document.querySelector('dialog[open]') !== null`)
	b.tabTo("Value")
	b.keys("kbd-secret-value")
	b.tabTo("Create Secret")
	b.keys(kb.Enter)
	b.waitFor("the Secret selected", `document.querySelector('dialog[open]') === null && document.querySelector('.picker-select').selectedOptions[0].textContent.includes('keyboard-agent-model-key')`)
	// Focus came back to the control that opened the dialog.
	if !eval[bool](b, `document.activeElement !== null && document.activeElement.textContent === 'Create new Secret…'`) {
		t.Fatal("focus did not return to the opener")
	}
	b.tabTo("Create Agent")
	b.keys(kb.Enter)
	b.waitFor("the Agent page", hasText("h1", "keyboard-agent"))
	if mode := stack.inst.scalar(t, `SELECT execution_mode FROM occ.agents WHERE name = 'keyboard-agent'`); mode != "dedicated" {
		t.Fatalf("execution mode %q", mode)
	}
	// The grant was made for the Agent's own ServicePrincipal.
	if n := stack.inst.scalar(t, `SELECT count(*)::text FROM occ.iam_access_bindings b JOIN occ.agents a ON a.service_principal_id = b.identity_subject_id
	  WHERE a.name = 'keyboard-agent' AND b.resource_kind = 'secret'`); n != "1" {
		t.Fatalf("%s grants for the Agent's ServicePrincipal", n)
	}
	// Escape closes the topmost dialog and returns focus.
	b.tabTo("Delete")
	b.keys(kb.Enter)
	b.waitFor("the confirmation", `document.querySelector('dialog[open]') !== null`)
	b.keys(kb.Escape)
	b.waitFor("closed by Escape", `document.querySelector('dialog[open]') === null && document.activeElement.textContent === 'Delete'`)
}

// TestConsoleScopedPersonAndSessionExpiry: an administrator creates a person's account on the
// People page; the person, bound to one Namespace only, sees only it, gets an explained denial
// on another one and on the Access page, and after the session expires returns to sign-in and
// then to the page they were on.
func TestConsoleScopedPersonAndSessionExpiry(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startConsoleStack(t, "{}")
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return stack.inst.status(t) == "ready" })
	st, other := stack.api.call("POST", "/namespaces", map[string]any{"name": "other"})
	if st != 201 {
		t.Fatalf("other namespace: %d %v", st, other)
	}
	otherID := data(other)["id"].(string)

	b := newBrowser(t, stack.base, 1280, 900)
	b.open("/console/people")
	b.signIn(adminEmail, adminPassword)
	b.waitFor("the People page", hasText("h1", "People"))
	b.fill("Email", "person@example.com")
	b.fill("First password", "person-password-1")
	b.click("button", "Create account")
	b.waitFor("the account", `document.querySelector('.principal-id') !== null`)
	principal := eval[string](b, `document.querySelector('.principal-id').textContent`)

	ns := "/namespaces/" + stack.inst.defaultNS
	st, role := stack.api.call("POST", ns+"/iam/roles", map[string]any{"name": "viewer",
		"permissions": []any{map[string]any{"action": "read", "resourceKind": "namespace"}}})
	if st != 201 {
		t.Fatalf("role: %d %v", st, role)
	}
	if st, r := stack.api.call("POST", ns+"/iam/access-bindings", map[string]any{"subjectKind": "identity", "subjectId": principal,
		"roleId": data(role)["id"], "resourceKind": "namespace", "resourceId": stack.inst.defaultNS}); st != 201 {
		t.Fatalf("binding: %d %v", st, r)
	}

	b.click("button", "Sign out")
	b.waitFor("signed out", hasText("h1", "Sign in"))
	if n := eval[int](b, `document.querySelectorAll('#main *').length`); n == 0 {
		t.Fatal("the sign-in page is empty")
	}
	b.signIn("person@example.com", "person-password-1")
	b.waitFor("the person's Agents page", hasText("p.lead", "In Namespace default"))
	if eval[bool](b, `document.querySelector('.build').offsetParent !== null`) {
		t.Fatal("the build is shown without debug=true")
	}
	b.open("/console/agents?debug=true")
	b.waitFor("the build identity", hasText(".build", "Build dev"))
	if options := eval[[]string](b, `[...document.querySelectorAll('#namespace-select option')].map((o) => o.textContent)`); len(options) != 1 || options[0] != "default" {
		t.Fatalf("the selector offers %v", options)
	}
	b.waitFor("an empty list", hasText(".list-region", "No Agent yet"))

	// Another Namespace: explained, not a blank page.
	b.open("/console/agents?namespace=" + otherID)
	b.waitFor("Namespace unavailable", hasText("h1", "Namespace unavailable"))
	b.waitFor("the reason", hasText(".alert", "namespace:read"))
	if sel := eval[string](b, `document.querySelector('#namespace-select').selectedOptions[0].textContent`); sel != "Namespace unavailable" {
		t.Fatalf("the selector shows %q", sel)
	}
	// The Access page needs an administrator: the denial says so, with its code and request id.
	b.open("/console/access?namespace=" + stack.inst.defaultNS)
	b.waitFor("the denial", hasText(".alert", "installation:administer"))
	b.waitFor("its code", hasText(".alert .error-code", "FORBIDDEN"))
	b.waitFor("its request id", `/^req_/.test(document.querySelector('.alert .request-id').textContent)`)

	// The session expires on the server; the next read returns to sign-in, then back.
	if _, err := stack.inst.owner.Exec(context.Background(), `UPDATE occ.sessions SET created_at = created_at - interval '9 hours', expires_at = expires_at - interval '9 hours'
	  WHERE account_id = (SELECT id FROM occ.accounts WHERE email = 'person@example.com')`); err != nil {
		t.Fatal(err)
	}
	b.click("nav a", "Secrets")
	b.waitFor("sign-in after expiry", hasText("h1", "Sign in"))
	if loc := eval[string](b, `location.pathname + location.search`); !strings.Contains(loc, "next=%2Fconsole%2Fsecrets") {
		t.Fatalf("sign-in does not remember the page: %s", loc)
	}
	if eval[bool](b, `document.body.textContent.includes('default')`) {
		t.Fatal("private content is still on screen after the session ended")
	}
	b.signIn("person@example.com", "person-password-1")
	b.waitFor("back on the Secrets page", hasText("h1", "Secrets"))
	b.waitFor("in the same Namespace", hasText("p.lead", "In Namespace default"))
}

// TestConsoleAgentRuntimeTab: the Runtime tab of a deployed Agent shows its containers and its
// redacted log page, with the follow, previous-instance and download controls, read through the
// API's runtime routes (the simulated Compute Driver: a running gateway with its startup log).
func TestConsoleAgentRuntimeTab(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	stack := startConsoleStack(t, "{}")
	wait.Eventually(t, wait.Medium, "default namespace ready", func() bool { return stack.inst.status(t) == "ready" })
	ns := "/namespaces/" + stack.inst.defaultNS
	_, cfg := stack.api.call("POST", ns+"/configurations", map[string]any{"kind": "agent", "values": map[string]any{}})
	_, agent := stack.api.call("POST", ns+"/agents", map[string]any{"name": "watched", "configurationId": data(cfg)["id"],
		"harnessAuth": map[string]any{"method": "runtime"}})
	agentID := data(agent)["id"].(string)
	st, rev := stack.api.call("POST", ns+"/agents/"+agentID+"/deploy", nil)
	if st != 202 {
		t.Fatalf("deploy: %d %v", st, rev)
	}
	revID := data(rev)["id"].(string)
	wait.Eventually(t, wait.Long, "the deployment to succeed", func() bool {
		_, d := stack.api.call("GET", ns+"/agents/"+agentID+"/deployments/"+revID, nil)
		return data(d)["status"] == "succeeded"
	})

	b := newBrowser(t, stack.base, 1280, 900)
	b.open("/console/agents/" + agentID + "?namespace=" + stack.inst.defaultNS + "&tab=runtime")
	b.signIn(adminEmail, adminPassword)
	b.waitFor("the container", hasText(".runtime-status table", "gateway"))
	b.waitFor("its state", hasText(".runtime-status table", "running"))
	b.waitFor("the startup log", hasText(".log-lines", "simulated openclaw gateway started"))
	b.waitFor("the wrapper record", hasText(".log-lines", "runtime.startup_phase"))
	href := eval[string](b, `document.querySelector('.log-controls a').getAttribute('href')`)
	if !strings.Contains(href, "/deployments/"+revID+"/runtime/logs?") || !strings.Contains(href, "download=true") {
		t.Fatalf("the download link: %s", href)
	}
	b.click(".log-controls label", "Follow")
	b.waitFor("following", `document.querySelector('#runtime-log-follow').checked && document.querySelector('#runtime-log-previous').disabled`)
	b.click("[role=tab]", "Overview")
	b.waitFor("the Overview tab", hasText(".tab-panel", "Desired state"))
}
