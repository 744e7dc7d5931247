package auth

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/store"
)

// Mode is which credentials a route admits.
type Mode int

const (
	// ModePublic admits everyone and looks at no credential (health, OpenAPI).
	ModePublic Mode = iota
	// ModeAnonymous ignores credentials (password sign-in) but still refuses Authorization.
	ModeAnonymous
	// ModeSessionOptional reads the session cookie only; its absence is not an error
	// (GET /api/auth/session). Service keys never produce a session and are ignored.
	ModeSessionOptional
	// ModeSession requires a browser session; a service key is refused (401).
	ModeSession
	// ModeAny requires a service key or a browser session; the key is checked first and never
	// falls back to the cookie.
	ModeAny
)

// Kind is the kind of credential a request was admitted with.
type Kind int

const (
	KindNone Kind = iota
	KindServiceKey
	KindSession
	// KindCLISession is a person's CLI session (occ login): their own Principal, optionally
	// pinned to one Namespace.
	KindCLISession
)

// Credential is an admitted request's credential. Exactly one of Key, Session and CLI is
// meaningful, as Kind says.
type Credential struct {
	Kind    Kind
	Key     store.ServiceKey
	Session store.Session
	CLI     store.CLISession
}

// NamespaceScope is the Namespace a credential is confined to (a Namespace-scoped key or a
// pinned CLI session), or nil.
func (c Credential) NamespaceScope() *string {
	switch c.Kind {
	case KindServiceKey:
		return c.Key.NamespaceID
	case KindCLISession:
		return c.CLI.NamespaceID
	}
	return nil
}

// Human reports whether the credential admits a person (a browser or a CLI session).
func (c Credential) Human() bool { return c.Kind == KindSession || c.Kind == KindCLISession }

// Account is the person of a human credential.
func (c Credential) Account() store.Account {
	if c.Kind == KindCLISession {
		return c.CLI.Account
	}
	return c.Session.Account
}

// IdentityLookup is the IAM identity lookup of the credential: the human
// Principal by issuer and subject, or the key's ServicePrincipal within the key's scope.
func (c Credential) IdentityLookup(installationID string) iam.IdentityLookup {
	switch c.Kind {
	case KindServiceKey:
		return iam.IdentityLookup{ServicePrincipalID: c.Key.ServicePrincipalID, NamespaceID: c.Key.NamespaceID}
	case KindSession, KindCLISession:
		return iam.IdentityLookup{Issuer: Issuer(installationID), Subject: c.Account().ID}
	}
	return iam.IdentityLookup{}
}

// Issuer is the identity issuer of the human Principals of an Installation.
func Issuer(installationID string) string {
	return "occ:installation:" + installationID + ":better-auth"
}

// AdmissionError is a refused credential (401, or 403 when Forbidden: a valid credential of a kind
// the route refuses). Message is client-safe.
type AdmissionError struct {
	Message   string
	Forbidden bool
}

func (e *AdmissionError) Error() string { return "auth: " + e.Message }

func refuse(message string) error { return &AdmissionError{Message: message} }

// SessionEndedError is a session whose external provider instance is no longer configured: the
// caller ends it (once, audited as PROVIDER_NOT_CONFIGURED) and treats the request as
// unauthenticated.
type SessionEndedError struct {
	SessionID string
	Account   store.Account
}

func (e *SessionEndedError) Error() string {
	return "auth: the session's sign-in provider is not configured"
}

// Admission messages.
const (
	msgAuthorizationHeader = "The Authorization header is not supported; use x-api-key or a session cookie."
	msgKeyInvalid          = "The service key is invalid, expired or revoked."
	msgKeyOnHumanRoute     = "This operation requires a browser session."
	msgSessionInvalid      = "The session is invalid, expired or ended."
	msgSessionKeyMismatch  = "The x-occ-session-key header does not match the session."
	msgRequired            = "Authentication is required."
	msgCLIInvalid          = "The CLI session is invalid, expired or ended. Run occ login again."
	msgOneCredential       = "Send one credential: a service key or a CLI session, not both."
	msgBrowserOnly         = "This operation requires a signed-in browser session."
)

