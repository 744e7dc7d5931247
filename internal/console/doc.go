// Package console serves the web console: a client of the public HTTP API written in plain HTML,
// CSS and JavaScript modules, embedded in the binary. It makes no decision of its own: every read
// and write goes through the API with the browser's session cookie.
//
// Assets are served under content-hashed names with a year-long cache lifetime; the HTML shell
// names them and is never stored. Every response carries a strict Content-Security-Policy (only
// this origin; no inline script or style; no framing), nosniff and no-referrer.
package console
