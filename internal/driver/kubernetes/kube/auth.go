package kube

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Authentication modes of Auth.Mode.
const (
	ModeInCluster  = "inCluster"
	ModeKubeconfig = "kubeconfig"
	ModeTokenFile  = "tokenFile"
)

// In-cluster locations (the ServiceAccount token volume Kubernetes mounts into every Pod).
const (
	inClusterTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	inClusterCAPath    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// Auth selects how the client authenticates. Exactly one mode; nothing ambient (no default
// kubeconfig, no current context) is ever used.
type Auth struct {
	Mode string
	// KubeconfigPath and Context (ModeKubeconfig): an absolute file and the exact context name.
	KubeconfigPath string
	Context        string
	// Server, TokenPath and CAPath (ModeTokenFile): the https URL of the API server, a bearer token
	// file (re-read on every request, so a rotated token is picked up) and the CA bundle that
	// signs the server's certificate.
	Server    string
	TokenPath string
	CAPath    string
}

// ConfigError is an authentication setting that cannot work: a missing file, an unknown context,
// an insecure or unsupported option. Path names the setting; Message never contains a credential.
type ConfigError struct {
	Path    string
	Message string
}

func (e *ConfigError) Error() string { return "kube: " + e.Path + ": " + e.Message }

// Environment gives the in-cluster mode the two variables Kubernetes sets in every Pod.
type Environment func(name string) (string, bool)

// credentials is what an Auth resolves to.
type credentials struct {
	server    *url.URL
	tlsConfig *tls.Config
	// token returns the bearer token for one request ("" for client-certificate users).
	token func() (string, error)
}

func (a Auth) resolve(env Environment) (*credentials, error) {
	switch a.Mode {
	case ModeInCluster:
		if env == nil {
			env = func(string) (string, bool) { return "", false }
		}
		host, _ := env("KUBERNETES_SERVICE_HOST")
		port, _ := env("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, &ConfigError{Path: "authentication/mode", Message: "inCluster needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT; the process is not running in a Pod."}
		}
		return fileCredentials("https://"+net.JoinHostPort(host, port), inClusterTokenPath, inClusterCAPath, "authentication")
	case ModeTokenFile:
		return fileCredentials(a.Server, a.TokenPath, a.CAPath, "authentication")
	case ModeKubeconfig:
		return kubeconfigCredentials(a.KubeconfigPath, a.Context)
	}
	return nil, &ConfigError{Path: "authentication/mode", Message: "Unknown authentication mode."}
}

func fileCredentials(server, tokenPath, caPath, path string) (*credentials, error) {
	u, err := serverURL(server, path+"/server")
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(caPath)
	if err != nil {
		return nil, &ConfigError{Path: path + "/caPath", Message: "The CA bundle cannot be read."}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, &ConfigError{Path: path + "/caPath", Message: "The CA bundle holds no PEM certificate."}
	}
	if _, err := readToken(tokenPath); err != nil {
		return nil, &ConfigError{Path: path + "/tokenPath", Message: "The token file cannot be read or is empty."}
	}
	return &credentials{
		server:    u,
		tlsConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		token:     func() (string, error) { return readToken(tokenPath) },
	}, nil
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", errors.New("kube: empty token file")
	}
	return t, nil
}

// serverURL accepts only https URLs with an empty or "/" path and no user info, query or fragment.
func serverURL(raw, path string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return nil, &ConfigError{Path: path, Message: "The API server must be an https URL without path, user info, query or fragment."}
	}
	u.Path = ""
	return u, nil
}

// kubeconfig is the part of the kubeconfig format the client reads.
type kubeconfig struct {
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
			TLSServerName            string `json:"tls-server-name"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Token                 string          `json:"token"`
			TokenFile             string          `json:"tokenFile"`
			ClientCertificate     string          `json:"client-certificate"`
			ClientCertificateData string          `json:"client-certificate-data"`
			ClientKey             string          `json:"client-key"`
			ClientKeyData         string          `json:"client-key-data"`
			Exec                  *map[string]any `json:"exec"`
			AuthProvider          *map[string]any `json:"auth-provider"`
			Username              string          `json:"username"`
		} `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
}