// Admitter admits requests of one Installation.
type Admitter struct {
	InstallationID string
	Secret         []byte
	Cookies        Cookies
	// CLISessions admits x-occ-cli-session (OCC_AUTH_CLI_SESSIONS); disabled, every one is 401.
	CLISessions bool
	// Providers holds the configured external provider instances: a session signed in with any
	// other instance has ended.
	Providers map[string]bool

	keys keyMemory
}

// Admit applies the credential precedence for a route admitting mode:
//  1. an Authorization header is always refused;
//  2. x-api-key is checked first (blank, duplicated, unknown, expired, revoked or another
//     Installation's key: refused, never a fallback to the cookie);
//  3. otherwise the session cookie, looked up in storage every time; a duplicated cookie is
//     refused, and a present x-occ-session-key must match the session.
//
// A refusal is an *AdmissionError; a storage failure is returned as is (the caller answers 503).
func (a *Admitter) Admit(ctx context.Context, db store.DBTX, r *http.Request, mode Mode) (Credential, error) {
	if mode == ModePublic {
		return Credential{}, nil
	}
	if _, present := r.Header["Authorization"]; present {
		return Credential{}, refuse(msgAuthorizationHeader)
	}
	if mode == ModeAnonymous {
		return Credential{}, nil
	}
	if tokens, present := r.Header[http.CanonicalHeaderKey(CLISessionHeader)]; present {
		return a.admitCLISession(ctx, db, r, mode, tokens)
	}
	if keys, present := r.Header[http.CanonicalHeaderKey(APIKeyHeader)]; present && mode != ModeSessionOptional {
		if mode == ModeSession {
			return Credential{}, refuse(msgKeyOnHumanRoute)
		}
		hash, ok := keyHash(keys)
		if !ok {
			return Credential{}, refuse(msgKeyInvalid)
		}
		key, err := store.GetLiveServiceKey(ctx, db, hash)
		return a.ConfirmKey(hash, key, err)
	}

	var tokens []string
	for _, c := range r.Cookies() {
		if c.Name == a.Cookies.Name() {
			tokens = append(tokens, c.Value)
		}
	}
	optional := mode == ModeSessionOptional
	switch {
	case len(tokens) == 0:
		if optional {
			return Credential{}, nil
		}
		return Credential{}, refuse(msgRequired)
	case len(tokens) > 1:
		return Credential{}, refuse(msgSessionInvalid)
	}
	if !wellFormedToken(tokens[0]) {
		if optional {
			return Credential{}, nil
		}
		return Credential{}, refuse(msgSessionInvalid)
	}
	session, err := store.GetLiveSession(ctx, db, HashToken(tokens[0]))
	if errors.Is(err, store.ErrNotFound) {
		if optional {
			return Credential{}, nil
		}
		return Credential{}, refuse(msgSessionInvalid)
	} else if err != nil {
		return Credential{}, err
	}
	if session.ProviderID != nil && !a.Providers[*session.ProviderID] {
		return Credential{}, &SessionEndedError{SessionID: session.ID, Account: session.Account}
	}
	if presented, present := r.Header[http.CanonicalHeaderKey(SessionKeyHeader)]; present {
		if len(presented) != 1 || !wellFormedToken(presented[0]) || !sessionKeyMatches(a.Secret, session.ID, presented[0]) {
			return Credential{}, refuse(msgSessionKeyMismatch)
		}
	}
	return Credential{Kind: KindSession, Session: session}, nil
}

// keyHash is the hash of a presented x-api-key; false when it cannot name a key (blank,
// duplicated, too long).
func keyHash(keys []string) ([]byte, bool) {
	if len(keys) != 1 || keys[0] == "" || len(keys[0]) > 512 {
		return nil, false
	}
	return HashServiceKey(keys[0]), true
}

