package devstack

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"
)

// DefaultDockerSocket is the Docker Engine socket used when DOCKER_HOST does not name a unix socket.
const DefaultDockerSocket = "/var/run/docker.sock"

// DockerSocket is the socket the Docker Compute Driver will use: DOCKER_HOST when it is unix://,
// else DefaultDockerSocket. The second result is false when DOCKER_HOST names something else (TCP,
// SSH), which the driver cannot use without configuration.
func DockerSocket(lookup func(string) (string, bool)) (string, bool) {
	host, ok := lookup("DOCKER_HOST")
	if !ok || strings.TrimSpace(host) == "" {
		return DefaultDockerSocket, true
	}
	if rest, found := strings.CutPrefix(host, "unix://"); found && strings.HasPrefix(rest, "/") {
		return rest, true
	}
	return "", false
}

// DockerAnswers reports whether a Docker Engine answers GET /_ping on the unix socket within 2 s.
func DockerAnswers(ctx context.Context, socket string) bool {
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/_ping", nil)
	if err != nil {
		return false
	}
	res, err := client.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}
