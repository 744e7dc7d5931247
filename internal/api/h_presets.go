package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/preset"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// Presets: reusable Agent launch settings of a Namespace. The server checks and stores templates;
// rendering happens where the Agent is composed (the console upstream, the CLI here), so a Preset
// never creates anything by itself. Audit events carry names and ids, never templates.

type presetView struct {
	ID          string          `json:"id"`
	NamespaceID string          `json:"namespaceId"`
	Name        string          `json:"name"`
	Template    json.RawMessage `json:"template"`
	CreatedAt   string          `json:"createdAt"`
}

func presetToView(row store.PresetRow) presetView {
	return presetView{ID: row.ID, NamespaceID: row.NamespaceID, Name: row.Name, Template: row.Template,
		CreatedAt: platform.FormatTime(row.CreatedAt)}
}

type presetInput struct {
	Name     *string         `json:"name"`
	Template json.RawMessage `json:"template"`
}

// presetTemplate checks a submitted template and completes its credential references with the
// path Namespace (400 naming the template path otherwise).
func presetTemplate(c *call, raw json.RawMessage) (json.RawMessage, error) {
	out, err := preset.FillNamespace(raw, c.namespace.ID)
	if err != nil {
		return nil, presetError(err, "/template")
	}
	if len(out) > preset.MaxBytes {
		return nil, platform.Invalid("Preset template: must not be larger than 1 MiB.", "/template", problem.DetailTooLong)
	}
	return out, nil
}

// presetError is the 400 of a refused template: the message names the template path.
func presetError(err error, prefix string) error {
	var pe *preset.Error
	if errors.As(err, &pe) {
		return platform.Invalid(pe.Message, prefix+pe.Pointer, pe.Code)
	}
	return platform.Invalid("The Preset template is invalid.", prefix, problem.DetailInvalidValue)
}

func duplicatePresetName() error {
	return platform.Conflict("A Preset of this Namespace already has this name.")
}

func (s *Server) listPresets(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	ns := c.namespace.ID
	items, next, err := collect(ctx, c.pageLimit(0),
		func(after *cursorDoc, n int) ([]store.PresetRow, error) {
			rows, err := store.ListPresets(ctx, c.db, ns, keyCursor(after), n)
			if err != nil {
				return nil, platform.Unavailable(err)
			}
			return rows, nil
		},
		keepRead(ctx, c, func(row store.PresetRow) iam.Resource { return nsResource(iam.KindPreset, row.ID, ns) }),
		func(row store.PresetRow) cursorDoc { return keyDoc(row.CreatedAt, row.ID) },
		after)
	if err != nil {
		return err
	}
	views := make([]presetView, len(items))
	for i, row := range items {
		views[i] = presetToView(row)
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}

func (s *Server) createPreset(ctx context.Context, c *call) error {
	var b presetInput
	if err := c.decode(&b); err != nil {
		return err
	}
	template, err := presetTemplate(c, b.Template)
	if err != nil {
		return err
	}
	if err := refuseDeletingNamespace(c); err != nil {
		return err
	}
	row, err := store.InsertPreset(ctx, c.db, store.PresetRow{ID: platform.NewID(platform.PrefixPreset),
		NamespaceID: c.namespace.ID, Name: *b.Name, Template: template})
	if errors.Is(err, store.ErrDuplicate) {
		return duplicatePresetName()
	} else if err != nil {
		return platform.Unavailable(err)
	}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindPreset, row.ID, row.NamespaceID), map[string]any{"name": row.Name})); err != nil {
		return err
	}
	c.respond(http.StatusCreated, presetToView(row))
	return nil
}

// pathPreset reads the path's Preset (404) and checks action on it (403).
func (s *Server) pathPreset(ctx context.Context, c *call, action string, lock store.RowLock) (store.PresetRow, error) {
	row, err := store.GetPreset(ctx, c.db, c.namespace.ID, c.params["presetId"], lock)
	if errors.Is(err, store.ErrNotFound) {
		return row, platform.NotFound("The Preset does not exist in this Namespace.")
	} else if err != nil {
		return row, platform.Unavailable(err)
	}
	if err := c.authorize(ctx, action, nsResource(iam.KindPreset, row.ID, row.NamespaceID)); err != nil {
		return row, err
	}
	return row, nil
}

