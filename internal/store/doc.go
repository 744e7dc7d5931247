// Package store is the only place that speaks SQL: the connection pool, transactions, the embedded
// migrations and the queries every other package uses. Callers pass a DBTX (a pool, a connection or
// a transaction), so a query joins whatever transaction the caller opened.
package store
