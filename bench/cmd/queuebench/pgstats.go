package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

type settings struct {
	version string
	summary string
}

func readSettings(ctx context.Context, admin *pgx.Conn) (settings, error) {
	var s settings
	if err := admin.QueryRow(ctx, `SELECT version()`).Scan(&s.version); err != nil {
		return s, err
	}
	var parts []string
	for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes", "shared_buffers",
		"wal_level", "max_wal_size", "checkpoint_timeout", "autovacuum", "max_connections"} {
		var v string
		if err := admin.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v); err != nil {
			return s, err
		}
		parts = append(parts, name+"="+v)
	}
	s.summary = strings.Join(parts, " ")
	return s, nil
}

// snapshot is the server's counters at one moment.
type snapshot struct {
	xactCommit int64  // pg_stat_database.xact_commit of the engine's database
	walBytes   int64  // pg_stat_wal.wal_bytes (server-wide)
	lsn        uint64 // pg_current_wal_insert_lsn() (server-wide)
}

func takeSnapshot(ctx context.Context, admin *pgx.Conn, database string) (snapshot, error) {
	var s snapshot
	var lsn string
	// The admin session's own WAL (CHECKPOINT, slot) is flushed to pg_stat_wal at the end of the
	// next transaction.
	if _, err := admin.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		return s, err
	}
	if _, err := admin.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return s, err
	}
	err := admin.QueryRow(ctx, `
SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = $1),
       (SELECT wal_bytes FROM pg_stat_wal)::bigint,
       pg_current_wal_insert_lsn()::text`, database).Scan(&s.xactCommit, &s.walBytes, &lsn)
	if err != nil {
		return s, err
	}
	s.lsn, err = parseLSN(lsn)
	return s, err
}

func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad LSN %q", s)
	}
	return h<<32 | l, nil
}

func formatLSN(v uint64) string { return fmt.Sprintf("%X/%X", v>>32, uint32(v)) }

// waitForBackends waits until no client backend is connected to database: a backend flushes its
// statistics when it exits, so the counters are complete only then.
func waitForBackends(ctx context.Context, admin *pgx.Conn, database string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
			database).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			// Let exiting backends finish writing their statistics.
			time.Sleep(200 * time.Millisecond)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d connections to %s still open", n, database)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// walSlot holds the run's WAL on the server (a temporary physical replication slot, dropped with
// the admin session at the latest) so that pg_walinspect can read it after the run.
type walSlot struct{ name string }

func reserveWAL(ctx context.Context, admin *pgx.Conn) (*walSlot, error) {
	s := &walSlot{name: fmt.Sprintf("queuebench_%d", os.Getpid())}
	if _, err := admin.Exec(ctx, `SELECT pg_create_physical_replication_slot($1, true, true)`, s.name); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *walSlot) release(ctx context.Context, admin *pgx.Conn) {
	if _, err := admin.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, s.name); err != nil {
		logf("drop replication slot %s: %v", s.name, err)
	}
}

// walBreakdown attributes a run's WAL records to the relation of their first block reference,
// or, for records without one, to their resource manager.
type walBreakdown struct {
	records int64
	bytes   int64
	rows    []walRow
	tables  []walRow // rows summed per table (a table with its indexes and TOAST)
	types   []walRow // rows summed per resource manager and record type
	commits int64    // Transaction COMMIT records: transactions that wrote something
}

type walRow struct {
	name    string
	table   string
	records int64
	bytes   int64
	fpi     int64
}

