package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/store"
)

// Listen holds one pool connection in LISTEN on the work channel and signals the returned channel
// whenever work is enqueued, so an idle worker claims it within milliseconds instead of a poll
// interval. A lost connection is re-established with backoff; the poll interval covers the gap.
func Listen(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) <-chan struct{} {
	wake := make(chan struct{}, 1)
	go func() {
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			err := listenOnce(ctx, pool, wake)
			if ctx.Err() != nil {
				return
			}
			log.Error("worker.error", "code", "WORKER_UNAVAILABLE", "step", "listen", "errorClass", driver.ErrorClass(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
		}
	}()
	return wake
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, wake chan<- struct{}) error {
	pooled, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection carries LISTEN state: take it out of the pool for good.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+store.WorkNotifyChannel); err != nil {
		return err
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}
