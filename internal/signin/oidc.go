package signin

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/openclaw/occ/internal/settings"
)

// Google's documented OpenID endpoints, used as fixed values (Google is never discovered).
var GoogleEndpoints = Endpoints{
	Issuer:           "https://accounts.google.com",
	AuthorizationURL: "https://accounts.google.com/o/oauth2/v2/auth",
	TokenURL:         "https://oauth2.googleapis.com/token",
	JWKSURL:          "https://www.googleapis.com/oauth2/v3/certs",
}

// Endpoints of an OpenID provider.
type Endpoints struct {
	Issuer, AuthorizationURL, TokenURL, JWKSURL string
}

// minRSABits is the smallest signing key accepted from a JWKS.
const minRSABits = 2048

// subjectShape is the subject an OpenID identity may have: 1..255 printable ASCII, no spaces
// (the attach route's rule).
var subjectShape = regexp.MustCompile(`^[!-~]{1,255}$`)

// openID is the OpenID Connect code flow with PKCE and a nonce, shared by generic OIDC and Google.
type openID struct {
	name       string
	instanceID string
	attemptKey string
	clientID   string
	secret     string
	authStyle  oauth2.AuthStyle
	scopes     []string
	issuer     string
	opts       Options
	// allowedDomains (Google): the ID token's hd must be one of them and its email verified.
	allowedDomains []string

	mu        sync.Mutex
	endpoints *Endpoints // nil until discovered
	// retryAt bounds rediscovery after a failure, so public requests cannot make the API hammer
	// an unavailable provider.
	retryAt time.Time
}

// NewOIDC is a generic OpenID provider. Without explicit URLs in cfg, the endpoints are discovered
// from the issuer on first use (and again after a failure, at most every ten seconds); discovered
// endpoints must share the issuer's origin.
func NewOIDC(cfg settings.OIDCSignIn, opts Options) Provider {
	p := &openID{
		name: OIDC, instanceID: InstanceID(OIDC, cfg.Issuer, cfg.ClientID), clientID: cfg.ClientID,
		secret: cfg.ClientSecret, scopes: []string{oidc.ScopeOpenID}, issuer: cfg.Issuer, opts: opts,
		authStyle: oauth2.AuthStyleInParams,
	}
	if cfg.TokenAuth == settings.TokenAuthClientSecretBasic {
		p.authStyle = oauth2.AuthStyleInHeader
	}
	if !cfg.Discovered() {
		p.endpoints = &Endpoints{Issuer: cfg.Issuer, AuthorizationURL: cfg.AuthorizationURL, TokenURL: cfg.TokenURL, JWKSURL: cfg.JWKSURL}
	}
	p.attemptKey = p.instanceID + ":" + digest(cfg.ClientSecret)
	return p
}

// NewGoogle is Google sign-in against endpoints (GoogleEndpoints in production).
func NewGoogle(cfg settings.GoogleSignIn, endpoints Endpoints, opts Options) Provider {
	p := &openID{
		name: Google, instanceID: InstanceID(Google, cfg.ClientID), clientID: cfg.ClientID, secret: cfg.ClientSecret,
		scopes: []string{oidc.ScopeOpenID, "email"}, issuer: endpoints.Issuer, opts: opts, endpoints: &endpoints,
		authStyle: oauth2.AuthStyleInParams, allowedDomains: cfg.AllowedDomains,
	}
	p.attemptKey = p.instanceID + ":" + digest(cfg.ClientSecret)
	return p
}

func (p *openID) Name() string       { return p.name }
func (p *openID) InstanceID() string { return p.instanceID }
func (p *openID) AttemptKey() string { return p.attemptKey }

func (p *openID) knownEndpoints() *Endpoints {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.endpoints
}

// resolve returns the endpoints, discovering them when needed.
func (p *openID) resolve(ctx context.Context) (Endpoints, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endpoints != nil {
		return *p.endpoints, nil
	}
	if time.Now().Before(p.retryAt) {
		return Endpoints{}, unavailable(Failure{Step: StepDiscovery, Cause: CauseNetwork})
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.deadline())
	defer cancel()
	client, probe := p.opts.boundedClient()
	discovered, err := oidc.NewProvider(oidc.ClientContext(ctx, client), p.issuer)
	if err != nil {
		p.retryAt = time.Now().Add(10 * time.Second)
		var urlErr *url.Error
		var mismatch *oidc.IssuerMismatchError
		_, oversized, status := probe.snapshot()
		switch {
		case errors.As(err, &urlErr):
			return Endpoints{}, unavailable(transportFailure(err, StepDiscovery, probe))
		case oversized:
			return Endpoints{}, unavailable(Failure{Step: StepDiscovery, Cause: CauseOversized})
		case errors.As(err, &mismatch):
			return Endpoints{}, unavailable(Failure{Step: StepDiscovery, Cause: CauseMisconfiguredSite})
		case status >= 300:
			return Endpoints{}, unavailable(Failure{Step: StepDiscovery, Cause: CauseHTTPStatus, Status: status})
		}
		return Endpoints{}, unavailable(Failure{Step: StepDiscovery, Cause: CauseMalformed})
	}
	var doc struct {
		JWKSURL string `json:"jwks_uri"`
	}
	_ = discovered.Claims(&doc)
	e := Endpoints{Issuer: p.issuer, AuthorizationURL: discovered.Endpoint().AuthURL, TokenURL: discovered.Endpoint().TokenURL, JWKSURL: doc.JWKSURL}
	// A discovery document must not send the token exchange or key reads elsewhere.
	for _, u := range []string{e.AuthorizationURL, e.TokenURL, e.JWKSURL} {
		if !sameOrigin(u, p.issuer) {
			p.retryAt = time.Now().Add(10 * time.Second)
			return Endpoints{}, unavailable(Failure{Step: StepDiscovery, Cause: CauseMisconfiguredSite})
		}
	}
	p.endpoints = &e
	return e, nil
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host) &&
		ua.User == nil && ua.RawQuery == "" && ua.Fragment == "" && ua.Host != ""
}

