#!/bin/bash
# bf16 main gradients: validate_args keeps the reduction in bf16 (no fp32 for a non-fp32 main-grads dtype), and the
# optimizer config then asserts, since only the precision-aware optimizer takes bf16 main gradients.
# args: --gpu b200
# expect: LM401
# quote: LM401 main_grads_dtype can only be fp32 when not using precision-aware optimizer
# effective: ddp.grad_reduce_in_fp32=false@derived
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --bf16 --main-grads-dtype bf16
