#!/usr/bin/env bash
# torchrun launch: run `gaccum-tune check` on every rank first (same nodes, same environment),
# and start training only when it passes. Run this script on every node (NODE_RANK 0..NNODES-1).
#
#   NNODES=1 NPROC=8 examples/launch/torchrun-check.sh
#
# `torchrun --no_python` starts gaccum-tune itself as each rank (RANK, WORLD_SIZE, MASTER_ADDR,
# MASTER_PORT set by torchrun); with --distributed the ranks compare their settings through
# c10d (rank 0 or torchrun's agent hosts the store). Exit codes: 0 ok, 1 failed, 2 bad input.
set -euo pipefail

NNODES=${NNODES:-1}
NPROC=${NPROC:-8}
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
MASTER_PORT=${MASTER_PORT:-29500}
JOB=${JOB:-examples/jobs/gpt-1.3b-deepspeed.yaml}
DS=${DS:-examples/deepspeed/ds_config.json}

launch() {
  torchrun --nnodes "$NNODES" --node_rank "$NODE_RANK" --nproc_per_node "$NPROC" \
           --master_addr "$MASTER_ADDR" --master_port "$1" "${@:2}"
}

# 1. The gate (its own port, so the training's rendezvous is untouched). Each rank prints its
#    verdict; torchrun fails when any rank exits non-zero. Drop world_size from the job file or
#    keep it equal to NNODES x NPROC: check compares it with the ranks torchrun started.
if ! launch $((MASTER_PORT + 1)) --no_python gaccum-tune check --distributed --job "$JOB" --deepspeed-config "$DS"; then
  echo "gaccum-tune check failed on at least one rank: not launching" >&2
  exit 1
fi

# 2. The training.
launch "$MASTER_PORT" train.py --deepspeed --deepspeed_config "$DS"
