package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strconv"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// Configurations. The database keeps id, kind, generation and bindings; the
// values live in the Configuration Driver. A driver write happens inside the route's transaction
// and is compensated when the transaction does not commit; a driver delete waits for the commit.

type configurationView struct {
	ID             string                            `json:"id"`
	NamespaceID    string                            `json:"namespaceId"`
	Kind           string                            `json:"kind"`
	Generation     int64                             `json:"generation"`
	Values         json.RawMessage                   `json:"values"`
	SecretBindings map[string]platform.SecretBinding `json:"secretBindings,omitempty"`
	CreatedAt      string                            `json:"createdAt"`
}

func configurationToView(row store.ConfigurationRow, values json.RawMessage) configurationView {
	v := configurationView{ID: row.ID, NamespaceID: row.NamespaceID, Kind: row.Kind, Generation: row.Generation,
		Values: values, CreatedAt: platform.FormatTime(row.CreatedAt)}
	if len(row.SecretBindings) > 0 {
		_ = json.Unmarshal(row.SecretBindings, &v.SecretBindings)
	}
	return v
}

type configurationInput struct {
	Kind           string                             `json:"kind"`
	Values         json.RawMessage                    `json:"values"`
	SecretBindings *map[string]platform.SecretBinding `json:"secretBindings"`
	// ExpectedGeneration (PATCH only, ours) makes the update a compare-and-set.
	ExpectedGeneration *int64 `json:"expectedGeneration"`
}

func (s *Server) configurations() (driver.Configuration, error) {
	if s.cfg.Configurations == nil {
		return nil, platform.Unavailable(errors.New("api: no Configuration Driver is available"))
	}
	return s.cfg.Configurations, nil
}

// admitConfigurationInput applies the rules of values and secretBindings: reserved binding names
// (400), the light validation of values (400), references in this Namespace (400) that exist
// (404), and the caller's secret:operate on each bound Secret (403). It returns the bindings with
// their delivery defaulted.
func (s *Server) admitConfigurationInput(ctx context.Context, c *call, b configurationInput, bindings map[string]platform.SecretBinding) (map[string]platform.SecretBinding, error) {
	var details []problem.Detail
	names := make([]string, 0, len(bindings))
	for name := range bindings {
		names = append(names, name)
	}
	sort.Strings(names)
	refs := map[string]platform.Ref{}
	for _, name := range names {
		if platform.ReservedEnvName(name) {
			details = append(details, problem.Detail{Path: "/secretBindings" + problem.JSONPointer(name), Code: problem.DetailInvalidValue})
			continue
		}
		binding := bindings[name]
		if binding.Delivery.Type == "" {
			binding.Delivery.Type = platform.SecretDeliveryEnv
			bindings[name] = binding
		}
		refs["/secretBindings"+problem.JSONPointer(name)+"/source"] = binding.Source
	}
	if len(details) > 0 {
		return nil, platform.NewError(platform.CodeInvalidRequest, "A secretBindings name is reserved for the runtime.", details...)
	}
	var values map[string]any
	if err := json.Unmarshal(b.Values, &values); err != nil {
		return nil, platform.Invalid("The values must be a JSON object.", "/values", problem.DetailInvalidType)
	}
	if d := platform.ValidateConfigurationValues(values, "/values"); len(d) > 0 {
		return nil, platform.NewError(platform.CodeInvalidRequest, "A model provider's baseUrl or api is invalid.", d...)
	}
	ids, err := s.checkSecretRefs(ctx, c, refs)
	if err != nil {
		return nil, err
	}
	if err := c.authorizeSecretsOperate(ctx, c.self(), ids); err != nil {
		return nil, err
	}
	return bindings, nil
}

// configurationDriverError maps a driver failure: a value the backend cannot represent is 400
// inside values; anything else is a dependency failure.
func configurationDriverError(err error) error {
	var ve *driver.ConfigurationValueError
	if errors.As(err, &ve) {
		return platform.Invalid("The Configuration Driver cannot store these values.", "/values"+ve.Path, ve.Code)
	}
	return platform.Unavailable(err)
}