func (s *walSlot) breakdown(ctx context.Context, admin *pgx.Conn, adminURL, database string, from, to uint64) (*walBreakdown, error) {
	// Records are readable once flushed (synchronous_commit=off flushes within wal_writer_delay).
	deadline := time.Now().Add(10 * time.Second)
	for {
		var flushed string
		if err := admin.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn()::text`).Scan(&flushed); err != nil {
			return nil, err
		}
		f, err := parseLSN(flushed)
		if err != nil {
			return nil, err
		}
		if f >= to {
			break
		}
		if time.Now().After(deadline) {
			to = f
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	var dbOID string
	if err := admin.QueryRow(ctx, `SELECT oid::text FROM pg_database WHERE datname = $1`, database).Scan(&dbOID); err != nil {
		return nil, err
	}
	names, err := relationNames(ctx, adminURL, database)
	if err != nil {
		return nil, err
	}

	rows, err := admin.Query(ctx, `
SELECT COALESCE(substring(block_ref from 'rel \d+/(\d+)/\d+'), ''),
       COALESCE(substring(block_ref from 'rel \d+/\d+/(\d+)'), ''),
       resource_manager, record_type,
       count(*), sum(record_length)::bigint, sum(fpi_length)::bigint
  FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
 GROUP BY 1, 2, 3, 4`, formatLSN(from), formatLSN(to))
	if err != nil {
		return nil, err
	}
	b := &walBreakdown{}
	byName := map[string]*walRow{}
	byTable := map[string]*walRow{}
	byType := map[string]*walRow{}
	for rows.Next() {
		var db, rel, rmgr, recType string
		var n, bytes, fpi int64
		if err := rows.Scan(&db, &rel, &rmgr, &recType, &n, &bytes, &fpi); err != nil {
			rows.Close()
			return nil, err
		}
		name, table := "["+rmgr+" records without a block]", "(no relation)"
		switch {
		case rel == "":
			if rmgr == "Transaction" && strings.HasPrefix(recType, "COMMIT") {
				b.commits += n
				name = "[Transaction COMMIT]"
			}
		case db != dbOID:
			name, table = "[other databases and shared catalogs]", "(other)"
		case names[rel].name != "":
			name, table = names[rel].name, names[rel].table
		default:
			name, table = "[relfilenode "+rel+"]", "(unknown)"
		}
		b.records += n
		b.bytes += bytes
		for _, m := range []struct {
			into map[string]*walRow
			key  string
		}{{byName, name}, {byTable, table}, {byType, rmgr + " " + recType}} {
			r := m.into[m.key]
			if r == nil {
				r = &walRow{name: m.key, table: table}
				m.into[m.key] = r
			}
			r.records += n
			r.bytes += bytes
			r.fpi += fpi
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	b.rows, b.tables, b.types = sortedRows(byName), sortedRows(byTable), sortedRows(byType)
	return b, nil
}

func sortedRows(m map[string]*walRow) []walRow {
	out := make([]walRow, 0, len(m))
	for _, r := range m {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].bytes > out[j].bytes })
	return out
}

type relName struct{ name, table string }

// relationNames maps the relfilenodes of database to "schema.relation" and to the table they
// belong to (an index or a TOAST table belongs to its table).
func relationNames(ctx context.Context, adminURL, database string) (map[string]relName, error) {
	u, err := withUser(adminURL, "", "", database)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
WITH rel AS (
  SELECT c.oid, COALESCE(i.indrelid, c.oid) AS base
    FROM pg_class c LEFT JOIN pg_index i ON i.indexrelid = c.oid)
SELECT pg_relation_filenode(r.oid)::text, r.oid::regclass::text, COALESCE(owner.oid, r.base)::regclass::text
  FROM rel r LEFT JOIN pg_class owner ON owner.reltoastrelid = r.base
 WHERE pg_relation_filenode(r.oid) IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	out := map[string]relName{}
	for rows.Next() {
		var node, name, table string
		if err := rows.Scan(&node, &name, &table); err != nil {
			rows.Close()
			return nil, err
		}
		out[node] = relName{name: name, table: table}
	}
	return out, rows.Err()
}

func (b *walBreakdown) print(w io.Writer, jobs int) {
	per := func(v int64) float64 { return float64(v) / float64(jobs) }
	share := func(v int64) string {
		if b.bytes == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(v)/float64(b.bytes))
	}
	fmt.Fprintf(w, "  WAL records (pg_walinspect): %d records, %.1f records/job, %.0f record bytes/job; %.2f COMMIT records/job (transactions that wrote)\n",
		b.records, per(b.records), per(b.bytes), per(b.commits))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	b.printRows(tw, "by table (with its indexes and TOAST)", b.tables, per, share)
	fmt.Fprintln(tw, "  \t\t\t\t\t")
	b.printRows(tw, "by relation", b.rows, per, share)
	fmt.Fprintln(tw, "  \t\t\t\t\t")
	b.printRows(tw, "by record type", b.types, per, share)
	tw.Flush()
}

// printRows prints the rows of at least 0.5% of the WAL and sums up the others.
func (b *walBreakdown) printRows(w io.Writer, title string, rows []walRow, per func(int64) float64, share func(int64) string) {
	fmt.Fprintf(w, "  %s\trecords/job\tbytes/job\tof which FPI\tshare\t\n", title)
	var restRecords, restBytes, restFPI int64
	for _, r := range rows {
		if float64(r.bytes) < 0.005*float64(b.bytes) {
			restRecords, restBytes, restFPI = restRecords+r.records, restBytes+r.bytes, restFPI+r.fpi
			continue
		}
		fmt.Fprintf(w, "  %s\t%.2f\t%.0f\t%.0f\t%s\t\n", r.name, per(r.records), per(r.bytes), per(r.fpi), share(r.bytes))
	}
	if restRecords > 0 {
		fmt.Fprintf(w, "  (each below 0.5%%)\t%.2f\t%.0f\t%.0f\t%s\t\n", per(restRecords), per(restBytes), per(restFPI), share(restBytes))
	}
}
