package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/platform"
)

// credentials authenticate the client's requests: a service key file, or the session occ login
// stored for the origin (used when no key file is given by flag, environment or context).
type credentials interface {
	// apply adds the credential to a request.
	apply(req *http.Request)
	// unauthorizedHint is the way out when the API answers 401.
	unauthorizedHint(s *clientSession) string
	// describe is what occ whoami and occ config get-contexts print.
	describe() credentialInfo
}

// credentialInfo is the non-secret description of the credentials in use.
type credentialInfo struct {
	Kind               string `json:"kind"`
	File               string `json:"file,omitempty"`
	ID                 string `json:"id,omitempty"`
	Name               string `json:"name,omitempty"`
	ServicePrincipalID string `json:"servicePrincipalId,omitempty"`
	NamespaceID        string `json:"namespaceId,omitempty"`
	ExpiresAt          string `json:"expiresAt,omitempty"`
}

// serviceKeyDocument is a service key issuance file: what occ bootstrap and occ service-key
// create write (the issuance response, data.key included).
type serviceKeyDocument struct {
	Data struct {
		ID                 string `json:"id"`
		ServicePrincipalID string `json:"servicePrincipalId"`
		NamespaceID        string `json:"namespaceId,omitempty"`
		Name               string `json:"name"`
		ExpiresAt          string `json:"expiresAt"`
		Key                string `json:"key"`
	} `json:"data"`
}

// serviceKeyCredentials send data.key of a key file as x-api-key.
type serviceKeyCredentials struct {
	file string
	doc  serviceKeyDocument
}

func (c *serviceKeyCredentials) apply(req *http.Request) { req.Header.Set("x-api-key", c.doc.Data.Key) }

func (c *serviceKeyCredentials) describe() credentialInfo {
	return credentialInfo{Kind: "service-key", File: c.file, ID: c.doc.Data.ID, Name: c.doc.Data.Name,
		ServicePrincipalID: c.doc.Data.ServicePrincipalID, NamespaceID: c.doc.Data.NamespaceID, ExpiresAt: c.doc.Data.ExpiresAt}
}

func (c *serviceKeyCredentials) unauthorizedHint(*clientSession) string {
	id := orDash(c.doc.Data.ID)
	state := "revoked, or expired"
	if t, ok := platform.ParseTime(c.doc.Data.ExpiresAt); ok && !t.After(time.Now()) {
		state = "expired (" + c.doc.Data.ExpiresAt + ")"
	}
	return fmt.Sprintf("the service key %s in %s was refused: it is %s. occ dev issues a fresh development key when it "+
		"starts; otherwise issue a new one with occ service-key create.", sanitize(id), c.file, state)
}

// loadServiceKeyCredentials reads a key file.
func loadServiceKeyCredentials(path string) (*serviceKeyCredentials, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	doc, err := readServiceKey(abs)
	if err != nil {
		return nil, err
	}
	return &serviceKeyCredentials{file: abs, doc: doc}, nil
}

// readServiceKey reads and checks a service key issuance file.
func readServiceKey(path string) (serviceKeyDocument, error) {
	var doc serviceKeyDocument
	f, err := os.Open(path)
	if err != nil {
		return doc, fmt.Errorf("cannot read the service key file %s: %v", path, osReason(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return doc, fmt.Errorf("cannot read the service key file %s: %v", path, osReason(err))
	}
	if len(data) > maxFileBytes {
		return doc, fmt.Errorf("the service key file %s is larger than 64 KiB", path)
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Data.Key == "" || strings.ContainsAny(doc.Data.Key, "\r\n") ||
		strings.TrimSpace(doc.Data.Key) != doc.Data.Key {
		return doc, fmt.Errorf("the service key file %s is not a service key issuance document (data.key)", path)
	}
	return doc, nil
}

// contextCredentials are the credentials of a context in the config file. A context without
// them uses the session occ login stored for its URL, kept in its own file per origin.
type contextCredentials struct {
	// ServiceKeyFile is the path of a service key issuance file (absolute).
	ServiceKeyFile string `json:"serviceKeyFile,omitempty"`
}

// load returns the credentials the context names, nil when it names none.
func (c contextCredentials) load() (credentials, error) {
	if c.ServiceKeyFile == "" {
		return nil, nil
	}
	creds, err := loadServiceKeyCredentials(c.ServiceKeyFile)
	if err != nil {
		return nil, err
	}
	return creds, nil
}

// summary is the CREDENTIALS cell of get-contexts.
func (c contextCredentials) summary() string {
	if c.ServiceKeyFile != "" {
		return "service-key-file " + c.ServiceKeyFile
	}
	return ""
}

// cliSessionCredentials send the token of a stored occ login session.
type cliSessionCredentials struct {
	stored storedSession
}

func (c *cliSessionCredentials) apply(req *http.Request) {
	req.Header.Set(cliSessionHeader, c.stored.Token)
}

func (c *cliSessionCredentials) describe() credentialInfo {
	info := credentialInfo{Kind: "cli-session", ID: c.stored.SessionID, Name: c.stored.Email, ExpiresAt: c.stored.ExpiresAt}
	if c.stored.NamespaceID != nil {
		info.NamespaceID = *c.stored.NamespaceID
	}
	return info
}

func (c *cliSessionCredentials) unauthorizedHint(*clientSession) string {
	return "the CLI session stored for this origin has ended (expired, signed out or revoked). Run occ login again."
}
