#!/bin/bash
# EP all-to-all overlap without expert parallelism: Megatron-Core's TransformerConfig asserts (shared with Bridge).
# expect: EP701
# absent: EP704
# unsafe-fixed-absent: EP701
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --num-experts 8 \
    --moe-token-dispatcher-type alltoall \
    --bf16
