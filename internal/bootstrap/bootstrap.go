// Package bootstrap creates the singleton Installation, the first administrator, the bootstrap
// service principal and its key, the seeded administrator Role and bindings, and the `default`
// Namespace with its provisioning work — all in one transaction. A re-run verifies
// the existing Installation and changes nothing.
package bootstrap

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/queue"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
)

// Failure codes of installation.bootstrap-failed (besides the settings codes).
const (
	CodeBootstrapFailed        = "BOOTSTRAP_FAILED"
	CodeCommitOutcomeUnknown   = "COMMIT_OUTCOME_UNKNOWN"
	CodePersistenceUnavailable = "PERSISTENCE_UNAVAILABLE"
)

// Fixed names of the seed.
const (
	AdministratorName     = "OpenClaw Administrator"
	AdministratorRoleName = "Installation administrator"
	ServiceKeyName        = "bootstrap-admin"
	DefaultNamespaceName  = "default"
	// IAMDriverID names the native IAM driver in bootstrap's own decisions and audit events.
	IAMDriverID = "native-iam"
)

// Error is a bootstrap failure: a problem with its stable code, a safe message and the cause,
// and what the failed attempt had created, for manual repair.
type Error struct {
	problem.Problem
	Attempt Attempt
}

// Error is the message and the cause; the code is logged on its own.
func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

// Attempt names what one run created (non-secret identifiers and paths only).
type Attempt struct {
	InstallationID      string
	AccountID           string
	PrincipalID         string
	ServicePrincipalID  string
	ServiceKeyID        string
	ServiceKeyExpiresAt time.Time
	ServiceKeyFile      string
	PasswordFile        string
	DefaultNamespaceID  string
}

// Result says what Run did.
type Result struct {
	AlreadyBootstrapped bool
	Attempt             Attempt
}

// KeyFile is the JSON document written to OCC_BOOTSTRAP_SERVICE_KEY_FILE: the same shape as a
// service-key issuance response.
type KeyFile struct {
	Data struct {
		ID                 string `json:"id"`
		ServicePrincipalID string `json:"servicePrincipalId"`
		Name               string `json:"name"`
		ExpiresAt          string `json:"expiresAt"`
		Key                string `json:"key"`
	} `json:"data"`
	Meta struct {
		InstallationID string `json:"installationId"`
	} `json:"meta"`
}

// Run bootstraps the Installation through conn (the application role), or verifies an existing
// one. Output files are created exclusively before the transaction commits; if the database
// refuses the commit they are removed again, and if the commit outcome is unknown they are kept
// for manual repair.
func Run(ctx context.Context, conn *pgx.Conn, cfg settings.Bootstrap) (Result, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return Result{}, unavailable(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := store.LockBootstrap(ctx, tx); err != nil {
		return Result{}, unavailable(err)
	}
	inst, err := store.GetInstallation(ctx, tx)
	switch {
	case err == nil:
		attempt, err := verify(ctx, tx, cfg, inst)
		return Result{AlreadyBootstrapped: true, Attempt: attempt}, err
	case !errors.Is(err, store.ErrNotFound):
		return Result{}, unavailable(err)
	}

	for _, path := range []string{cfg.ServiceKeyFile, cfg.PasswordFile} {
		if path == "" {
			continue
		}
		if err := checkOutputPath(path); err != nil {
			return Result{}, &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "An output file cannot be created safely.", Cause: err}}
		}
	}

	password := cfg.DevPassword
	if cfg.Mode == settings.Production {
		password, err = randomPassword()
		if err != nil {
			return Result{}, failed("cannot generate a password", err)
		}
	}
	seed, err := newSeed(cfg, password)
	if err != nil {
		return Result{}, failed("cannot prepare the seed", err)
	}
	if err := seed.write(ctx, tx, cfg); err != nil {
		var be *Error
		if errors.As(err, &be) {
			be.Attempt = seed.attempt
			return Result{}, be
		}
		return Result{}, &Error{Problem: problem.Problem{Code: classify(err), Message: "The bootstrap transaction failed.", Cause: err}, Attempt: seed.attempt}
	}

	written, err := seed.writeFiles(cfg, password)
	if err != nil {
		return Result{}, &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "An output file could not be written.", Cause: err}, Attempt: seed.attempt}
	}
	if err := tx.Commit(ctx); err != nil {
		if store.CommitChangedNothing(err) {
			removeAll(written)
			return Result{}, &Error{Problem: problem.Problem{Code: classify(err), Message: "The bootstrap transaction was not committed.", Cause: err}, Attempt: seed.attempt}
		}
		return Result{}, &Error{Problem: problem.Problem{Code: CodeCommitOutcomeUnknown, Message: "The bootstrap commit outcome is unknown. Inspect the database before another attempt.", Cause: err}, Attempt: seed.attempt}
	}
	return Result{Attempt: seed.attempt}, nil
}

