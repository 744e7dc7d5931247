package pgtest

import "context"

// ServerOptions shape a private server started by StartServer.
type ServerOptions struct {
	// Durable starts the server with PostgreSQL's durable defaults (fsync, synchronous_commit and
	// full_page_writes on) instead of the test settings (all three off). Everything else —
	// max_connections=300, shared_buffers=128MB, local trust authentication — is the same.
	Durable bool
}

// StartServer starts a private PostgreSQL cluster outside `go test` (benchmarks, tools) from the
// machine's server binaries, as pgtest.Main does for tests, and returns a superuser URL on its
// database "postgres" and a function that stops the server and removes its data directory.
// Without Durable it is exactly the server the tests get.
func StartServer(ctx context.Context, o ServerOptions) (adminURL string, stop func(), err error) {
	return startPrivateServer(ctx, o.Durable)
}
