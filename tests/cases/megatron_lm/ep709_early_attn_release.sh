#!/bin/bash
# The early attention-memory release is part of the EP overlap schedule: Megatron-Core asserts without it.
# expect: EP709
# absent: EP701 EP708
# unsafe-fixed-absent: EP709
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --micro-batch-size 1 \
    --ep-overlap-early-attn-memory-release
