package kube

import (
	"context"
	"net/url"
	"strconv"
)

// ListMeta is the metadata of a list: Continue is the token of the next page, "" on the last one.
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion"`
	Continue        string `json:"continue"`
}

// ListPage reads one page of a collection: at most limit items (limit > 0) matching labelSelector,
// starting at continueToken ("" for the first page). The caller decodes metadata.continue (ListMeta)
// from out and passes it back for the next page. An expired token answers HTTP 410 (Reason
// "Expired"); the caller starts again from the first page. Reads are retried.
func (c *Client) ListPage(ctx context.Context, path, labelSelector string, limit int, continueToken string, out any) error {
	q := url.Values{}
	if labelSelector != "" {
		q.Set("labelSelector", labelSelector)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if continueToken != "" {
		q.Set("continue", continueToken)
	}
	return c.read(ctx, path, q, out)
}
