// Package metrics serves OCC's Prometheus metrics on a private listener, one per process, when
// OCC_METRICS_ENABLED is true.
//
// Every family carries the constant label service="api" or service="worker" and no tenant, Agent
// or request label. The application families are:
//
//	occ_http_requests_total{route,method,status_class}             counter   (api)
//	occ_http_request_duration_seconds{route,method}                histogram (api)
//	occ_reconciliation_attempts_total{work_kind,outcome}           counter   (worker; every combination at 0)
//	occ_reconciliation_attempt_duration_seconds{work_kind}         histogram (worker; every kind present)
//	occ_agent_operation_duration_seconds{operation}                histogram (worker; deploy and stop present)
//	occ_work_pending                                               gauge     (worker; read per scrape)
//	occ_work_oldest_pending_age_seconds                            gauge     (worker; read per scrape)
//	occ_agents{lifecycle_state}                                    gauge     (worker; all six states, read per scrape)
//
// The worker's gauges come from store.WorkBacklog, two read-only statements per scrape on the pool
// from NewPool (two connections, 500 ms connect timeout, 1500 ms statement timeout, read-only
// transactions). Concurrent scrapes share one collection. When it fails the scrape answers 503
// with no metrics at all, and the connection is discarded. occ_agents reads six counters and the
// Agents changed since the worker last folded them (about once a second), so its cost does not
// grow with the number of Agents (store.AgentStates). API scrapes never touch the database.
//
// Label values outside the documented sets are dropped rather than recorded, so a caller bug can
// never grow the label space: ObserveAttempt ignores unknown work kinds and outcomes,
// ObserveAgentOperation unknown operations, and ObserveRequest maps an empty or malformed route to
// "unmatched", an unknown method to OTHER and a status outside 100..599 to "other".
//
// # Process and runtime families
//
// Upstream runs on Node.js and exports prom-client's process and Node families. The Go process
// exports the client_golang Go and process collectors instead, under the same occ_ prefix. The
// names differ; dashboards need this mapping:
//
//	upstream (Node)                              this process (Go)
//	occ_process_cpu_seconds_total                occ_process_cpu_seconds_total
//	occ_process_cpu_user_seconds_total           (none; only the user+system total)
//	occ_process_cpu_system_seconds_total         (none; only the user+system total)
//	occ_process_start_time_seconds               occ_process_start_time_seconds
//	occ_process_resident_memory_bytes            occ_process_resident_memory_bytes
//	occ_nodejs_heap_size_total_bytes             occ_go_memstats_heap_sys_bytes
//	occ_nodejs_heap_size_used_bytes              occ_go_memstats_heap_alloc_bytes
//	occ_nodejs_external_memory_bytes             occ_go_memstats_sys_bytes (all memory from the OS)
//	occ_nodejs_eventloop_lag_seconds (+ stats)   occ_go_sched_latencies_seconds (histogram of the time
//	                                             goroutines wait to run: the closest Go analogue)
//	occ_nodejs_version_info                      occ_go_info{version}
//	occ_nodejs_gc_duration_seconds{kind}         occ_go_gc_duration_seconds (summary, no kind)
//
// Go adds, among others, occ_go_goroutines, occ_go_threads, occ_go_memstats_*,
// occ_go_gc_gogc_percent, occ_go_gc_gomemlimit_bytes, occ_go_sched_gomaxprocs_threads,
// occ_process_open_fds, occ_process_max_fds, occ_process_virtual_memory_bytes and
// occ_process_network_*_bytes_total (Linux). Exact Go runtime names can change with the Go
// version; the occ_ application families above cannot.
//
// # Listener
//
// Listen binds at startup, so a bad address fails the process before it serves or claims anything;
// Serve runs until its context ends and then shuts down gracefully. Only GET /metrics is served
// (other paths 404, other methods on /metrics 405), every response has Cache-Control: no-store, the
// content type is negotiated from the scraper's Accept header, at most 16 connections are open at
// once (more are closed on accept), reads, writes and idle keep-alives are limited to 5 s, and
// there is no authentication: the listener belongs on a private address.
package metrics
