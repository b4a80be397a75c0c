#!/usr/bin/env bash
# The order of a run's writes, read from its system calls (strace -f): every file renamed into place was fsynced
# after its last write and before the rename, and its folder fsynced after the rename (each folder made, the folder
# above it); the only files appended to are the logs whose readers repair a line a crash cut short (metrics.jsonl,
# snapshots/index.jsonl, TensorBoard's event file of each start of the trainer), each fsynced after its last append
# before latest.pt is committed; no other file is written in place but the run's lock. Checked on a tiny run and its
# resume, with a report (its figures drawn by gnuplot into temporary files that poslab commits).
# Usage: test_write_order.sh PATH/TO/poslab
set -u
poslab=$1
command -v strace >/dev/null || { echo "FAIL strace is missing: install it with bash scripts/setup.sh"; echo "write_order: 0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export POSLAB_KERNELS=default POSLAB_NO_MEMORY_CHECK=1
for i in $(seq 1 600); do echo "line $i: the cat sat on the mat and the dog ran $((i % 7))"; done >"$tmp/corpus.txt"
cat >"$tmp/tiny.yaml" <<YAML
run: {name: tiny, threads: 1, device: cpu, out_dir: $tmp/runs}
data: {corpus: [$tmp/corpus.txt], cache_dir: $tmp/cache, tokenizer: {type: char}}
model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 8}
train: {batch_size: 4, max_steps: 6, eval_every: 3, eval_batches: 1, checkpoint_every: 2, log_every: 2}
snapshot: {every: 3}
YAML
calls="openat,open,creat,write,pwrite64,fsync,fdatasync,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat"
strace -f -qq -y -s 0 -e trace="$calls" -o "$tmp/trace" "$poslab" train "$tmp/tiny.yaml" --stop-at 4 >"$tmp/run.log" 2>&1 &&
  strace -f -qq -y -s 0 -e trace="$calls" -o "$tmp/trace2" "$poslab" train --resume "$tmp/runs/tiny" >>"$tmp/run.log" 2>&1 ||
  { echo "FAIL the traced run failed:"; tail -20 "$tmp/run.log"; echo "write_order: 0 passed, 1 failed"; exit 1; }
cat "$tmp/trace2" >>"$tmp/trace"

python3 - "$tmp" "$tmp/trace" <<'EOF'
import os, re, sys
root, trace = sys.argv[1], sys.argv[2]
# strace splits a call that another thread interrupts: "<unfinished ...>" and "<... NAME resumed>" are joined per pid.
pending, calls = {}, []
for line in open(trace):
    line = line.rstrip("\n")
    m = re.match(r"(\d+) +(.*)$", line)
    if not m:
        continue
    pid, rest = m.groups()
    if rest.endswith("<unfinished ...>"):
        pending[pid] = rest[: -len("<unfinished ...>")]
        continue
    r = re.match(r"<\.\.\. \w+ resumed>(.*)$", rest)
    if r:
        rest = pending.pop(pid, "") + r.group(1)
    calls.append(rest)

def fd_path(arg):  # 5</tmp/x/metrics.jsonl> -> /tmp/x/metrics.jsonl
    m = re.match(r"-?\d+<(.*)>$", arg.strip())
    return m.group(1) if m else None

def ours(p):
    return p is not None and p.startswith(root + "/")

