// Package hygiene holds the repository-wide checks of the source tree itself (its tests walk the
// module's files). It has no code of its own.
package hygiene
