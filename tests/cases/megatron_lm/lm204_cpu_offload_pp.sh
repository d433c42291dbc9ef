#!/bin/bash
# Activation CPU offloading has no pipeline-parallel support.
# args: --gpu b200
# expect: LM204
# quote: LM204 Currently there is no support for Pipeline parallelism with CPU offloading
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --pipeline-model-parallel-size 2 --cpu-offloading-num-layers 1
