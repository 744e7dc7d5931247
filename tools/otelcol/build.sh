#!/usr/bin/env bash
# Builds the test OpenTelemetry Collector (main.go: OTLP receiver, the processors of
# deploy/logging/collector.yaml, file/debug/OTLP-HTTP exporters) into $OCC_OTELCOL_BIN (default
# ~/.cache/occ/otelcol/v0.161.0) when it is missing. The first build needs about 10 CPU minutes
# (5 to 6 minutes on 2 idle cores, more on a busy machine; docs/observability.md); later runs
# return at once.
set -euo pipefail
cd "$(dirname "$0")"
OTELCOL_VERSION=v0.161.0
OUT="${OCC_OTELCOL_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/occ/otelcol/$OTELCOL_VERSION}"
mkdir -p "$OUT"
if [ ! -x "$OUT/otelcol" ]; then
  echo "otelcol-bin: building otelcol into $OUT (first time only; a few minutes)" >&2
  start=$(date +%s)
  go build -trimpath -ldflags "-s -w -X main.version=$OTELCOL_VERSION" -o "$OUT/otelcol.tmp" .
  mv "$OUT/otelcol.tmp" "$OUT/otelcol"
  echo "otelcol-bin: otelcol built in $(( $(date +%s) - start ))s" >&2
fi
echo "$OUT"
