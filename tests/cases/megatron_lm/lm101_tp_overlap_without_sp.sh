#!/bin/bash
# --tp-comm-overlap at TP=4 without --sequence-parallel: validate_args asserts (Bridge would switch it off).
# args: --gpu h100
# expect: LM101
# absent: LM102 LM103 LM501
# fixed-absent: LM101
# fixed-effective: model.sequence_parallel=true@user model.tp_comm_overlap=true@user
# exit: 1
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --tensor-model-parallel-size 4 \
    --tp-comm-overlap \
    --micro-batch-size 1
