#!/bin/bash
# FP8 parameters are all-gathered by the distributed optimizer; plain DDP has nothing to gather.
# expect: LM308
# absent: LM301
# unsafe-fixed-absent: LM308
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py \
    --fp8-format hybrid \
    --fp8-param-gather \
    --use-distributed-optimizer
