#!/bin/bash
# TP=2 on H100 and nothing sets CUDA_DEVICE_MAX_CONNECTIONS: validate_args asserts it is 1.
# args: --gpu h100
# expect: LM501
# absent: LM502 LM503
# fixed-absent: LM501
# fixed-effective: env.CUDA_DEVICE_MAX_CONNECTIONS="1"@user
# exit: 1
GPUS_PER_NODE=8

torchrun --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py \
    --tensor-model-parallel-size 2 \
    --sequence-parallel
