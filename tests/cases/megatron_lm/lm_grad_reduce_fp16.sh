#!/bin/bash
# fp16 keeps the flag's default: gradients are reduced in fp16 (validate_args forces fp32 only for bf16).
# args: --gpu b200
# effective: ddp.grad_reduce_in_fp32=false@default
# absent: LM401
# exit: 0
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 --fp16
