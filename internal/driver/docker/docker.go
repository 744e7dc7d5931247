package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/openclaw/occ/internal/driver"
)

// Ownership labels of every object the driver manages.
const (
	LabelManaged       = "org.openclaw.enterprise.managed"
	LabelComputeDriver = "org.openclaw.enterprise.compute-driver"
	LabelNamespaceID   = "org.openclaw.enterprise.namespace-id"
	labelPrefix        = "org.openclaw.enterprise."
)

// Driver is the docker Compute Driver. It is safe for concurrent use.
type Driver struct {
	id          string
	engine      *engine
	extraLabels map[string]string
	locks       keyedLock
}

var (
	_ driver.Compute            = (*Driver)(nil)
	_ driver.Preflighter        = (*Driver)(nil)
	_ driver.HarnessAuthSupport = (*Driver)(nil)
)

// New returns a docker driver selected as id. It does not contact the engine; Preflight does.
func New(id string, cfg Config) (*Driver, error) {
	if cfg.Socket == "" {
		cfg.Socket = DefaultSocket
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	extra := make(map[string]string, len(cfg.ExtraLabels))
	for k, v := range cfg.ExtraLabels {
		if strings.HasPrefix(k, labelPrefix) {
			return nil, fmt.Errorf("docker: extra label %q would shadow an ownership label", k)
		}
		extra[k] = v
	}
	return &Driver{id: id, engine: newEngine(cfg.Socket, cfg.RequestTimeout), extraLabels: extra}, nil
}

// ID implements driver.Compute.
func (d *Driver) ID() string { return d.id }

// Implementation implements driver.Compute.
func (d *Driver) Implementation() string { return Name }

// NetworkName is the Docker network name of a Namespace:
// oce-<slug(namespaceID) ≤ 32>-<sha256(namespaceID)[:12]>.
func NetworkName(namespaceID string) string {
	sum := sha256.Sum256([]byte(namespaceID))
	hash := hex.EncodeToString(sum[:])[:12]
	if s := slug(namespaceID, 32); s != "" {
		return "oce-" + s + "-" + hash
	}
	return "oce-" + hash
}

// slug lowercases s, turns every run of characters outside [a-z0-9] into one '-', trims '-' from
// both ends and cuts the result to limit characters.
func slug(s string, limit int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > limit {
		out = out[:limit]
	}
	return strings.TrimRight(out, "-")
}

// Labels are the ownership labels of a Namespace's network.
func Labels(namespaceID string) map[string]string {
	return map[string]string{
		LabelManaged:       "true",
		LabelComputeDriver: Name,
		LabelNamespaceID:   namespaceID,
	}
}

// owned reports whether have carries every label of want with the same value.
func owned(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

var errNetworkConflict = &driver.PermanentError{
	Code:   CodeNetworkConflict,
	Reason: "A Docker network with this Namespace network name exists without matching OCC ownership labels.",
}

var errExistingNamespace = &driver.PermanentError{
	Code:   CodeExistingNamespaceUnsupported,
	Reason: "The Docker Compute Driver cannot adopt an existing namespace.",
}

// Preflight implements driver.Preflighter: GET /_ping must answer OK and GET /version must
// describe an engine. Failure is a *driver.PreflightError DOCKER_ENGINE_UNAVAILABLE with Host
// unix://<socket>.
func (d *Driver) Preflight(ctx context.Context) ([]driver.PreflightWarning, error) {
	err := d.engine.ping(ctx)
	if err == nil {
		_, err = d.engine.version(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &driver.PreflightError{Code: driver.CodeDockerEngineUnavailable, Host: "unix://" + d.engine.socket}
	}
	return nil, nil
}

// EnsureNamespace implements driver.Compute: create the Namespace's network or verify the one
// that exists.
func (d *Driver) EnsureNamespace(ctx context.Context, ns driver.Namespace) (driver.NamespaceObservation, error) {
	if err := ctx.Err(); err != nil {
		return driver.NamespaceObservation{}, err
	}
	if ns.ExistingNamespace != nil {
		return driver.NamespaceEnsureFailed(ns.ID, errExistingNamespace), nil
	}
	unlock, err := d.locks.lock(ctx, ns.ID)
	if err != nil {
		return driver.NamespaceObservation{}, err
	}
	defer unlock()
	err = d.ensureNetwork(ctx, ns.ID)
	switch {
	case err == nil:
		return driver.NamespaceReady(ns.ID), nil
	case ctx.Err() != nil:
		return driver.NamespaceObservation{}, ctx.Err()
	}
	return driver.NamespaceEnsureFailed(ns.ID, err), nil
}

func (d *Driver) ensureNetwork(ctx context.Context, namespaceID string) error {
	name, want := NetworkName(namespaceID), Labels(namespaceID)
	// Normally two rounds: list and create (or lose the race to a concurrent creator), then list
	// and verify. A third absorbs a concurrent delete between them.
	for range 3 {
		nets, err := d.engine.networksNamed(ctx, name)
		if err != nil {
			return err
		}
		if len(nets) == 0 {
			labels := make(map[string]string, len(want)+len(d.extraLabels))
			for k, v := range d.extraLabels {
				labels[k] = v
			}
			for k, v := range want {
				labels[k] = v
			}
			if _, err := d.engine.createNetwork(ctx, name, labels); err != nil {
				return err
			}
			continue // verify what the engine holds now, whoever created it
		}
		for _, n := range nets {
			if !owned(n.Labels, want) {
				return errNetworkConflict
			}
		}
		return d.dedupe(ctx, nets)
	}
	return &driver.RetryableError{Code: CodeEngineRejected, Reason: "The Docker network did not become visible after creation."}
}

// dedupe keeps the network with the lowest id when an engine without duplicate-name checks let
// concurrent ensures create several labelled copies; every caller picks the same survivor.
func (d *Driver) dedupe(ctx context.Context, nets []network) error {
	if len(nets) < 2 {
		return nil
	}
	sort.Slice(nets, func(i, j int) bool { return nets[i].ID < nets[j].ID })
	for _, n := range nets[1:] {
		if err := d.engine.removeNetwork(ctx, n.ID); err != nil {
			var permanent *driver.PermanentError
			if errors.As(err, &permanent) {
				return &driver.RetryableError{Code: permanent.Code, Reason: permanent.Reason}
			}
			return err
		}
	}
	return nil
}

// DeleteNamespace implements driver.Compute: verify the network's labels, then remove it. A
// missing network is deleted; a foreign one is refused and left alone.
func (d *Driver) DeleteNamespace(ctx context.Context, ns driver.Namespace) (driver.NamespaceObservation, error) {
	if err := ctx.Err(); err != nil {
		return driver.NamespaceObservation{}, err
	}
	unlock, err := d.locks.lock(ctx, ns.ID)
	if err != nil {
		return driver.NamespaceObservation{}, err
	}
	defer unlock()
	err = d.deleteNetwork(ctx, ns.ID)
	switch {
	case err == nil:
		return driver.NamespaceDeleted(ns.ID), nil
	case ctx.Err() != nil:
		return driver.NamespaceObservation{}, ctx.Err()
	}
	return driver.NamespaceDeleteFailed(ns.ID, err), nil
}

func (d *Driver) deleteNetwork(ctx context.Context, namespaceID string) error {
	want := Labels(namespaceID)
	nets, err := d.engine.networksNamed(ctx, NetworkName(namespaceID))
	if err != nil {
		return err
	}
	for _, n := range nets {
		if !owned(n.Labels, want) {
			return errNetworkConflict
		}
	}
	for _, n := range nets {
		if err := d.engine.removeNetwork(ctx, n.ID); err != nil {
			return err
		}
	}
	return nil
}

// PrepareRevision implements driver.Compute. It refuses every revision: the driver supports no
// Harness authentication, so it cannot deploy Agents.
func (d *Driver) PrepareRevision(ctx context.Context, rev driver.Revision, _ driver.RevisionContext) (driver.RevisionReadiness, error) {
	if err := ctx.Err(); err != nil {
		return driver.RevisionReadiness{}, err
	}
	return driver.RevisionReadiness{}, &driver.UnsupportedError{
		Code:   driver.CodeHarnessAuthenticationUnsupported,
		Reason: "The Docker Compute Driver does not support Harness authentication and cannot deploy Agents.",
	}
}

// StopRevision implements driver.Compute: a no-op, because the driver never starts a revision.
func (d *Driver) StopRevision(ctx context.Context, _ driver.Revision, _ driver.StopOptions) error {
	return ctx.Err()
}

// RetireRevision implements driver.Compute: a no-op, because the driver never starts a revision.
func (d *Driver) RetireRevision(ctx context.Context, _ driver.Revision) error { return ctx.Err() }

// SupportsHarnessAuth implements driver.HarnessAuthSupport: no method is supported.
func (d *Driver) SupportsHarnessAuth(string) bool { return false }
