// Package oidctest runs a real OpenID provider on loopback for tests: the certified
// github.com/zitadel/oidc/v3 op package (discovery, authorization with PKCE, token endpoint with
// client_secret_basic and client_secret_post, JWKS), with its own RSA keys and users and a login
// step that completes without a form. Tests steer what it does wrong on purpose: a wrong audience,
// an expired ID token, a nonce that is not the one requested, a payload tampered with after
// signing, a rotated key, or no answer at all.
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Fault is something the provider does wrong on purpose.
type Fault int

const (
	// NoFault answers correctly.
	NoFault Fault = iota
	// WrongAudience issues ID tokens for another client.
	WrongAudience
	// ExpiredIDToken issues ID tokens that expired ten minutes ago.
	ExpiredIDToken
	// WrongNonce issues ID tokens whose nonce is not the one requested.
	WrongNonce
	// TamperedIDToken changes the ID token's subject after signing.
	TamperedIDToken
)

// Client is the one OAuth client the provider serves.
type Client struct {
	ID, Secret, RedirectURI string
	// Basic selects client_secret_basic; otherwise client_secret_post.
	Basic bool
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is the provider's issuer URL (http://127.0.0.1:<port>).
	Issuer string
	client Client
	server *http.Server
	ln     net.Listener

	mu      sync.Mutex
	users   map[string]map[string]any // subject → extra ID token claims
	login   string                    // the subject the next authorization signs in
	fault   Fault
	key     *rsa.PrivateKey
	keyID   string
	pending map[string]*authRequest // by id
	codes   map[string]string       // code → request id
}

// Start runs a provider for client on a loopback port until the test ends.
func Start(t testing.TB, client Client) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Issuer: "http://" + ln.Addr().String(), client: client, ln: ln,
		users: map[string]map[string]any{}, pending: map[string]*authRequest{}, codes: map[string]string{}}
	p.RotateKey()
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		t.Fatal(err)
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey, CodeMethodS256: true, AuthMethodPost: true},
		&storage{p: p}, op.StaticIssuer(p.Issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	callback := op.AuthCallbackURL(provider)
	mux := http.NewServeMux()
	// The login step: the "user" is whoever LoginAs named, with no form to fill.
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		p.mu.Lock()
		req, ok := p.pending[id]
		if ok {
			req.subject, req.done, req.authTime = p.login, true, time.Now()
		}
		p.mu.Unlock()
		if !ok {
			http.Error(w, "unknown request", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	})
	mux.Handle("/", p.tamper(provider))
	p.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.server.Serve(ln) }()
	t.Cleanup(p.Stop)
	return p
}

// Stop closes the provider: from now on its port refuses connections.
func (p *Provider) Stop() { _ = p.server.Close() }

// AddUser adds a user with extra ID token claims (such as hd and email_verified).
func (p *Provider) AddUser(subject string, claims map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users[subject] = claims
}

// LoginAs makes subject the user who signs in at the next authorizations.
func (p *Provider) LoginAs(subject string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.login = subject
}

// SetFault makes the provider misbehave (NoFault to stop).
func (p *Provider) SetFault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

func (p *Provider) currentFault() Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault
}

// RotateKey replaces the signing key; the JWKS publishes only the new one.
func (p *Provider) RotateKey() {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.key, p.keyID = key, uuid.NewString()
}

// KeyID is the id of the current signing key.
func (p *Provider) KeyID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keyID
}

// tamper rewrites the token endpoint's ID token for the token faults: TamperedIDToken changes
// the payload's subject and keeps the signature; WrongAudience and ExpiredIDToken change the
// audience or the expiry and sign again with the provider's own key, so only that claim is wrong.
func (p *Provider) tamper(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fault := p.currentFault()
		if r.URL.Path != "/oauth/token" || (fault != TamperedIDToken && fault != WrongAudience && fault != ExpiredIDToken) {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{header: http.Header{}}
		next.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.body, &body); err == nil {
			if raw, ok := body["id_token"].(string); ok {
				switch fault {
				case TamperedIDToken:
					body["id_token"] = rewrite(raw, func(c map[string]any) { c["sub"] = "someone-else" }, nil)
				case WrongAudience:
					body["id_token"] = rewrite(raw, func(c map[string]any) { c["aud"] = []string{"another-client"}; c["azp"] = "another-client" }, p.signer())
				case ExpiredIDToken:
					past := time.Now().Add(-10 * time.Minute).Unix()
					body["id_token"] = rewrite(raw, func(c map[string]any) { c["exp"], c["iat"] = past, past-300 }, p.signer())
				}
			}
			rec.body, _ = json.Marshal(body)
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body)
	})
}

// signer signs with the provider's current key.
func (p *Provider) signer() jose.Signer {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.key}, (&jose.SignerOptions{}).WithHeader("kid", p.keyID).WithType("JWT"))
	if err != nil {
		panic(err)
	}
	return s
}

