#!/bin/bash
# TP=2 with MoE EP overlap on H100: validate_args warns instead of asserting the single queue.
# args: --gpu h100
# expect: LM503
# absent: LM501
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --sequence-parallel \
    --expert-model-parallel-size 4 --num-experts 8 --moe-token-dispatcher-type alltoall --bf16 \
    --disable-bias-linear --overlap-moe-expert-parallel-comm
