package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/platform"
)

// `occ login`, `occ logout` and `occ auth status`: a person's CLI session. The person approves the
// sign-in in a browser where they are signed in to the console; the CLI receives a session that
// acts with their own current permissions and never outlives that browser session. The session is
// kept in one 0600 file per API origin under the configuration directory; an explicit service key
// always wins over it.

const (
	cliSessionHeader  = "x-occ-cli-session"
	maxLoginDuration  = 11 * time.Minute
	slowDownIncrement = 5 * time.Second
)

// storedSession is the file occ login writes for one origin.
type storedSession struct {
	Origin      string  `json:"origin"`
	Token       string  `json:"token"`
	SessionID   string  `json:"sessionId"`
	UserID      string  `json:"userId"`
	Email       string  `json:"email"`
	ExpiresAt   string  `json:"expiresAt"`
	NamespaceID *string `json:"namespaceId,omitempty"`
}

// configDir is $XDG_CONFIG_HOME/occ, or $HOME/.config/occ.
func configDir(env Env) (string, error) {
	if v, ok := env.Lookup("XDG_CONFIG_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "occ"), nil
	}
	if home, ok := env.Lookup("HOME"); ok && filepath.IsAbs(home) {
		return filepath.Join(home, ".config", "occ"), nil
	}
	return "", errors.New("no configuration directory: set XDG_CONFIG_HOME or HOME")
}

// sessionFile is the session file of an origin.
func sessionFile(env Env, origin string) (string, error) {
	dir, err := configDir(env)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(origin))
	return filepath.Join(dir, "sessions", hex.EncodeToString(sum[:16])+".json"), nil
}

// loadSession reads the stored session of origin; (nil, nil) when there is none. A symlink, a
// group- or world-accessible file or directory, or a file issued by another origin is refused.
func loadSession(env Env, origin string) (*storedSession, error) {
	path, err := sessionFile(env, origin)
	if err != nil {
		return nil, nil
	}
	dirInfo, err := os.Lstat(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("cannot read the session directory %s: %v", filepath.Dir(path), errors.Unwrap(err))
	}
	if !dirInfo.IsDir() || dirInfo.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the session directory %s must be a directory with mode 0700", filepath.Dir(path))
	}
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("cannot read the session file %s: %v", path, errors.Unwrap(err))
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the session file %s must be a regular file with mode 0600; remove it and run occ login", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil || len(raw) > maxFileBytes {
		return nil, fmt.Errorf("cannot read the session file %s", path)
	}
	var s storedSession
	if err := json.Unmarshal(raw, &s); err != nil || s.Token == "" {
		return nil, fmt.Errorf("the session file %s is not an occ login session; remove it and run occ login", path)
	}
	if s.Origin != origin {
		return nil, fmt.Errorf("the session file %s belongs to another origin; remove it and run occ login", path)
	}
	return &s, nil
}

