// Package auth holds credentials: password hashing (argon2id), service keys (stored as SHA-256
// hashes) and, with the HTTP API, sessions and request admission.
package auth