func (s *Server) createConfiguration(ctx context.Context, c *call) error {
	var b configurationInput
	if err := c.decode(&b); err != nil {
		return err
	}
	cfgs, err := s.configurations()
	if err != nil {
		return err
	}
	bindings := map[string]platform.SecretBinding{}
	if b.SecretBindings != nil {
		bindings = *b.SecretBindings
	}
	if bindings, err = s.admitConfigurationInput(ctx, c, b, bindings); err != nil {
		return err
	}
	if err := refuseDeletingNamespace(c); err != nil {
		return err
	}
	if c.namespace.ExistingNamespace != nil && c.namespace.Status != platform.NamespaceReady {
		return platform.NewError(platform.CodeNamespaceNotReady, "The adopted namespace is not ready yet.")
	}
	var rawBindings json.RawMessage
	if b.SecretBindings != nil {
		rawBindings = rawObject(bindings)
	}
	ns := c.namespace.ID
	row, err := store.InsertConfiguration(ctx, c.db, store.ConfigurationRow{ID: platform.NewID(platform.PrefixConfiguration),
		NamespaceID: ns, DriverID: cfgs.ID(), SecretBindings: rawBindings})
	if err != nil {
		return platform.Unavailable(err)
	}
	doc := driver.ConfigurationDocument{ID: row.ID, NamespaceID: ns, Kind: row.Kind, Generation: row.Generation,
		Values: b.Values, SecretBindings: rawBindings, CreatedAt: row.CreatedAt}
	if err := cfgs.Validate(ctx, doc); err != nil {
		return configurationDriverError(err)
	}
	res := nsResource(iam.KindConfiguration, row.ID, ns)
	if err := c.audit(ctx, auditEvent(res, map[string]any{"generation": row.Generation, "secretIds": bindingSecretIDs(bindings)})); err != nil {
		return err
	}
	c.onRollback(func(ctx context.Context) { _ = cfgs.Delete(ctx, doc.Ref()) })
	stored, err := cfgs.Create(ctx, doc)
	if err != nil {
		return configurationDriverError(err)
	}
	if stored.ID != row.ID || stored.NamespaceID != ns || stored.Generation != row.Generation {
		return platform.Unavailable(errors.New("api: the Configuration Driver substituted the document"))
	}
	c.respond(http.StatusCreated, configurationToView(row, b.Values))
	return nil
}

