package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/openclaw/occ/internal/driver/kubernetes/kube"
)

// How a prepare pass reads and writes the Agent's objects in few requests, with the same
// ownership proof as a read by name before every write:
//
//   - One LIST per kind returns every object that carries the Agent's ownership labels. An object
//     found there is judged by owner.owns like one read by name. A name missing from the list may
//     still exist without those labels (someone else's object), so it is read by name before it is
//     written, as before.
//   - An apply is skipped when the ledger shows that the live object is exactly what this
//     process's last apply of the same desired object produced: same UID and resourceVersion, or
//     for a Deployment the same generation with every desired label and annotation in place (its
//     status moves the resourceVersion, never the generation). Applying it again would change
//     nothing. Any other writer's change moves the resourceVersion (or the generation) and the
//     object is applied again, so drift is still corrected, or refused as a conflict, at once.
//   - The pass's readiness is observed from the objects it listed or applied, not read again.

// liveObject is an object as the API server last returned it.
type liveObject struct {
	meta kube.Meta
	raw  json.RawMessage
}

// liveSet is the listed objects of one kind, by name.
type liveSet map[string]liveObject

// listAgentObjects lists the objects of res in the plan's namespace that carry the Agent's
// ownership labels.
func (d *Compute) listAgentObjects(ctx context.Context, p *plan, res kube.Resource) (liveSet, error) {
	return d.listLive(ctx, res, p.ns, kube.Selector(labelManagedBy, managedByValue, labelNamespace, p.rev.NamespaceID, labelAgent, p.rev.AgentID))
}

// listLive lists the objects of res in namespace that match selector.
func (d *Compute) listLive(ctx context.Context, res kube.Resource, namespace, selector string) (liveSet, error) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := d.client.List(ctx, res.Path(namespace, ""), selector, &list); err != nil {
		return nil, classify(err)
	}
	set := make(liveSet, len(list.Items))
	for _, raw := range list.Items {
		obj, err := decodeLive(raw)
		if err != nil {
			return nil, err
		}
		set[obj.meta.Name] = obj
	}
	return set, nil
}

// decodeLive keeps raw with its decoded metadata.
func decodeLive(raw json.RawMessage) (liveObject, error) {
	var v objectView
	err := json.Unmarshal(raw, &v)
	return liveObject{meta: v.Metadata, raw: raw}, err
}

// lookup returns the object of res named name: from live when it was listed there, or else read
// by name (it may exist without the labels the list selected on). found is false on 404.
func (d *Compute) lookup(ctx context.Context, live liveSet, res kube.Resource, namespace, name string) (obj liveObject, found bool, err error) {
	if obj, found = live[name]; found {
		return obj, true, nil
	}
	var raw json.RawMessage
	if found, err = d.read(ctx, res, namespace, name, &raw); err != nil || !found {
		return liveObject{}, found, err
	}
	obj, err = decodeLive(raw)
	return obj, err == nil, err
}

// ensureObject server-side applies obj (an object of res owned by o) after proving that an
// existing object of that name is ours, and records the result in the plan for the readiness
// checks. live holds the kind's listed objects (nil: read by name). A terminating object, or one
// for which hold (nil: none) is true, is waited out.
func (d *Compute) ensureObject(ctx context.Context, p *plan, live liveSet, res kube.Resource, kind string, o owner, obj kube.Object, hold func(kube.Meta) bool) error {
	name := objectName(obj)
	cur, found, err := d.lookup(ctx, live, res, p.ns, name)
	if err != nil {
		return err
	}
	if found {
		if !o.owns(cur.meta) {
			return ownershipError(kind, name)
		}
		if cur.meta.Terminating() || (hold != nil && hold(cur.meta)) {
			return errPending
		}
	}
	path := res.Path(p.ns, name)
	digest, err := digestOf(obj)
	if err != nil {
		return err
	}
	if found && d.applied.unchanged(path, digest, res == kube.Deployments, cur.meta, obj) {
		p.observed(res, name, cur.raw)
		return nil
	}
	var out json.RawMessage
	if err := d.client.Apply(ctx, path, obj, &out); err != nil {
		return classify(err)
	}
	applied, err := decodeLive(out)
	if err != nil {
		return err
	}
	d.applied.record(path, digest, applied.meta)
	p.observed(res, name, out)
	return nil
}

func digestOf(obj kube.Object) ([32]byte, error) {
	b, err := json.Marshal(obj) // map keys are sorted: the same object always encodes the same
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// appliedLedgerCapacity bounds the ledger; when full it starts again empty (the next pass of each
// object then applies once more).
const appliedLedgerCapacity = 16384

// appliedLedger remembers, per object path, what this process last applied there and what the
// API server answered.
type appliedLedger struct {
	mu      sync.Mutex
	entries map[string]appliedEntry
}

type appliedEntry struct {
	digest          [32]byte
	uid             string
	resourceVersion string
	generation      int64
}

func newAppliedLedger() *appliedLedger {
	return &appliedLedger{entries: map[string]appliedEntry{}}
}

// record notes that applying the object with digest at path produced m.
func (l *appliedLedger) record(path string, digest [32]byte, m kube.Meta) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) >= appliedLedgerCapacity {
		clear(l.entries)
	}
	l.entries[path] = appliedEntry{digest: digest, uid: m.UID, resourceVersion: m.ResourceVersion, generation: m.Generation}
}

// unchanged reports whether live (at path) is still what the last apply of the object with digest
// produced. generationTracksSpec admits a moved resourceVersion at the same generation (a
// Deployment's status updates), provided that every label and annotation of want is in place.
func (l *appliedLedger) unchanged(path string, digest [32]byte, generationTracksSpec bool, live kube.Meta, want kube.Object) bool {
	l.mu.Lock()
	e, ok := l.entries[path]
	l.mu.Unlock()
	if !ok || e.digest != digest || e.uid != live.UID {
		return false
	}
	if e.resourceVersion == live.ResourceVersion {
		return true
	}
	return generationTracksSpec && e.generation != 0 && e.generation == live.Generation && metadataInPlace(want, live)
}

// metadataInPlace reports whether live carries every label and annotation of want's metadata.
func metadataInPlace(want kube.Object, live kube.Meta) bool {
	meta, _ := want["metadata"].(kube.Object)
	for field, have := range map[string]map[string]string{"labels": live.Labels, "annotations": live.Annotations} {
		m, ok := meta[field].(map[string]string)
		if !ok && meta[field] != nil {
			return false // built some other way: do not judge, apply
		}
		for k, v := range m {
			if have[k] != v {
				return false
			}
		}
	}
	return true
}
