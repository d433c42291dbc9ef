#!/bin/bash
# 6 experts over 4 expert-parallel ranks.
# args: --gpu b200
# expect: LM701
# quote: LM701 Number of experts should be a multiple of expert model parallel_size.
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --expert-model-parallel-size 4 --num-experts 6
