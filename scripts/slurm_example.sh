#!/usr/bin/env bash
# An example SLURM job: one poslab run on 2 machines x 2 processes (data parallel, c10d's Gloo over TCP on CPUs;
# NCCL with a CUDA build and run.device=cuda, one GPU per process). Submit with:
#   sbatch scripts/slurm_example.sh [CONFIG [--set KEY=VALUE ...]]      (CONFIG: configs/default.yaml)
# POSLAB names the binary (./build/poslab).
# poslab reads SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and SLURM_NTASKS_PER_NODE itself; it needs MASTER_ADDR
# (rank 0's machine) and MASTER_PORT. The run folder (run.out_dir) and the token cache (data.cache_dir) must be on a
# file system every machine sees: rank 0 writes them, the others read the tokenizer and token cache from there.
#SBATCH --job-name=poslab
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
#SBATCH --output=poslab-%j.log
set -euo pipefail

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=${MASTER_PORT:-29500}
# Gloo picks the network interface of this machine's host name; name one if that is not the cluster network:
# export GLOO_SOCKET_IFNAME=eth0

# One srun task per rank; --kill-on-bad-exit stops every rank when one fails (poslab's own timeout,
# run.dist_timeout_s, bounds the wait of the others in any case).
# run.threads: each process's CPUs (auto would split the whole machine among this machine's processes).
config=${1:-configs/default.yaml}
shift $(($# > 0 ? 1 : 0))
srun --kill-on-bad-exit=1 "${POSLAB:-./build/poslab}" train "$config" \
  --set run.name="slurm-$SLURM_JOB_ID" --set run.threads="${SLURM_CPUS_PER_TASK:-1}" --set run.dist_timeout_s=300 "$@"

# Resume with any number of processes (here, or on one machine with --nproc N):
#   srun ./build/poslab train --resume runs/slurm-<job id>
