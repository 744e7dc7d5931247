package api_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/openclaw/occ/internal/api"
)

// openAPIMetaSchema is a compact structural schema of OpenAPI 3.1 documents, written for this
// test. The official OpenAPI 3.1 meta-schema cannot be fetched by an offline test and we do not
// vendor third-party schema text, so this one checks what our generator could get wrong: the
// version, info, path templates and path items, operations with unique ids and required
// responses, parameters (path parameters required), request bodies, responses with descriptions,
// components and security schemes. Every embedded Schema Object is checked against the JSON Schema
// 2020-12 meta-schema, which jsonschema/v6 ships and resolves offline (OpenAPI 3.1's dialect).
const openAPIMetaSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$defs": {
    "jsonSchema": {"$ref": "https://json-schema.org/draft/2020-12/schema"},
    "schemaOrRef": {"$ref": "#/$defs/jsonSchema"},
    "mediaTypes": {
      "type": "object", "minProperties": 1,
      "additionalProperties": {
        "type": "object", "required": ["schema"], "additionalProperties": false,
        "properties": {"schema": {"$ref": "#/$defs/schemaOrRef"}}
      }
    },
    "header": {
      "type": "object", "required": ["schema"], "additionalProperties": false,
      "properties": {"description": {"type": "string"}, "schema": {"$ref": "#/$defs/schemaOrRef"}}
    },
    "response": {
      "type": "object", "required": ["description"], "additionalProperties": false,
      "properties": {
        "description": {"type": "string", "minLength": 1},
        "content": {"$ref": "#/$defs/mediaTypes"},
        "headers": {"type": "object", "additionalProperties": {"$ref": "#/$defs/header"}}
      }
    },
    "parameter": {
      "type": "object", "required": ["name", "in", "schema"], "additionalProperties": false,
      "properties": {
        "name": {"type": "string", "minLength": 1},
        "in": {"enum": ["path", "query", "header", "cookie"]},
        "required": {"type": "boolean"},
        "description": {"type": "string"},
        "schema": {"$ref": "#/$defs/schemaOrRef"}
      },
      "if": {"properties": {"in": {"const": "path"}}},
      "then": {"required": ["required"], "properties": {"required": {"const": true}}}
    },
    "securityRequirement": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    "operation": {
      "type": "object", "required": ["responses", "operationId"],
      "properties": {
        "operationId": {"type": "string", "minLength": 1},
        "summary": {"type": "string"},
        "description": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "parameters": {"type": "array", "items": {"$ref": "#/$defs/parameter"}},
        "requestBody": {
          "type": "object", "required": ["content"], "additionalProperties": false,
          "properties": {"required": {"type": "boolean"}, "description": {"type": "string"}, "content": {"$ref": "#/$defs/mediaTypes"}}
        },
        "responses": {
          "type": "object", "minProperties": 1,
          "propertyNames": {"pattern": "^([1-5][0-9][0-9]|[1-5]XX|default)$"},
          "additionalProperties": {"$ref": "#/$defs/response"}
        },
        "security": {"type": "array", "items": {"$ref": "#/$defs/securityRequirement"}},
        "deprecated": {"type": "boolean"}
      },
      "patternProperties": {"^x-": true},
      "additionalProperties": false
    },
    "pathItem": {
      "type": "object",
      "propertyNames": {"enum": ["get", "put", "post", "delete", "options", "head", "patch", "trace", "summary", "description", "parameters"]},
      "additionalProperties": {"$ref": "#/$defs/operation"}
    },
    "securityScheme": {
      "type": "object", "required": ["type"],
      "properties": {
        "type": {"enum": ["apiKey", "http", "mutualTLS", "oauth2", "openIdConnect"]},
        "description": {"type": "string"},
        "name": {"type": "string"},
        "in": {"enum": ["query", "header", "cookie"]}
      },
      "if": {"properties": {"type": {"const": "apiKey"}}},
      "then": {"required": ["name", "in"]}
    }
  },
  "type": "object",
  "required": ["openapi", "info", "paths"],
  "additionalProperties": false,
  "patternProperties": {"^x-": true},
  "properties": {
    "openapi": {"type": "string", "pattern": "^3\\.1\\.[0-9]+$"},
    "jsonSchemaDialect": {"type": "string"},
    "info": {
      "type": "object", "required": ["title", "version"],
      "properties": {"title": {"type": "string"}, "version": {"type": "string"}, "description": {"type": "string"}}
    },
    "tags": {"type": "array", "items": {"type": "object", "required": ["name"]}},
    "paths": {
      "type": "object",
      "propertyNames": {"pattern": "^/"},
      "additionalProperties": {"$ref": "#/$defs/pathItem"}
    },
    "components": {
      "type": "object", "additionalProperties": false,
      "properties": {
        "schemas": {"type": "object", "additionalProperties": {"$ref": "#/$defs/jsonSchema"}},
        "securitySchemes": {"type": "object", "additionalProperties": {"$ref": "#/$defs/securityScheme"}}
      }
    }
  }
}`

func unmarshal(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.expect(e.do(req{method: "GET", path: "/openapi.json"}), 200)

	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://openapi-meta.json", unmarshal(t, []byte(openAPIMetaSchema))); err != nil {
		t.Fatal(err)
	}
	meta, err := c.Compile("mem://openapi-meta.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.Validate(unmarshal(t, r.raw)); err != nil {
		t.Fatalf("the served document is not OpenAPI 3.1: %v", err)
	}

	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var inDoc, inTable []string
	operationIDs := map[string]bool{}
	for path, item := range doc.Paths {
		for method, op := range item {
			inDoc = append(inDoc, strings.ToUpper(method)+" "+path)
			id := op["operationId"].(string)
			if operationIDs[id] {
				t.Errorf("operationId %s repeats", id)
			}
			operationIDs[id] = true
			// Every template parameter is declared as a required path parameter.
			params, _ := op["parameters"].([]any)
			for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
				found := false
				for _, p := range params {
					pm := p.(map[string]any)
					found = found || (pm["in"] == "path" && pm["name"] == m[1] && pm["required"] == true)
				}
				if !found {
					t.Errorf("%s %s does not declare path parameter %s", method, path, m[1])
				}
			}
			if _, ok := op["x-openclaw-permissions"]; !ok {
				t.Errorf("%s %s lacks x-openclaw-permissions", method, path)
			}
		}
	}
	for _, route := range api.Routes() {
		inTable = append(inTable, route.Method+" "+route.Path)
	}
	slices.Sort(inDoc)
	slices.Sort(inTable)
	if !slices.Equal(inDoc, inTable) {
		t.Fatalf("document routes %v\ntable routes %v", inDoc, inTable)
	}
	// 53 routes, the 5 of Presets, the 4 runtime views, the 29 of sign-in (providers, account
	// controls, recovery, CLI sessions) and the 3 of guided provisioning.
	if len(inTable) != 94 {
		t.Fatalf("%d routes", len(inTable))
	}
	// The document is served bare, not in the envelope, and uncached.
	if strings.Contains(string(r.raw[:20]), `"data"`) || r.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("served as %q: %.40s", r.header.Get("Content-Type"), r.raw)
	}
}

// TestOpenAPIMetaSchemaRejects: the meta-schema is not vacuous.
func TestOpenAPIMetaSchemaRejects(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://openapi-meta.json", unmarshal(t, []byte(openAPIMetaSchema))); err != nil {
		t.Fatal(err)
	}
	meta, err := c.Compile("mem://openapi-meta.json")
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(api.OpenAPIDocument())
	for name, breakIt := range map[string]func(doc map[string]any){
		"version 3.0": func(doc map[string]any) { doc["openapi"] = "3.0.3" },
		"optional path parameter": func(doc map[string]any) {
			op := doc["paths"].(map[string]any)["/namespaces/{namespaceId}"].(map[string]any)["get"].(map[string]any)
			op["parameters"].([]any)[0].(map[string]any)["required"] = false
		},
		"invalid schema": func(doc map[string]any) {
			op := doc["paths"].(map[string]any)["/namespaces"].(map[string]any)["post"].(map[string]any)
			op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"] = map[string]any{"type": 5}
		},
		"response without description": func(doc map[string]any) {
			op := doc["paths"].(map[string]any)["/installation"].(map[string]any)["get"].(map[string]any)
			delete(op["responses"].(map[string]any)["200"].(map[string]any), "description")
		},
		"no responses": func(doc map[string]any) {
			delete(doc["paths"].(map[string]any)["/installation"].(map[string]any)["get"].(map[string]any), "responses")
		},
	} {
		var doc map[string]any
		if err := json.Unmarshal(good, &doc); err != nil {
			t.Fatal(err)
		}
		breakIt(doc)
		broken, _ := json.Marshal(doc)
		if meta.Validate(unmarshal(t, broken)) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestOpenAPIDocumentsPermissions(t *testing.T) {
	t.Parallel()
	doc := api.OpenAPIDocument()
	op := doc["paths"].(map[string]any)["/namespaces"].(map[string]any)["post"].(map[string]any)
	perms, _ := json.Marshal(op["x-openclaw-permissions"])
	if string(perms) != `[{"action":"create","resourceKind":"namespace","target":"installation-collection"},`+
		`{"action":"administer","resourceKind":"installation","target":"installation","when":"existingNamespace is set"},`+
		`{"action":"create","resourceKind":"preset","target":"referenced-resource","when":"the new Namespace's Presets, when the Installation has default Presets"}]` {
		t.Fatalf("permissions %s", perms)
	}
}