dirty, synced, unsynced_dirs, appended, in_place, failures = {}, set(), {}, set(), set(), []
appended_paths, latest_commits, folders_made = set(), 0, 0
renamed_from, renamed_to, removed, rename_order = set(), set(), set(), []
renames = 0
for c in calls:
    m = re.match(r"(\w+)\((.*)\) += (.*)$", c)
    if not m:
        continue
    name, args, ret = m.groups()
    if ret.startswith("-1"):
        continue
    if name in ("openat", "open", "creat"):
        path = fd_path(ret)
        if not ours(path) or os.path.isdir(path) and "O_DIRECTORY" in args:
            continue
        writes = name == "creat" or re.search(r"O_WRONLY|O_RDWR", args)
        if not writes:
            continue
        if "O_APPEND" in args:
            appended.add(os.path.relpath(path, root))
            appended_paths.add(path)
        elif not re.search(r"\.tmp\.\d+$", path) and not path.endswith("/lock"):
            in_place.add(os.path.relpath(path, root))
    elif name in ("write", "pwrite64"):
        path = fd_path(args.split(",")[0])
        if ours(path):
            dirty[path] = True
            synced.discard(path)
    elif name in ("fsync", "fdatasync"):
        path = fd_path(args)
        if not ours(path) and path != root:  # the test's folder holds the run's out_dir
            continue
        dirty[path] = False
        synced.add(path)
        unsynced_dirs.pop(path, None)
    elif name.startswith("mkdir"):
        paths = re.findall(r'"([^"]*)"', args)
        if paths and ours(os.path.abspath(paths[-1])):
            made = os.path.abspath(paths[-1])
            folders_made += 1
            unsynced_dirs.setdefault(os.path.dirname(made), os.path.relpath(made, root) + "/ (made)")
    elif name.startswith("unlink"):
        paths = re.findall(r'"([^"]*)"', args)
        if paths:
            removed.add(os.path.relpath(os.path.abspath(paths[-1]), root))
    elif name.startswith("rename"):
        paths = re.findall(r'"([^"]*)"', args)
        if len(paths) != 2 or not ours(os.path.abspath(paths[1])):
            continue
        old, new = os.path.abspath(paths[0]), os.path.abspath(paths[1])
        renames += 1
        renamed_from.add(os.path.relpath(old, root))
        renamed_to.add(os.path.relpath(new, root))
        rename_order.append(os.path.relpath(new, root))
        if dirty.get(old, False) or old not in synced:
            failures.append(f"{os.path.relpath(new, root)}: renamed into place before its data was fsynced")
        # A resume keeps the logs' lines before its checkpoint and never writes them again: on disk before it
        if new.endswith("/checkpoints/latest.pt"):
            latest_commits += 1
            for p in sorted(appended_paths):
                if dirty.get(p, False):
                    failures.append(f"{os.path.relpath(p, root)}: appended to and not fsynced when "
                                    f"checkpoints/latest.pt was committed")
        unsynced_dirs.setdefault(os.path.dirname(new), os.path.relpath(new, root))
for d, f in unsynced_dirs.items():
    failures.append(f"{f}: the folder above was not fsynced after " + ("it was made" if f.endswith("(made)") else "the rename"))
if folders_made < 4:
    failures.append(f"only {folders_made} folders made traced: the trace missed the run's folders")
# TensorBoard's event files: the resume cuts a record cut short (truncate_events_after); one per start of the trainer.
allowed = {"runs/tiny/metrics.jsonl", "runs/tiny/snapshots/index.jsonl",
           "runs/tiny/tensorboard/events.out.tfevents.0001.poslab", "runs/tiny/tensorboard/events.out.tfevents.0002.poslab"}
for f in sorted(appended - allowed):
    failures.append(f"{f}: appended to, but no reader repairs a line a crash cuts short")
for f in sorted(allowed - appended):
    failures.append(f"{f}: never appended to (the trace missed the run's logs)")
# Written in place and neither renamed nor removed: a scratch file under another name (sentencepiece's work files,
# read back and removed: the model goes to the cache through a temporary file) is neither, and gnuplot's log (removed
# when it succeeds). The report's figures are gnuplot's, written to temporary files that poslab commits; the page that
# shows them, index.html, last.
figures = [i for i, f in enumerate(rename_order) if re.match(r"runs/tiny/report/[^/]+\.(png|svg)$", f)]
pages = [i for i, f in enumerate(rename_order) if f == "runs/tiny/report/index.html"]
if len(figures) < 10:
    failures.append(f"only {len(figures)} report figures renamed into place: gnuplot wrote them in place")
elif not pages or max(pages) < max(figures):
    failures.append("runs/tiny/report/index.html: not renamed into place after the figures")
logs = {f for f in in_place if re.match(r"runs/tiny/report/[^/]+\.gp\.log$", f)}
for f in sorted(in_place - renamed_from - removed - logs):
    failures.append(f"{f}: written in place, not through a synced temporary file")
if latest_commits < 3:
    failures.append(f"only {latest_commits} commits of latest.pt traced: the trace missed the run's checkpoints")
if renames < 20:
    failures.append(f"only {renames} renames traced: the trace missed the run's writes")
for f in failures:
    print("FAIL " + f)
print(f"write order: {renames} renames, each fsynced before and its folder after; {folders_made} folders made, each "
      f"synced into the folder above; appends only to "
      f"{', '.join(sorted(appended))}, synced before each of {latest_commits} commits of latest.pt; "
      f"{len(figures)} report figures committed before index.html")
print(f"write_order: {0 if failures else 1} passed, {1 if failures else 0} failed")
sys.exit(1 if failures else 0)
EOF