// verify checks an existing Installation: the configured administrator exists as a Principal of
// this Installation and holds a Role with installation:administer and installation:read.
func verify(ctx context.Context, tx pgx.Tx, cfg settings.Bootstrap, inst store.Installation) (Attempt, error) {
	attempt := Attempt{InstallationID: inst.ID}
	account, err := store.GetAccountByEmail(ctx, tx, cfg.AdminEmail)
	if errors.Is(err, store.ErrNotFound) {
		return attempt, &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "The Installation exists but the configured administrator account does not."}, Attempt: attempt}
	} else if err != nil {
		return attempt, unavailable(err)
	}
	attempt.AccountID, attempt.PrincipalID = account.ID, account.PrincipalID
	identities, err := store.LookupIAMIdentities(ctx, tx, store.LookupIAMIdentitiesParams{Issuer: auth.Issuer(inst.ID), Subject: account.ID})
	if err != nil {
		return attempt, unavailable(err)
	}
	if len(identities) != 1 || identities[0].ID != account.PrincipalID {
		return attempt, &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "The administrator account is not a Principal of this Installation."}, Attempt: attempt}
	}
	ok, err := store.PrincipalHoldsPermissions(ctx, tx, account.PrincipalID, [][2]string{
		{iam.ActionAdminister, iam.KindInstallation}, {iam.ActionRead, iam.KindInstallation},
	})
	if err != nil {
		return attempt, unavailable(err)
	}
	if !ok {
		return attempt, &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "The administrator no longer holds Installation administration."}, Attempt: attempt}
	}
	return attempt, nil
}

// seed is everything a fresh bootstrap creates.
type seed struct {
	attempt      Attempt
	email        string
	passwordHash string
	key          auth.ServiceKeySecret
	roleID       string
	adminBinding string
	spBinding    string
}

func newSeed(cfg settings.Bootstrap, password string) (*seed, error) {
	hash, err := auth.HashPassword(password)
	if err != nil {
		return nil, err
	}
	key, err := auth.NewServiceKey()
	if err != nil {
		return nil, err
	}
	s := &seed{
		email:        cfg.AdminEmail,
		passwordHash: hash,
		key:          key,
		roleID:       "role_admin_" + uuid.NewString(),
		adminBinding: "binding_admin_" + uuid.NewString(),
		spBinding:    "binding_bootstrap_service_admin_" + uuid.NewString(),
	}
	s.attempt = Attempt{
		InstallationID:     platform.NewID(platform.PrefixInstallation),
		AccountID:          platform.NewID(platform.PrefixAccount),
		PrincipalID:        platform.NewID(platform.PrefixPrincipal),
		ServicePrincipalID: platform.NewID(platform.PrefixServicePrincipal),
		ServiceKeyID:       "key_" + uuid.NewString(),
		ServiceKeyFile:     cfg.ServiceKeyFile,
		PasswordFile:       cfg.PasswordFile,
		DefaultNamespaceID: platform.NewID(platform.PrefixNamespace),
	}
	return s, nil
}

func (s *seed) write(ctx context.Context, tx pgx.Tx, cfg settings.Bootstrap) error {
	a := &s.attempt
	issuer := auth.Issuer(a.InstallationID)
	if err := store.InsertInstallation(ctx, tx, a.InstallationID, cfg.InstallationName); err != nil {
		return err
	}
	if err := store.InsertIAMIdentity(ctx, tx, store.IAMIdentity{ID: a.PrincipalID, Kind: iam.IdentityKindPrincipal,
		Issuer: &issuer, Subject: &a.AccountID}); err != nil {
		return err
	}
	if err := store.InsertAccount(ctx, tx, store.Account{ID: a.AccountID, Email: s.email, Name: AdministratorName,
		PrincipalID: a.PrincipalID}, s.passwordHash); err != nil {
		return err
	}
	perms := iam.BootstrapAdministratorPermissions()
	pairs := make([][2]string, len(perms))
	for i, p := range perms {
		pairs[i] = [2]string{p.Action, p.ResourceKind}
	}
	roleName := AdministratorRoleName
	if err := store.InsertIAMRole(ctx, tx, s.roleID, nil, &roleName, pairs); err != nil {
		return err
	}
	if err := store.InsertIAMIdentity(ctx, tx, store.IAMIdentity{ID: a.ServicePrincipalID, Kind: iam.IdentityKindServicePrincipal}); err != nil {
		return err
	}
	for _, b := range []store.IAMBinding{
		{ID: s.adminBinding, IdentitySubjectID: &a.PrincipalID, RoleID: s.roleID},
		{ID: s.spBinding, IdentitySubjectID: &a.ServicePrincipalID, RoleID: s.roleID},
	} {
		if err := store.InsertIAMBinding(ctx, tx, b); err != nil {
			return err
		}
	}
	now, err := store.DatabaseNow(ctx, tx)
	if err != nil {
		return err
	}
	a.ServiceKeyExpiresAt = now.Add(auth.DefaultServiceKeyLifetime).UTC().Truncate(time.Millisecond)
	if err := store.InsertServiceKey(ctx, tx, store.ServiceKey{ID: a.ServiceKeyID, Hash: s.key.Hash, Start: s.key.Start,
		ServicePrincipalID: a.ServicePrincipalID, InstallationID: a.InstallationID, Name: ServiceKeyName,
		CreatedBy: a.PrincipalID, ExpiresAt: a.ServiceKeyExpiresAt}); err != nil {
		return err
	}

	appender := audit.NewAppender(a.InstallationID)
	if err := s.createDefaultNamespace(ctx, tx, appender); err != nil {
		return err
	}
	_, err = appender.Append(ctx, tx, audit.Event{
		Kind:     audit.KindBootstrap,
		ActorID:  a.PrincipalID,
		Action:   iam.ActionAdminister,
		Resource: audit.Resource{Kind: iam.KindInstallation, ID: a.InstallationID},
		Details: map[string]any{
			"kind":               "bootstrap",
			"source":             cfg.Source,
			"servicePrincipalId": a.ServicePrincipalID,
			"serviceKeyId":       a.ServiceKeyID,
			"defaultNamespaceId": a.DefaultNamespaceID,
		},
	})
	return err
}

