#!/usr/bin/env bash
# Megatron-Bridge perf launcher (run from a Megatron-Bridge checkout; add -d for a dry run
# that prints the sbatch script).
set -euo pipefail
python scripts/performance/setup_experiment.py \
  --account ACCOUNT \
  --partition PARTITION \
  -g h200 \
  -c bf16 \
  -m qwen_vl \
  -mr qwen3_vl_30b_a3b \
  -ng 16 \
  --domain qwen3vl \
  -tp 1 \
  -pp 1 \
  -cp 1 \
  -ep 8 \
  -et 1 \
  -mb 2 \
  -gb 512 \
  -sl 4096 \
  --cuda_graph_impl none \
  --use_megatron_fsdp true \
  model.sequence_parallel=false \
  model.moe_shared_expert_overlap=false \
  model.freeze_language_model=false \
  model.freeze_vision_model=false \
  model.freeze_vision_projection=false \
  train.train_iters=300 \
  ddp.data_parallel_sharding_strategy=optim_grads_params \
  checkpoint.ckpt_format=fsdp_dtensor \
  ddp.grad_reduce_in_fp32=true \
  comm_overlap.overlap_moe_expert_parallel_comm=true
