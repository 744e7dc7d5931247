package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// PresetRow is one Preset of a Namespace.
type PresetRow struct {
	ID          string
	NamespaceID string
	Name        string
	Template    json.RawMessage
	CreatedAt   time.Time
}

// PresetSeed is an Installation default to copy into a Namespace: its new id, name and template.
type PresetSeed struct {
	ID       string
	Name     string
	Template json.RawMessage
}

const presetColumns = `p.id, p.namespace_id, p.name, p.template, p.created_at`

func scanPreset(r pgx.CollectableRow) (PresetRow, error) {
	var p PresetRow
	err := r.Scan(&p.ID, &p.NamespaceID, &p.Name, &p.Template, &p.CreatedAt)
	return p, err
}

// InsertPreset writes a new Preset; a name in use in the Namespace is ErrDuplicate.
func InsertPreset(ctx context.Context, db DBTX, p PresetRow) (PresetRow, error) {
	rows, err := db.Query(ctx, `INSERT INTO occ.presets AS p (id, namespace_id, name, template)
VALUES ($1, $2, $3, $4) RETURNING `+presetColumns, p.ID, p.NamespaceID, p.Name, []byte(p.Template))
	if err != nil {
		return PresetRow{}, classify(err)
	}
	row, err := pgx.CollectExactlyOneRow(rows, scanPreset)
	return row, classify(err)
}

// SeedPresets copies the defaults whose name the Namespace does not hold yet and returns the rows
// it wrote. A Preset already using the name is kept as it is, whatever its template.
func SeedPresets(ctx context.Context, db DBTX, namespaceID string, seeds []PresetSeed) ([]PresetRow, error) {
	var out []PresetRow
	for _, s := range seeds {
		rows, err := db.Query(ctx, `INSERT INTO occ.presets AS p (id, namespace_id, name, template)
VALUES ($1, $2, $3, $4) ON CONFLICT (namespace_id, name) DO NOTHING RETURNING `+presetColumns,
			s.ID, namespaceID, s.Name, []byte(s.Template))
		if err != nil {
			return nil, classify(err)
		}
		written, err := pgx.CollectRows(rows, scanPreset)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, written...)
	}
	return out, nil
}

// GetPreset reads a Preset of the Namespace with an optional row lock; ErrNotFound when absent.
func GetPreset(ctx context.Context, db DBTX, namespaceID, id string, lock RowLock) (PresetRow, error) {
	rows, err := db.Query(ctx, `SELECT `+presetColumns+` FROM occ.presets p
 WHERE p.namespace_id = $1 AND p.id = $2`+lock.clause(), namespaceID, id)
	return oneRow(rows, err, scanPreset)
}

// ListPresets returns up to limit Presets of the Namespace in creation order after the cursor.
func ListPresets(ctx context.Context, db DBTX, namespaceID string, after *Cursor, limit int) ([]PresetRow, error) {
	at, id := cursorArgs(after)
	rows, err := db.Query(ctx, `SELECT `+presetColumns+` FROM occ.presets p
 WHERE p.namespace_id = $1 AND ($2::timestamptz IS NULL OR (p.created_at, p.id) > ($2, $3))
 ORDER BY p.created_at, p.id LIMIT $4`, namespaceID, at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanPreset)
}

// UpdatePreset replaces the name and the template of a Preset; a name in use is ErrDuplicate.
func UpdatePreset(ctx context.Context, db DBTX, namespaceID, id, name string, template json.RawMessage) (PresetRow, error) {
	rows, err := db.Query(ctx, `UPDATE occ.presets p SET name = $3, template = $4, updated_at = clock_timestamp()
 WHERE p.namespace_id = $1 AND p.id = $2 RETURNING `+presetColumns, namespaceID, id, name, []byte(template))
	return oneRow(rows, err, scanPreset)
}

// DeletePreset removes a Preset; false when it did not exist.
func DeletePreset(ctx context.Context, db DBTX, namespaceID, id string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM occ.presets WHERE namespace_id = $1 AND id = $2`, namespaceID, id)
	return tag.RowsAffected() == 1, classify(err)
}

// DeleteUnchangedPresets removes the Presets of the Namespace equal to one of the defaults by name
// and template (JSON equality) with their exact-target AccessBindings, and returns their ids.
func DeleteUnchangedPresets(ctx context.Context, db DBTX, namespaceID string, defaults []PresetSeed) ([]string, error) {
	var ids []string
	for _, d := range defaults {
		rows, err := db.Query(ctx, `WITH removed AS (DELETE FROM occ.presets
 WHERE namespace_id = $1 AND name = $2 AND template = $3::jsonb RETURNING id),
 bindings AS (DELETE FROM occ.iam_access_bindings b USING removed
 WHERE b.namespace_id = $1 AND b.resource_kind = 'preset' AND b.resource_id = removed.id)
SELECT id FROM removed`, namespaceID, d.Name, []byte(d.Template))
		if err != nil {
			return nil, classify(err)
		}
		removed, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		ids = append(ids, removed...)
	}
	return ids, nil
}

// SeedableNamespaces lists the live Namespaces that lack at least one of the default Presets
// names, in one query: API start seeds provisioning and ready ones (failed and deleting
// Namespaces are skipped).
func SeedableNamespaces(ctx context.Context, db DBTX, names []string) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT n.id FROM occ.namespaces n
 WHERE n.deleted_at IS NULL AND n.status IN ('provisioning', 'ready')
   AND EXISTS (SELECT 1 FROM unnest($1::text[]) AS d(name)
                WHERE NOT EXISTS (SELECT 1 FROM occ.presets p WHERE p.namespace_id = n.id AND p.name = d.name COLLATE "C"))
 ORDER BY n.id`, names)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// PrincipalIDs lists the human Principals, oldest first: API start looks among them for the
// Installation administrator that seeds the default Presets.
func PrincipalIDs(ctx context.Context, db DBTX) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT id FROM occ.iam_identities WHERE kind = 'principal' ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
