#!/bin/sh
# A stdio MCP server behind two tees: what the client writes goes to PREFIX.in, what the server
# answers to PREFIX.out (both appended, one JSON-RPC message a line), stderr to PREFIX.err.
#   interop/stdio_tee.sh PREFIX COMMAND [ARGS...]
# Used by interop/claude_code.sh to see which message a host sends first.
prefix=$1
shift
tee -a "$prefix.in" | "$@" 2>>"$prefix.err" | tee -a "$prefix.out"
