#!/bin/bash
# NVFP4 on Transformer Engine 2.6.
# args: --gpu b200 --te-version 2.6
# expect: LM504
# quote: LM504 --fp4-format requires Transformer Engine >= 2.7.0.dev0 for NVFP4BlockScaling support.
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --bf16 --fp4-format e2m1