// saveSession writes s atomically: a new 0600 file in the 0700 directory, then renamed over.
func saveSession(env Env, s storedSession) (string, error) {
	path, err := sessionFile(env, s.Origin)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
		return "", fmt.Errorf("the session directory %s is not a directory", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	body, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".session-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", err
	}
	if _, err := tmp.Write(append(body, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// newLoginCommand is `occ login`.
func newLoginCommand(env Env) *cobra.Command {
	cmd, _ := clientGroup("login", "Sign in as yourself: approve the request in a signed-in browser")
	cmd.Long = `Starts a CLI sign-in and prints a code and the console page to enter it on. Open the page in a
browser where you are signed in, check the request and approve it; occ then receives a CLI session
that acts with your own current permissions and ends with that browser session (at most 8 hours).
With --namespace the session is pinned to one Namespace. The session is stored, mode 0600, under
$XDG_CONFIG_HOME/occ/sessions/ and used by every command of this origin that has no service key.`
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		s, err := newAnonymousSession(env, cmd)
		if err != nil {
			return err
		}
		return s.login()
	}
	return cmd
}

// newLogoutCommand is `occ logout`.
func newLogoutCommand(env Env) *cobra.Command {
	cmd, _ := clientGroup("logout", "End the stored CLI session of this origin and remove its file")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		s, err := newAnonymousSession(env, cmd)
		if err != nil {
			return err
		}
		return s.logout()
	}
	return cmd
}

// newAuthCommand is `occ auth status`.
func newAuthCommand(env Env) *cobra.Command {
	group, _ := clientGroup("auth", "Show how occ authenticates")
	group.AddCommand(&cobra.Command{
		Use: "status", Short: "Who you are, which Installation, how you are authenticated, until when", Args: cobra.NoArgs,
		RunE: clientRun(env, false, func(s *clientSession, _ []string) error { return s.status() }),
	})
	return group
}

// newAnonymousSession resolves the options of login and logout, which need no credential.
func newAnonymousSession(env Env, cmd *cobra.Command) (*clientSession, error) {
	return newUnauthenticatedSession(env, cmd)
}

// post sends body without the stored credential and decodes the answer's data into out.
func (s *clientSession) anonymous(method, path string, body any, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	creds := s.creds
	s.creds = nil
	defer func() { s.creds = creds }()
	data, err := s.call(method, path, raw)
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func (s *clientSession) login() error {
	label := "occ"
	if host, err := os.Hostname(); err == nil {
		label = "occ on " + host
	}
	label = printableLabel(label)
	start := map[string]any{"clientLabel": label}
	if s.namespace != "" {
		start["namespaceId"] = s.namespace
	}
	var started struct {
		DeviceCode      string `json:"deviceCode"`
		UserCode        string `json:"userCode"`
		VerificationURI string `json:"verificationUri"`
		Interval        int    `json:"interval"`
		ExpiresIn       int    `json:"expiresIn"`
	}
	if err := s.anonymous(http.MethodPost, "/api/auth/cli/device-authorizations", start, &started); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			fmt.Fprintln(s.env.Stderr, "Error: this controller does not offer CLI sign-in (occ login); use a service key file.")
			return exitError{Code: exitRequestFailed}
		}
		return s.fail(err)
	}
	fmt.Fprintf(s.env.Stdout, "Open %s%s in a browser where you are signed in, and enter the code:\n\n    %s\n\n",
		s.base, sanitize(started.VerificationURI), sanitize(started.UserCode))
	fmt.Fprintf(s.env.Stdout, "Only approve a code you just started yourself. The code expires in %d minutes.\n", (started.ExpiresIn+59)/60)

	interval := time.Duration(max(started.Interval, 1)) * time.Second
	ctx, cancel := context.WithTimeout(s.cmd.Context(), maxLoginDuration)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(s.env.Stderr, "Error: the sign-in was not approved in time. Run occ login again.")
			return exitError{Code: exitRequestFailed}
		case <-time.After(interval):
		}
		var issued struct {
			Token   string `json:"token"`
			Session struct {
				ID          string  `json:"id"`
				ExpiresAt   string  `json:"expiresAt"`
				NamespaceID *string `json:"namespaceId"`
			} `json:"session"`
			User struct {
				ID    string `json:"id"`
				Email string `json:"email"`
			} `json:"user"`
		}
		err := s.anonymous(http.MethodPost, "/api/auth/cli/token", map[string]any{"deviceCode": started.DeviceCode}, &issued)
		var ae *apiError
		switch {
		case err == nil:
			path, err := saveSession(s.env, storedSession{Origin: s.base, Token: issued.Token, SessionID: issued.Session.ID,
				UserID: issued.User.ID, Email: issued.User.Email, ExpiresAt: issued.Session.ExpiresAt, NamespaceID: issued.Session.NamespaceID})
			if err != nil {
				fmt.Fprintf(s.env.Stderr, "Error: cannot store the CLI session: %v\n", err)
				return exitError{Code: exitRequestFailed}
			}
			fmt.Fprintf(s.env.Stdout, "Signed in as %s until %s (session stored in %s).\n",
				sanitize(issued.User.Email), sanitize(issued.Session.ExpiresAt), path)
			return nil
		case errors.As(err, &ae) && ae.Code == platform.CodeAuthorizationPending:
		case errors.As(err, &ae) && ae.Code == platform.CodeSlowDown:
			interval += slowDownIncrement
		case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable:
			// The issue did not commit; the approval stands, so polling again is safe.
		default:
			return s.fail(err)
		}
	}
}

