#!/bin/bash
# 8 ranks at TP 2: DP 4; a global batch of 6 does not split into micro batches of 1 over 4 data-parallel ranks
# (the evaluation batch defaults to it, and validate_args checks that one first).
# args: --gpu b200
# expect: LM003
# quote: LM003 eval_global_batch_size (6) must be divisible by eval_micro_batch_size (1) * data_parallel_size (4)
# quote: LM003 global batch size (6) is not divisible by micro batch size (1) times data parallel size (4)
# absent: LM001 DP313
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 6