// RememberedKey returns, without reading storage, the credential of a request whose credential is
// its service key (Admit's precedence, mode ModeAny) when this process admitted that key before.
// A service key row never changes while it lives, so the remembered credential names the key's
// ServicePrincipal and scope; whether the key still lives is not known until the caller confirms
// it with ConfirmKey on GetLiveServiceKey(hash), before acting on the credential (decision 48).
// ok is false when Admit must decide.
func (a *Admitter) RememberedKey(r *http.Request, mode Mode) (cred Credential, hash []byte, ok bool) {
	if mode != ModeAny {
		return Credential{}, nil, false
	}
	if _, present := r.Header["Authorization"]; present {
		return Credential{}, nil, false
	}
	if _, present := r.Header[http.CanonicalHeaderKey(CLISessionHeader)]; present {
		return Credential{}, nil, false
	}
	hash, ok = keyHash(r.Header[http.CanonicalHeaderKey(APIKeyHeader)])
	if !ok {
		return Credential{}, nil, false
	}
	key, ok := a.keys.get(hash)
	if !ok {
		return Credential{}, nil, false
	}
	return Credential{Kind: KindServiceKey, Key: key}, hash, true
}

// ConfirmKey judges the result of GetLiveServiceKey(hash): the key's credential, a refusal (unknown,
// expired, revoked or another Installation's key), or err as is (a storage failure). A confirmed
// key is remembered for RememberedKey; a refused one is forgotten.
func (a *Admitter) ConfirmKey(hash []byte, key store.ServiceKey, err error) (Credential, error) {
	if errors.Is(err, store.ErrNotFound) {
		a.keys.forget(hash)
		return Credential{}, refuse(msgKeyInvalid)
	} else if err != nil {
		return Credential{}, err
	}
	if key.InstallationID != a.InstallationID {
		return Credential{}, refuse(msgKeyInvalid)
	}
	a.keys.remember(hash, key)
	return Credential{Kind: KindServiceKey, Key: key}, nil
}

// keyMemory maps the hashes of admitted service keys to their rows, up to keyMemoryLimit keys;
// when full, remembering a new key forgets an arbitrary one.
type keyMemory struct {
	mu   sync.Mutex
	rows map[string]store.ServiceKey
}

const keyMemoryLimit = 4096

func (m *keyMemory) get(hash []byte) (store.ServiceKey, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key, ok := m.rows[string(hash)]
	return key, ok
}

func (m *keyMemory) remember(hash []byte, key store.ServiceKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[string]store.ServiceKey{}
	}
	if _, known := m.rows[string(hash)]; !known && len(m.rows) >= keyMemoryLimit {
		for h := range m.rows {
			delete(m.rows, h)
			break
		}
	}
	m.rows[string(hash)] = key
}

func (m *keyMemory) forget(hash []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rows, string(hash))
}

// admitCLISession admits x-occ-cli-session: never on browser-only routes (403), never together
// with a service key, never falling back to the cookie.
func (a *Admitter) admitCLISession(ctx context.Context, db store.DBTX, r *http.Request, mode Mode, tokens []string) (Credential, error) {
	if mode == ModeSession || mode == ModeSessionOptional {
		return Credential{}, &AdmissionError{Message: msgBrowserOnly, Forbidden: true}
	}
	if _, present := r.Header[http.CanonicalHeaderKey(APIKeyHeader)]; present {
		return Credential{}, refuse(msgOneCredential)
	}
	if !a.CLISessions || len(tokens) != 1 || !WellFormedCLIToken(tokens[0]) {
		return Credential{}, refuse(msgCLIInvalid)
	}
	s, err := store.GetLiveCLISession(ctx, db, HashToken(tokens[0]))
	if errors.Is(err, store.ErrNotFound) {
		return Credential{}, refuse(msgCLIInvalid)
	} else if err != nil {
		return Credential{}, err
	}
	if s.ParentProviderID != nil && !a.Providers[*s.ParentProviderID] {
		return Credential{}, &SessionEndedError{SessionID: s.ParentSessionID, Account: s.Account}
	}
	return Credential{Kind: KindCLISession, CLI: s}, nil
}