func bindingSecretIDs(bindings map[string]platform.SecretBinding) []string {
	ids := []string{}
	for _, b := range bindings {
		if !slices.Contains(ids, b.Source.ID) {
			ids = append(ids, b.Source.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// pathConfiguration reads the path's Configuration (404) and checks action on it (403).
func (s *Server) pathConfiguration(ctx context.Context, c *call, action string, lock store.RowLock) (store.ConfigurationRow, error) {
	row, err := store.GetConfiguration(ctx, c.db, c.namespace.ID, c.params["configurationId"], lock)
	if errors.Is(err, store.ErrNotFound) {
		return row, platform.NotFound("The Configuration does not exist in this Namespace.")
	} else if err != nil {
		return row, platform.Unavailable(err)
	}
	if err := c.authorize(ctx, action, nsResource(iam.KindConfiguration, row.ID, row.NamespaceID)); err != nil {
		return row, err
	}
	return row, nil
}

// readValues reads the stored document and checks it is the one the database describes.
func readValues(ctx context.Context, cfgs driver.Configuration, row store.ConfigurationRow) (driver.ConfigurationDocument, error) {
	doc, err := cfgs.Read(ctx, driver.ConfigurationRef{NamespaceID: row.NamespaceID, ID: row.ID})
	if err != nil {
		return doc, platform.Unavailable(err)
	}
	if doc.ID != row.ID || doc.NamespaceID != row.NamespaceID || doc.Kind != row.Kind || doc.Generation != row.Generation {
		return doc, platform.Unavailable(errors.New("api: the stored Configuration does not match its metadata"))
	}
	return doc, nil
}

func (s *Server) getConfiguration(ctx context.Context, c *call) error {
	row, err := s.pathConfiguration(ctx, c, iam.ActionRead, store.NoLock)
	if err != nil {
		return err
	}
	cfgs, err := s.configurations()
	if err != nil {
		return err
	}
	doc, err := readValues(ctx, cfgs, row)
	if err != nil {
		return err
	}
	c.respond(0, configurationToView(row, doc.Values))
	return nil
}

func (s *Server) patchConfiguration(ctx context.Context, c *call) error {
	var b configurationInput
	if err := c.decode(&b); err != nil {
		return err
	}
	row, err := s.pathConfiguration(ctx, c, iam.ActionUpdate, store.LockUpdate)
	if err != nil {
		return err
	}
	// The row is locked, so the comparison holds until the commit: a client that read generation
	// N never overwrites a change it has not seen.
	if b.ExpectedGeneration != nil && *b.ExpectedGeneration != row.Generation {
		return platform.Conflict("The Configuration changed since it was read (generation " +
			strconv.FormatInt(row.Generation, 10) + "); read it again before saving.")
	}
	cfgs, err := s.configurations()
	if err != nil {
		return err
	}
	// Omitted secretBindings keep the current ones; {} clears them.
	bindings := map[string]platform.SecretBinding{}
	keep := b.SecretBindings == nil
	if keep && len(row.SecretBindings) > 0 {
		if err := json.Unmarshal(row.SecretBindings, &bindings); err != nil {
			return platform.Unavailable(err)
		}
	} else if !keep {
		bindings = *b.SecretBindings
	}
	if bindings, err = s.admitConfigurationInput(ctx, c, b, bindings); err != nil {
		return err
	}
	if err := refuseDeletingNamespace(c); err != nil {
		return err
	}
	previous, err := readValues(ctx, cfgs, row)
	if err != nil {
		return err
	}
	var rawBindings json.RawMessage // {} clears: stored as no bindings
	if len(bindings) > 0 {
		rawBindings = rawObject(bindings)
	}
	updated, err := store.UpdateConfiguration(ctx, c.db, row.NamespaceID, row.ID, rawBindings)
	if err != nil {
		return platform.Unavailable(err)
	}
	doc := driver.ConfigurationDocument{ID: row.ID, NamespaceID: row.NamespaceID, Kind: row.Kind, Generation: updated.Generation,
		Values: b.Values, SecretBindings: rawBindings, CreatedAt: previous.CreatedAt}
	if err := cfgs.Validate(ctx, doc); err != nil {
		return configurationDriverError(err)
	}
	res := nsResource(iam.KindConfiguration, row.ID, row.NamespaceID)
	if err := c.audit(ctx, auditEvent(res, map[string]any{"generation": updated.Generation, "secretIds": bindingSecretIDs(bindings)})); err != nil {
		return err
	}
	c.onRollback(func(ctx context.Context) { _, _ = cfgs.Update(ctx, previous) })
	if _, err := cfgs.Update(ctx, doc); err != nil {
		return configurationDriverError(err)
	}
	c.respond(0, configurationToView(updated, b.Values))
	return nil
}

func (s *Server) deleteConfiguration(ctx context.Context, c *call) error {
	row, err := s.pathConfiguration(ctx, c, iam.ActionDelete, store.LockUpdate)
	if err != nil {
		return err
	}
	refs, err := store.ConfigurationReferences(ctx, c.db, row.NamespaceID, row.ID)
	if err != nil {
		return platform.Unavailable(err)
	}
	if len(refs) > 0 {
		return referencedMessage("Configuration", refs)
	}
	cfgs, err := s.configurations()
	if err != nil {
		return err
	}
	removed, err := store.RemoveTargetBindings(ctx, c.db, store.NamespaceResource{NamespaceID: row.NamespaceID, Kind: iam.KindConfiguration, ID: row.ID})
	if err != nil {
		return platform.Unavailable(err)
	}
	if _, err := store.DeleteConfiguration(ctx, c.db, row.NamespaceID, row.ID); err != nil {
		if errors.Is(err, store.ErrForeignKey) {
			return platform.Conflict("The Configuration is still referenced by Agents.")
		}
		return platform.Unavailable(err)
	}
	res := nsResource(iam.KindConfiguration, row.ID, row.NamespaceID)
	if err := c.audit(ctx, auditEvent(res, map[string]any{"removedAccessBindings": removed})); err != nil {
		return err
	}
	ref := driver.ConfigurationRef{NamespaceID: row.NamespaceID, ID: row.ID}
	c.onCommit(func(ctx context.Context) {
		if err := cfgs.Delete(ctx, ref); err != nil {
			s.log.Warn("http.dependency_unavailable", "requestId", c.requestID, "code", platform.CodeDependencyUnavailable,
				"dependency", "configuration-driver", "operation", "configuration.delete", "namespaceId", ref.NamespaceID)
		}
	})
	c.respond(http.StatusNoContent, nil)
	return nil
}
