#!/bin/bash
# Delayed wgrad is scheduled by the EP all-to-all overlap: Megatron-Core asserts it at config construction.
# expect: EP704
# unsafe-fixed-absent: EP704
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --delay-wgrad-compute
