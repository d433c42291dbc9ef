#!/bin/bash
# --overlap-grad-reduce is appended only when the caller sets NSYS_OFF: whether DP overlap is on is not
# known, so LM303 ("no --overlap-grad-reduce") is not reported; the distributed optimizer, given on every
# path, stays known. LM002 names the if.
# args: --gpu h100 --show-info
# expect: LM002
# absent: LM303 LM301 LM302
# effective: ddp.overlap_grad_reduce=null@unknown ddp.use_distributed_optimizer=true@user ddp.bucket_size=null@unknown
# exit: 0
export CUDA_DEVICE_MAX_CONNECTIONS=1
ARGS=(--use-distributed-optimizer --num-layers 4)
if [ -z "$NSYS_OFF" ]; then
    ARGS+=(--overlap-grad-reduce)
fi
torchrun --nproc_per_node 8 ${MEGATRON_LM}/pretrain_gpt.py "${ARGS[@]}"