func (s *Server) getPreset(ctx context.Context, c *call) error {
	row, err := s.pathPreset(ctx, c, iam.ActionRead, store.NoLock)
	if err != nil {
		return err
	}
	c.respond(0, presetToView(row))
	return nil
}

func (s *Server) patchPreset(ctx context.Context, c *call) error {
	var b presetInput
	if err := c.decode(&b); err != nil {
		return err
	}
	row, err := s.pathPreset(ctx, c, iam.ActionUpdate, store.LockUpdate)
	if err != nil {
		return err
	}
	// Omitted fields stay; a template replaces the whole template.
	name, template := row.Name, row.Template
	if b.Name != nil {
		name = *b.Name
	}
	if b.Template != nil {
		if template, err = presetTemplate(c, b.Template); err != nil {
			return err
		}
	}
	if err := refuseDeletingNamespace(c); err != nil {
		return err
	}
	updated, err := store.UpdatePreset(ctx, c.db, row.NamespaceID, row.ID, name, template)
	if errors.Is(err, store.ErrDuplicate) {
		return duplicatePresetName()
	} else if err != nil {
		return platform.Unavailable(err)
	}
	details := map[string]any{"name": updated.Name, "templateReplaced": b.Template != nil}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindPreset, row.ID, row.NamespaceID), details)); err != nil {
		return err
	}
	c.respond(0, presetToView(updated))
	return nil
}

func (s *Server) deletePreset(ctx context.Context, c *call) error {
	row, err := s.pathPreset(ctx, c, iam.ActionDelete, store.LockUpdate)
	if err != nil {
		return err
	}
	if err := refuseDeletingNamespace(c); err != nil {
		return err
	}
	removed, err := store.RemoveTargetBindings(ctx, c.db, store.NamespaceResource{NamespaceID: row.NamespaceID, Kind: iam.KindPreset, ID: row.ID})
	if err != nil {
		return platform.Unavailable(err)
	}
	if _, err := store.DeletePreset(ctx, c.db, row.NamespaceID, row.ID); err != nil {
		return platform.Unavailable(err)
	}
	details := map[string]any{"name": row.Name, "removedAccessBindings": removed}
	if err := c.audit(ctx, auditEvent(nsResource(iam.KindPreset, row.ID, row.NamespaceID), details)); err != nil {
		return err
	}
	c.respond(http.StatusNoContent, nil)
	return nil
}

// Installation defaults.

// ActionPresetsSeed is the audit action of the defaults API start copies into a Namespace.
const ActionPresetsSeed = "openclaw.presets.seed"

// presetSeeds are the Installation defaults as rows for the Namespace: new ids, and templates
// completed with the Namespace like a Preset write.
func (s *Server) presetSeeds(namespaceID string) ([]store.PresetSeed, error) {
	seeds := make([]store.PresetSeed, len(s.cfg.Presets))
	for i, d := range s.cfg.Presets {
		template, err := preset.FillNamespace(d.Template, namespaceID)
		if err != nil {
			return nil, fmt.Errorf("api: the default Preset %q: %w", d.Name, err)
		}
		seeds[i] = store.PresetSeed{ID: platform.NewID(platform.PrefixPreset), Name: d.Name, Template: template}
	}
	return seeds, nil
}

