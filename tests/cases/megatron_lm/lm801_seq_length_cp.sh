#!/bin/bash
# Context parallelism splits each sequence into 2 x CP chunks: 4094 tokens do not split into 8.
# args: --gpu b200
# expect: LM801
# quote: LM801 seq-length should be a multiple of 2 * context-parallel-size if context-parallel-size > 1.
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --context-parallel-size 4 --seq-length 4094 --max-position-embeddings 4096
