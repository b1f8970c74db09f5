#!/usr/bin/env bash
# The CPU a command costs this machine, for the test suite's timings (bench/README.md,
# "The test suite's time"): runs it in a cpuacct cgroup of its own ("suite"), with the
# PostgreSQL server's processes moved into another ("postgres"), and prints the wall
# time and the CPU-seconds of each and of the whole machine. Needs root and cgroup v1's
# cpuacct controller (as on this machine). Usage: bench/suite_cpu.sh make test
set -euo pipefail
root=/sys/fs/cgroup/cpuacct
mkdir -p "$root/suite" "$root/postgres"
for pid in $(pgrep -x postgres || true); do echo "$pid" > "$root/postgres/cgroup.procs" 2>/dev/null || true; done
echo $$ > "$root/suite/cgroup.procs"
read_all() { echo "$(cat "$root/suite/cpuacct.usage") $(cat "$root/postgres/cpuacct.usage") $(cat "$root/cpuacct.usage") $(date +%s.%N)"; }
read -r s0 p0 a0 t0 <<< "$(read_all)"
status=0; "$@" || status=$?
read -r s1 p1 a1 t1 <<< "$(read_all)"
python3 -c "print(f'wall {$t1-$t0:.1f} s, CPU: command {($s1-$s0)/1e9:.1f} s, PostgreSQL {($p1-$p0)/1e9:.1f} s, machine {($a1-$a0)/1e9:.1f} s')" >&2
exit $status