// seedNewNamespace copies the defaults into a Namespace being created, in its transaction; the
// creator needs preset:create on the new Namespace's Presets (403 otherwise, nothing created).
func (s *Server) seedNewNamespace(ctx context.Context, c *call, namespaceID string) ([]string, error) {
	if len(s.cfg.Presets) == 0 {
		return nil, nil
	}
	if err := c.authorize(ctx, iam.ActionCreate, nsResource(iam.KindPreset, namespaceID, namespaceID)); err != nil {
		return nil, err
	}
	seeds, err := s.presetSeeds(namespaceID)
	if err != nil {
		return nil, platform.Unavailable(err)
	}
	rows, err := store.SeedPresets(ctx, c.db, namespaceID, seeds)
	if err != nil {
		return nil, platform.Unavailable(err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

// removeUnchangedDefaults deletes, inside a Namespace deletion, the copies of the defaults that
// still equal them by name and template; edited copies remain and keep the Namespace non-empty.
func (s *Server) removeUnchangedDefaults(ctx context.Context, c *call, namespaceID string) ([]string, error) {
	if len(s.cfg.Presets) == 0 {
		return nil, nil
	}
	seeds, err := s.presetSeeds(namespaceID)
	if err != nil {
		return nil, platform.Unavailable(err)
	}
	ids, err := store.DeleteUnchangedPresets(ctx, c.db, namespaceID, seeds)
	if err != nil {
		return nil, platform.Unavailable(err)
	}
	return ids, nil
}

// ErrPresetSeedingRefused is returned by New when the defaults cannot be seeded: no persisted
// Principal administers the Installation, or it lacks preset:create where defaults are missing.
var ErrPresetSeedingRefused = errors.New("api: the default Presets cannot be seeded")

// seedPresets adds the missing defaults to every provisioning and ready Namespace, in one
// transaction, as a Principal that administers the Installation and may create Presets there.
func (s *Server) seedPresets(ctx context.Context) error {
	if len(s.cfg.Presets) == 0 {
		return nil
	}
	names := make([]string, len(s.cfg.Presets))
	for i, d := range s.cfg.Presets {
		names[i] = d.Name
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := s.seedPresetsIn(ctx, tx, names); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *Server) seedPresetsIn(ctx context.Context, tx store.DBTX, names []string) error {
	native := iam.NewNative(s.cfg.IAMDriverID, iam.StoreSource{DB: tx})
	allows := func(principal, action string, res iam.Resource) (bool, error) {
		d, err := native.Authorize(ctx, iam.Request{PrincipalID: principal, Action: action, Resource: res})
		return err == nil && iam.Allows(d, s.cfg.IAMDriverID), err
	}
	namespaces, err := store.SeedableNamespaces(ctx, tx, names)
	if err != nil {
		return err
	}
	actor := ""
	for _, ns := range namespaces {
		if actor == "" {
			if actor, err = s.installationAdministrator(ctx, tx, allows); err != nil {
				return err
			}
		}
		ok, err := allows(actor, iam.ActionCreate, nsResource(iam.KindPreset, ns, ns))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: the administrator may not create Presets in %s", ErrPresetSeedingRefused, ns)
		}
		seeds, err := s.presetSeeds(ns)
		if err != nil {
			return err
		}
		rows, err := store.SeedPresets(ctx, tx, ns, seeds)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			// Another replica starting at the same time wrote them first.
			continue
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		nsID := ns
		ev := audit.Event{Kind: audit.KindMutation, Action: ActionPresetsSeed, NamespaceID: &nsID,
			Resource: auditResource(namespaceResource(ns)), ActorID: actor,
			Actor: &audit.Actor{PrincipalID: actor, Kind: audit.ActorKindPrincipal}, IAMDriverID: s.cfg.IAMDriverID,
			Outcome: audit.OutcomeSuccess, Details: map[string]any{"presetIds": ids}}
		if _, err := s.appender.Append(ctx, tx, ev); err != nil {
			return err
		}
	}
	return nil
}

// installationAdministrator is the oldest persisted Principal allowed to administer the
// Installation.
func (s *Server) installationAdministrator(ctx context.Context, db store.DBTX, allows func(string, string, iam.Resource) (bool, error)) (string, error) {
	principals, err := store.PrincipalIDs(ctx, db)
	if err != nil {
		return "", err
	}
	for _, p := range principals {
		ok, err := allows(p, iam.ActionAdminister, iam.Resource{Kind: iam.KindInstallation, ID: s.installation.ID})
		if err != nil {
			return "", err
		}
		if ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no Principal administers the Installation", ErrPresetSeedingRefused)
}
