// Package kube is the small Kubernetes REST client the Kubernetes drivers use: explicit
// authentication (in-cluster, kubeconfig file with an exact context, token file + CA), verified TLS
// only, a deadline per request, bounded retries for reads and never for writes, server-side apply
// under one field manager, and deletes that always carry a UID precondition.
//
// It speaks JSON over net/http instead of importing client-go: the drivers need a dozen verbs on a
// dozen kinds, and client-go would bring most of k8s.io into the binary and the build (decision 21
// in docs/architecture.md). Objects are plain maps (Object) built by the drivers; reads decode into
// the small typed views the drivers need.
//
// Errors are *APIError (the server answered with a failure status; Message is the server's text and
// must never be logged or returned to API clients) or *TransportError (no answer: refused,
// unreachable, reset, timeout).
package kube
