package api

import (
	"context"
	"github.com/openclaw/occ/internal/driver"
	"time"

	"github.com/openclaw/occ/internal/audit"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

func (s *Server) getInstallation(_ context.Context, c *call) error {
	i := s.installation
	view := platform.Installation{ID: i.ID, Name: i.Name, CreatedAt: platform.FormatTime(i.CreatedAt)}
	if s.cfg.Compute != nil {
		view.Capabilities = installationCapabilities(s.cfg.Compute)
	}
	c.respond(0, view)
	return nil
}

// installationCapabilities asks the Compute Driver what it supports: the Harness authentication
// methods of each execution mode with a pinned Harness (a mode with none cannot be deployed) and
// its runtime views. Presets need no Driver.
func installationCapabilities(compute driver.Compute) *platform.InstallationCapabilities {
	rc := driver.RuntimeCapabilitiesOf(compute)
	caps := &platform.InstallationCapabilities{
		HarnessAuth: map[string][]string{},
		Runtime:     platform.RuntimeCapabilities{Status: rc.Status, Logs: rc.Logs, Diagnostics: rc.Diagnostics, Images: rc.Images},
		Presets:     true,
	}
	var deployable []string
	for _, mode := range []string{platform.ExecutionEmbedded, platform.ExecutionDedicated} {
		if _, pinned := platform.PinnedHarnesses[mode]; !pinned {
			continue
		}
		methods := []string{}
		for _, method := range []string{platform.HarnessAuthAPIKey, platform.HarnessAuthCodexPAT, platform.HarnessAuthRuntime} {
			if driver.SupportsHarnessAuth(compute, method) {
				methods = append(methods, method)
			}
		}
		caps.HarnessAuth[mode] = methods
		if len(methods) > 0 {
			deployable = append(deployable, mode)
		}
	}
	if len(deployable) > 0 {
		caps.AgentProvisioning = &platform.AgentProvisioningCapabilities{ExecutionModes: deployable}
	}
	return caps
}

// getObservability answers the startup YAML's observability.url, null when unset (as upstream).
func (s *Server) getObservability(_ context.Context, c *call) error {
	view := struct {
		URL *string `json:"url"`
	}{}
	if s.cfg.ObservabilityURL != "" {
		url := s.cfg.ObservabilityURL
		view.URL = &url
	}
	c.respond(0, view)
	return nil
}

// auditEventView is the decoded form of one stored event, timestamps in the API format.
type auditEventView struct {
	SchemaVersion       int                  `json:"schemaVersion"`
	ID                  string               `json:"id"`
	InstallationID      string               `json:"installationId"`
	NamespaceID         *string              `json:"namespaceId,omitempty"`
	OccurredAt          string               `json:"occurredAt"`
	Source              string               `json:"source"`
	Kind                string               `json:"kind"`
	ActorID             string               `json:"actorId"`
	Actor               *audit.Actor         `json:"actor,omitempty"`
	Action              string               `json:"action"`
	Resource            audit.Resource       `json:"resource"`
	Outcome             string               `json:"outcome"`
	RequestID           string               `json:"requestId,omitempty"`
	AdmissionDecisionID string               `json:"admissionDecisionId,omitempty"`
	IAMDriverID         string               `json:"iamDriverId,omitempty"`
	Authorization       *audit.Authorization `json:"authorization,omitempty"`
	DecisionReason      string               `json:"decisionReason,omitempty"`
	ReasonCode          string               `json:"reasonCode,omitempty"`
	Details             map[string]any       `json:"details,omitempty"`
}

// listAuditEvents pages through the audit log newest first. The filters apply in storage; every
// page is at most limit events (default 100).
func (s *Server) listAuditEvents(ctx context.Context, c *call) error {
	after, err := c.decodeCursor()
	if err != nil {
		return err
	}
	f := store.AuditFilter{
		NamespaceID:  c.query["namespaceId"],
		ResourceKind: c.query["resourceKind"],
		ResourceID:   c.query["resourceId"],
		ActorID:      c.query["actorId"],
		Before:       keyCursor(after),
		Limit:        c.pageLimit(DefaultAuditPageLimit) + 1,
	}
	for name, dst := range map[string]**time.Time{"since": &f.Since, "until": &f.Until} {
		if raw, ok := c.query[name]; ok {
			t, valid := platform.ParseTime(raw)
			if !valid {
				return platform.Invalid("The timestamp is not a valid date.", "/"+name, problem.DetailInvalidValue)
			}
			*dst = &t
		}
	}
	rows, err := store.ListAuditEvents(ctx, c.db, f)
	if err != nil {
		return platform.Unavailable(err)
	}
	var next *cursorDoc
	if len(rows) == f.Limit {
		rows = rows[:f.Limit-1]
		last := rows[len(rows)-1]
		doc := keyDoc(*last.OccurredAt, last.ID)
		next = &doc
	}
	views := make([]auditEventView, 0, len(rows))
	for _, row := range rows {
		ev, err := audit.Decode(row)
		if err != nil {
			return platform.Unavailable(err)
		}
		views = append(views, auditEventView{
			SchemaVersion: ev.SchemaVersion, ID: ev.ID, InstallationID: s.installation.ID, NamespaceID: ev.NamespaceID,
			OccurredAt: platform.FormatTime(*row.OccurredAt), Source: ev.Source, Kind: ev.Kind, ActorID: ev.ActorID,
			Actor: ev.Actor, Action: ev.Action, Resource: ev.Resource, Outcome: ev.Outcome, RequestID: ev.RequestID,
			AdmissionDecisionID: ev.AdmissionDecisionID, IAMDriverID: ev.IAMDriverID, Authorization: ev.Authorization,
			DecisionReason: ev.DecisionReason, ReasonCode: ev.ReasonCode, Details: ev.Details,
		})
	}
	c.respond(0, views)
	c.setNext(next)
	return nil
}
