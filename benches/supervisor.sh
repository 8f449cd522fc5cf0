#!/bin/sh
# The supervisor's cost per command start (issue 45): wall time of N starts of /bin/true,
# directly and through `mcp-tasks __supervise` (what a command tool, a proxy's stdio upstream
# and a `--cmd` server pay on Linux), one after the other in one shell loop each.
#   N=1000 B=target/release/mcp-tasks sh benches/supervisor.sh   (B: the binary to measure)
N=${N:-1000}; B=${B:-target/debug/mcp-tasks}
t0=$(date +%s%N); i=0; while [ $i -lt "$N" ]; do /bin/true; i=$((i+1)); done; t1=$(date +%s%N)
i=0; while [ $i -lt "$N" ]; do "$B" __supervise --parent $$ --grace-ms 500 -- /bin/true; i=$((i+1)); done; t2=$(date +%s%N)
direct=$(( (t1-t0)/N/1000 )); supervised=$(( (t2-t1)/N/1000 ))
echo "N=$N direct ${direct}us/start supervised ${supervised}us/start extra $((supervised-direct))us ratio $(( supervised*10/direct ))e-1"
