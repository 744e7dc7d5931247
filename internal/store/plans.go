package store

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PlanRefreshInterval is how old the cached query plans of a session of OCC's pools may grow
// before the session is handed out again (RefreshPlans).
const PlanRefreshInterval = 5 * time.Second

// RefreshPlans makes every session of a pool built from cfg drop its cached query plans once they
// are older than every, just before the session is handed out: one DISCARD PLANS, after which the
// statements stay prepared and each is planned again on its next use.
//
// PostgreSQL keeps a prepared statement's generic plan, and the plans of the foreign-key checks,
// for the session's life or until an ANALYZE of their tables. Made on a young installation whose
// queue and Namespaces fit in one page, they read those tables whole: a one-row transition and
// the foreign-key check of its evidence row each read all 2 009 rows once 2 000 were queued
// (TestRefreshedPlansFollowTheTablesGrowth), and a burst of work grows the tables faster than
// autovacuum analyzes them. Planning every statement every time instead halved the worker's
// drain (docs/performance.md).
func RefreshPlans(cfg *pgxpool.Config, every time.Duration) {
	var planned sync.Map // *pgx.Conn → when its cached plans were last dropped (or it connected)
	afterConnect, prepareConn, beforeClose := cfg.AfterConnect, cfg.PrepareConn, cfg.BeforeClose
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if afterConnect != nil {
			if err := afterConnect(ctx, c); err != nil {
				return err
			}
		}
		planned.Store(c, time.Now())
		return nil
	}
	cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		if prepareConn != nil {
			if ok, err := prepareConn(ctx, c); !ok || err != nil {
				return ok, err
			}
		}
		if at, ok := planned.Load(c); ok && time.Since(at.(time.Time)) < every {
			return true, nil
		}
		if _, err := c.Exec(ctx, `DISCARD PLANS`); err != nil {
			// A session that cannot run DISCARD is broken: the pool closes it and takes another,
			// unless the caller gave up.
			return false, ctx.Err()
		}
		planned.Store(c, time.Now())
		return true, nil
	}
	cfg.BeforeClose = func(c *pgx.Conn) {
		planned.Delete(c)
		if beforeClose != nil {
			beforeClose(c)
		}
	}
}
