// Package api is OCC's HTTP API: one route table (table.go) from which routing, credential
// admission, authorization, closed-schema request validation and the OpenAPI 3.1 document are all
// derived; the request pipeline and envelopes (server.go, call.go); the decoders (decode.go,
// schema.go); and the handlers (h_*.go).
//
// Every handler runs in one transaction that holds its authorization decisions, its mutation, its
// audit event and its controller work; a denial is audited in its own transaction after the
// request's transaction rolled back. Dependency failures are 503 DEPENDENCY_UNAVAILABLE and never
// reveal their cause. See docs/api.md.
package api
