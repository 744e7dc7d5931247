package audit

import (
	"unicode"

	"github.com/openclaw/occ/internal/obs"
)

func isControl(r rune) bool { return unicode.IsControl(r) }

func looksLikeSecret(s string) bool { return obs.LooksLikeSecret(s) }

func ptr[T any](v T) *T { return &v }
