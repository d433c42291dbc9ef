#!/bin/bash
# --grad-reduce-in-bf16 keeps the bf16 run's gradient reduction in bf16 (arguments.py:1190-1191).
# args: --gpu b200
# effective: ddp.grad_reduce_in_fp32=false@derived
# absent: LM401
# exit: 0
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --bf16 --grad-reduce-in-bf16 --overlap-grad-reduce
