package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// CountRefusedStopWaits counts the consecutive failed refused-candidate stop waits of a work item:
// among its latest 64 evidence rows, newest first, the REFUSED_CANDIDATE_STOP_PENDING rows that
// carry a refusal and did not yield, stopping at the first row without a refusal. Rows with a
// refusal and another code (LEASE_EXPIRED) are passed over.
func CountRefusedStopWaits(ctx context.Context, db DBTX, key string) (int, error) {
	rows, err := db.Query(ctx, `
SELECT e.details ->> 'reasonCode', e.details ->> 'refusal', COALESCE((e.details ->> 'stopYielded')::boolean, false)
  FROM occ.audit_events e
 WHERE e.action = 'reconcile' AND (e.details ->> 'workId') = $1
 ORDER BY e.occurred_at DESC LIMIT 64`, key)
	if err != nil {
		return 0, err
	}
	type evidence struct {
		code, refusal *string
		yielded       bool
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (evidence, error) {
		var e evidence
		err := r.Scan(&e.code, &e.refusal, &e.yielded)
		return e, err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range list {
		if e.refusal == nil {
			break
		}
		if e.code != nil && *e.code == "REFUSED_CANDIDATE_STOP_PENDING" && !e.yielded {
			n++
		}
	}
	return n, nil
}

// RefusalBeforeLeaseExpiry returns the refusal of a work item's refused-candidate stop wait that
// lease recovery interrupted: the newest evidence row that is not a plain LEASE_EXPIRED, when it is
// REFUSED_CANDIDATE_STOP_PENDING (or LEASE_EXPIRED) with a refusal; nil otherwise.
func RefusalBeforeLeaseExpiry(ctx context.Context, db DBTX, key string) (*string, error) {
	var code, refusal *string
	err := db.QueryRow(ctx, `
SELECT e.details ->> 'reasonCode', e.details ->> 'refusal'
  FROM occ.audit_events e
 WHERE e.action = 'reconcile' AND (e.details ->> 'workId') = $1
   AND ((e.details ->> 'reasonCode') IS DISTINCT FROM 'LEASE_EXPIRED' OR e.details ? 'refusal')
 ORDER BY e.occurred_at DESC LIMIT 1`, key).Scan(&code, &refusal)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil || code == nil || refusal == nil {
		return nil, err
	}
	if *code != "REFUSED_CANDIDATE_STOP_PENDING" && *code != "LEASE_EXPIRED" {
		return nil, nil
	}
	return refusal, nil
}
