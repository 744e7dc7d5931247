package metrics

import (
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// methods are the method label values besides OTHER.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Unmatched is the route label of a request that matched no route.
const Unmatched = "unmatched"

// routeTemplate is what a route label may look like: a path template such as
// /namespaces/{namespaceId}/agents/{agentId}:deploy, at most 256 characters.
var routeTemplate = regexp.MustCompile(`^/[A-Za-z0-9/{}:._~-]{0,255}$`)

// excludedRoutes are never counted (health and metrics are excluded).
var excludedRoutes = []string{"/healthz", "/readyz", "/metrics"}

// APIMetrics holds the API families. Its methods are safe for concurrent use.
type APIMetrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	unmatched *prometheus.CounterVec
}

// signInProviders are the provider label values of occ_sign_in_unmatched_callbacks_total.
var signInProviders = []string{"github", "google", "oidc"}

// NewAPIMetrics registers the API families on reg (a NewRegistry(ServiceAPI) registry), labelled
// service="api".
func NewAPIMetrics(reg prometheus.Registerer) *APIMetrics {
	m := &APIMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "occ_http_requests_total",
			Help: "Completed HTTP requests by route template, method and status class.",
		}, []string{"route", "method", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "occ_http_request_duration_seconds",
			Help:    "Duration of completed HTTP requests by route template and method.",
			Buckets: httpBuckets,
		}, []string{"route", "method"}),
	}
	m.unmatched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "occ_sign_in_unmatched_callbacks_total",
		Help: "External sign-in callbacks that matched no pending attempt (never audited: their sender is unauthenticated).",
	}, []string{"provider"})
	for _, p := range signInProviders {
		m.unmatched.WithLabelValues(p)
	}
	withService(reg, ServiceAPI).MustRegister(m.requests, m.duration, m.unmatched)
	return m
}

// ObserveUnmatchedCallback counts one unmatched sign-in callback of provider (github, google or
// oidc; anything else is not counted).
func (m *APIMetrics) ObserveUnmatchedCallback(provider string) {
	if slices.Contains(signInProviders, provider) {
		m.unmatched.WithLabelValues(provider).Inc()
	}
}

// ObserveRequest records one completed request. route is the matched route template ("" or
// anything that is not a template counts as "unmatched"); requests to /healthz, /readyz and
// /metrics, and aborted requests (status <= 0), are not recorded.
func (m *APIMetrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if status <= 0 || slices.Contains(excludedRoutes, route) {
		return
	}
	if !routeTemplate.MatchString(route) {
		route = Unmatched
	}
	method = NormalizeMethod(method)
	m.requests.WithLabelValues(route, method, StatusClass(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(seconds(d))
}

// NormalizeMethod maps an HTTP method to its label: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS or
// OTHER. Methods are case-sensitive (RFC 9110), so "get" is OTHER.
func NormalizeMethod(method string) string {
	if slices.Contains(methods, method) {
		return method
	}
	return "OTHER"
}

// StatusClass maps a status code to 1xx..5xx, or "other" outside 100..599.
func StatusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return string(rune('0'+status/100)) + "xx"
}
