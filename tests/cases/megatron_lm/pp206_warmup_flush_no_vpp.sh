#!/bin/bash
# Without a virtual pipeline validate_args turns overlap_p2p_comm off, so the warmup/flush overlap raises
# in Megatron-Core's ModelParallelConfig.
# expect: PP206 LM201
# absent: PP205
# unsafe-fixed-absent: PP206
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --pipeline-model-parallel-size 2 \
    --overlap-p2p-communication-warmup-flush
