package store

import (
	"context"
	"time"
)

// SignInLane is one password sign-in budget: the SHA-256 of what it limits and how many failures
// in the window plus attempts in flight it allows.
type SignInLane struct {
	KeyHash []byte
	Budget  int
}

// SignInBudget is the lanes one attempt spends, all or none, under one rule of time.
type SignInBudget struct {
	Lanes      []SignInLane
	Window     time.Duration // a failure counts against the budgets this long
	AttemptTTL time.Duration // an attempt in flight counts this long at most (its replica may have died)
}

func (b SignInBudget) keys() [][]byte {
	keys := make([][]byte, len(b.Lanes))
	for i, l := range b.Lanes {
		keys[i] = l.KeyHash
	}
	return keys
}

// SignInOutcome ends an admitted attempt.
type SignInOutcome string

// Sign-in outcomes.
const (
	SignInFailed    SignInOutcome = "failed"    // spends the budgets for a window
	SignInSucceeded SignInOutcome = "succeeded" // clears the lanes' failures
	SignInReleased  SignInOutcome = "released"  // neither: only ends the attempt
)

// AcquireSignInLanes admits one attempt at now on every lane, or on none when any lane's budget
// is spent. When refused, retryAt is when the refusing lanes' oldest failures have left the window
// (zero when only attempts in flight fill them). One statement, whatever the number of lanes.
func AcquireSignInLanes(ctx context.Context, db DBTX, b SignInBudget, now time.Time) (admitted bool, retryAt time.Time, err error) {
	budgets := make([]int32, len(b.Lanes))
	for i, l := range b.Lanes {
		budgets[i] = int32(l.Budget)
	}
	var at *time.Time
	err = db.QueryRow(ctx, `SELECT admitted, retry_at FROM occ.acquire_sign_in_lanes($1, $2, $3, $4, $5)`,
		b.keys(), budgets, now, b.Window, b.AttemptTTL).Scan(&admitted, &at)
	if at != nil {
		retryAt = *at
	}
	return admitted, retryAt, err
}

// EndSignInAttempt ends, on every lane, the attempt admitted at attempt (AcquireSignInLanes' now).
func EndSignInAttempt(ctx context.Context, db DBTX, b SignInBudget, attempt, now time.Time, outcome SignInOutcome) error {
	_, err := db.Exec(ctx, `SELECT occ.end_sign_in_attempt($1, $2, $3, $4)`, b.keys(), attempt, now, string(outcome))
	return err
}
