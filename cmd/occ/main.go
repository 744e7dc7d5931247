// Command occ is the single OCC binary: API, controller worker, operations and client commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/openclaw/occ/internal/cli"
)

// version is set at build time: -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, cli.Env{Lookup: os.LookupEnv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Version: version}, os.Args[1:])
	stop()
	os.Exit(code)
}
