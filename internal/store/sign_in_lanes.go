package store

import (
	"context"
	"time"
)

// SignInLane names one password sign-in budget: the SHA-256 of what it limits, and its rule.
type SignInLane struct {
	KeyHash    []byte
	Window     time.Duration // a failure counts against the budget this long
	AttemptTTL time.Duration // an attempt in flight counts this long at most (its replica may have died)
	Budget     int           // failures in the window plus attempts in flight
}

// SignInOutcome ends an admitted attempt.
type SignInOutcome string

// Sign-in outcomes.
const (
	SignInFailed    SignInOutcome = "failed"    // spends the budget for a window
	SignInSucceeded SignInOutcome = "succeeded" // clears the lane's failures
	SignInReleased  SignInOutcome = "released"  // neither: only ends the attempt
)

// AcquireSignInLane admits one attempt at now when the lane's budget allows. When it does not,
// retryAt is when its oldest failure leaves the window (zero when only attempts in flight fill it).
func AcquireSignInLane(ctx context.Context, db DBTX, lane SignInLane, now time.Time) (admitted bool, retryAt time.Time, err error) {
	var at *time.Time
	err = db.QueryRow(ctx, `SELECT admitted, retry_at FROM occ.acquire_sign_in_lane($1, $2, $3, $4, $5)`,
		lane.KeyHash, now, lane.Window, lane.AttemptTTL, lane.Budget).Scan(&admitted, &at)
	if at != nil {
		retryAt = *at
	}
	return admitted, retryAt, err
}

// EndSignInAttempt ends the attempt admitted at attempt (AcquireSignInLane's now).
func EndSignInAttempt(ctx context.Context, db DBTX, lane SignInLane, attempt, now time.Time, outcome SignInOutcome) error {
	_, err := db.Exec(ctx, `SELECT occ.end_sign_in_attempt($1, $2, $3, $4)`, lane.KeyHash, attempt, now, string(outcome))
	return err
}
