// Package signin speaks to the external identity providers people sign in with: GitHub (a GitHub
// App's user login), Google and any OpenID provider. A provider builds the authorization URL of a
// started sign-in and turns the callback's authorization code into the provider's immutable
// subject, or into a denial with a bounded, loggable reason. It knows nothing of accounts,
// sessions or HTTP routes: an identity never creates access, the caller decides what a subject
// may do.
//
// Every provider call of one sign-in shares one deadline, refuses redirects and reads at most
// ResponseLimit bytes. Tokens are used once and discarded; nothing a provider answers is logged.
package signin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"
)

// Provider names, the path segment of their routes.
const (
	GitHub = "github"
	Google = "google"
	OIDC   = "oidc"
)

// Names lists the providers in the order the API shows them.
var Names = []string{GitHub, Google, OIDC}

// Defaults of every provider.
const (
	// Deadline bounds all provider calls of one callback together.
	Deadline = 10 * time.Second
	// ResponseLimit bounds every provider response body.
	ResponseLimit = 64 << 10
)

// Step is the provider call a failure happened at.
type Step string

// Steps. StepDiscovery is ours (upstream never discovers); the others are upstream's.
const (
	StepAuthorization Step = "authorization"
	StepToken         Step = "token"
	StepJWKS          Step = "jwks"
	StepProfile       Step = "profile"
	StepMembership    Step = "membership"
	StepDiscovery     Step = "discovery"
)

// Cause is why a provider gave no usable answer, from a fixed vocabulary: it is logged, so it
// never carries URLs, codes, tokens, bodies or user data.
type Cause string

// Causes.
const (
	CauseConnectRefused    Cause = "connect_refused"
	CauseDNS               Cause = "dns"
	CauseTimeout           Cause = "timeout"
	CauseTLS               Cause = "tls"
	CauseConnectionReset   Cause = "connection_reset"
	CauseNetwork           Cause = "network"
	CauseRedirect          Cause = "redirect"
	CauseHTTPStatus        Cause = "http_status"
	CauseOversized         Cause = "oversized_response"
	CauseMalformed         Cause = "malformed_response"
	CauseProviderError     Cause = "provider_error"
	CauseClientRejected    Cause = "client_rejected"
	CauseMisconfiguredSite Cause = "misconfigured_endpoint"
)

// Failure is the loggable detail of a provider that could not answer.
type Failure struct {
	Step  Step
	Cause Cause
	// Status is the provider's HTTP status for CauseHTTPStatus; 0 otherwise.
	Status int
	// Code is the transport's error code (ECONNREFUSED, ETIMEDOUT, ...) when it has one.
	Code string
}

// Audit reason codes of denied external sign-ins.
const (
	ReasonRejected              = "EXTERNAL_IDENTITY_REJECTED"
	ReasonUnavailable           = "PROVIDER_UNAVAILABLE"
	ReasonMembershipRequired    = "MEMBERSHIP_REQUIRED"
	ReasonMembershipUnavailable = "MEMBERSHIP_UNAVAILABLE"
)

// Denial is a refused exchange: Reason is one of the Reason* codes; Failure is set when the
// provider could not answer (ReasonUnavailable, ReasonMembershipUnavailable).
type Denial struct {
	Reason  string
	Failure *Failure
}

func (d *Denial) Error() string { return "signin: " + d.Reason }

func rejected() error { return &Denial{Reason: ReasonRejected} }

func unavailable(f Failure) error { return &Denial{Reason: ReasonUnavailable, Failure: &f} }

// AsDenial returns the denial an exchange failed with; any other error is a rejection.
func AsDenial(err error) *Denial {
	var d *Denial
	if errors.As(err, &d) {
		return d
	}
	return &Denial{Reason: ReasonRejected}
}

// Identity is what a provider proved about the person: its immutable subject. Email and names
// are never read as identity.
type Identity struct {
	Subject string
}

// Provider is one configured provider instance.
type Provider interface {
	// Name is GitHub, Google or OIDC.
	Name() string
	// InstanceID names the provider instance, such as github:<sha-256 of the client id>. A new
	// client id (or OIDC issuer) is a new instance: its identities are attached anew and the old
	// instance's sessions end.
	InstanceID() string
	// AttemptKey also changes with the client secret, so rotating it voids pending attempts.
	AttemptKey() string
	// AuthorizationURL is where the browser goes: the provider's login with state, the PKCE
	// challenge of verifier and, for OpenID providers, nonce. It fails only when the endpoints
	// must be discovered and the provider cannot answer (a *Denial).
	AuthorizationURL(ctx context.Context, state, verifier, nonce string) (string, error)
	// Exchange trades the callback's code for the subject, under one Deadline. A refusal is a
	// *Denial.
	Exchange(ctx context.Context, code, verifier, nonce string) (Identity, error)
}

// Options are what every provider shares.
type Options struct {
	// CallbackURL is OCC_AUTH_BASE_URL + /api/auth/providers/<name>/callback.
	CallbackURL string
	// Transport carries provider calls; nil is a copy of http.DefaultTransport without proxy
	// settings from the environment.
	Transport http.RoundTripper
	// Deadline overrides Deadline (tests shorten it).
	Deadline time.Duration
}

func (o Options) deadline() time.Duration {
	if o.Deadline > 0 {
		return o.Deadline
	}
	return Deadline
}

func (o Options) transport() http.RoundTripper {
	if o.Transport != nil {
		return o.Transport
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return t
}

func digest(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// InstanceID of a provider named name configured with the identifying values (the client id, and
// the issuer for OIDC).
func InstanceID(name string, identifying ...string) string {
	return name + ":" + digest(identifying...)
}
