package api_test

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/openclaw/occ/internal/api"
)

// conformance validates responses against the schemas of the served OpenAPI document.
type conformance struct {
	t        *testing.T
	compiler *jsonschema.Compiler
	cache    map[string]*jsonschema.Schema
}

func newConformance(t *testing.T) *conformance {
	t.Helper()
	raw, err := json.Marshal(api.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://openapi.json", unmarshal(t, raw)); err != nil {
		t.Fatal(err)
	}
	return &conformance{t: t, compiler: c, cache: map[string]*jsonschema.Schema{}}
}

func pointerToken(s string) string {
	return url.PathEscape(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
}

// check validates r, answered by method on the path template, against its documented schema.
func (c *conformance) check(method, template string, r resp) {
	c.t.Helper()
	loc := "mem://openapi.json#/paths/" + pointerToken(template) + "/" + strings.ToLower(method) +
		"/responses/" + strconv.Itoa(r.status) + "/content/application~1json/schema"
	s, ok := c.cache[loc]
	if !ok {
		var err error
		if s, err = c.compiler.Compile(loc); err != nil {
			c.t.Fatalf("%s %s %d: no schema: %v", method, template, r.status, err)
		}
		c.cache[loc] = s
	}
	if err := s.Validate(unmarshal(c.t, r.raw)); err != nil {
		c.t.Errorf("%s %s %d does not match its schema: %v\n%s", method, template, r.status, err, r.raw)
	}
}

// TestResourceResponsesMatchTheirSchemas drives every resource route once and checks the answers
// against the OpenAPI document.
func TestResourceResponsesMatchTheirSchemas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cf := newConformance(t)
	ns := e.readyNamespace("schemas")
	p := "/namespaces/{namespaceId}"
	base := "/namespaces/" + ns
	do := func(method, template, path string, body any) resp {
		t.Helper()
		r := e.admin(method, base+path, body)
		cf.check(method, p+template, r)
		return r
	}
	sec := do("POST", "/secrets", "/secrets", map[string]any{"name": "s", "value": "schema-secret-value-99"}).data()["id"].(string)
	cfg := do("POST", "/configurations", "/configurations", map[string]any{"kind": "agent", "values": map[string]any{"x": []any{1, "a"}},
		"secretBindings": map[string]any{"TOKEN": map[string]any{"source": secretRef(ns, sec)}}}).data()["id"].(string)
	do("GET", "/configurations/{configurationId}", "/configurations/"+cfg, nil)
	do("PATCH", "/configurations/{configurationId}", "/configurations/"+cfg, map[string]any{"values": map[string]any{}})
	do("GET", "/secrets", "/secrets", nil)
	do("GET", "/secrets/{secretId}", "/secrets/"+sec, nil)
	do("PATCH", "/secrets/{secretId}", "/secrets/"+sec, map[string]any{"value": "schema-secret-value-100"})
	sa := do("POST", "/service-accounts", "/service-accounts", map[string]any{"name": "sa"}).data()["id"].(string)
	do("PATCH", "/service-accounts/{serviceAccountId}/credential", "/service-accounts/"+sa+"/credential",
		map[string]any{"kind": "api_key", "secretRef": map[string]any{"name": "k", "key": "v"}})
	do("GET", "/service-accounts", "/service-accounts", nil)
	do("GET", "/service-accounts/{serviceAccountId}", "/service-accounts/"+sa, nil)
	agent := do("POST", "/agents", "/agents", map[string]any{"name": "a", "configurationId": cfg,
		"harnessAuth": map[string]any{"method": "codex_pat", "source": map[string]any{"kind": "service_account", "namespaceId": ns, "id": sa}}}).data()
	id := agent["id"].(string)
	e.grant(agent["servicePrincipalId"].(string), ns, "secret", sec, perm("operate", "secret"))
	do("GET", "/agents", "/agents", nil)
	do("GET", "/agents/{agentId}", "/agents/"+id, nil)
	do("PATCH", "/agents/{agentId}", "/agents/"+id, map[string]any{"configurationId": cfg})
	rev := do("POST", "/agents/{agentId}/deploy", "/agents/"+id+"/deploy", nil).data()["id"].(string)
	do("GET", "/agents/{agentId}/revisions", "/agents/"+id+"/revisions", nil)
	do("GET", "/agents/{agentId}/revisions/{revisionId}", "/agents/"+id+"/revisions/"+rev, nil)
	do("GET", "/agents/{agentId}/deployments/{deploymentId}", "/agents/"+id+"/deployments/"+rev, nil)
	do("POST", "/agents/{agentId}/stop", "/agents/"+id+"/stop", nil)
	do("DELETE", "/service-accounts/{serviceAccountId}", "/service-accounts/"+sa, nil) // 409: the Agent uses it
	do("DELETE", "/agents/{agentId}", "/agents/"+id, nil)
	do("POST", "/agents/{agentId}/deploy", "/agents/"+id+"/deploy", nil) // 409 AGENT_DELETING
}
