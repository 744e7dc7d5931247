package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/auth"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/settings"
	"github.com/openclaw/occ/internal/store"
)

// Why a development key was renewed.
const (
	RenewedMissing = "the key file is missing or unreadable"
	RenewedRefused = "the key is revoked or expired"
)

// Renewal says what EnsureDevelopmentKey did: nothing (Reason empty), or issued KeyID.
type Renewal struct {
	Reason    string
	KeyID     string
	ExpiresAt string
}

// EnsureDevelopmentKey keeps a development Installation's bootstrap key file usable: when the key
// it holds is revoked or expired, or the file is missing, it issues a fresh key for the bootstrap
// ServicePrincipal (audited as a key issuance) and replaces the file (mode 0600). A live key is
// left alone. Production refuses: there a lost key is an operator's decision, not a restart's.
func EnsureDevelopmentKey(ctx context.Context, conn *pgx.Conn, cfg settings.Bootstrap) (Renewal, error) {
	if cfg.Mode != settings.Development {
		return Renewal{}, &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "Keys are renewed in development only."}}
	}
	var doc KeyFile
	reason := RenewedMissing
	if raw, err := os.ReadFile(cfg.ServiceKeyFile); err == nil && json.Unmarshal(raw, &doc) == nil && doc.Data.Key != "" {
		_, err := store.GetLiveServiceKey(ctx, conn, auth.HashServiceKey(doc.Data.Key))
		switch {
		case err == nil:
			return Renewal{}, nil
		case !errors.Is(err, store.ErrNotFound):
			return Renewal{}, unavailable(err)
		}
		reason = RenewedRefused
	}

	tx, err := conn.Begin(ctx)
	if err != nil {
		return Renewal{}, unavailable(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	inst, err := store.GetInstallation(ctx, tx)
	if err != nil {
		return Renewal{}, unavailable(err)
	}
	spID, err := bootstrapServicePrincipal(ctx, tx, doc)
	if err != nil {
		return Renewal{}, err
	}
	secret, err := auth.NewServiceKey()
	if err != nil {
		return Renewal{}, failed("cannot generate a key", err)
	}
	key := store.ServiceKey{ID: "key_" + uuid.NewString(), Hash: secret.Hash, Start: secret.Start, ServicePrincipalID: spID,
		InstallationID: inst.ID, Name: ServiceKeyName, CreatedBy: spID}
	expires, err := store.IssueServiceKey(ctx, tx, key, auth.DefaultServiceKeyLifetime)
	if err != nil {
		return Renewal{}, unavailable(err)
	}
	if _, err := audit.NewAppender(inst.ID).Append(ctx, tx, audit.Event{
		ActorID: spID, Action: "openclaw.auth.service-keys.create",
		Resource: audit.Resource{Kind: "service_key", ID: key.ID},
		Details: map[string]any{"issuerId": spID, "servicePrincipalId": spID, "serviceKeyId": key.ID,
			"serviceKeyName": key.Name, "source": "occ-dev", "reason": "DEVELOPMENT_KEY_RENEWED"},
	}); err != nil {
		return Renewal{}, unavailable(err)
	}

	var out KeyFile
	out.Data.ID, out.Data.ServicePrincipalID, out.Data.Name = key.ID, spID, key.Name
	out.Data.ExpiresAt = expires.UTC().Format(platform.TimeLayout)
	out.Data.Key = secret.Plaintext
	out.Meta.InstallationID = inst.ID
	body, _ := json.Marshal(out)
	// The new file waits next to the old one until the key is committed: a refused commit leaves
	// the old file, a committed key always has its file.
	tmp, err := os.CreateTemp(filepath.Dir(cfg.ServiceKeyFile), ".bootstrap-key-*.json")
	if err != nil {
		return Renewal{}, failed("cannot write the key file", err)
	}
	defer os.Remove(tmp.Name())
	if err = tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(append(body, '\n'))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Renewal{}, failed("cannot write the key file", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return Renewal{}, unavailable(err)
	}
	if err := os.Rename(tmp.Name(), cfg.ServiceKeyFile); err != nil {
		return Renewal{}, failed("the key "+key.ID+" was issued but its file could not be written; revoke it", err)
	}
	return Renewal{Reason: reason, KeyID: key.ID, ExpiresAt: out.Data.ExpiresAt}, nil
}

// bootstrapServicePrincipal is the ServicePrincipal of the bootstrap key: the one the old key
// file names, else the one the bootstrap audit event recorded. It must still be a ServicePrincipal
// of the Installation that is not an Agent's.
func bootstrapServicePrincipal(ctx context.Context, tx pgx.Tx, doc KeyFile) (string, error) {
	id := doc.Data.ServicePrincipalID
	if id == "" {
		rows, err := store.ListAuditEvents(ctx, tx, store.AuditFilter{ResourceKind: iam.KindInstallation, Limit: 1000})
		if err != nil {
			return "", unavailable(err)
		}
		for _, row := range rows {
			ev, err := audit.Decode(row)
			if err == nil && ev.Kind == audit.KindBootstrap {
				id, _ = ev.Details["servicePrincipalId"].(string)
			}
		}
	}
	if id == "" {
		return "", &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "The bootstrap ServicePrincipal cannot be found."}}
	}
	sp, err := store.GetIdentity(ctx, tx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (sp.Kind != iam.IdentityKindServicePrincipal || sp.AgentID != nil)) {
		return "", &Error{Problem: problem.Problem{Code: CodeBootstrapFailed, Message: "The bootstrap ServicePrincipal no longer exists."}}
	} else if err != nil {
		return "", unavailable(err)
	}
	return id, nil
}
