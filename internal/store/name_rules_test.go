package store_test

import (
	"context"
	"errors"
	"testing"
	"unicode"

	"github.com/openclaw/occ/internal/platform"
	"github.com/openclaw/occ/internal/store"
	"github.com/openclaw/occ/internal/testkit/pgtest"
)

// TestNameRuleMatchesTheDatabase: occ.is_valid_name and platform.ValidName agree on every format
// character (Unicode category Cf, the whole table Go has), on the characters next to each of them,
// and on the control characters of the older rule; a name the database refused would otherwise
// be a 5xx instead of a 400.
func TestNameRuleMatchesTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := db.App(t)
	var probes []rune
	for r := rune(1); r <= unicode.MaxRune; r++ {
		if (r >= 0xd800 && r <= 0xdfff) || !(unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cf, r-1) || unicode.Is(unicode.Cf, r+1) || r < 0xa0 || r == 0x2028 || r == 0x2029) {
			continue
		}
		probes = append(probes, r)
	}
	names := make([]string, len(probes))
	for i, r := range probes {
		names[i] = "a" + string(r) + "b"
	}
	rows, err := app.Query(ctx, `SELECT occ.is_valid_name(n) FROM unnest($1::text[]) WITH ORDINALITY AS t(n, i) ORDER BY i`, names)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i, refused := 0, 0
	for rows.Next() {
		var ok bool
		if err := rows.Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if want := platform.ValidName(names[i]); ok != want {
			t.Errorf("U+%04X: database says %v, platform.ValidName %v", probes[i], ok, want)
		}
		if !ok {
			refused++
		}
		i++
	}
	if err := rows.Err(); err != nil || i != len(names) {
		t.Fatalf("read %d of %d: %v", i, len(names), err)
	}
	if refused < 150 {
		t.Fatalf("only %d of %d probes refused: the Cf list is missing", refused, len(names))
	}
}

// TestNamespaceNamesCompareUnderNFKC: a name equal to a stored one after NFKC normalization is a
// duplicate, live or tombstoned.
func TestNamespaceNamesCompareUnderNFKC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := pgtest.New(t).App(t)
	if _, err := store.InsertNamespace(ctx, app, id("ns"), "team-fi", nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ｔｅａｍ-fi", "team-ﬁ", "team-f\u0131"} {
		_, err := store.InsertNamespace(ctx, app, id("ns"), name, nil)
		wantDuplicate := name != "team-f\u0131" // a dotless i is another letter, not a compatibility form
		if got := err != nil && errors.Is(err, store.ErrDuplicate); got != wantDuplicate {
			t.Errorf("%q: err %v, want duplicate %v", name, err, wantDuplicate)
		}
	}
}
