// Package auth holds credentials and request admission: password hashing (argon2id), service keys
// and session tokens (stored as SHA-256 hashes), the session cookie, the credential precedence
// (Admitter), the browser Origin gates and the password sign-in limiter.
package auth
