#!/bin/bash
# TP=1 turns --sequence-parallel off first, so --tp-comm-overlap asserts although both flags are given.
# expect: LM102 LM103
# absent: LM101 LM501
# effective: model.sequence_parallel=false@forced-off
# unsafe-fixed-absent: LM102
# unsafe-fixed-effective: model.tp_comm_overlap=false@default
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --tensor-model-parallel-size 1 \
    --sequence-parallel \
    --tp-comm-overlap \
    --micro-batch-size 1
