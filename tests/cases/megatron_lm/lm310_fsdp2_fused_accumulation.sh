#!/bin/bash
# Torch-FSDP2 with gradient accumulation fusion left on (its default).
# args: --gpu b200
# expect: LM310
# quote: LM310 --use-torch-fsdp2 is not supported with gradient accumulation fusion
# effective: ddp.grad_reduce_in_fp32=false@derived ddp.bucket_size=null@derived
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --use-torch-fsdp2 --untie-embeddings-and-output-weights --bf16
