#!/bin/bash
# 4 attention heads cannot be split over 8 tensor-parallel ranks.
# args: --gpu b200
# expect: LM106
# quote: LM106 num_attention_heads (4) must be a multiple of tensor_model_parallel_size (8).
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --tensor-model-parallel-size 8 --sequence-parallel
