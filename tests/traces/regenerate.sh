#!/bin/sh
# Records the golden traces of this folder again and their expected digests, after a change of the
# trace or wire format (docs/TRACE.md). Run from the repository root after a build:
#
#   tests/traces/regenerate.sh [BUILD_DIR]      (default: build)
#
# Every golden trace is recorded on sim devices; its digests come from a process-mode replay, and
# ctest checks that both replay modes reproduce them.
set -eu
build=${1:-build}
here=$(dirname "$0")
"$build/apps/ag-demo" --mode=process --devices=sim:0 --size=1024 \
  --record-trace="$here/demo-process.trace" >/dev/null
# On the sockets alone: without a completion board the planner orders lanes without awaits, which
# a replay on either path can run.
AG_TEST_TRANSPORT=sockets "$build/tests/ag-record-random" "$here/random-process.trace" process \
  sim:0,sim:1,sim:2 7 60
AG_TEST_TRANSPORT=sockets "$build/tests/ag-record-random" "$here/random-thread.trace" thread \
  sim:0,sim:1 11 60
for t in demo-process random-process random-thread; do
  "$build/apps/ag-replay" "$here/$t.trace" --mode=process --digests="$here/$t.digests" >/dev/null
  "$build/apps/ag-replay" "$here/$t.trace" --mode=inproc --expect="$here/$t.digests" >/dev/null
done
ls -l "$here"