// rewrite changes the claims of a compact JWT; with a signer it is signed again, without one the
// old signature stays (and no longer matches).
func rewrite(jwt string, change func(map[string]any), signer jose.Signer) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return jwt
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return jwt
	}
	var claims map[string]any
	if json.Unmarshal(payload, &claims) != nil {
		return jwt
	}
	change(claims)
	payload, _ = json.Marshal(claims)
	if signer == nil {
		parts[1] = base64.RawURLEncoding.EncodeToString(payload)
		return strings.Join(parts, ".")
	}
	signed, err := signer.Sign(payload)
	if err != nil {
		return jwt
	}
	out, err := signed.CompactSerialize()
	if err != nil {
		return jwt
	}
	return out
}

type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int)   { r.status = s }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	return len(b), nil
}

// Browser follows a sign-in like a browser: every redirect of the provider and the API is
// followed, with cookies, until a response that is not a redirect or a Location on stop's path.
func Browser(jar http.CookieJar, stop string) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if strings.HasPrefix(r.URL.Path, stop) || len(via) > 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// Drain reads and closes a response body.
func Drain(r *http.Response) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
}

// --- op.Storage -----------------------------------------------------------------------------

type authRequest struct {
	id, clientID, redirectURI, state, nonce, subject string
	scopes                                           []string
	challenge                                        *oidc.CodeChallenge
	done                                             bool
	authTime                                         time.Time
	fault                                            Fault
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return oidc.ResponseTypeCode }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return oidc.ResponseModeQuery }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

func (a *authRequest) GetAudience() []string { return []string{a.clientID} }

func (a *authRequest) GetNonce() string {
	if a.fault == WrongNonce {
		return "not-the-requested-nonce"
	}
	return a.nonce
}

type client struct {
	c        Client
	lifetime time.Duration
}

func (c client) GetID() string                    { return c.c.ID }
func (c client) RedirectURIs() []string           { return []string{c.c.RedirectURI} }
func (c client) PostLogoutRedirectURIs() []string { return nil }
func (c client) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeWeb
}
func (c client) AuthMethod() oidc.AuthMethod {
	if c.c.Basic {
		return oidc.AuthMethodBasic
	}
	return oidc.AuthMethodPost
}
func (c client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c client) GrantTypes() []oidc.GrantType { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c client) LoginURL(id string) string    { return "/login?id=" + id }
func (c client) AccessTokenType() op.AccessTokenType {
	return op.AccessTokenTypeBearer
}
func (c client) IDTokenLifetime() time.Duration { return c.lifetime }
func (c client) DevMode() bool                  { return true }
func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) IsScopeAllowed(string) bool           { return true }
func (c client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c client) ClockSkew() time.Duration             { return 0 }

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

type publicKey struct {
	id  string
	key *rsa.PublicKey
}

func (k publicKey) ID() string                         { return k.id }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return k.key }

var errUnsupported = errors.New("oidctest: not supported")

type storage struct{ p *Provider }

func (s *storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	req := &authRequest{id: uuid.NewString(), clientID: r.ClientID, redirectURI: r.RedirectURI, state: r.State,
		nonce: r.Nonce, scopes: r.Scopes, fault: p.fault}
	if r.CodeChallenge != "" {
		req.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	p.pending[req.id] = req
	return req, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.pending[id]; ok {
		return r, nil
	}
	return nil, errors.New("oidctest: unknown auth request")
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.p.mu.Lock()
	id, ok := s.p.codes[code]
	s.p.mu.Unlock()
	if !ok {
		return nil, errors.New("oidctest: unknown code")
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	delete(s.p.pending, id)
	for code, rid := range s.p.codes {
		if rid == id {
			delete(s.p.codes, code)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return uuid.NewString(), time.Now().Add(5 * time.Minute), nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errUnsupported
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errUnsupported
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrServerError()
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return signingKey{id: s.p.keyID, key: s.p.key}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return []op.Key{publicKey{id: s.p.keyID, key: &s.p.key.PublicKey}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if id != s.p.client.ID {
		return nil, errors.New("oidctest: unknown client")
	}
	return client{c: s.p.client, lifetime: 5 * time.Minute}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	want := sha256.Sum256([]byte(s.p.client.Secret))
	got := sha256.Sum256([]byte(secret))
	if id != s.p.client.ID || want != got {
		return errors.New("oidctest: wrong client secret")
	}
	return nil
}

func (s *storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, subject, _ string, _ []string) error {
	info.Subject = subject
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	for k, v := range s.p.users[subject] {
		if verified, ok := v.(bool); ok && k == "email_verified" {
			// A typed member of the userinfo: an appended claim of that name would be shadowed.
			info.EmailVerified = oidc.Bool(verified)
			continue
		}
		info.AppendClaims(k, v)
	}
	return nil
}

func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errUnsupported
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errUnsupported
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errUnsupported
}

func (s *storage) Health(context.Context) error { return nil }

// String describes the provider for test logs.
func (p *Provider) String() string { return fmt.Sprintf("oidctest provider at %s", p.Issuer) }
