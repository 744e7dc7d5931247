package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
)

// Who the client is, and the human accounts of the Installation: occ whoami, occ account create,
// occ version (client and server).

// whoamiView is what occ whoami prints.
type whoamiView struct {
	Context     string         `json:"context,omitempty"`
	ConfigFile  string         `json:"configFile,omitempty"`
	URL         string         `json:"url"`
	Namespace   string         `json:"namespace,omitempty"`
	Credentials credentialInfo `json:"credentials"`
	Accepted    bool           `json:"accepted"`
}

func newWhoamiCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the context, URL and credentials in use, and whether the API accepts them",
		Args:  cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error {
			v := whoamiView{Context: s.contextName, URL: s.base, Namespace: s.namespaceRef, Credentials: s.creds.describe()}
			if v.Context != "" {
				v.ConfigFile = clientConfigPath(env)
			}
			// Any key may list Namespaces (the list is filtered), so this asks only "am I known?".
			_, err := s.call(http.MethodGet, "/namespaces?limit=1", nil)
			switch {
			case err == nil:
				v.Accepted = true
			case isAPIError(err, http.StatusUnauthorized, ""):
			default:
				return s.fail(err)
			}
			if s.structured() {
				data, _ := json.Marshal(v)
				if err := s.printStructured(data); err != nil {
					return err
				}
			} else {
				c := v.Credentials
				lines := [][2]string{{"Context", orDash(v.Context)}}
				if v.ConfigFile != "" {
					lines[0][1] += " (" + v.ConfigFile + ")"
				}
				lines = append(lines, [2]string{"URL", v.URL})
				scope := "the Installation"
				if c.NamespaceID != "" {
					scope = "Namespace " + c.NamespaceID
				}
				lines = append(lines,
					[2]string{"Credentials", fmt.Sprintf("service key %s %q (%s)", orDash(c.ID), c.Name, c.File)},
					[2]string{"Identity", "ServicePrincipal " + orDash(c.ServicePrincipalID)},
					[2]string{"Scope", scope},
					[2]string{"Expires", orDash(c.ExpiresAt)},
					[2]string{"Namespace", orDash(v.Namespace)})
				accepted := "yes"
				if !v.Accepted {
					accepted = "no: the API answered 401"
				}
				lines = append(lines, [2]string{"Accepted", accepted})
				for _, l := range lines {
					fmt.Fprintf(env.Stdout, "%-12s %s\n", l[0]+":", sanitize(l[1]))
				}
			}
			if !v.Accepted {
				return s.fail(&apiError{Status: http.StatusUnauthorized, Code: "UNAUTHENTICATED", Message: "The API refused the credentials."})
			}
			return nil
		}),
	}
	addClientFlags(cmd)
	return cmd
}

// versionView is what occ version prints.
type versionView struct {
	Client string `json:"clientVersion"`
	Server string `json:"serverVersion,omitempty"`
	URL    string `json:"url,omitempty"`
}

func newVersionCommand(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary and of the API it talks to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionView{Client: env.Version}
			var problem error
			var s *clientSession
			if versionHasURL(env, cmd) {
				var err error
				if s, err = newUnauthenticatedSession(env, cmd); err != nil {
					fmt.Fprintf(env.Stdout, "Client: %s\n", v.Client)
					return err
				}
				v.URL = s.base
				var health struct {
					Status  string `json:"status"`
					Version string `json:"version"`
				}
				if err := s.getInto("/healthz", &health); err != nil {
					problem = err
				} else if v.Server = health.Version; v.Server == "" {
					v.Server = "unknown (the server does not say)"
				}
			}
			output := flagValue(cmd, "output")
			if output == outputJSON || output == outputYAML {
				data, _ := json.Marshal(v)
				out := &clientSession{env: env, output: output}
				if err := out.printStructured(data); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(env.Stdout, "Client: %s\n", v.Client)
				switch {
				case v.URL == "":
					fmt.Fprintln(env.Stdout, "Server: no API URL (pass --url, set OCC_URL or select a context)")
				case problem == nil:
					fmt.Fprintf(env.Stdout, "Server: %s (%s)\n", sanitize(v.Server), v.URL)
				}
			}
			if problem != nil {
				return s.fail(problem)
			}
			return nil
		},
	}
	addClientFlags(cmd)
	return cmd
}

// versionHasURL reports whether a flag, the environment or a context names an API URL: without
// one, occ version prints the client's version only.
func versionHasURL(env Env, cmd *cobra.Command) bool {
	if raw, given := setting(env, cmd, "url", "OCC_URL"); given && raw != "" {
		return true
	}
	quiet := env
	quiet.Stderr = io.Discard
	selected, err := selectContext(quiet, cmd)
	return err != nil || selected.URL != ""
}

// --- account ------------------------------------------------------------------------------------

// sessionCredentials are a person's browser session, obtained by signing in with email and
// password for one command. Cookie-authenticated writes carry the API's own origin.
type sessionCredentials struct {
	cookies    []*http.Cookie
	sessionKey string
	origin     string
}

