package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/openclaw/occ/internal/iam"
	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/problem"
	"github.com/openclaw/occ/internal/store"
)

// Lists are complete and authorization-filtered, as upstream; limit and cursor (ours) page through
// the filtered list. A cursor is opaque to clients: base64url of the list it belongs to (the
// route's action and a digest of its scope: path parameters and filters) and the keyset position
// of the last returned item, so it cannot be replayed on another list, another Namespace's list
// or the same list under other filters.

type cursorDoc struct {
	Route string `json:"r"`
	Scope string `json:"s,omitempty"`
	Name  string `json:"n,omitempty"`
	Micro int64  `json:"t,omitempty"`
	ID    string `json:"i,omitempty"`
}

func (c *call) encodeCursor(doc cursorDoc) string {
	doc.Route, doc.Scope = c.route.Action, c.listScope()
	raw, _ := json.Marshal(doc)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// listScope digests what selects the list's items besides the position: the path parameters and
// every query value but the cursor and the page size.
func (c *call) listScope() string {
	h := sha256.New()
	for _, m := range []map[string]string{c.params, c.query} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k == "cursor" || k == "limit" {
				continue
			}
			fmt.Fprintf(h, "%q=%q;", k, m[k])
		}
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

var errBadCursor = platform.Invalid("The cursor is not valid for this list.", "/cursor", problem.DetailInvalidFormat)

func (c *call) decodeCursor() (*cursorDoc, error) {
	raw, ok := c.query["cursor"]
	if !ok {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || !utf8.Valid(b) {
		return nil, errBadCursor
	}
	var doc cursorDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Route != c.route.Action || doc.Scope != c.listScope() ||
		(doc.Name != "" && !platform.ValidName(doc.Name)) || (doc.ID != "" && !platform.ValidOpaqueID(doc.ID)) {
		return nil, errBadCursor
	}
	return &doc, nil
}

// keyCursor turns a cursor document into a store keyset position.
func keyCursor(doc *cursorDoc) *store.Cursor {
	if doc == nil {
		return nil
	}
	return &store.Cursor{CreatedAt: time.UnixMicro(doc.Micro).UTC(), ID: doc.ID}
}

func keyDoc(created time.Time, id string) cursorDoc {
	return cursorDoc{Micro: created.UnixMicro(), ID: id}
}

// pageLimit is the requested limit, or 0 for a complete list.
func (c *call) pageLimit(def int) int {
	raw, ok := c.query["limit"]
	if !ok {
		return def
	}
	n, _ := strconv.Atoi(raw)
	return n
}

// batchSize is how many candidates one storage read fetches while filtering.
const batchSize = 200

// collect reads candidates batch by batch from fetch (each batch after the position of the last
// candidate seen), keeps those keep allows, and stops after limit kept items (limit 0: all). It
// returns the kept items and, when more may follow, the cursor after the last one kept. keep
// filters a whole fetched batch at once (one IAM policy read per batch, see keepRead) and returns
// one verdict per candidate. An authorization error fails the whole list.
func collect[T any](ctx context.Context, limit int, fetch func(after *cursorDoc, n int) ([]T, error),
	keep func([]T) ([]bool, error), position func(T) cursorDoc, after *cursorDoc) ([]T, *cursorDoc, error) {
	out := []T{}
	for {
		batch, err := fetch(after, batchSize)
		if err != nil {
			return nil, nil, err
		}
		var verdicts []bool
		if len(batch) > 0 {
			if verdicts, err = keep(batch); err != nil {
				return nil, nil, err
			}
			if len(verdicts) != len(batch) {
				return nil, nil, &platform.Error{Problem: problem.Problem{Code: platform.CodeInternalError, Message: platform.MessageInternalError}}
			}
		}
		for i, item := range batch {
			pos := position(item)
			if verdicts[i] {
				if limit > 0 && len(out) == limit {
					last := position(out[len(out)-1])
					return out, &last, nil
				}
				out = append(out, item)
			}
			after = &pos
		}
		if len(batch) < batchSize {
			return out, nil, nil
		}
	}
}

// keepAll keeps every candidate: for lists whose route permission already covers every item.
func keepAll[T any](batch []T) ([]bool, error) {
	out := make([]bool, len(batch))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

// keepEach filters a batch with a per-item rule: for lists whose items do not share one kind and
// one Namespace, so that a batch decision would not save a policy read.
func keepEach[T any](keep func(T) (bool, error)) func([]T) ([]bool, error) {
	return func(batch []T) ([]bool, error) {
		out := make([]bool, len(batch))
		for i, item := range batch {
			ok, err := keep(item)
			if err != nil {
				return nil, err
			}
			out[i] = ok
		}
		return out, nil
	}
}

// keepRead keeps the candidates the caller may read: resource(item) names each one (all of one kind
// in one Namespace for a list page), and the whole batch is decided with one policy read
// (allowedEach), with the same decisions as one c.allowed per item.
func keepRead[T any](ctx context.Context, c *call, resource func(T) iam.Resource) func([]T) ([]bool, error) {
	return func(batch []T) ([]bool, error) {
		resources := make([]iam.Resource, len(batch))
		for i, item := range batch {
			resources[i] = resource(item)
		}
		return c.allowedEach(ctx, iam.ActionRead, resources)
	}
}

func (c *call) setNext(next *cursorDoc) {
	if next != nil {
		c.nextCursor = c.encodeCursor(*next)
	}
}
