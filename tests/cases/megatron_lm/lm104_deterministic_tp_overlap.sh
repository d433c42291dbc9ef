#!/bin/bash
# Deterministic mode checks that TP overlap is off and stops the launch otherwise.
# args: --gpu h100
# expect: LM104
# absent: LM101 LM105
# unsafe-fixed-absent: LM104
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --tensor-model-parallel-size 2 \
    --sequence-parallel \
    --tp-comm-overlap \
    --deterministic-mode