func (p *openID) config(e Endpoints) *oauth2.Config {
	return &oauth2.Config{
		ClientID: p.clientID, ClientSecret: p.secret, RedirectURL: p.opts.CallbackURL, Scopes: p.scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.AuthorizationURL, TokenURL: e.TokenURL, AuthStyle: p.authStyle},
	}
}

func (p *openID) AuthorizationURL(ctx context.Context, state, verifier, nonce string) (string, error) {
	e, err := p.resolve(ctx)
	if err != nil {
		return "", err
	}
	return p.config(e).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)), nil
}

// KnownAuthorizationURL is the authorization endpoint without any provider call: "" while it is
// not discovered yet.
func KnownAuthorizationURL(p Provider) string {
	if o, ok := p.(*openID); ok {
		if e := o.knownEndpoints(); e != nil {
			return e.AuthorizationURL
		}
	}
	return ""
}

// Discover resolves an OpenID provider's endpoints now (a no-op for other providers), so the first
// sign-in does not wait for it; a failure is retried on use.
func Discover(ctx context.Context, p Provider) error {
	if o, ok := p.(*openID); ok {
		_, err := o.resolve(ctx)
		return err
	}
	return nil
}

func (p *openID) Exchange(ctx context.Context, code, verifier, nonce string) (Identity, error) {
	e, err := p.resolve(ctx)
	if err != nil {
		return Identity{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.deadline())
	defer cancel()
	client, probe := p.opts.boundedClient()
	tok, err := p.config(e).Exchange(withClient(ctx, client), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Identity{}, tokenFailure(err, probe)
	}
	rawIDToken, _ := tok.Extra("id_token").(string)
	if rawIDToken == "" {
		return Identity{}, unavailable(Failure{Step: StepToken, Cause: CauseMalformed})
	}
	// The keys are read on every callback, so a rotation at the provider needs no restart here.
	keys, err := p.keys(ctx, e.JWKSURL)
	if err != nil {
		return Identity{}, err
	}
	verifier2 := oidc.NewVerifier(e.Issuer, &oidc.StaticKeySet{PublicKeys: keys},
		&oidc.Config{ClientID: p.clientID, SupportedSigningAlgs: []string{oidc.RS256}})
	idToken, err := verifier2.Verify(ctx, rawIDToken)
	if err != nil {
		return Identity{}, rejected()
	}
	if idToken.Nonce != nonce || !subjectShape.MatchString(idToken.Subject) {
		return Identity{}, rejected()
	}
	if len(p.allowedDomains) > 0 {
		var claims struct {
			HostedDomain  string `json:"hd"`
			EmailVerified bool   `json:"email_verified"`
		}
		if err := idToken.Claims(&claims); err != nil || !claims.EmailVerified ||
			!slices.Contains(p.allowedDomains, strings.ToLower(claims.HostedDomain)) {
			return Identity{}, rejected()
		}
	}
	return Identity{Subject: idToken.Subject}, nil
}

// keys reads the provider's RSA signing keys of at least minRSABits.
func (p *openID) keys(ctx context.Context, jwksURL string) ([]crypto.PublicKey, error) {
	var set jose.JSONWebKeySet
	status, err := p.opts.getJSON(ctx, StepJWKS, jwksURL, nil, &set)
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		return nil, unavailable(Failure{Step: StepJWKS, Cause: CauseHTTPStatus, Status: status})
	}
	var keys []crypto.PublicKey
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if rsaKey, ok := k.Key.(*rsa.PublicKey); ok && rsaKey.N.BitLen() >= minRSABits {
			keys = append(keys, rsaKey)
		}
	}
	if len(keys) == 0 {
		return nil, unavailable(Failure{Step: StepJWKS, Cause: CauseMalformed})
	}
	return keys, nil
}

func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("signin: trailing data")
	}
	return nil
}
