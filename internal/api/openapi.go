package api

import (
	"net/http"
	"strconv"

	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/schema"
)

// OpenAPIVersion is the OpenAPI version of the served document.
const OpenAPIVersion = "3.1.0"

var authModeNames = map[auth.Mode]string{
	auth.ModePublic:          "public",
	auth.ModeAnonymous:       "anonymous",
	auth.ModeSessionOptional: "session-optional",
	auth.ModeSession:         "session",
	auth.ModeAny:             "service-key-or-session",
}

var scopeNames = map[Scope]string{
	ScopeNone:         "none",
	ScopeInstallation: "installation",
	ScopeNamespace:    "namespace",
	ScopeCollection:   "collection",
}

// OpenAPIDocument renders the route table as an OpenAPI 3.1 document. Every operation carries its
// audit action (x-openclaw-action), its admission (x-openclaw-auth, x-openclaw-scope) and the IAM
// permissions it checks (x-openclaw-permissions).
func OpenAPIDocument() map[string]any {
	prepareRoutes()
	paths := map[string]any{}
	for _, r := range routeTable {
		item, _ := paths[r.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[r.Path] = item
		}
		item[lowerMethod(r.Method)] = operation(r)
	}
	return map[string]any{
		"openapi":           OpenAPIVersion,
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{
			"title":   "OCC API",
			"version": "1",
			"description": "The OpenClaw control plane. Success bodies are {data, meta:{requestId}}; errors are " +
				"{error:{code, message, details?}, meta:{requestId}}. Request objects are closed: unknown members " +
				"are 400 UNKNOWN_FIELD. Every response carries X-Request-Id.",
		},
		"tags":  documentTags(),
		"paths": paths,
		"components": map[string]any{
			"schemas": map[string]any{
				"ErrorEnvelope": errorEnvelopeSchema(),
			},
			"securitySchemes": map[string]any{
				"serviceApiKey": map[string]any{"type": "apiKey", "in": "header", "name": auth.APIKeyHeader,
					"description": "A service key (occ_sk_…). It is checked first and never falls back to the cookie."},
				"sessionCookie": map[string]any{"type": "apiKey", "in": "cookie", "name": auth.CookieName,
					"description": "The browser session cookie (" + auth.SecureCookieName + " on HTTPS). Unsafe " +
						"requests need the exact Origin of OCC_AUTH_BASE_URL."},
			},
		},
	}
}

// documentTags lists the routes' tags once each, in table order (upstream's tag names).
func documentTags() []any {
	var tags []any
	seen := map[string]bool{}
	for _, r := range routeTable {
		if !seen[r.Tag] {
			seen[r.Tag] = true
			tags = append(tags, map[string]any{"name": r.Tag})
		}
	}
	return tags
}