func kubeconfigCredentials(path, contextName string) (*credentials, error) {
	const p = "authentication/kubeconfigPath"
	if !filepath.IsAbs(path) {
		return nil, &ConfigError{Path: p, Message: "The kubeconfig path must be absolute."}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{Path: p, Message: "The kubeconfig file cannot be read."}
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		return nil, &ConfigError{Path: p, Message: "The kubeconfig file is not valid YAML."}
	}
	rel := func(f string) string { // kubeconfig paths are relative to the file
		if f == "" || filepath.IsAbs(f) {
			return f
		}
		return filepath.Join(filepath.Dir(path), f)
	}
	ctxIdx := -1
	for i, c := range kc.Contexts {
		if c.Name == contextName {
			if ctxIdx >= 0 {
				return nil, &ConfigError{Path: "authentication/context", Message: "The kubeconfig defines the context more than once."}
			}
			ctxIdx = i
		}
	}
	if ctxIdx < 0 {
		return nil, &ConfigError{Path: "authentication/context", Message: "The kubeconfig has no context with this name."}
	}
	ctx := kc.Contexts[ctxIdx].Context
	clusterIdx, userIdx := -1, -1
	for i, c := range kc.Clusters {
		if c.Name == ctx.Cluster {
			if clusterIdx >= 0 {
				return nil, &ConfigError{Path: "authentication/context", Message: "The context's cluster is defined more than once."}
			}
			clusterIdx = i
		}
	}
	for i, u := range kc.Users {
		if u.Name == ctx.User {
			if userIdx >= 0 {
				return nil, &ConfigError{Path: "authentication/context", Message: "The context's user is defined more than once."}
			}
			userIdx = i
		}
	}
	if clusterIdx < 0 || userIdx < 0 {
		return nil, &ConfigError{Path: "authentication/context", Message: "The context must name one cluster and one user of the kubeconfig."}
	}
	cl := kc.Clusters[clusterIdx].Cluster
	if cl.InsecureSkipTLSVerify {
		return nil, &ConfigError{Path: "authentication/context", Message: "insecure-skip-tls-verify is refused: the API server's certificate must be verified."}
	}
	u, err := serverURL(cl.Server, "authentication/context")
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cl.TLSServerName}
	var ca []byte
	switch {
	case cl.CertificateAuthorityData != "":
		ca, err = base64.StdEncoding.DecodeString(cl.CertificateAuthorityData)
	case cl.CertificateAuthority != "":
		ca, err = os.ReadFile(rel(cl.CertificateAuthority))
	}
	if err != nil {
		return nil, &ConfigError{Path: "authentication/context", Message: "The cluster's certificate authority cannot be read."}
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, &ConfigError{Path: "authentication/context", Message: "The cluster's certificate authority holds no PEM certificate."}
		}
		tc.RootCAs = pool
	}
	us := kc.Users[userIdx].User
	if us.Exec != nil || us.AuthProvider != nil || us.Username != "" {
		return nil, &ConfigError{Path: "authentication/context", Message: "The user must authenticate with a token, a token file or a client certificate; exec plugins, auth providers and basic auth are not supported."}
	}
	creds := &credentials{server: u, tlsConfig: tc, token: func() (string, error) { return "", nil }}
	switch {
	case us.Token != "":
		tok := us.Token
		creds.token = func() (string, error) { return tok, nil }
	case us.TokenFile != "":
		f := rel(us.TokenFile)
		if _, err := readToken(f); err != nil {
			return nil, &ConfigError{Path: "authentication/context", Message: "The user's token file cannot be read or is empty."}
		}
		creds.token = func() (string, error) { return readToken(f) }
	}
	certPEM, keyPEM, err := pemPair(us.ClientCertificateData, us.ClientCertificate, us.ClientKeyData, us.ClientKey, rel)
	if err != nil {
		return nil, err
	}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, &ConfigError{Path: "authentication/context", Message: "The user's client certificate and key do not form a valid pair."}
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return creds, nil
}

func pemPair(certData, certFile, keyData, keyFile string, rel func(string) string) ([]byte, []byte, error) {
	load := func(data, file string) ([]byte, error) {
		if data != "" {
			return base64.StdEncoding.DecodeString(data)
		}
		if file != "" {
			return os.ReadFile(rel(file))
		}
		return nil, nil
	}
	cert, err1 := load(certData, certFile)
	key, err2 := load(keyData, keyFile)
	if err1 != nil || err2 != nil || (cert == nil) != (key == nil) {
		return nil, nil, &ConfigError{Path: "authentication/context", Message: "The user's client certificate and key must both be readable."}
	}
	return cert, key, nil
}
