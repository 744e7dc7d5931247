// Package docker is the development Compute Driver (implementation "docker", default selection id
// compute-docker-development): one labelled bridge network per Namespace on the local Docker
// Engine. It cannot be selected in production.
//
// It refuses every revision: the public deployment API requires Harness authentication and this
// driver supports none (UnsupportedError HARNESS_AUTH_UNSUPPORTED), so Docker cannot
// deploy Agents. StopRevision and RetireRevision are no-ops, because it never starts a revision.
//
// # Why no Docker SDK
//
// The driver speaks the Engine API over its Unix socket with net/http instead of importing the
// moby client. It needs five endpoints (ping, version, list, create and remove networks); the SDK
// would pull in a large dependency tree (and its API-version negotiation) for them. Requests use
// unversioned paths, so the engine serves its own current API version; the fields read here are
// stable across versions and Podman's Docker-compatible socket.
//
// # Engine requests
//
// The socket is the configuration's socket, else DOCKER_HOST when it is a unix:// URL, else
// /var/run/docker.sock. Every request has a timeout (requestTimeoutMs, default 10 s). Response
// bodies are read only to decode the fields the driver needs; they never appear in an error, a
// reason or a log. Failures are classified as upstream does: a timeout, a socket failure, HTTP 429
// or 5xx is a TransientDependencyError{Dependency: "docker", Code: DOCKER_ENGINE_UNAVAILABLE};
// HTTP 400/401/403/404/409/422 and ownership conflicts are permanent; other statuses are
// retryable. Namespace operations report these classes in their observation.
//
// # Namespace networks
//
// Name: oce-<slug(namespace id), at most 32 characters>-<first 12 hex digits of sha256(namespace
// id)>. Labels: org.openclaw.enterprise.managed=true,
// org.openclaw.enterprise.compute-driver=docker, org.openclaw.enterprise.namespace-id=<namespace
// id>. EnsureNamespace creates the network or finds it by its exact name and verifies those labels;
// a same-named network without them is refused (NAMESPACE_NETWORK_CONFLICT, permanent) and never
// adopted or deleted. Ensure and delete of one Namespace are serialized inside the process (the
// worker's lanes serialize them across processes). Engines before Docker 25 do not enforce unique
// network names, so a create that timed out on our side can still land later: every ensure that
// finds several labelled copies keeps the lowest network id and removes the others, and
// DeleteNamespace verifies the labels of every copy and removes them all. A missing network counts
// as deleted.
//
// Upstream's deleteNamespace also force-removes the Namespace's labelled containers and workspace
// volumes. This driver never creates either, so it removes none; a network that still has
// containers attached is refused by the engine, and the deletion fails without removing anything
// else, for the operator to resolve and retry. An existingNamespace selection is refused, as
// upstream (EXISTING_NAMESPACE_UNSUPPORTED).
package docker
