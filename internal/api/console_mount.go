package api

import (
	"net/http"
	"strings"
)

// The web console shares the API's listener: "/", "/console" and everything below "/console/"
// go to Config.Console when it is set. Those paths hold no API route, so the route table is
// untouched; the request still gets its request id, its http.completed line and the network
// rules of the API.

// ConsoleRoute is the route label of console requests in logs and metrics.
const ConsoleRoute = "/console/*"

func consolePath(escapedPath string) bool {
	return escapedPath == "/" || escapedPath == "/console" || strings.HasPrefix(escapedPath, "/console/")
}

// serveConsole answers a console path; it reports false when the console is not mounted or the
// path is not the console's.
func (s *Server) serveConsole(w http.ResponseWriter, r *http.Request, c *call) bool {
	if s.cfg.Console == nil || !consolePath(r.URL.EscapedPath()) {
		return false
	}
	if err := s.checkNetwork(r); err != nil {
		s.writeError(w, c, s.classify(c, err))
		return true
	}
	s.cfg.Console.ServeHTTP(w, r)
	return true
}