func (c *sessionCredentials) apply(req *http.Request) {
	for _, ck := range c.cookies {
		req.AddCookie(ck)
	}
	if c.sessionKey != "" {
		req.Header.Set("x-occ-session-key", c.sessionKey)
	}
	req.Header.Set("Origin", c.origin)
}

func (c *sessionCredentials) unauthorizedHint(*clientSession) string {
	return "the session ended; sign in again."
}

func (c *sessionCredentials) describe() credentialInfo { return credentialInfo{Kind: "session"} }

// signIn starts a session with email and password (POST /api/auth/sign-in/email).
func (s *clientSession) signIn(email, password string) (*sessionCredentials, error) {
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	ctx, cancel := context.WithTimeout(s.cmd.Context(), s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/api/auth/sign-in/email", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", s.base)
	res, err := s.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %v", s.base, errors.Unwrap(err))
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes))
	if res.StatusCode != http.StatusOK {
		e := &apiError{Status: res.StatusCode, Code: "-", Message: http.StatusText(res.StatusCode), NotOCC: true}
		var doc struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &doc) == nil && doc.Error.Code != "" {
			e.Code, e.Message, e.NotOCC = doc.Error.Code, doc.Error.Message, false
		}
		e.hint = "the sign-in (--sign-in-email) was refused."
		return nil, e
	}
	var doc struct {
		Data struct {
			SessionKey string `json:"sessionKey"`
		} `json:"data"`
	}
	_ = json.Unmarshal(raw, &doc)
	return &sessionCredentials{cookies: res.Cookies(), sessionKey: doc.Data.SessionKey, origin: s.base}, nil
}

func newAccountCommand(env Env) *cobra.Command {
	group, _ := clientGroup("account", "Create password accounts for people (needs a person's session)")
	var name, roleID, passwordFile, signInEmail, signInPasswordFile string
	create := &cobra.Command{
		Use:   "create EMAIL --password-file FILE --sign-in-email ADMIN --sign-in-password-file FILE [--name NAME] [--role-id ROLE]",
		Short: "Create a password account and its Principal, signed in as an administrator for this one request",
		Long: `Creating an account needs a person's session with installation:administer: a service key
is refused (401). Until occ login exists, this command signs in with --sign-in-email and the
password in --sign-in-password-file, creates the account, and signs out again. The new account's
password comes from --password-file. Either file may be - (standard input), not both. With
--role-id the Installation Role is bound to the new Principal on the Installation.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := newUnauthenticatedSession(env, cmd)
			if err != nil {
				return err
			}
			if passwordFile == "" || signInEmail == "" || signInPasswordFile == "" {
				return usageError(env, "--password-file, --sign-in-email and --sign-in-password-file are required (a service key cannot create accounts).")
			}
			if passwordFile == "-" && signInPasswordFile == "-" {
				return usageError(env, "only one of --password-file and --sign-in-password-file can be - (standard input).")
			}
			password, err := readPassword(env, "--password-file", passwordFile)
			if err != nil {
				return err
			}
			adminPassword, err := readPassword(env, "--sign-in-password-file", signInPasswordFile)
			if err != nil {
				return err
			}
			session, err := s.signIn(signInEmail, adminPassword)
			if err != nil {
				return s.fail(err)
			}
			s.creds = session
			defer func() { _, _ = s.call(http.MethodPost, "/api/auth/sign-out", nil) }()
			body := map[string]any{"email": args[0], "password": password}
			if name != "" {
				body["name"] = name
			}
			if roleID != "" {
				body["roleId"] = roleID
			}
			raw, _ := json.Marshal(body)
			data, err := s.do(http.MethodPost, "/api/auth/accounts", raw)
			if err != nil {
				return err
			}
			return s.printItemOf(data, tableSpec{columns: []column{col("ID", "id"), col("EMAIL", "email"), col("NAME", "name"),
				col("PRINCIPAL", "principalId")}})
		},
	}
	f := create.Flags()
	f.StringVar(&name, "name", "", "display name (default: the email)")
	f.StringVar(&roleID, "role-id", "", "an Installation Role to bind to the new Principal")
	f.StringVar(&passwordFile, "password-file", "", "file with the new account's password (12 to 128 characters; - for standard input)")
	f.StringVar(&signInEmail, "sign-in-email", "", "the administrator to sign in as for this request")
	f.StringVar(&signInPasswordFile, "sign-in-password-file", "", "file with the administrator's password (- for standard input)")
	group.AddCommand(create)
	return group
}

// readPassword reads a password file: its first line, without the line end.
func readPassword(env Env, flag, path string) (string, error) {
	data, _, err := readInput(env, path, 4096)
	if err != nil {
		return "", usageError(env, "%s: %v.", flag, err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", usageError(env, "%s: the password is empty.", flag)
	}
	return line, nil
}