// createDefaultNamespace follows the ordinary create path: the administrator must be allowed
// namespace:create on the Installation (read from the seed just written, in this transaction);
// the Namespace, its admission audit and its provisioning work commit together.
func (s *seed) createDefaultNamespace(ctx context.Context, tx pgx.Tx, appender *audit.Appender) error {
	a := s.attempt
	driver := iam.NewNative(IAMDriverID, iam.StoreSource{DB: tx})
	decision, err := driver.Authorize(ctx, iam.Request{PrincipalID: a.PrincipalID, Action: iam.ActionCreate,
		Resource: iam.Resource{Kind: iam.KindNamespace, ID: a.InstallationID}})
	if err != nil {
		return err
	}
	if !iam.Allows(decision, IAMDriverID) {
		return &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "The seeded administrator may not create Namespaces."}}
	}
	if _, err := store.InsertNamespace(ctx, tx, a.DefaultNamespaceID, DefaultNamespaceName, nil); err != nil {
		return err
	}
	ready := queue.NamespaceReady
	if _, err := queue.Enqueue(ctx, tx, queue.EnqueueWork{
		Key: platform.NamespaceWorkKey(a.DefaultNamespaceID, ready), NamespaceID: a.DefaultNamespaceID,
		ActorID: a.PrincipalID, NamespaceTarget: &ready,
	}); err != nil {
		return err
	}
	ns := a.DefaultNamespaceID
	_, err = appender.Append(ctx, tx, audit.Event{
		Kind:        audit.KindMutation,
		ActorID:     a.PrincipalID,
		NamespaceID: &ns,
		Action:      "openclaw.namespaces.create",
		Resource:    audit.Resource{Kind: iam.KindNamespace, ID: ns, NamespaceID: &ns},
		IAMDriverID: IAMDriverID,
		Details:     map[string]any{"name": DefaultNamespaceName, "workId": "namespace:" + ns + ":reconcile:ready"},
	})
	return err
}

// writeFiles writes the password file (production) and the key file; it returns the paths it
// created so that a refused commit can remove them.
func (s *seed) writeFiles(cfg settings.Bootstrap, password string) ([]string, error) {
	var written []string
	if cfg.PasswordFile != "" {
		if err := writeExclusive(cfg.PasswordFile, []byte(password+"\n")); err != nil {
			return written, err
		}
		written = append(written, cfg.PasswordFile)
	}
	var doc KeyFile
	doc.Data.ID = s.attempt.ServiceKeyID
	doc.Data.ServicePrincipalID = s.attempt.ServicePrincipalID
	doc.Data.Name = ServiceKeyName
	doc.Data.ExpiresAt = s.attempt.ServiceKeyExpiresAt.Format(platform.TimeLayout)
	doc.Data.Key = s.key.Plaintext
	doc.Meta.InstallationID = s.attempt.InstallationID
	body, err := json.Marshal(doc)
	if err != nil {
		return written, err
	}
	if err := writeExclusive(cfg.ServiceKeyFile, append(body, '\n')); err != nil {
		removeAll(written)
		return nil, err
	}
	return append(written, cfg.ServiceKeyFile), nil
}

func removeAll(paths []string) {
	for _, p := range paths {
		_ = removeFile(p)
	}
}

// randomPassword is 32 random bytes, base64url: the production administrator's first password.
func randomPassword() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// classify maps a database failure to a code: a server-reported error is a refusal of the
// bootstrap itself; anything else means PostgreSQL could not be reached.
func classify(err error) string {
	if store.ServerRefused(err) {
		return CodeBootstrapFailed
	}
	return CodePersistenceUnavailable
}

func unavailable(err error) error {
	return &Error{Problem: problem.Problem{Code: classify(err), Message: "PostgreSQL is unavailable or refused the bootstrap.", Cause: err}}
}

func failed(msg string, err error) error {
	return &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: fmt.Sprintf("Bootstrap failed: %s.", msg), Cause: err}}
}