func lowerMethod(m string) string {
	switch m {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return "options"
}

func operation(r *Route) map[string]any {
	op := map[string]any{
		"operationId":       r.operationID(),
		"summary":           r.Summary,
		"tags":              []any{r.Tag},
		"x-openclaw-action": r.Action,
		"x-openclaw-auth":   authModeNames[r.Auth],
		"x-openclaw-scope":  scopeNames[r.Scope],
	}
	if r.Description != "" {
		op["description"] = r.Description
	}
	perms := []any{}
	for _, p := range r.Permissions {
		entry := map[string]any{"action": p.Action, "resourceKind": p.Kind, "target": targetDescriptions[p.Target]}
		if p.When != "" {
			entry["when"] = p.When
		}
		perms = append(perms, entry)
	}
	op["x-openclaw-permissions"] = perms
	if r.Coverage != "" {
		op["x-openclaw-coverage"] = r.Coverage
	}
	switch r.Auth {
	case auth.ModeAny:
		op["security"] = []any{map[string]any{"serviceApiKey": []any{}}, map[string]any{"sessionCookie": []any{}}}
	case auth.ModeSession:
		op["security"] = []any{map[string]any{"sessionCookie": []any{}}}
	case auth.ModeSessionOptional:
		op["security"] = []any{map[string]any{"sessionCookie": []any{}}, map[string]any{}}
	default:
		op["security"] = []any{}
	}

	var params []any
	for _, name := range pathParamNames(r.Path) {
		param := r.PathParams[name]
		if param == nil {
			param = opaqueParam
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": param.JSONSchema()})
	}
	for _, q := range r.Query {
		p := map[string]any{"name": q.Name, "in": "query", "required": false, "schema": q.Schema.JSONSchema()}
		if q.Description != "" {
			p["description"] = q.Description
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if r.Body != nil {
		op["requestBody"] = map[string]any{
			"required": hasRequired(r.Body),
			"content":  map[string]any{"application/json": map[string]any{"schema": r.Body.JSONSchema()}},
		}
	}

	responses := map[string]any{}
	success := map[string]any{"description": http.StatusText(r.Success)}
	switch {
	case r.Success == http.StatusNoContent:
	case r.Success == http.StatusFound:
		success["headers"] = map[string]any{"Location": map[string]any{"description": "Where the browser continues.", "schema": map[string]any{"type": "string"}}}
	case r.Action == ActionOpenAPI:
		success["content"] = map[string]any{"application/json": map[string]any{"schema": r.Response.JSONSchema()}}
	default:
		success["content"] = map[string]any{"application/json": map[string]any{"schema": envelopeSchema(r.Response, r.Paged)}}
	}
	if r.Auth == auth.ModeAnonymous && r.Action == ActionSignIn {
		success["headers"] = map[string]any{"Set-Cookie": map[string]any{"description": "The session cookie.", "schema": map[string]any{"type": "string"}}}
	}
	responses[strconv.Itoa(r.Success)] = success
	for _, status := range r.errorStatuses() {
		resp := map[string]any{
			"description": http.StatusText(status),
			"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/ErrorEnvelope"}}},
		}
		if status == http.StatusTooManyRequests {
			resp["headers"] = map[string]any{"Retry-After": map[string]any{"description": "Seconds to wait.", "schema": map[string]any{"type": "integer", "minimum": 1}}}
		}
		responses[strconv.Itoa(status)] = resp
	}
	op["responses"] = responses
	return op
}

func pathParamNames(template string) []string {
	var names []string
	for _, seg := range newRouter([]*Route{{Path: template}}).routes[0].segments {
		if seg.param != "" {
			names = append(names, seg.param)
		}
	}
	return names
}

var metaSchema = object(
	required("requestId", idOf(platform.PrefixRequest)),
	optional("nextCursor", describe(str(1, 0), "Present when more items follow: pass it as cursor.")),
)

func envelopeSchema(data *schema.Schema, paged bool) map[string]any {
	var dataSchema map[string]any
	if data == nil {
		dataSchema = map[string]any{"type": "null"}
	} else {
		dataSchema = data.JSONSchema()
	}
	m := metaSchema
	if !paged {
		m = object(required("requestId", idOf(platform.PrefixRequest)))
	}
	return map[string]any{
		"type":                 "object",
		"required":             []any{"data", "meta"},
		"additionalProperties": false,
		"properties":           map[string]any{"data": dataSchema, "meta": m.JSONSchema()},
	}
}

func errorEnvelopeSchema() map[string]any {
	codes := make([]string, 0, len(platform.Codes()))
	codes = append(codes, platform.Codes()...)
	ref := object(required("kind", str(1, 64)), required("id", str(1, 256)), optional("namespaceId", str(1, 256)))
	detail := object(
		required("path", pattern(`^(/([^~/]|~0|~1)*)*$`, 512)),
		required("code", enum(problem.DetailRequired, problem.DetailUnknownField, problem.DetailInvalidType,
			problem.DetailInvalidFormat, problem.DetailInvalidValue, problem.DetailTooLong, problem.DetailTooDeep,
			problem.DetailPermissionDenied)),
		optional("permission", object(required("principal", ref), required("action", str(1, 64)), required("resource", ref))),
	)
	body := object(
		required("code", enum(codes...)),
		required("message", str(1, 256)),
		optional("details", arrayOf(detail, 1, problem.MaxDetails)),
	)
	return object(
		required("error", body),
		required("meta", object(required("requestId", idOf(platform.PrefixRequest)))),
	).JSONSchema()
}
