package api

import (
	"context"
	"time"

	"github.com/openclaw/occ/internal/platform"
)

type healthStatus struct {
	Status string `json:"status"`
}

// liveness is GET /healthz: the status and the build version, so that a client can tell which
// server it talks to without credentials.
type liveness struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// healthz answers while the process serves.
func (s *Server) healthz(_ context.Context, c *call) error {
	c.respond(0, liveness{Status: "ok", Version: s.cfg.Version})
	return nil
}

// readyz answers when PostgreSQL answers within two seconds.
func (s *Server) readyz(ctx context.Context, c *call) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return platform.Unavailable(err)
	}
	c.respond(0, healthStatus{Status: "ok"})
	return nil
}

// openAPI serves the document bare: OpenAPI tools read it as is.
func (s *Server) openAPI(_ context.Context, c *call) error {
	c.raw = s.openapi
	return nil
}