// printableLabel keeps the client label within the API's rule: 1..64 printable ASCII characters.
func printableLabel(s string) string {
	b := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
	if len(b) > 64 {
		b = b[:64]
	}
	return b
}

func (s *clientSession) logout() error {
	stored, err := loadSession(s.env, s.base)
	if err != nil {
		return usageError(s.env, "%v", err)
	}
	if stored == nil {
		fmt.Fprintln(s.env.Stdout, "Not signed in to "+s.base+".")
		return nil
	}
	s.creds = &cliSessionCredentials{stored: *stored}
	_, err = s.call(http.MethodDelete, "/api/auth/cli-sessions/current", nil)
	var ae *apiError
	if err != nil && !(errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusNotFound)) {
		return s.fail(err)
	}
	path, _ := sessionFile(s.env, s.base)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(s.env.Stderr, "Error: cannot remove %s: %v\n", path, errors.Unwrap(err))
		return exitError{Code: exitRequestFailed}
	}
	fmt.Fprintln(s.env.Stdout, "Signed out of "+s.base+".")
	return nil
}

func (s *clientSession) status() error {
	installation := "-"
	if data, err := s.call(http.MethodGet, "/installation", nil); err == nil {
		var ins struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		if json.Unmarshal(data, &ins) == nil && ins.ID != "" {
			installation = ins.Name + " (" + ins.ID + ")"
		}
	}
	out := map[string]any{"origin": s.base, "installation": installation}
	if key, ok := s.creds.(*serviceKeyCredentials); ok {
		out["method"] = "service key"
		out["serviceKeyFile"] = key.file
	} else {
		data, err := s.call(http.MethodGet, "/api/auth/cli-sessions/current", nil)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
				fmt.Fprintln(s.env.Stderr, "Error: the stored CLI session has ended. Run occ login again.")
				return exitError{Code: exitRequestFailed}
			}
			return s.fail(err)
		}
		var cur struct {
			ID          string  `json:"id"`
			ExpiresAt   string  `json:"expiresAt"`
			NamespaceID *string `json:"namespaceId"`
			User        struct {
				ID    string `json:"id"`
				Email string `json:"email"`
				Name  string `json:"name"`
			} `json:"user"`
		}
		if err := json.Unmarshal(data, &cur); err != nil {
			return s.fail(errors.New("the API answered with an unexpected session"))
		}
		out["method"], out["cliSessionId"], out["expiresAt"] = "CLI session (occ login)", cur.ID, cur.ExpiresAt
		out["user"], out["userId"] = cur.User.Email, cur.User.ID
		if cur.NamespaceID != nil {
			out["namespaceId"] = *cur.NamespaceID
		}
	}
	if s.output != outputTable {
		return s.printValue(out)
	}
	for _, k := range []string{"origin", "installation", "method", "user", "userId", "cliSessionId", "expiresAt", "namespaceId", "serviceKeyFile"} {
		if v, ok := out[k]; ok {
			fmt.Fprintf(s.env.Stdout, "%-14s %s\n", k+":", sanitize(fmt.Sprint(v)))
		}
	}
	return nil
}

// printValue writes v as JSON or YAML.
func (s *clientSession) printValue(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.printStructured(json.RawMessage(raw))
}
