#!/usr/bin/env bash
# Two machines on one: two network namespaces joined by a veth pair, each process with its own host name (a UTS
# namespace) and /etc/hosts (ip netns exec mounts /etc/netns/NS/hosts), so rank 0 and rank 1 reach each other only
# over the addresses this test gives them, never loopback. It checks that
#   1. a run on the two nodes (the store on node-a's address) equals the same run on one process;
#   2. taking node-b's process away mid-run ends node-a's within run.dist_timeout_s, naming the rank and its host;
#   3. that run resumes on one node and finishes;
#   4. scripts/slurm_example.sh runs on the two nodes under a stand-in srun that sets SLURM's variables as SLURM
#      does for 2 nodes x 1 task (and a stand-in scontrol).
# The namespaces, the veth pair and /etc/netns/NS are removed when it ends. Needs root and whole network namespaces
# (it skips, exit 77, saying why, elsewhere: not root, or a chroot where they can be made only in part). Usage: test_netns.sh POSLAB SOURCE_DIR
set -uo pipefail
poslab=$(realpath "$1")
src=$(realpath "$2")
skip() { echo "SKIP: $* (the two-node test needs root and whole network namespaces)"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "not root"
command -v ip >/dev/null && command -v unshare >/dev/null || skip "ip (iproute2) or unshare is missing"

a=poslab-a-$$ b=poslab-b-$$
subnet=10.77.$((RANDOM % 250))
ip_a=$subnet.1 ip_b=$subnet.2
tmp=$(mktemp -d)
cleanup() {
  ip netns pids "$a" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns pids "$b" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$a" 2>/dev/null
  ip netns del "$b" 2>/dev/null
  rm -rf "/etc/netns/$a" "/etc/netns/$b"
  [ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$a" && ip netns add "$b" || skip "ip netns add failed (no CAP_SYS_ADMIN here?)"
# Where namespaces can be made only in part (a chroot: ip netns add says '"mount --make-rslave /" failed'), entering
# one or configuring its links fails: this machine cannot run the test.
for ns in "$a" "$b"; do
  why=$(ip -n "$ns" link set lo up 2>&1 && ip netns exec "$ns" true 2>&1) ||
    skip "network namespaces can be made here only in part (ip netns exec $ns: $(echo "$why" | head -1))"
done
ip link add "va$$" type veth peer name "vb$$" || skip "no veth pairs here"
ip link set "va$$" netns "$a" && ip link set "vb$$" netns "$b" || fail "could not move the veth ends"
ip -n "$a" addr add "$ip_a/24" dev "va$$" && ip -n "$b" addr add "$ip_b/24" dev "vb$$" || fail "addresses"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "va$$" up && ip -n "$b" link set "vb$$" up || fail "links up"
for ns in "$a" "$b"; do
  mkdir -p "/etc/netns/$ns"
  printf '127.0.0.1 localhost\n%s node-a\n%s node-b\n' "$ip_a" "$ip_b" > "/etc/netns/$ns/hosts"
done

# on NODE CMD...: CMD on node-a or node-b, in its network namespace, under its host name. Started in the
# background (a subshell), it execs all the way down, so that $! is the command's own pid.
on() {
  local ns=$a
  [ "$1" = node-b ] && ns=$b
  if [ "$BASH_SUBSHELL" -gt 0 ]; then exec ip netns exec "$ns" unshare --uts bash -c 'hostname "$0" && exec "$@"' "$@"; fi
  ip netns exec "$ns" unshare --uts bash -c 'hostname "$0" && exec "$@"' "$@"
}
port=$((29600 + RANDOM % 300))
rank() {  # rank R NODE ARGS...: rank R of 2, store on node-a
  local r=$1 node=$2
  shift 2
  on "$node" env RANK="$r" WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=node-a MASTER_PORT="$port" "$poslab" "$@"
}

head -c 200000 "$src/data/tinyshakespeare.txt" > "$tmp/corpus.txt"
cat > "$tmp/tiny.yaml" <<YAML
run: {out_dir: $tmp/runs, threads: 1, batch_split: 1, report: false, device: cpu, kernels: default, dist_timeout_s: 20}
data: {corpus: $tmp/corpus.txt, cache_dir: $tmp/cache, tokenizer: {type: char}}
model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16}
train: {batch_size: 8, max_steps: 6, eval_every: 3, eval_batches: 2, checkpoint_every: 3, log_every: 1}
snapshot: {every: 3}
YAML

# 1. Two nodes equal one process.
"$poslab" train "$tmp/tiny.yaml" --set run.name=one >/dev/null 2>"$tmp/one.err" || { cat "$tmp/one.err"; fail "the one-process run"; }
rank 1 node-b train "$tmp/tiny.yaml" --set run.name=two >/dev/null 2>"$tmp/two1.err" &
pid_b=$!
rank 0 node-a train "$tmp/tiny.yaml" --set run.name=two >/dev/null 2>"$tmp/two0.err"
rc0=$?
wait "$pid_b"
rc1=$?
[ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ] || { cat "$tmp/two0.err" "$tmp/two1.err"; fail "the two-node run exited $rc0 / $rc1"; }
grep -q "distributed: 2 processes (1 per machine), gloo backend, rendezvous node-a:$port" "$tmp/two0.err" ||
  fail "no two-node group in node-a's log"
grep -q "distributed: ranks on 0 node-a ($ip_a), 1 node-b ($ip_b)" "$tmp/two0.err" || fail "the ranks' hosts are not logged"
python3 - "$tmp/runs/one" "$tmp/runs/two" <<'PY' || fail "the two-node run differs from the one-process run"
import json, struct, sys
def losses(d):
    return {r["step"]: r["loss"] for r in map(json.loads, open(d + "/metrics.jsonl")) if "loss" in r}
def table(d):
    raw = open(d + "/snapshots/wpe_step000006.npy", "rb").read()
    head = 10 + int.from_bytes(raw[8:10], "little")
    return struct.unpack("<%df" % ((len(raw) - head) // 4), raw[head:])
one, two = losses(sys.argv[1]), losses(sys.argv[2])
assert sorted(one) == sorted(two) == list(range(6)), (sorted(one), sorted(two))
dl = max(abs(one[s] - two[s]) for s in one)
dw = max(abs(x - y) for x, y in zip(table(sys.argv[1]), table(sys.argv[2])))
print(f"two nodes against one process: losses within {dl:.2g}, the final table within {dw:.2g}")
assert dl < 1e-5 and dw < 2e-5
PY

# 2. node-b's process taken away mid-run: node-a's ends within the timeout, naming rank 1 and node-b.
long=(--set run.name=lost --set train.max_steps=100000 --set snapshot.every=1000 --set train.checkpoint_every=20 --set train.eval_every=100000)
rank 1 node-b train "$tmp/tiny.yaml" "${long[@]}" >/dev/null 2>"$tmp/lost1.err" &
pid_b=$!
rank 0 node-a train "$tmp/tiny.yaml" "${long[@]}" >/dev/null 2>"$tmp/lost0.err" &
pid_a=$!
for _ in $(seq 100); do
  [ -f "$tmp/runs/lost/checkpoints/latest.pt" ] && [ "$(wc -l < "$tmp/runs/lost/metrics.jsonl")" -gt 30 ] && break
  sleep 0.2
done
kill -0 "$pid_a" 2>/dev/null || fail "node-a's rank ended before node-b's was taken away"
kill -9 "$pid_b"
wait "$pid_b" 2>/dev/null
start=$SECONDS
wait "$pid_a"
rc=$?
took=$((SECONDS - start))
[ "$rc" -ne 0 ] || { echo "$tmp"; fail "node-a's rank went on without node-b"; }
[ "$took" -le 25 ] || fail "node-a's rank took $took s to stop (run.dist_timeout_s is 20)"
grep -q "^rank 0: error: .* failed, rank 1 on node-b ($ip_b) is gone: " "$tmp/lost0.err" ||
  { cat "$tmp/lost0.err"; fail "node-a's error does not name rank 1 on node-b"; }
echo "node-b killed: node-a stopped in $took s: $(grep '^rank 0: error' "$tmp/lost0.err" | cut -c1-160)"

# 3. The run resumes on one node.
stopped=$("$poslab" inspect "$tmp/runs/lost/checkpoints/latest.pt" | awk '/^step/ {print $2}')
on node-a "$poslab" train --resume "$tmp/runs/lost" --set train.max_steps=$((stopped + 5)) >/dev/null 2>"$tmp/resume.err" ||
  { cat "$tmp/resume.err"; fail "resuming on one node"; }
# Read whole, then matched: grep -q on the pipe would close it on the rest of the output (SIGPIPE under pipefail).
info=$("$poslab" inspect "$tmp/runs/lost/checkpoints/latest.pt") || fail "inspect of the resumed run failed"
grep -Eq "^step +$((stopped + 5)) of" <<<"$info" || fail "resumed run's step"

# 4. scripts/slurm_example.sh on the two nodes, under a stand-in srun and scontrol.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/scontrol" <<'SH'
#!/usr/bin/env bash
# scontrol show hostnames LIST: one host a line (this stand-in takes a comma-separated list).
[ "$1 $2" = "show hostnames" ] || { echo "stand-in scontrol: only 'show hostnames'" >&2; exit 1; }
tr ',' '\n' <<<"$3"
SH
cat > "$tmp/bin/srun" <<SH
#!/usr/bin/env bash
# A stand-in srun for 2 nodes x 1 task: task i on the i-th node of SLURM_JOB_NODELIST, in its namespace, with the
# variables SLURM sets for a task; with --kill-on-bad-exit=1 a failed task stops the other.
kill_on_bad=0
while [ "\${1#-}" != "\$1" ]; do [ "\$1" = --kill-on-bad-exit=1 ] && kill_on_bad=1; shift; done
i=0
pids=()
for node in \$(scontrol show hostnames "\$SLURM_JOB_NODELIST"); do
  ns=$a; [ "\$node" = node-b ] && ns=$b
  SLURM_PROCID=\$i SLURM_LOCALID=0 SLURM_NODEID=\$i SLURM_STEP_NUM_TASKS=2 SLURM_STEP_TASKS_PER_NODE="1(x2)" SLURMD_NODENAME=\$node \\
    ip netns exec "\$ns" unshare --uts bash -c 'hostname "\$0" && exec "\$@"' "\$node" "\$@" &
  pids+=(\$!)
  i=\$((i + 1))
done
rc=0
for _ in "\${pids[@]}"; do
  wait -n; r=\$?
  if [ "\$r" -ne 0 ] && [ "\$rc" -eq 0 ]; then rc=\$r; [ "\$kill_on_bad" = 1 ] && kill "\${pids[@]}" 2>/dev/null; fi
done
exit \$rc
SH
chmod +x "$tmp/bin/scontrol" "$tmp/bin/srun"
(cd "$src" && on node-a env PATH="$tmp/bin:$PATH" POSLAB="$poslab" MASTER_PORT=$((port + 1)) SLURM_JOB_ID=4242 \
   SLURM_JOB_NODELIST=node-a,node-b SLURM_NNODES=2 SLURM_NTASKS=2 SLURM_NTASKS_PER_NODE=1 SLURM_CPUS_PER_TASK=1 \
   bash scripts/slurm_example.sh "$tmp/tiny.yaml" --set run.dist_timeout_s=20 >"$tmp/slurm.out" 2>"$tmp/slurm.err") ||
  { cat "$tmp/slurm.err"; fail "scripts/slurm_example.sh under the stand-in srun"; }
grep -q "distributed: 2 processes (1 per machine), gloo backend, rendezvous node-a:$((port + 1)) (SLURM)" "$tmp/slurm.err" ||
  { cat "$tmp/slurm.err"; fail "the SLURM launch did not make one 2-node group"; }
info=$("$poslab" inspect "$tmp/runs/slurm-4242/checkpoints/latest.pt") || fail "inspect of the SLURM run failed"
grep -Eq "^step +6 of" <<<"$info" || fail "the SLURM run's step"
echo "PASS: two nodes in network namespaces ($ip_a, $ip_b): equal to one process, a lost node named, resumed on one, and slurm_example.sh under a stand-in srun"
